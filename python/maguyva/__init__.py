"""Maguyva: code search that classifies each question and fuses the retrievers it deserves.

>>> import maguyva
>>> sorted(maguyva.MODALITIES)
['graph', 'semantic', 'structural', 'text']

Start with `maguyva.Index.open(path)`; see `maguyva.api` for a runnable example.
"""

from __future__ import annotations

from maguyva.errors import (
    BadQueryError,
    ConfigError,
    CorruptIndexError,
    IndexBusyError,
    IndexNotFoundError,
    IndexVersionError,
    MaguyvaError,
    ModalityUnavailable,
    ModelMismatchError,
    PathEscapeError,
    ProviderError,
)

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing costs the shell client ~5 ms
if TYPE_CHECKING:
    from typing import Any

    from maguyva.api import ChunkText, Index
    from maguyva.model import INTENTS, MODALITIES, Hit, ModalityContribution, Response, Result

_LAZY = {"Index": "maguyva.api", "ChunkText": "maguyva.api", **dict.fromkeys(
    ("INTENTS", "MODALITIES", "Hit", "ModalityContribution", "Response", "Result"), "maguyva.model"
)}  # fmt: skip

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """The API and the result types on first use (PEP 562): they pull in the store, the query
    syntax and dataclasses, which the shell client of the warm server
    (`maguyva.interfaces.client`) never needs."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'maguyva' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "INTENTS",
    "MODALITIES",
    "BadQueryError",
    "ChunkText",
    "ConfigError",
    "CorruptIndexError",
    "Hit",
    "Index",
    "IndexBusyError",
    "IndexNotFoundError",
    "IndexVersionError",
    "MaguyvaError",
    "ModalityContribution",
    "ModalityUnavailable",
    "ModelMismatchError",
    "PathEscapeError",
    "ProviderError",
    "Response",
    "Result",
    "__version__",
]
