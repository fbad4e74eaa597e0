"""Writing a chunk file and an extraction file from encoded per-file rows: the one place
that decides the bytes of a segment or a delta file and the index entries pointing into it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from maguyva.store.extraction import EXTRACTION_SCHEMA
from maguyva.store.generations import write_sealed
from maguyva.store.views import segment_name


def canonical_json(value: Any) -> bytes:
    """JSON exactly as `sealed.dumps_json` writes it (so a segment is the same bytes whether
    it was assembled from fragments or dumped whole)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()


def write_rows(
    tmp: Path,
    names: tuple[str, str],
    extractor: str,
    rows: list[tuple[str, bytes, int, bytes]],
    index: dict[str, list[int]],
    delta: int | None = None,
) -> int:
    """Write a chunk file and an extraction file (`names`) from `rows` (path, chunk lines,
    chunk count, extraction fragment; sorted by path); fill `index` (entries of a `delta`
    file carry its number). Returns the chunk count."""
    chunk_parts: list[bytes] = []
    extract_parts = [b'{"extractor":', canonical_json(extractor), b',"files":{']
    coff = 0
    eoff = sum(len(p) for p in extract_parts)
    total = 0
    for i, (path, chunk_bytes, count, fragment) in enumerate(rows):
        key = (b"," if i else b"") + canonical_json(path) + b":"
        extract_parts.append(key)
        eoff += len(key)
        extract_parts.append(fragment)
        entry = [coff, len(chunk_bytes), count, eoff, len(fragment)]
        index[path] = entry if delta is None else [*entry, delta]
        chunk_parts.append(chunk_bytes)
        coff += len(chunk_bytes)
        eoff += len(fragment)
        total += count
    extract_parts.append(b'},"schema":' + canonical_json(EXTRACTION_SCHEMA) + b"}")
    write_sealed(tmp / names[0], "chunks", b"".join(chunk_parts))
    write_sealed(tmp / names[1], "extract", b"".join(extract_parts))
    return total


def write_segment(
    tmp: Path,
    n: int,
    extractor: str,
    rows: list[tuple[str, bytes, int, bytes]],
    index: dict[str, list[int]],
) -> int:
    """Write chunk and extraction segment `n` from `rows`; see `write_rows`."""
    names = (segment_name(n, "chunks"), segment_name(n, "extract"))
    return write_rows(tmp, names, extractor, rows, index)
