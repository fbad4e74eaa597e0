"""A generation's file index (`files.json`, with `files-delta.json` applied): each file's
state and where its rows sit in the segments or delta files."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maguyva.store import blocks
from maguyva.store.chunks import FILES_JSON, SEGMENTS, apply_state_delta, read_delta, segment_of
from maguyva.store.views import RowFiles, SegmentChunks
from maguyva.support import sealed

SEGMENT_INDEX_VERSION = 1
"""`files.json` carries, next to the file state, where each file's rows sit in its segments:
`path -> [chunk offset, chunk bytes, chunks, extraction offset, extraction bytes]` (offsets in
the sealed payload). The next build links or slices segments with it instead of decoding them,
and `SegmentExtraction` reads one file's extraction without decoding its segment."""


def chunk_counts(index: Mapping[str, Sequence[int]]) -> list[int]:
    """Chunks per segment of an index."""
    counts = [0] * SEGMENTS
    for p, e in index.items():
        counts[segment_of(p)] += e[2]
    return counts


@dataclass(slots=True)
class FileIndex:
    """A generation's `files.json` with its `files-delta.json` applied."""

    state: dict[str, Any]
    index: dict[str, list[int]]
    base_state: dict[str, Any]
    base_index: dict[str, list[int]]
    delta: dict[str, list[int] | None]
    delta_sizes: dict[int, int]
    version: int | None


def read_file_index(gen_dir: Path) -> FileIndex:
    """Read (and verify) a generation's file state and segment index, delta applied."""
    data = sealed.read_packed_json(Path(gen_dir) / FILES_JSON, "files")
    base_state = data["state"]
    segs = data.get("segments") or {}
    base_index = {p: list(e) for p, e in (segs.get("files") or {}).items()}
    delta = read_delta(gen_dir)
    if delta is None:
        return FileIndex(base_state, base_index, base_state, base_index, {}, {},
                         segs.get("version"))  # fmt: skip
    overrides: dict[str, list[int] | None] = {
        p: (list(e) if e is not None else None) for p, e in delta["index"].items()
    }
    index = dict(base_index)
    for p, e in overrides.items():
        if e is None:
            index.pop(p, None)
        else:
            index[p] = e
    sizes = {int(k): int(v) for k, v in (delta.get("sizes") or {}).items()}
    return FileIndex(apply_state_delta(base_state, delta["state"]), index, base_state,
                     base_index, overrides, sizes, segs.get("version"))  # fmt: skip


def stored_rows(gen_dir: Path) -> tuple[bytes, dict[str, Any]]:
    """A generation's chunks (the segments' JSON Lines, segment by segment, as a from-scratch
    build writes them) and extraction (path -> [digest, row]), delta applied: what an
    incremental build must store identically to a from-scratch one."""
    fi = read_file_index(gen_dir)
    counts = [0] * SEGMENTS
    for p, e in fi.index.items():
        counts[segment_of(p)] += e[2]
    view = SegmentChunks(gen_dir, counts, fi.index, fi.delta)
    files = RowFiles(gen_dir)
    try:
        chunks = b"".join(view._payload(n) for n in range(SEGMENTS) if counts[n])
        extraction = {p: json.loads(blocks.raw(files.sliced(p, e, "extract"), gen_dir))
                      for p, e in fi.index.items()}  # fmt: skip
    finally:
        view.close()
        files.close()
    return chunks, extraction
