"""Effective configuration: built-in defaults overlaid with the caller's settings.

Keys (all optional):
- `index_dir`: where the index lives (default `<root>/.maguyva`).
- `max_file_bytes`: files larger than this are skipped (default 1 MiB).
- `embedding_provider`: "local" (default, offline) or "voyage" (needs VOYAGE_API_KEY).
- `semantic_max_chunks`: cap on chunks embedded per build (None: all).
- `modalities`: which modalities to build (default: all four).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

DEFAULTS: dict[str, Any] = {
    "index_dir": None,
    "max_file_bytes": 1 << 20,
    "embedding_provider": "local",
    "semantic_max_chunks": None,
    "modalities": ["text", "structural", "graph", "semantic"],
    "workers": None,
}

ENV_PREFIX = "MAGUYVA_"


def load_config(root: Path, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Defaults, then `MAGUYVA_*` environment variables, then explicit overrides."""
    config = dict(DEFAULTS)
    for key in DEFAULTS:
        value = os.environ.get(ENV_PREFIX + key.upper())
        if value is not None:
            config[key] = _parse_env(key, value)
    for key, value in (overrides or {}).items():
        if value is not None:
            config[key] = value
    config["root"] = str(root)
    return config


def _parse_env(key: str, value: str) -> Any:
    default = DEFAULTS[key]
    if key == "modalities":
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(default, int) or key in ("semantic_max_chunks", "workers"):
        try:
            return int(value)
        except ValueError:
            from .errors import ConfigError

            raise ConfigError(
                f"{ENV_PREFIX}{key.upper()} must be an integer, got {value!r}"
            ) from None
    return value
