"""Incremental graph builds: replaying the previous generation's edge log for unchanged files
must give exactly the arrays of a build from scratch (same nodes, numbering, edges, lines,
confidences, centrality), and fall back to a full resolution when declarations change."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maguyva.changes import ChangeSet
from maguyva.graph import MODALITY
from maguyva.graph import store as gstore
from maguyva.graph.incremental import LOG_FILE
from maguyva.graph.modality import GraphModality
from maguyva.retriever import BuildContext
from maguyva.structural import extract_repository
from maguyva.walk import walk_repository

FIXTURES = Path(__file__).parent / "fixtures" / "graph"


def _build(root: Path, out: Path, previous: Path | None = None, config=None) -> dict:
    files = walk_repository(root).files
    extraction, chunks, _ = extract_repository(root, files, {"jobs": 1})
    out.mkdir(parents=True, exist_ok=True)
    ctx = BuildContext(root, out, files, chunks, extraction, config or {}, out,
                       previous_dir=previous)  # fmt: skip
    return MODALITY.build(ctx)


def _arrays(gen: Path) -> dict[str, np.ndarray]:
    return gstore.read(gen / "graph")[0]


def _assert_same(a: Path, b: Path) -> None:
    left, right = _arrays(a), _arrays(b)
    assert left.keys() == right.keys()
    for name in left:
        assert np.array_equal(left[name], right[name]), name
    log_a, log_b = gstore.read(a / "graph", LOG_FILE)[0], gstore.read(b / "graph", LOG_FILE)[0]
    for name in log_a:
        assert np.array_equal(log_a[name], log_b[name]), f"edge log {name}"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "python", root)
    return root


def test_body_edit_reuses_other_files_and_equals_a_full_build(repo, tmp_path):
    first = _build(repo, tmp_path / "g1")
    assert first["reused_files"] == 0
    svc = repo / "app" / "service.py"
    svc.write_text(
        svc.read_text().replace("return s.get(req)", "s.get(req)\n    return s._load(req)")
    )
    inc = _build(repo, tmp_path / "g2", previous=tmp_path / "g1")
    assert inc["reuse"].startswith("1 changed files resolved")
    assert inc["reused_files"] == first["files"] - 1
    full = _build(repo, tmp_path / "g3")
    _assert_same(tmp_path / "g2", tmp_path / "g3")
    assert inc["calls"] == full["calls"] and inc["edges"] == full["edges"]
    s = MODALITY.open(tmp_path / "g2", {})
    assert {h.path for h in s.callers("Store._load")} == {"app/store.py", "app/service.py"}


def test_declaration_change_resolves_everything(repo, tmp_path):
    _build(repo, tmp_path / "g1")
    util = repo / "app" / "util.py"
    util.write_text(util.read_text() + "\n\ndef added():\n    return 1\n")
    inc = _build(repo, tmp_path / "g2", previous=tmp_path / "g1")
    assert inc["reuse"] == "declarations changed" and inc["reused_files"] == 0
    _build(repo, tmp_path / "g3")
    _assert_same(tmp_path / "g2", tmp_path / "g3")


def test_unchanged_repository_replays_everything(repo, tmp_path):
    _build(repo, tmp_path / "g1")
    inc = _build(repo, tmp_path / "g2", previous=tmp_path / "g1")
    assert inc["reused_files"] == inc["files"]
    _assert_same(tmp_path / "g1", tmp_path / "g2")


def test_damaged_or_missing_log_means_a_full_build(repo, tmp_path):
    _build(repo, tmp_path / "g1")
    log = tmp_path / "g1" / "graph" / LOG_FILE
    data = bytearray(log.read_bytes())
    data[-5] ^= 0xFF
    log.write_bytes(bytes(data))
    inc = _build(repo, tmp_path / "g2", previous=tmp_path / "g1")
    assert inc["reused_files"] == 0 and "unusable" in inc["reuse"]
    inc = _build(repo, tmp_path / "g3", previous=tmp_path / "nowhere")
    assert inc["reused_files"] == 0
    _assert_same(tmp_path / "g2", tmp_path / "g3")


def test_another_edge_floor_is_not_replayed(repo, tmp_path):
    _build(repo, tmp_path / "g1")
    inc = _build(repo, tmp_path / "g2", previous=tmp_path / "g1", config={"graph_edge_floor": 0})
    assert inc["reused_files"] == 0 and "other resolution rules" in inc["reuse"]
    _build(repo, tmp_path / "g3", config={"graph_edge_floor": 0})
    _assert_same(tmp_path / "g2", tmp_path / "g3")


def _build_with(modality, root: Path, out: Path, previous=None, modified=(), config=None) -> dict:
    files = walk_repository(root).files
    extraction, chunks, _ = extract_repository(root, files, {"jobs": 1})
    out.mkdir(parents=True, exist_ok=True)
    ctx = BuildContext(root, out, files, chunks, extraction, config or {}, out,
                       previous_dir=previous, changes=ChangeSet(modified=list(modified)))  # fmt: skip
    return modality.build(ctx)


def test_a_writer_that_stays_up_patches_body_edits_exactly(repo, tmp_path):
    """Body-only edits through one modality object are patched in memory (no declaration
    pass, no replay of the log) and still give a full build's arrays and log, edit after
    edit; a declaration change falls back to a build."""
    writer = GraphModality()
    first = _build_with(writer, repo, tmp_path / "g0")
    assert first.get("mode") is None
    svc = repo / "app" / "service.py"
    text = svc.read_text()
    edits = [  # (new text, a declaration changed)
        (text.replace("return s.get(req)", "s.get(req)\n    return s._load(req)"), False),
        # every line moves (definitions, imports, calls); a call through a module import
        (
            "# moved\n\n"
            + text.replace("return s.get(req)", "app.util.normalize(req)\n    return s.get(req)"),
            False,
        ),
        (text.replace("return s.get(req)", "return helper_that_is_nowhere(s.get(req))"), False),
        ("import os\n" + text.replace("return s.get(req)", "return os.getcwd()"), True),
        (text, True),
        (text.replace("return s.get(req)", "return s.get(req) or Store()"), False),
    ]
    previous = tmp_path / "g0"
    for i, (body, declaration) in enumerate(edits, start=1):
        svc.write_text(body)
        report = _build_with(writer, repo, tmp_path / f"g{i}", previous, ["app/service.py"])
        assert report.get("mode") == (None if declaration else "patch"), (i, report["reuse"])
        _build_with(GraphModality(), repo, tmp_path / f"s{i}")  # from scratch, no memory
        _assert_same(tmp_path / f"g{i}", tmp_path / f"s{i}")
        previous = tmp_path / f"g{i}"
    s = MODALITY.open(previous, {})
    assert {h.path for h in s.callers("Store.get")} >= {"app/service.py"}


def test_memory_is_not_used_for_another_generation(repo, tmp_path):
    writer = GraphModality()
    _build_with(writer, repo, tmp_path / "g1")
    _build_with(GraphModality(), repo, tmp_path / "other")  # another writer's generation
    svc = repo / "app" / "service.py"
    svc.write_text(svc.read_text().replace("return s.get(req)", "return s._load(req)"))
    report = _build_with(writer, repo, tmp_path / "g2", tmp_path / "other", ["app/service.py"])
    assert report.get("mode") is None and report["reused_files"] == report["files"] - 1
    off = _build_with(GraphModality(), repo, tmp_path / "g3", tmp_path / "g1",
                      ["app/service.py"], {"graph_remember": False})  # fmt: skip
    assert off.get("mode") is None
    _assert_same(tmp_path / "g2", tmp_path / "g3")


def test_a_from_scratch_build_does_not_remember(repo, tmp_path):
    """Only updates keep the builder (a from-scratch build's peak memory stays as it was)."""
    writer = GraphModality()
    files = walk_repository(repo).files
    extraction, chunks, _ = extract_repository(repo, files, {"jobs": 1})
    ctx = BuildContext(repo, tmp_path / "g1", files, chunks, extraction, {}, tmp_path,
                       changes=ChangeSet(reason="first build"))  # fmt: skip
    writer.build(ctx)
    svc = repo / "app" / "service.py"
    svc.write_text(svc.read_text().replace("return s.get(req)", "return s._load(req)"))
    report = _build_with(writer, repo, tmp_path / "g2", tmp_path / "g1", ["app/service.py"])
    assert report.get("mode") is None and report["reused_files"] == report["files"] - 1
    report = _build_with(writer, repo, tmp_path / "g3", tmp_path / "g2", ["app/service.py"])
    assert report.get("mode") == "patch"  # the update remembered


PY_FILES = ["app/service.py", "app/store.py", "app/util.py", "app/views.py", "app/cycle_a.py",
            "app/legacy.py", "tests/test_service.py"]  # fmt: skip
CALLEES = ["Store", "handle", "app.util.normalize", "normalize", "clean", "nowhere_at_all",
           "os.path.join", "self.get"]  # fmt: skip


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["call", "shift", "touch", "declare", "selfref"]),
            st.integers(0, len(PY_FILES) - 1),
            st.integers(0, len(CALLEES) - 1),
        ),
        min_size=1,
        max_size=5,
    )
)
@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
def test_random_edit_sequences_through_a_remembering_writer_equal_from_scratch(
    tmp_path_factory, edits
):
    """Random sequences of body edits (calls and references added, every line moved), touches
    and declaration changes, one remembering writer: every generation equals a from-scratch
    build, array for array; body-only steps are patches."""
    base = tmp_path_factory.mktemp("prop")
    root = base / "repo"
    shutil.copytree(FIXTURES / "python", root)
    writer = GraphModality()
    _build_with(writer, root, base / "g0")
    previous = base / "g0"
    for i, (op, f, c) in enumerate(edits, start=1):
        path = root / PY_FILES[f]
        text = path.read_text()
        if op == "call":
            path.write_text(text + f"\n{CALLEES[c]}({i})\n")
        elif op == "shift":
            path.write_text(f"# moved {i}\n\n" + text)
        elif op == "selfref":  # a function's reference to itself: logged, not an edge
            path = root / PY_FILES[0]
            path.write_text(
                path.read_text().replace(
                    "    s = Store()", "    s = Store()\n    handle.__doc__", 1
                )
            )
            f = 0
        elif op == "touch":
            os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
        else:
            path.write_text(text + f"\n\ndef declared_{i}():\n    return {CALLEES[c]}()\n")
        report = _build_with(writer, root, base / f"g{i}", previous, [PY_FILES[f]])
        assert report.get("mode") == (None if op == "declare" else "patch"), (op, report["reuse"])
        _build_with(GraphModality(), root, base / f"s{i}")
        _assert_same(base / f"g{i}", base / f"s{i}")
        previous = base / f"g{i}"


def test_pruned_strongly_connected_components_equal_rustworkx_on_all_nodes():
    """`centrality.strongly_connected` prunes nodes that cannot be in a cycle before asking
    rustworkx: the components must be those of the whole graph, in order of smallest node."""
    import rustworkx as rx

    from maguyva.graph.centrality import strongly_connected

    def reference(n, src, dst):
        g = rx.PyDiGraph(multigraph=False)
        g.add_nodes_from(range(n))
        g.extend_from_edge_list(list(zip(src.tolist(), dst.tolist(), strict=True)))
        return sorted(sorted(c) for c in rx.strongly_connected_components(g) if len(c) > 1)

    rng = np.random.default_rng(7)
    for _ in range(200):
        n, m = int(rng.integers(1, 60)), int(rng.integers(0, 150))
        src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
        assert strongly_connected(n, src, dst) == reference(n, src, dst)
    # a chain of 150 nodes into a 50-node cycle: more layers than the pruning passes
    src, dst = np.r_[np.arange(199), 199], np.r_[np.arange(1, 200), 150]
    assert strongly_connected(200, src, dst) == reference(200, src, dst) == [list(range(150, 200))]
