"""Structural extraction: tree-sitter grammars, per-language queries, the per-file extractor
and the parallel driver. `maguyva.modalities.structural.modality` is the modality built on top of it.

The names below are loaded on first use (PEP 562): `maguyva.store.extraction` needs only
`extract.types`, and a literal search that reaches it must not import tree-sitter.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from maguyva.extract.driver import FileResult, extract_files, extract_source
    from maguyva.extract.grammars import available, load, unavailable

_LAZY = {
    "FileResult": "maguyva.extract.driver",
    "extract_files": "maguyva.extract.driver",
    "extract_source": "maguyva.extract.driver",
    "available": "maguyva.extract.grammars",
    "load": "maguyva.extract.grammars",
    "unavailable": "maguyva.extract.grammars",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = ["FileResult", "available", "extract_files", "extract_source", "load", "unavailable"]
