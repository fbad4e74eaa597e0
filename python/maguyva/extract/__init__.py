"""Structural extraction: tree-sitter grammars, per-language queries, the per-file extractor
and the parallel driver. `maguyva.structural` is the modality built on top of it."""

from __future__ import annotations

from .driver import FileResult, extract_files, extract_source
from .grammars import available, load, unavailable

__all__ = ["FileResult", "available", "extract_files", "extract_source", "load", "unavailable"]
