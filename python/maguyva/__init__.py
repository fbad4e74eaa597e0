"""Maguyva: code search that classifies each question and fuses the retrievers it deserves.

>>> import maguyva
>>> sorted(maguyva.MODALITIES)
['graph', 'semantic', 'structural', 'text']

Start with `maguyva.Index.open(path)`; see `maguyva.api` for a runnable example.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
from maguyva.model import INTENTS, MODALITIES, Hit, ModalityContribution, Response, Result

if TYPE_CHECKING:
    from maguyva.api import ChunkText, Index

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """`Index` and `ChunkText` on first use (PEP 562): `maguyva.api` pulls in the store and the
    query syntax, which the shell client of the warm server (`interfaces/client.py`) never
    needs."""
    if name in ("Index", "ChunkText"):
        from maguyva import api

        return getattr(api, name)
    raise AttributeError(f"module 'maguyva' has no attribute {name!r}")


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
