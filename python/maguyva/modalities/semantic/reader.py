"""Reading a generation's semantic part: its segments for a searcher, and its rows and pending
chunks in logical order for tools and tests."""

from __future__ import annotations

import json
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from maguyva.errors import CorruptIndexError
from maguyva.modalities.semantic.embed import ProviderIdentity
from maguyva.modalities.semantic.search import Segment
from maguyva.modalities.semantic.segments import check_format, read_json, seg_file, segments_of


def load_segments(
    d: Path, meta: dict[str, Any], built_with: ProviderIdentity
) -> tuple[list[Segment], np.ndarray | None]:
    """Every segment of `d` (codes and floats memory-mapped, shapes checked) and the centre
    (providers whose codes are centred); CorruptIndexError when a file is missing or wrong."""
    segments = []
    try:
        rescore = bool(meta.get("rescore"))
        for s in segments_of(meta):
            name, rows = s["name"], int(s["rows"])
            codes = np.load(d / seg_file(name, "codes.npy"), mmap_mode="r")
            ids = read_json(d / seg_file(name, "ids.json"))
            floats = None
            if rescore and rows:
                floats = np.load(d / seg_file(name, "floats.npy"), mmap_mode="r")
            if (
                codes.dtype != np.uint8
                or codes.ndim != 2
                or codes.shape != (len(ids), built_with.width)
                or len(ids) != rows
            ):
                raise CorruptIndexError(
                    f"{d}: segment {name!r}: codes shape {codes.shape} does not match "
                    f"{len(ids)} ids and {rows} rows"
                )
            if floats is not None and floats.shape != (rows, built_with.dim):
                raise CorruptIndexError(f"{d}: segment {name!r}: floats shape {floats.shape}")
            table = None
            if meta["format"] >= 2:
                table = read_json(d / seg_file(name, "paths.json"))
            info = None
            if table is not None and (d / seg_file(name, "chunks.json")).exists():
                info = read_json(d / seg_file(name, "chunks.json"))
                if len(info) != rows:
                    raise CorruptIndexError(f"{d}: segment {name!r}: {len(info)} chunk "
                                            f"entries for {rows} rows")  # fmt: skip
            segments.append(Segment(name, codes, floats, ids, s["deleted"], table, info))
        centre = np.load(d / "centre.npy") if (d / "centre.npy").exists() else None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CorruptIndexError(f"{d}: {exc}") from None
    return segments, centre


def pending_of(sem_dir: Path) -> tuple[list[str], list[str]]:
    """The pending and the partial chunk ids of a generation's semantic part, in row order
    (from the path tables of format 2, from meta.json in format 1)."""
    d = Path(sem_dir)
    meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
    check_format(d, meta)
    if meta["format"] < 2:
        return list(meta.get("pending_ids", [])), list(meta.get("partial_ids", []))
    entries = []
    for s in segments_of(meta):
        dead = set(s["gone"])
        waiting = json.loads((d / seg_file(s["name"], "pending.json")).read_bytes())
        entries += [t for t in waiting if t[0] not in dead]
    entries.sort(key=lambda t: t[0])
    return (list(chain.from_iterable(t[2] for t in entries)),
            list(chain.from_iterable(t[1] for t in entries)))  # fmt: skip


def read_rows(sem_dir: Path) -> dict[str, Any]:
    """A generation's live rows in logical order (a from-scratch build's row order: by file,
    then position), whatever its segments: ids, hashes, codes, floats, [start, end, kind,
    name] (for tests and tools)."""
    d = Path(sem_dir)
    meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
    check_format(d, meta)
    keyed = []
    for s in segments_of(meta):
        name, gone, dead = s["name"], set(s["deleted"]), set(s.get("gone", ()))
        ids = json.loads((d / seg_file(name, "ids.json")).read_bytes())
        hashes = json.loads((d / seg_file(name, "hashes.json")).read_bytes())
        codes = np.load(d / seg_file(name, "codes.npy"))
        floats = (
            np.load(d / seg_file(name, "floats.npy")) if meta.get("rescore") and len(ids) else None
        )
        info: list[Any] = [None] * len(ids)
        if meta["format"] >= 2:
            table = json.loads((d / seg_file(name, "paths.json")).read_bytes())
            spans = [(t[0], t[1], t[2]) for t in table if t[0] not in dead]
            info = json.loads((d / seg_file(name, "chunks.json")).read_bytes())
        else:
            spans = [("", 0, len(ids))]
        for path, first, count in spans:
            for r in range(first, first + count):
                if r not in gone:
                    f = None if floats is None else floats[r].tobytes()
                    keyed.append(((path, r - first), ids[r], hashes[r], codes[r].tobytes(), f,
                                  info[r]))  # fmt: skip
    keyed.sort(key=lambda x: x[0])
    return {
        "paths": [x[0][0] for x in keyed],
        "info": [x[5] for x in keyed],
        "ids": [x[1] for x in keyed],
        "hashes": [x[2] for x in keyed],
        "codes": b"".join(x[3] for x in keyed),
        "floats": b"".join(x[4] for x in keyed) if meta.get("rescore") else None,
    }
