"""The graph follows: a small update committed before its graph, the graph one generation later.

A long-running writer (`maguyva watch`, `maguyva mcp --watch`) serves agents that edit a file
and ask about it a moment later. Of a one-file update on a 10k-file tree, the graph is most of
the time (its centrality is global: docs/graph.md), while text, structural and semantic answers
are ready in a fraction of it. With `graph_follows`, such an update commits twice (three
times when the index has a semantic backlog):

1. generation N: every modality but the graph built as usual, the semantic part embedding
   the edited files' chunks only; the graph's files hard-linked from N-1 and its manifest
   entry marked `behind` (the generation it reflects and the paths changed since). Readers
   get the edit's text, symbols and vectors at once; graph answers are N-1's, and say so
   (`GraphSearcher.behind`, `Response.notes`).
2. generation N+1: N's files hard-linked, the graph patched for the same change set, nothing
   behind.
3. generation N+2, when N's semantic build left a backlog (chunks of other files without a
   vector: a cap, a time budget, a provider failure): N+1's files hard-linked, the semantic
   part built again to embed it for a slice of time (`BACKLOG_SLICE_S`). Only then does the
   update return.

A writer killed between them leaves the last committed one current and searchable; the next
update sees a graph behind and builds it (in full: what a patch would need is gone with the
process). Off by default for one-shot runs (`maguyva index`): nobody reads between the
commits. docs/durability-edit-to-answer.md, "The graph follows", has the measurements.

Semantic follows a large build the same way (never gate): a first build, a rebuild, a large
update or a run that resumes an unfinished embedding commits its first generation with the
semantic part planned but nothing new embedded (`first_config`), so text, structural and
graph answer within seconds, then embeds in slices of `SEMANTIC_SLICE_S`, each committed as
a generation of its own (`slice_config`), until nothing is left, the budget or the cap is
spent or the provider fails. Killed in between, the next `maguyva index` resumes: the vectors
of the committed generations and of the embedding cache are never asked for again.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from maguyva.modalities.followups import (
    BACKLOG,
    BEHIND,
    EMBED_GROUP_KEY,
    GRAPH,
    backlog,
    behind,
)
from maguyva.repo.changes import ChangeSet

__all__ = ["BACKLOG", "BEHIND", "EMBED_GROUP_KEY", "GRAPH", "backlog", "behind"]

# `graph_follows` and `semantic_follows` are declared in `maguyva.config.SCHEMA`

LABELS = {"graph": "graph", "semantic": "semantic backlog"}  # what a follow-up builds
TIMINGS = {"graph": "graph", "semantic": "backlog"}  # its keys in `timings_s` and manifest


BACKLOG_SLICE_S = 2.0
"""At most this long embedding a backlog after an edit (less if `semantic_time_budget_s` says
so): a backlog of hours (a large repository indexed headers-first or under a budget) must not
keep the watcher from the next edit; the rest waits for the next edit or `maguyva index`."""


URGENT_SLICE_S = 0.1
URGENT_GROUP = 8
"""The first generation embeds the edited files' chunks for about `URGENT_SLICE_S` (texts
`URGENT_GROUP` at a time, checking the time between): one edited function is one or two
chunks, but a new 3,000-line file is ~150, ~8 s of the local model, and its text and symbols
must not wait for them. What is left goes first in the backlog's generation."""


def urgent_config(config: dict[str, Any]) -> dict[str, Any]:
    """The writer's configuration for the first generation's semantic build: the edited
    files' chunks only, for `URGENT_SLICE_S` (or the configured budget if shorter)."""
    budget = config.get("semantic_time_budget_s")
    slice_s = URGENT_SLICE_S if budget is None else min(float(budget), URGENT_SLICE_S)
    return {**config, BACKLOG: False, "semantic_time_budget_s": slice_s,
            EMBED_GROUP_KEY: URGENT_GROUP}  # fmt: skip


def backlog_config(config: dict[str, Any]) -> dict[str, Any]:
    """The writer's configuration with the backlog's time slice (`BACKLOG_SLICE_S`)."""
    budget = config.get("semantic_time_budget_s")
    slice_s = BACKLOG_SLICE_S if budget is None else min(float(budget), BACKLOG_SLICE_S)
    return {**config, "semantic_time_budget_s": slice_s}


SEMANTIC_SLICE_S = 15.0
"""A large build's embedding commits a generation at least this often: coverage grows in
steps a reader sees, and a kill loses at most a slice (its vectors stay in the cache)."""


def first_config(config: dict[str, Any]) -> dict[str, Any]:
    """The semantic configuration of a large build's first generation: plan every chunk,
    reuse every vector the previous generation and the cache hold, embed nothing new (the
    slices that follow do)."""
    return {**config, "semantic_time_budget_s": 0.0}


def slice_config(config: dict[str, Any], spent_s: float, embedded: int) -> dict[str, Any] | None:
    """The configuration of the next semantic slice, or None when the update's budget
    (`semantic_time_budget_s`) or cap (`semantic_max_chunks`) is spent: both bound the whole
    update, not each slice."""
    budget, cap = config.get("semantic_time_budget_s"), config.get("semantic_max_chunks")
    slice_s = SEMANTIC_SLICE_S
    if budget is not None:
        if spent_s >= float(budget):
            return None
        slice_s = min(slice_s, float(budget) - spent_s)
    out = {**config, "semantic_time_budget_s": slice_s}
    if cap is not None:
        if embedded >= int(cap):
            return None
        out["semantic_max_chunks"] = int(cap) - embedded
    return out


def semantic_left(manifest: dict[str, Any]) -> int:
    """Texts (heads and bodies) the semantic part of a generation still has to embed; 0 when
    it is complete or not built."""
    status = manifest.get("modalities", {}).get("semantic", {})
    if not isinstance(status, dict) or not status.get("built"):
        return 0
    report = status.get("report") or {}
    if "left" in report:
        return int(report["left"] or 0)
    partial = int(report.get("partial") or 0) if report.get("phases") != "heads" else 0
    return int(report.get("pending") or 0) + partial  # written before `left` was reported


def changed_paths(changes: ChangeSet) -> list[str]:
    """Every path whose graph rows an update changes (both ends of a rename)."""
    out = {*changes.added, *changes.modified, *changes.deleted}
    for old, new in changes.renamed:
        out.update((old, new))
    return sorted(out)


def link_behind(current_dir: Path, current: dict[str, Any], tmp: Path,
                changes: ChangeSet) -> dict[str, Any]:  # fmt: skip
    """Hard-link the current generation's graph files into the generation being built and
    return its graph status, marked behind by `changes`. OSError propagates (the generation
    is then aborted, like any failed write)."""
    status = current["modalities"][GRAPH]
    source, target = current_dir / GRAPH, tmp / GRAPH
    target.mkdir(parents=True, exist_ok=True)
    for entry in os.scandir(source):
        if entry.is_file(follow_symlinks=False):
            os.link(entry.path, target / entry.name)
    return {**status, BEHIND: {"generation": current["generation"],
                               "paths": changed_paths(changes)}}  # fmt: skip


def link_generation(source: Path, tmp: Path, skip: set[str]) -> int:
    """Hard-link every file of the generation `source` into `tmp`, except the top-level
    entries named in `skip`; returns how many were linked."""
    linked = 0
    for dirpath, dirnames, filenames in os.walk(source):
        rel = os.path.relpath(dirpath, source)
        if rel == ".":
            dirnames[:] = [d for d in dirnames if d not in skip]
            filenames = [f for f in filenames if f not in skip]
        into = tmp if rel == "." else tmp / rel
        into.mkdir(parents=True, exist_ok=True)
        for name in filenames:
            os.link(os.path.join(dirpath, name), into / name)
            linked += 1
    return linked


def wanted(config: dict[str, Any], default: bool) -> bool:
    """Is `graph_follows` on (the configuration's value, else the writer's default)?"""
    value = config.get("graph_follows")
    return default if value is None else bool(value)
