"""How a build writes its rows: one new base, a fold of the deltas into a new base, or a
delta segment with the changed files' rows (tombstoning the rows they replace)."""

from __future__ import annotations

from typing import Any

from maguyva.modalities.semantic.queue import Entry
from maguyva.modalities.semantic.rows import PathRows
from maguyva.modalities.semantic.segments import BASE
from maguyva.modalities.semantic.state import WriterState

MAX_DELTAS = 8
"""Delta segments kept; one more and they are compacted into the new delta."""


FOLD_RATIO = 0.05
FOLD_MIN_ROWS = 512
"""The deltas are folded into a new base when their live rows plus the base's tombstones
exceed FOLD_RATIO of the base's rows (and FOLD_MIN_ROWS)."""


def choose_layout(
    prev: WriterState | None,
    old_rows: dict[str, PathRows],
    path_rows: dict[str, PathRows],
    by_path: dict[str, list[Entry]],
    affected: set[str],
    fresh: list[str],
) -> tuple[list[dict[str, Any]], str, int, set[str]]:
    """How this build writes: "full" (one base; no previous generation of this writer to
    extend), "fold" (every row into a new base: the deltas and tombstones passed
    `FOLD_RATIO` of the base) or "delta" (the rows of the files that changed, or got a
    vector, in a new delta segment; the others stay where they are). Returns the segments
    kept from the previous generation with their new tombstones (the rows of files that
    changed or left), the layout, the next delta's number and the files whose unchanged
    rows move into the new delta (all the deltas', when there would be more than
    `MAX_DELTAS`: they are compacted into one). `affected`: the files whose rows were
    planned again (changed, left, or got a vector); `fresh`: those still present."""
    if prev is None:
        return [], "full", 1, set()
    segments = [dict(s, deleted=set(s["deleted"]), gone=set(s["gone"])) for s in prev.segments]
    by_name = {s["name"]: s for s in segments}

    def bury(path: str, old: PathRows) -> None:
        if old.ids or old.pending:  # listed in its segment's path table
            by_name[old.seg]["deleted"].update(range(old.first, old.first + len(old.ids)))
            by_name[old.seg]["gone"].add(path)

    for path in affected:
        old = old_rows.get(path)
        if old is not None and (path not in by_path or path_rows.get(path) is not old):
            bury(path, old)
    live = [s for s in segments[1:] if len(s["gone"]) < s["entries"]]
    new_rows = sum(len(path_rows[p].ids) for p in fresh)
    moving: set[str] = set()
    if len(live) + bool(fresh) > MAX_DELTAS:
        for path, pr in path_rows.items():
            if pr.seg and pr.seg != BASE:
                moving.add(path)
                bury(path, pr)
                new_rows += len(pr.ids)
        live = []
    base = segments[0]
    delta_rows = sum(s["rows"] - len(s["deleted"]) for s in live) + new_rows
    if delta_rows + len(base["deleted"]) > max(FOLD_MIN_ROWS, FOLD_RATIO * base["rows"]):
        return [], "fold", prev.next, set()
    kept = [base, *live]
    kept = [dict(s, deleted=sorted(s["deleted"]), gone=sorted(s["gone"])) for s in kept]
    return kept, "delta", prev.next, moving
