"""The on-disk encoding of extractions and chunks inside a generation, and the fingerprints that
say when a cached extraction or a modality's files were written by other code."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from maguyva.extract import types as extract_types
from maguyva.extract.types import FileExtraction
from maguyva.model import Chunk


def _field_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


EXTRACTION_SCHEMA = {
    name: _field_names(getattr(extract_types, name))
    for name in ("FileExtraction", "Definition", "Import", "Call", "Reference")
}


def encode_extraction(ex: FileExtraction) -> list[Any]:
    def rows(items: list[Any]) -> list[list[Any]]:
        return [[getattr(i, n) for n in i.__slots__] for i in items]

    return [ex.language, rows(ex.definitions), rows(ex.imports), rows(ex.calls),
            rows(ex.references), ex.error]  # fmt: skip


_INTS = list(range(1 << 16))
"""Shared int objects for line numbers: a decoded record then costs a pointer, not a new int."""
_FAST_ROWS = EXTRACTION_SCHEMA["Call"] == ["callee", "line", "caller"] and EXTRACTION_SCHEMA[
    "Reference"
] == ["name", "line", "context"]


def _shared(value: Any) -> Any:
    """One object per distinct name and small line number across everything decoded: a
    repository's calls and references repeat the same callee and caller names millions of
    times, and a decoded extraction is then about half the size."""
    if type(value) is str:
        return sys.intern(value)
    if type(value) is int and 0 <= value < 65536:
        return _INTS[value]
    return value


def decode_extraction(path: str, row: list[Any]) -> FileExtraction:
    language, defs, imports, calls, refs, error = row
    s, ints = sys.intern, _INTS
    if _FAST_ROWS:  # the two kinds that make most of an extraction, unrolled
        call, ref = extract_types.Call, extract_types.Reference
        calls = [call(s(a), ints[b] if 0 <= b < 65536 else b, c if c is None else s(c))
                 for a, b, c in calls]  # fmt: skip
        refs = [ref(s(a), ints[b] if 0 <= b < 65536 else b, c if c is None else s(c))
                for a, b, c in refs]  # fmt: skip
    else:
        calls = [extract_types.Call(*map(_shared, r)) for r in calls]
        refs = [extract_types.Reference(*map(_shared, r)) for r in refs]
    definitions = []
    for r in defs:
        d = extract_types.Definition(*map(_shared, r))
        definitions.append(d)
    return FileExtraction(
        path, language, definitions, [extract_types.Import(*map(_shared, r)) for r in imports],
        calls, refs, error,
    )  # fmt: skip


_CHUNK_FIELDS = tuple(f.name for f in dataclasses.fields(Chunk))


def encode_chunks(chunks: list[Chunk]) -> bytes:
    """Chunk lines exactly as chunkstore writes them (sorted by line, then id; the fields of
    `dataclasses.asdict`, in order, without its deep copy)."""
    ordered = sorted(chunks, key=lambda c: (c.path, c.start_line, c.end_line, c.id))
    dumps, fields = json.dumps, _CHUNK_FIELDS
    return b"".join(
        dumps({f: getattr(c, f) for f in fields}, ensure_ascii=False).encode() + b"\n"
        for c in ordered
    )


_PACKAGE = Path(__file__).resolve().parents[1]


def extractor_sources() -> list[Path]:
    """The files whose content decides what extraction produces."""
    extract_dir = _PACKAGE / "extract"
    return [
        _PACKAGE / "modalities" / "structural" / "modality.py",
        *sorted(p for p in extract_dir.rglob("*") if p.is_file() and "__pycache__" not in p.parts),
    ]


def builder_sources() -> list[Path]:
    """The files whose content decides what the modalities' builders write."""
    modalities = _PACKAGE / "modalities"
    return [
        modalities / "text" / "modality.py",
        modalities / "structural" / "symbols.py",
        modalities / "structural" / "symbol_build.py",
        *sorted((modalities / "semantic").glob("*.py")),
        *sorted((modalities / "graph").rglob("*.py")),  # with graph/resolve/
    ]


def extractor_fingerprint() -> str:
    """Changes when the extraction code or its queries change: cached extractions are then
    recomputed instead of trusted."""
    digest = hashlib.blake2b(digest_size=12)
    digest.update(json.dumps(EXTRACTION_SCHEMA, sort_keys=True).encode())
    for path in extractor_sources():
        with contextlib.suppress(OSError):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@functools.lru_cache(maxsize=1)
def builders_fingerprint() -> str:
    """Changes when a modality's build code or the native module changes (a new on-disk
    format, a fixed builder): `maguyva index` on an unchanged tree is then not a no-op, and
    each modality updates or rebuilds its part (an index format it no longer reads is rebuilt,
    not left unavailable until some file changes)."""
    from maguyva import _core

    digest = hashlib.blake2b(digest_size=12)
    for path in builder_sources():
        with contextlib.suppress(OSError):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    with contextlib.suppress(OSError, TypeError):
        native = os.stat(_core.__file__ or "")
        digest.update(f"{native.st_size}:{native.st_mtime_ns}".encode())
    return digest.hexdigest()
