"""Incremental graph builds: replaying the previous generation's edge log for unchanged files
must give exactly the arrays of a build from scratch (same nodes, numbering, edges, lines,
confidences, centrality), and fall back to a full resolution when declarations change."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from graph_support import assert_same_graph, build_with
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maguyva.modalities.graph import MODALITY, store_pack
from maguyva.modalities.graph import store as gstore
from maguyva.modalities.graph.incremental import LOG_FILE
from maguyva.modalities.graph.modality import GraphModality
from maguyva.modalities.protocol import BuildContext
from maguyva.modalities.structural.modality import extract_repository
from maguyva.repo.changes import ChangeSet
from maguyva.repo.walk import walk_repository

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "graph"


def _build(root: Path, out: Path, previous: Path | None = None, config=None) -> dict:
    files = walk_repository(root).files
    extraction, chunks, _ = extract_repository(root, files, {"jobs": 1})
    out.mkdir(parents=True, exist_ok=True)
    ctx = BuildContext(root, out, files, chunks, extraction, config or {}, out,
                       previous_dir=previous)  # fmt: skip
    return MODALITY.build(ctx)


def _arrays(gen: Path) -> dict[str, np.ndarray]:
    return store_pack.logical(gstore.read(gen / "graph")[0])


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
    assert_same_graph(tmp_path / "g2", tmp_path / "g3")
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
    assert_same_graph(tmp_path / "g2", tmp_path / "g3")


def test_unchanged_repository_replays_everything(repo, tmp_path):
    _build(repo, tmp_path / "g1")
    inc = _build(repo, tmp_path / "g2", previous=tmp_path / "g1")
    assert inc["reused_files"] == inc["files"]
    assert_same_graph(tmp_path / "g1", tmp_path / "g2")


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
    assert_same_graph(tmp_path / "g2", tmp_path / "g3")


def test_another_edge_floor_is_not_replayed(repo, tmp_path):
    _build(repo, tmp_path / "g1")
    inc = _build(repo, tmp_path / "g2", previous=tmp_path / "g1", config={"graph_edge_floor": 0})
    assert inc["reused_files"] == 0 and "other resolution rules" in inc["reuse"]
    _build(repo, tmp_path / "g3", config={"graph_edge_floor": 0})
    assert_same_graph(tmp_path / "g2", tmp_path / "g3")


_build_with = build_with


def test_a_writer_that_stays_up_patches_body_edits_exactly(repo, tmp_path):
    """Edits through one modality object are patched in memory (no declaration pass, no
    replay of the log) and still give a full build's arrays and log, edit after edit; a
    declaration change (an import added, then removed) declares the file again and resolves
    the files it reaches."""
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
        assert report.get("mode") == "patch", (i, report["reuse"])
        assert ("declaration changes" in report["reuse"]) == declaration, report["reuse"]
        _build_with(GraphModality(), repo, tmp_path / f"s{i}")  # from scratch, no memory
        assert_same_graph(tmp_path / f"g{i}", tmp_path / f"s{i}")
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
    assert_same_graph(tmp_path / "g2", tmp_path / "g3")


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
           "os.path.join", "self.get", "u.ping", "store.extra", "cycle_b.second"]  # fmt: skip
# names a declaration edit gives: some are called elsewhere (a call starts or stops resolving)
NAMES = ["nowhere_at_all", "normalize", "ping", "render", "get", "extra", "first", "Store"]
IMPORTS = ["from app.util import ping", "import os", "from app.store import Store as S",
           "from . import views", "from app.views import render", "from app import store",
           "from .util import *", "from app.service import handle as nowhere_at_all"]  # fmt: skip
BASES = ["Store", "CachedStore", "S", "u.Thing", "object", "Missing"]
OPS = ["call", "shift", "touch", "selfref", "declare", "remove", "rename", "import", "class",
       "method", "alias"]  # fmt: skip


def _edit(root: Path, op: str, f: int, c: int, i: int) -> str:
    """Apply edit `op` (parameters `f`, `c`, step `i`) to the fixture; returns the path."""
    rel = PY_FILES[f]
    path = root / rel
    text = path.read_text()
    name = NAMES[c % len(NAMES)]
    if op == "call":
        text += f"\n{CALLEES[c % len(CALLEES)]}({i})\n"
    elif op == "shift":
        text = f"# moved {i}\n\n" + text
    elif op == "selfref":  # a function's reference to itself: logged, not an edge
        rel, path = PY_FILES[0], root / PY_FILES[0]
        text = path.read_text().replace("    s = Store()", "    s = Store()\n    handle.__doc__", 1)
    elif op == "touch":
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
        return rel
    elif op == "declare":
        text += f"\n\ndef declared_{i}():\n    return {CALLEES[c % len(CALLEES)]}()\n"
    elif op == "remove":  # the last top-level definition goes
        cut = max(text.rfind("\ndef "), text.rfind("\nclass "))
        text = text[: cut + 1] if cut >= 0 else text + f"\n\ndef {name}():\n    pass\n"
    elif op == "rename":  # the first top-level function gets another name
        at = 4 if text.startswith("def ") else text.find("\ndef ") + 5
        if at >= 5 or text.startswith("def "):
            end = text.index("(", at)
            text = text[:at] + name + text[end:]
    elif op == "import":
        text = IMPORTS[c % len(IMPORTS)] + "\n" + text
    elif op == "class":
        base = BASES[c % len(BASES)]
        text += (f"\n\nclass {name.capitalize()}{i}({base}):\n    def {name}(self, key):\n"
                 f"        return self.get(key) or key.{NAMES[(c + 1) % len(NAMES)]}()\n")  # fmt: skip
    elif op == "method":  # a method added to `Store` (candidates by method name change)
        rel, path = "app/store.py", root / "app/store.py"
        text = path.read_text().replace(
            "class Store:\n", f"class Store:\n    def {name}(self):\n        return {i}\n\n", 1
        )
    else:  # an alias variable
        text += f"\n{name} = {CALLEES[c % len(CALLEES)].replace('self.', 'u.')}\n"
    path.write_text(text)
    return rel


# files reached only through a re-export, an alias or a subclass set (not by a changed name)
REACH_FILES = {
    "app/reexport.py": "from .util import normalize as nz\nfrom .store import Store as Box\n"
                       "from . import util\n\nlate = util.pong\n",
    "app/client.py": "from app.reexport import nz, Box, late\n\n\ndef use(x):\n"
                     "    return nz(x) + late(x)\n\n\nclass Sub(Box):\n"
                     "    def run(self, thing):\n        return thing.get(1)\n",
    "app/views.py": "def render(page):\n    return page\n\n\ndef home(extra):\n"
                    "    return render(extra.get('home'))\n",
    "tests/test_service.py": "from app.service import clean\n\n\ndef test_clean(thing):\n"
                             "    assert clean(' x ') == thing.get('x')\n",
    "app/duck.py": "class Box2:\n    def get(self, key):\n        return key\n\n"
                   "    def close(self):\n        return None\n\n\n"
                   "def use(thing):\n    thing.get(1)\n    return thing.close()\n",
}  # fmt: skip


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).write_text(text)


@pytest.mark.parametrize(
    "step",
    [
        # a renamed function reaches `client.py` only through `reexport.py`'s `as nz`
        ("app/util.py", "def normalize(", "def normalise("),
        # an alias variable's target removed: `late = util.pong` reaches `client.py`
        ("app/util.py", "def pong(n):\n    return ping(n)\n", ""),
        # a subclass of Store in service.py: test_service.py imports service, so its candidate
        # `thing.get` gains evidence; views.py's receiver `extra` names the class `Extra`
        ("app/service.py", "def clean(", "class Extra(Store):\n    pass\n\n\ndef clean("),
        # a renamed class: `class Sub(Box)` in client.py (Box re-exports it) loses its base
        ("app/store.py", "class Store:", "class Storage:"),
        # `__getattr__` added to Store (a class that may have any member: duck typing's
        # `_open_class`; equal to a from-scratch build, though this one does not isolate
        # `incremental._open_classes`: duck.py's edges come out the same here)
        (
            "app/store.py",
            "class Store:\n",
            "class Store:\n    def __getattr__(self, name):\n        return name\n\n",
        ),
    ],
)
def test_declaration_changes_reach_the_files_whose_names_resolve_differently(tmp_path, step):
    """Each of these declaration changes alters another file's edges without that file
    naming anything that changed: the patch must find it (equal to a from-scratch build),
    and the change must matter (the graph differs from the previous one)."""
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "python", root)
    _write(root, REACH_FILES)
    writer = GraphModality()
    _build_with(writer, root, tmp_path / "g0")
    _build_with(writer, root, tmp_path / "g1", tmp_path / "g0", [])  # remembers
    rel, old, new = step
    path = root / rel
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new, 1))
    report = _build_with(writer, root, tmp_path / "g2", tmp_path / "g1", [rel])
    assert report.get("mode") == "patch" and "declaration changes" in report["reuse"]
    _build_with(GraphModality(), root, tmp_path / "s2")
    assert_same_graph(tmp_path / "g2", tmp_path / "s2")
    before, after = _arrays(tmp_path / "g1"), _arrays(tmp_path / "s2")
    assert not np.array_equal(before["edge_conf"], after["edge_conf"]) or not np.array_equal(
        before["edge_dst"], after["edge_dst"]
    )


@given(
    st.lists(
        st.tuples(
            st.sampled_from(OPS),
            st.integers(0, len(PY_FILES) - 1),
            st.integers(0, 63),
        ),
        min_size=1,
        max_size=6,
    )
)
@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
def test_random_edit_sequences_through_a_remembering_writer_equal_from_scratch(
    tmp_path_factory, edits
):
    """Random sequences of body edits (calls and references added, every line moved), touches
    and declaration changes (definitions added, removed, renamed; imports, classes with
    bases, methods, aliases added), one remembering writer: every generation equals a
    from-scratch build, array for array, and every step is a patch."""
    base = tmp_path_factory.mktemp("prop")
    root = base / "repo"
    shutil.copytree(FIXTURES / "python", root)
    _write(root, REACH_FILES)
    writer = GraphModality()
    _build_with(writer, root, base / "g0")
    previous = base / "g0"
    for i, (op, f, c) in enumerate(edits, start=1):
        rel = _edit(root, op, f, c, i)
        report = _build_with(writer, root, base / f"g{i}", previous, [rel])
        assert report.get("mode") == "patch", (op, report["reuse"])
        _build_with(GraphModality(), root, base / f"s{i}")
        assert_same_graph(base / f"g{i}", base / f"s{i}")
        previous = base / f"g{i}"


def test_pruned_strongly_connected_components_equal_rustworkx_on_all_nodes():
    """`centrality.strongly_connected` prunes nodes that cannot be in a cycle before asking
    rustworkx: the components must be those of the whole graph, in order of smallest node."""
    import rustworkx as rx

    from maguyva.modalities.graph.centrality import strongly_connected

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


def test_many_declaration_changes_at_once_build_instead(repo, tmp_path, monkeypatch):
    """Past MAX_DECLARED files with declaration changes (a branch switch) the writer builds
    (replaying the log) instead of renumbering once per file; the result is the same."""
    from maguyva.modalities.graph import incremental

    writer = GraphModality()
    _build_with(writer, repo, tmp_path / "g0")
    _build_with(writer, repo, tmp_path / "g1", tmp_path / "g0", [])
    monkeypatch.setattr(incremental, "MAX_DECLARED", 1)
    for rel in ("app/util.py", "app/views.py"):
        (repo / rel).write_text((repo / rel).read_text() + "\n\ndef added_here():\n    return 1\n")
    report = _build_with(writer, repo, tmp_path / "g2", tmp_path / "g1",
                         ["app/util.py", "app/views.py"])  # fmt: skip
    assert report.get("mode") is None
    _build_with(GraphModality(), repo, tmp_path / "s2")
    assert_same_graph(tmp_path / "g2", tmp_path / "s2")
    monkeypatch.setattr(incremental, "MAX_DECLARED", 64)
    (repo / "app/util.py").write_text((repo / "app/util.py").read_text() + "\nX = 1\n")
    report = _build_with(writer, repo, tmp_path / "g3", tmp_path / "g2", ["app/util.py"])
    assert report.get("mode") == "patch"
