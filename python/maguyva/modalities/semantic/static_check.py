"""Checking a generation's static tier (fsck): its three files (`static_part.FILES`) agree
with each other, with the width of the model whose space they share, and with the build
report's count of pending chunks they answer for.

A static part is hard-linked into later generations while chunks stay pending, so its rows
may name chunks the transformer has reached since (rows the reader leaves out): the count
checked is that of its rows whose chunk is still pending in this generation, against
`meta["static"]`, and each such row must name the file its pending chunk is listed under."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from maguyva.modalities.semantic.embed import ProviderIdentity
from maguyva.modalities.semantic.segments import seg_file, segments_of
from maguyva.modalities.semantic.static_part import FILES

CODES, FLOATS, IDS = FILES


def static_tier_problems(d: Path, meta: dict[str, Any], identity: ProviderIdentity) -> list[str]:
    """One line per problem of the static part of `d` (a generation's `semantic/`); [] when
    sound or absent (absent and counted by the build report is a problem)."""
    present = [f for f in FILES if (d / f).exists()]
    counted = int(meta.get("static") or 0)
    if not present:
        return [f"{d}: static tier: the build report counts {counted} static rows but "
                f"{', '.join(FILES)} are missing"] if counted else []  # fmt: skip
    missing = [f for f in FILES if f not in present]
    if missing:
        return [f"{d}: static tier: {', '.join(missing)} missing beside {', '.join(present)}"]
    problems: list[str] = []
    codes = _array(d / CODES, np.uint8, identity.width, problems)
    floats = _array(d / FLOATS, np.float16, identity.dim, problems)
    rows = _rows(d / IDS, problems)
    if rows is None:
        return problems
    for name, array in ((CODES, codes), (FLOATS, floats)):
        if array is not None and array.shape[0] != len(rows):
            problems.append(f"{d}: static tier: {name} holds {array.shape[0]} rows, {IDS} "
                            f"lists {len(rows)}")  # fmt: skip
    waiting = _pending_paths(d, meta)
    answering = [(key, path) for key, path in rows if key in waiting]
    for key, path in answering:
        if waiting[key] != path:
            problems.append(f"{d}: static tier: row of chunk {key} names {path!r}, the chunk "
                            f"is pending under {waiting[key]!r}")  # fmt: skip
            break
    if len(answering) != counted:
        problems.append(f"{d}: static tier: {len(answering)} rows of pending chunks, the build "
                        f"report counts {counted}")  # fmt: skip
    return problems


def _array(path: Path, dtype: Any, width: int, problems: list[str]) -> np.ndarray | None:
    """The array of `path`, memory-mapped, when its header, size, dtype and width are right
    (a cut file is named as such, not as numpy's mmap error)."""
    label = f"{path.parent}: static tier: {path.name}"
    try:
        with open(path, "rb") as fh:
            major, _minor = np.lib.format.read_magic(fh)
            read_header = (np.lib.format.read_array_header_1_0 if major == 1
                           else np.lib.format.read_array_header_2_0)  # fmt: skip
            shape, _, found = read_header(fh)
            start = fh.tell()
        if found != np.dtype(dtype) or len(shape) != 2 or shape[1] != width:
            problems.append(f"{label}: {found} {shape}, expected (rows, {width}) {np.dtype(dtype)}")
            return None
        need = start + int(np.prod(shape)) * found.itemsize
        size = os.stat(path).st_size
        if size != need:
            problems.append(f"{label}: {size:,} bytes, its header says {need:,} (truncated or "
                            "extended)")  # fmt: skip
            return None
        array: np.ndarray = np.load(path, mmap_mode="r")
        return array
    except (OSError, ValueError, EOFError) as exc:
        problems.append(f"{label}: unreadable ({exc})")
        return None


def _rows(path: Path, problems: list[str]) -> list[tuple[str, str]] | None:
    """The [chunk id, path] rows of `path`, when well formed and each chunk listed once."""
    label = f"{path.parent}: static tier: {path.name}"
    try:
        rows = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        problems.append(f"{label}: unreadable ({exc})")
        return None
    if not isinstance(rows, list) or not all(
        isinstance(r, list) and len(r) == 2 and all(isinstance(x, str) and x for x in r)
        for r in rows
    ):
        problems.append(f"{label}: not a list of [chunk id, path] rows")
        return None
    keys = [r[0] for r in rows]
    if len(set(keys)) != len(keys):
        problems.append(f"{label}: {len(keys) - len(set(keys))} chunk ids listed twice")
    return [(r[0], r[1]) for r in rows]


def _pending_paths(d: Path, meta: dict[str, Any]) -> dict[str, str]:
    """chunk id -> path of every chunk pending in `d` (its live files' pending lists);
    {} when the segments cannot say (their own checks report why)."""
    if meta.get("format", 1) < 2:  # format 1 has no static part
        return {}
    found: dict[str, str] = {}
    try:
        for s in segments_of(meta):
            dead = set(s.get("gone", ()))
            for path, _partial, pending in json.loads(
                (d / seg_file(s["name"], "pending.json")).read_bytes()
            ):
                if path not in dead:
                    found.update(dict.fromkeys(pending, path))
    except (OSError, ValueError, TypeError, KeyError):
        return {}
    return found
