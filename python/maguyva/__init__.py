"""Maguyva: code search that classifies each question and fuses the retrievers it deserves.

>>> import maguyva
>>> sorted(maguyva.MODALITIES)
['graph', 'semantic', 'structural', 'text']

Start with `maguyva.Index.open(path)`; see `maguyva.api` for a runnable example.
"""

from __future__ import annotations

from maguyva.api import ChunkText, Index
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

__version__ = "0.1.0"

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
