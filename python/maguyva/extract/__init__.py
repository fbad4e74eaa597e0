"""Structural extraction: tree-sitter grammars, per-language queries, the per-file extractor
and the parallel driver. `maguyva.modalities.structural.modality` is the modality built on top of it."""

from __future__ import annotations

from maguyva.extract.driver import FileResult, extract_files, extract_source
from maguyva.extract.grammars import available, load, unavailable

__all__ = ["FileResult", "available", "extract_files", "extract_source", "load", "unavailable"]
