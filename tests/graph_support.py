"""Building a graph from a small repository written by a test (shared by the graph tests)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

from maguyva.modalities.graph import MODALITY
from maguyva.modalities.graph import store as gstore
from maguyva.modalities.graph.incremental import LOG_FILE
from maguyva.modalities.protocol import BuildContext
from maguyva.modalities.structural.modality import extract_repository
from maguyva.repo.changes import ChangeSet
from maguyva.repo.walk import walk_repository


def build_graph(root: Path, repo: dict[str, str], out: Path) -> Path:
    """Write `repo` (path -> source, dedented) under `root`, extract it with one process and
    build the graph modality into `out`; returns `out` for `MODALITY.open`/`GraphSearcher.open`."""
    for rel, text in repo.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text).lstrip())
    files = walk_repository(root).files
    extraction, chunks, _ = extract_repository(root, files, {"jobs": 1})
    MODALITY.build(BuildContext(root, out, files, chunks, extraction, {}, out))
    return out


def build_with(modality, root: Path, out: Path, previous=None, modified=(), config=None) -> dict:
    """Build `modality` (a long-running writer's `GraphModality`, say) for `root` into `out`,
    as an update from `previous` that modified `modified`; returns the build report."""
    files = walk_repository(root).files
    extraction, chunks, _ = extract_repository(root, files, {"jobs": 1})
    out.mkdir(parents=True, exist_ok=True)
    ctx = BuildContext(root, out, files, chunks, extraction, config or {}, out,
                       previous_dir=previous, changes=ChangeSet(modified=list(modified)))  # fmt: skip
    return modality.build(ctx)


def assert_same_graph(a: Path, b: Path) -> None:
    """The graphs under generations `a` and `b` are equal section for section, edge log too."""
    left, right = gstore.read(a / "graph")[0], gstore.read(b / "graph")[0]
    assert left.keys() == right.keys()
    for name in left:
        assert np.array_equal(left[name], right[name]), name
    log_a, log_b = gstore.read(a / "graph", LOG_FILE)[0], gstore.read(b / "graph", LOG_FILE)[0]
    for name in log_a:
        assert np.array_equal(log_a[name], log_b[name]), f"edge log {name}"
