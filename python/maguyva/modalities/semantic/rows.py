"""Writing one segment: each file's rows (full vector, else head, else pending), the code
and float matrices assembled from copied runs and fresh vectors, and the segment's files."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np

from maguyva.modalities.semantic.embed import ProviderIdentity
from maguyva.modalities.semantic.queue import (
    END,
    HASH,
    HEAD_HASH,
    ID,
    KIND,
    NAME,
    START,
    Entry,
    Have,
)
from maguyva.modalities.semantic.segments import seg_file


@dataclass(slots=True)
class PathRows:
    """One file's part of a generation: the segment holding its rows and its first row there,
    its rows' chunk ids and vector hashes, the ids of its partial and pending chunks, each
    row's [start line, end line, kind, name]. `seg` is "" while the rows are not placed yet (a
    changed file's, during a build)."""

    seg: str
    first: int
    ids: list[str]
    hashes: list[str]
    partial: list[str]
    pending: list[str]
    info: list[tuple[int, int, str, str | None]]


def path_rows_of(entries: list[Entry], have: Have) -> PathRows:
    """Each chunk takes its full vector, else its head's (body pending), else nothing."""
    ids: list[str] = []
    hashes: list[str] = []
    partial, pending = [], []
    info = []
    for e in entries:
        if e[HASH] in have:
            ids.append(e[ID])
            hashes.append(e[HASH])
        elif e[HEAD_HASH] in have:
            ids.append(e[ID])
            hashes.append(e[HEAD_HASH])
            partial.append(e[ID])
        else:
            pending.append(e[ID])
            continue
        info.append((e[START], e[END], e[KIND], e[NAME]))
    return PathRows("", 0, ids, hashes, partial, pending, info)


Run = list  # [dst, segment, src, count]: rows dst.. <- the previous generation's rows src..


def add_run(runs: list[Run], dst: int, seg: str, src: int, count: int) -> None:
    """Append rows dst.. <- previous rows src.. of segment `seg` to `runs`, extending the
    last run when contiguous."""
    if (
        runs
        and runs[-1][1] == seg
        and runs[-1][0] + runs[-1][3] == dst
        and (runs[-1][2] + runs[-1][3] == src)
    ):
        runs[-1][3] += count
    elif count:
        runs.append([dst, seg, src, count])


def assemble(
    n: int,
    runs: list[Run],
    fresh: list[tuple[int, str]],
    identity: ProviderIdentity,
    vectors: dict[str, tuple[np.ndarray, np.ndarray | None]],
    sources: dict[str, tuple[np.ndarray, np.ndarray | None]],
    float_dtype: type = np.float16,
) -> tuple[np.ndarray, np.ndarray | None]:
    """The code matrix (and float matrix when every row has floats) of one segment in row
    order: runs of the previous generation's rows copied as slices ([dst, segment, src,
    count]), and the rows in `fresh` ((row, hash)) from `vectors`. Floats are assembled in the
    stored dtype (float16: previous rows are copied as they are, new ones rounded once, as
    `astype` of a float32 matrix would)."""
    codes = np.zeros((n, identity.width), dtype=np.uint8)
    have_floats = n > 0 and all(sources[r[1]][1] is not None for r in runs)
    have_floats = have_floats and all(vectors[h][1] is not None for _, h in fresh)
    floats = np.zeros((n, identity.dim), float_dtype) if have_floats else None
    for dst, seg, src, count in sorted(runs, key=lambda r: (r[1], r[2])):  # file order
        prev_codes, prev_floats = sources[seg]
        codes[dst : dst + count] = prev_codes[src : src + count]
        if floats is not None and prev_floats is not None:
            floats[dst : dst + count] = prev_floats[src : src + count]
    for i, h in fresh:
        code, vec = vectors[h]
        codes[i] = code
        if floats is not None and vec is not None:
            floats[i] = vec
    return codes, floats


def write_segment(
    out: Path,
    seg: str,
    codes: np.ndarray,
    floats: np.ndarray | None,
    ordered: list[tuple[str, PathRows]],
) -> int:
    """A segment's files: codes, floats, chunk ids, vector hashes, the path table in path
    order ([path, first row, rows]: what orders rows across segments and names a hit's file)
    the partial and pending chunk ids of its files that have any ([path, partial, pending]:
    read by tools, never by a search) and each row's [start line, end line, kind, name] (what
    a hit shows: a search reads no chunk); returns the table's length."""
    np.save(out / seg_file(seg, "codes.npy"), codes)
    if floats is not None:
        np.save(out / seg_file(seg, "floats.npy"), floats.astype(np.float16, copy=False))
    ids = list(chain.from_iterable(pr.ids for _, pr in ordered))
    hashes = list(chain.from_iterable(pr.hashes for _, pr in ordered))
    table = [[p, pr.first, len(pr.ids)] for p, pr in ordered if pr.ids or pr.pending]
    waiting = [[p, pr.partial, pr.pending] for p, pr in ordered if pr.partial or pr.pending]
    info = list(chain.from_iterable(pr.info for _, pr in ordered))
    for name, value in (("ids.json", ids), ("hashes.json", hashes), ("paths.json", table),
                        ("pending.json", waiting), ("chunks.json", info)):  # fmt: skip
        (out / seg_file(seg, name)).write_text(json.dumps(value), encoding="utf-8")
    return len(table)


def link(src: Path, dst: Path) -> None:
    """Share an immutable segment file with the previous generation (copy if links fail)."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)
