"""The semantic part's on-disk format: segment file names, the segment list in `meta.json`,
the format check, and reading a segment's files (decoded once, memory-mapped)."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from maguyva.errors import CorruptIndexError, IndexVersionError
from maguyva.modalities.semantic.embed import ProviderIdentity
from maguyva.store.identity import identity, may_serve

FORMAT_VERSION = 2
"""1: codes.npy + floats.npy (float16) + ids.json + meta.json; later additions that older
readers ignore: hashes.json (content hash of each row's embedded text, for reuse by the next
build), meta `partial_ids` (rows holding a head vector, body pending).
2: segments (meta `segments`: [{name, rows, deleted, floats}], the base first): the base's
files are named as in format 1, a delta's `delta-NNNNNN.codes.npy` ...; every segment has a
path table (`paths.json`: [path, first row, rows]) and may have tombstoned rows. A format-1
reader would miss the deltas and the tombstones, so it refuses format 2 (unknown format);
format 1 is read as one base segment without tombstones."""
READ_FORMATS = (1, 2)
BASE = "base"


def seg_file(seg: str, name: str) -> str:
    """A segment's file name: the base's are `codes.npy`, `ids.json`, ... (as in format 1),
    a delta's `delta-000003.codes.npy`, ..."""
    return name if seg == BASE else f"{seg}.{name}"


SEGMENT_FILES = (
    "codes.npy", "floats.npy", "ids.json", "hashes.json", "paths.json", "pending.json",
    "chunks.json",
)  # fmt: skip


def segments_of(meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The segments a semantic `meta.json` lists ([{name, rows, deleted}]); format 1 has one,
    the base, without tombstones."""
    if meta.get("format") == 1:
        return [{"name": BASE, "rows": int(meta.get("embedded", 0)), "deleted": [],
                 "entries": 0, "gone": [], "floats": bool(meta.get("rescore"))}]  # fmt: skip
    segments = meta.get("segments")
    if not isinstance(segments, list) or not segments or segments[0].get("name") != BASE:
        raise CorruptIndexError("semantic meta.json: no segment list starting with the base")
    return segments


def check_format(d: Path, meta: dict[str, Any]) -> None:
    """Refuse a semantic part this code cannot read, clearly."""
    fmt = meta.get("format")
    if isinstance(fmt, int) and fmt > FORMAT_VERSION:
        raise IndexVersionError(
            f"{d}: semantic format {fmt} was written by a newer Maguyva (this one reads "
            f"{', '.join(map(str, READ_FORMATS))}); upgrade Maguyva or rebuild the index"
        )
    if fmt not in READ_FORMATS:
        raise CorruptIndexError(f"{d}: unknown semantic format {fmt!r}")


_READ_CACHE: OrderedDict[tuple[int, int, int, int], tuple[Path, Any]] = OrderedDict()
"""File identity -> (the path it was last found at, its decoded JSON)."""
_READ_CACHE_SIZE = 64  # files: a base and up to 8 deltas of a few indexes, 3 files each
_read_lock = threading.Lock()


def read_json(path: Path) -> Any:
    """A segment's JSON file, decoded once per file (segment files are immutable and shared
    by hard links between generations: a reader reopening a new generation decodes only the
    new delta's, not the base's ids again; `may_serve` says when a link is the same file)."""
    key = identity(path)
    with _read_lock:
        got = _READ_CACHE.get(key)
    if got is not None and may_serve(got[0], path, key):
        with _read_lock:
            _READ_CACHE[key] = (path, got[1])
            _READ_CACHE.move_to_end(key)
        return got[1]
    value = json.loads(path.read_bytes())
    with _read_lock:
        _READ_CACHE[key] = (path, value)
        while len(_READ_CACHE) > _READ_CACHE_SIZE:
            _READ_CACHE.popitem(last=False)
    return value


def open_sources(
    d: Path, segments: list[dict[str, Any]], identity: ProviderIdentity, rescore: bool
) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    """Each segment's codes and floats, memory-mapped; ValueError when a shape is wrong."""
    sources: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
    for s in segments:
        name, rows = s["name"], int(s["rows"])
        codes = np.load(d / seg_file(name, "codes.npy"), mmap_mode="r")
        floats = np.load(d / seg_file(name, "floats.npy"), mmap_mode="r") if rescore else None
        if codes.shape != (rows, identity.width) or (
            floats is not None and floats.shape != (rows, identity.dim)
        ):
            raise ValueError(f"segment {name!r}: shape {codes.shape}, expected {rows} rows")
        sources[name] = (codes, floats)
    return sources
