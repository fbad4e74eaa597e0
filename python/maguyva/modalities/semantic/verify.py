"""Checking a generation's semantic part (fsck): the segment list, every segment's files and
shapes, the tombstones, the path tables and the live row count against the build report."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from maguyva.errors import MaguyvaError
from maguyva.modalities.semantic.embed import ProviderIdentity
from maguyva.modalities.semantic.segments import check_format, seg_file, segments_of
from maguyva.modalities.semantic.static_check import static_tier_problems


@dataclass(slots=True)
class _Tally:
    """What the segments add up to, checked against `meta.json` at the end."""

    problems: list[str] = field(default_factory=list)
    live_paths: dict[str, str] = field(default_factory=dict)  # path -> segment holding it
    live: int = 0
    pending: int = 0
    partial: int = 0


def verify(directory: Path) -> list[str]:
    """Problems of a generation's semantic part (fsck): the segment list, every segment's
    files and shapes, the tombstones (in range, sorted, unique), the path tables (each
    live file's rows in one segment, the rows of every segment covered once) and the live
    row count against the build report; then the static tier's files (`static_check`)."""
    d = Path(directory)
    try:
        meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
        check_format(d, meta)
        identity = ProviderIdentity.from_dict(meta["provider"])
        segments = segments_of(meta)
    except (OSError, ValueError, KeyError, TypeError, MaguyvaError) as exc:
        return [f"{d / 'meta.json'}: {exc}"]
    tally = _Tally()
    problems = tally.problems
    names = [s.get("name") for s in segments]
    if len(set(names)) != len(names):
        problems.append(f"{d}: segment names repeat: {names}")
    for s in segments:
        _check_segment(d, meta, identity, s, tally)
    pending, partial = tally.pending, tally.partial
    if meta["format"] >= 2 and (pending, partial) != (meta.get("pending"), meta.get("partial")):
        problems.append(f"{d}: {pending} pending and {partial} partial chunks in the path "
                        f"tables, the build report says {meta.get('pending')} and "
                        f"{meta.get('partial')}")  # fmt: skip
    if tally.live != int(meta.get("embedded", tally.live)):
        problems.append(f"{d}: {tally.live} live rows, the build report says {meta['embedded']}")
    problems.extend(static_tier_problems(d, meta, identity))
    return problems


def _check_segment(
    d: Path, meta: dict[str, Any], identity: ProviderIdentity, s: dict[str, Any], tally: _Tally
) -> None:
    """One segment's files and shapes, its tombstones, then its path table."""
    problems = tally.problems
    name = s.get("name")
    try:
        rows, deleted = int(s["rows"]), list(s["deleted"])
        codes = np.load(d / seg_file(name, "codes.npy"), mmap_mode="r")
        ids = json.loads((d / seg_file(name, "ids.json")).read_bytes())
        hashes = json.loads((d / seg_file(name, "hashes.json")).read_bytes())
        floats = None
        if bool(meta.get("rescore")) and rows:
            floats = np.load(d / seg_file(name, "floats.npy"), mmap_mode="r")
        table = waiting = None
        if meta["format"] >= 2:
            table = json.loads((d / seg_file(name, "paths.json")).read_bytes())
            waiting = json.loads((d / seg_file(name, "pending.json")).read_bytes())
            info = json.loads((d / seg_file(name, "chunks.json")).read_bytes())
            if len(info) != rows:
                problems.append(f"{d}: segment {name!r}: {len(info)} chunk entries, "
                                f"{rows} rows")  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError) as exc:
        problems.append(f"{d}: segment {name!r}: {exc}")
        return
    if codes.dtype != np.uint8 or codes.shape != (rows, identity.width):
        problems.append(f"{d}: segment {name!r}: codes {codes.dtype} {codes.shape}, "
                        f"expected ({rows}, {identity.width}) uint8")  # fmt: skip
    if floats is not None and floats.shape != (rows, identity.dim):
        problems.append(f"{d}: segment {name!r}: floats {floats.shape}, expected "
                        f"({rows}, {identity.dim})")  # fmt: skip
    if len(ids) != rows or len(hashes) != rows:
        problems.append(f"{d}: segment {name!r}: {len(ids)} ids, {len(hashes)} hashes, "
                        f"{rows} rows")  # fmt: skip
    if deleted != sorted(set(deleted)) or any(not 0 <= r < rows for r in deleted):
        problems.append(f"{d}: segment {name!r}: tombstones unsorted, repeated or out "
                        "of range")  # fmt: skip
    gone = set(deleted)
    tally.live += rows - len(gone)
    if table is not None:
        _check_table(d, s, rows, gone, table, waiting, tally)


def _check_table(
    d: Path,
    s: dict[str, Any],
    rows: int,
    gone: set[int],
    table: list[Any],
    waiting: list[Any] | None,
    tally: _Tally,
) -> None:
    """A segment's path table: contiguous, covering its rows once, each live file in one
    segment, its tombstones exactly its removed files' rows; its pending lists counted."""
    problems, live_paths = tally.problems, tally.live_paths
    name = s.get("name")
    dead = set(s.get("gone", ()))
    at, tombstoned = 0, set()
    for entry in table:
        path, first, count = entry[0], int(entry[1]), int(entry[2])
        if first != at or count < 0:
            problems.append(f"{d}: segment {name!r}: path table gap or overlap at "
                            f"{path!r}")  # fmt: skip
            break
        at = first + count
        span = set(range(first, first + count))
        if path in dead:
            tombstoned |= span
            continue
        if path in live_paths:
            problems.append(f"{d}: {path!r} live in segments {live_paths[path]!r} and "
                            f"{name!r}")  # fmt: skip
        live_paths[path] = name
    listed = {e[0] for e in table}
    for path, partial_ids, pending_ids in waiting or ():
        if path not in listed:
            problems.append(f"{d}: segment {name!r}: {path!r} pending but not listed")
        elif path not in dead:
            tally.pending += len(pending_ids)
            tally.partial += len(partial_ids)
    if at != rows:
        problems.append(f"{d}: segment {name!r}: path table covers {at} of {rows} rows")
    elif tombstoned != gone:
        problems.append(f"{d}: segment {name!r}: tombstoned rows are not those of its "
                        "removed files")  # fmt: skip
    if len(table) != int(s.get("entries", len(table))) or not dead <= {e[0] for e in table}:
        problems.append(f"{d}: segment {name!r}: path table does not match meta.json")
