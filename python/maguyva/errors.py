"""Maguyva's exception hierarchy: one class per failure mode a user can act on.

Every error a user can cause or meet derives from `MaguyvaError`, so the CLI and the MCP server
turn them into one clear line instead of a traceback.
"""

from __future__ import annotations


class MaguyvaError(Exception):
    """Base class of every error Maguyva raises on purpose."""


class ConfigError(MaguyvaError):
    """A configuration value, flag or environment variable is invalid."""


class BadQueryError(MaguyvaError, ValueError):
    """The query cannot be run as given (bad regex, unknown modality or preset, bad k)."""


class IndexNotFoundError(MaguyvaError):
    """No index exists at the expected location; run `maguyva index` first."""


class CorruptIndexError(MaguyvaError):
    """An index file failed its header, size or checksum checks."""


class IndexVersionError(MaguyvaError):
    """The index was written by an incompatible (usually newer) format version."""


class IndexBusyError(MaguyvaError):
    """Another process holds the index's writer lock."""


class ModelMismatchError(MaguyvaError):
    """The index was built with a different embedding model or dimension."""


class ProviderError(MaguyvaError):
    """An embedding provider failed (missing key, network, bad response)."""


class PathEscapeError(MaguyvaError, PermissionError):
    """A path resolves outside the repository root."""


class ModalityUnavailable(MaguyvaError):
    """A modality was selected but is not built (or cannot run) in this index."""
