"""Writing a chunk file and an extraction file from encoded per-file rows: the one place
that decides the bytes of a segment or a delta file and the index entries pointing into it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from maguyva.store import blocks
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
    chunk count, extraction fragment; sorted by path), each row stored as a compressed block
    (`store.blocks`; a row that is a block already is copied as it is); fill `index` (entries
    of a `delta` file carry its number). Returns the chunk count. `extractor` is recorded in
    the generation's manifest, not here (format 1 wrapped the extraction in a JSON object
    naming it)."""
    del extractor
    chunk_parts: list[bytes] = []
    extract_parts: list[bytes] = []
    coff = eoff = total = 0
    for path, chunk_bytes, count, fragment in rows:
        chunk_block = blocks.block(path, chunk_bytes, count, "chunks")
        extract_block = blocks.block(path, fragment, 1, "extract")
        entry = [coff, len(chunk_block), count, eoff, len(extract_block)]
        index[path] = entry if delta is None else [*entry, delta]
        chunk_parts.append(chunk_block)
        extract_parts.append(extract_block)
        coff += len(chunk_block)
        eoff += len(extract_block)
        total += count
    write_sealed(tmp / names[0], "chunks", b"".join(chunk_parts), blocks.ROWS_VERSION)
    write_sealed(tmp / names[1], "extract", b"".join(extract_parts), blocks.ROWS_VERSION)
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
