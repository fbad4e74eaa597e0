"""Unit tests of the graph modality on constructed extractions: resolution rules per language,
persistence (version, checksum), centrality scaling, and walk invariants (hypothesis)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import rustworkx as rx
from hypothesis import given, settings
from hypothesis import strategies as st

from maguyva.errors import BadQueryError, CorruptIndexError, IndexVersionError, ModalityUnavailable
from maguyva.extract.types import Call, Definition, FileExtraction, Import
from maguyva.modalities.graph import MODALITY, GraphSearcher
from maguyva.modalities.graph import store as gstore
from maguyva.modalities.graph.build import build_graph
from maguyva.modalities.graph.centrality import C_MAX, boost, percentile_scale
from maguyva.modalities.graph.query import GraphIndex
from maguyva.modalities.graph.resolve.names import split_chain
from maguyva.modalities.graph.schema import is_test_path
from maguyva.modalities.protocol import BuildContext


def fn(name: str, line: int, end: int | None = None, parent: str | None = None,
       kind: str = "function", bases: list[str] | None = None) -> Definition:  # fmt: skip
    qname = f"{parent}.{name}" if parent else name
    return Definition(kind, name, qname, line, end or line + 1, parent=parent, bases=bases or [])


def graph_of(files: dict[str, FileExtraction], tmp_path) -> GraphSearcher:
    ctx = BuildContext(tmp_path, tmp_path, [], [], files, {}, tmp_path)
    MODALITY.build(ctx)
    return MODALITY.open(tmp_path, {})


def edges_of(s: GraphSearcher) -> set[tuple[str, str]]:
    g = s.graph
    return {
        (g.full_name(int(a)), g.full_name(int(b)))
        for a, b, k in zip(g.e_src, g.e_dst, g.e_kind, strict=True)
        if k == 0
    }


def test_rust_use_paths_self_and_impl_methods(tmp_path):
    files = {
        "src/lib.rs": FileExtraction("src/lib.rs", "rust", [fn("run", 3)],
            [Import("crate::net::http", "get", None, 1), Import("crate::net", None, "n", 2)],
            [Call("get", 4, "run"), Call("n::http::Client::new", 5, "run")]),
        "src/net/mod.rs": FileExtraction("src/net/mod.rs", "rust", []),
        "src/net/http.rs": FileExtraction("src/net/http.rs", "rust",
            [fn("get", 1), fn("Client", 5, 6, kind="struct"),
             fn("new", 8, 9, parent="Client", kind="method"),
             fn("send", 10, 11, parent="Client", kind="method")],
            [], [Call("Self::send", 9, "Client.new"), Call("super::helper", 2, "get")]),
    }  # fmt: skip
    s = graph_of(files, tmp_path)
    assert edges_of(s) >= {
        ("src.run", "src.net.http.get"),
        ("src.run", "src.net.http.Client.new"),
        ("src.net.http.Client.new", "src.net.http.Client.send"),
    }


def test_java_imports_and_c_headers(tmp_path):
    files = {
        "src/a/Util.java": FileExtraction("src/a/Util.java", "java",
            [fn("Util", 1, 9, kind="class"), fn("norm", 2, 3, parent="Util", kind="method")]),
        "src/b/Main.java": FileExtraction("src/b/Main.java", "java",
            [fn("Main", 1, 9, kind="class"), fn("main", 2, 3, parent="Main", kind="method")],
            [Import("a", "Util", None, 1)], [Call("Util.norm", 3, "Main.main")]),
        "lib/util.h": FileExtraction("lib/util.h", "c", [fn("hash", 1)]),
        "lib/util.c": FileExtraction("lib/util.c", "c", [fn("hash", 3, 5), fn("mix", 6, 7)],
            [Import("util.h", None, None, 1)], [Call("mix", 4, "hash")]),
        "app.c": FileExtraction("app.c", "c", [fn("main", 2, 4)],
            [Import("lib/util.h", None, None, 1)], [Call("mix", 3, "main")]),
    }  # fmt: skip
    s = graph_of(files, tmp_path)
    e = edges_of(s)
    assert ("src.b.Main.Main.main", "src.a.Util.Util.norm") in e
    assert ("lib.util.hash", "lib.util.mix") in e
    assert ("app.main", "lib.util.mix") in e  # unique global C function


def test_python_reexports_star_and_external(tmp_path):
    files = {
        "pkg/__init__.py": FileExtraction("pkg/__init__.py", "python", [],
            [Import("impl", "work", "public_work", 1, level=1)]),
        "pkg/impl.py": FileExtraction("pkg/impl.py", "python", [fn("work", 1)]),
        "pkg/star.py": FileExtraction("pkg/star.py", "python", [],
            [Import("impl", "*", None, 1, level=1)], [Call("work", 3)]),
        "main.py": FileExtraction("main.py", "python", [fn("go", 3)],
            [Import("pkg", "public_work", "pw", 1), Import("requests", None, None, 2)],
            [Call("pw", 4, "go"), Call("requests.get", 5, "go"), Call("nothing.here", 6, "go")]),
    }  # fmt: skip
    s = graph_of(files, tmp_path)
    e = edges_of(s)
    assert ("main.go", "pkg.impl.work") in e
    assert ("pkg/star.py", "pkg.impl.work") in e  # module-level call through `import *`
    assert ("main.go", "requests.get") in e  # external library kept as a node
    assert {h.symbol for h in s.callees("go")} == {"pkg.impl.work", "requests.get"}


def test_unknown_receiver_gives_candidates_with_divided_confidence(tmp_path):
    defs = [fn("A", 1, 4, kind="class"), fn("save", 2, 3, parent="A", kind="method"),
            fn("B", 5, 8, kind="class"), fn("save", 6, 7, parent="B", kind="method"),
            fn("use", 9, 11)]  # fmt: skip
    files = {"m.py": FileExtraction("m.py", "python", defs, [], [Call("obj.save", 10, "use")])}
    s = graph_of(files, tmp_path)
    callees = s.callees("use")
    assert {h.symbol for h in callees} == {"m.A.save", "m.B.save"}
    assert all(h.score is not None and h.score < 0.5 for h in callees)


def test_a_name_defined_twice_links_callers_to_both_definitions(tmp_path):
    # `if os.name == "nt": def lock(...)` / `else: def lock(...)`: either may be the one that runs
    files = {
        "files/__init__.py": FileExtraction("files/__init__.py", "python", []),
        "files/locks.py": FileExtraction("files/locks.py", "python",
                                         [fn("lock", 3, 4), fn("lock", 7, 8), fn("unlock", 9)]),
        "use.py": FileExtraction("use.py", "python", [fn("go", 2, 4)],
                                 [Import("files", "locks", None, 1)], [Call("locks.lock", 3, "go")]),
    }  # fmt: skip
    s = graph_of(files, tmp_path)
    hits = s.references("files.locks.lock")
    assert hits[0].extra["ambiguous"]
    assert {(h.path, tuple(h.lines)) for h in hits} == {("use.py", (3,))}
    g = s.graph
    targets = {int(g.start[int(d)]) for a, d, k in zip(g.e_src, g.e_dst, g.e_kind, strict=True)
               if k == 0 and g.full_name(int(a)) == "use.go"}  # fmt: skip
    assert targets == {3, 7}


def test_an_alias_variable_links_its_users_to_what_it_renames(tmp_path):
    # asyncio/futures.py: `isfuture = base_futures.isfuture`; callers write `futures.isfuture(x)`
    alias = Definition("variable", "isfuture", "isfuture", 2, 2,
                       signature="isfuture = base_futures.isfuture")  # fmt: skip
    files = {
        "aio/__init__.py": FileExtraction("aio/__init__.py", "python", []),
        "aio/base_futures.py": FileExtraction("aio/base_futures.py", "python", [fn("isfuture", 1)]),
        "aio/futures.py": FileExtraction("aio/futures.py", "python", [alias],
                                         [Import("", "base_futures", None, 1, level=1)]),
        "aio/tasks.py": FileExtraction("aio/tasks.py", "python", [fn("run", 2, 3)],
                                       [Import("", "futures", None, 1, level=1)],
                                       [Call("futures.isfuture", 3, "run")]),
    }  # fmt: skip
    s = graph_of(files, tmp_path)
    assert ("aio.tasks.run", "aio.base_futures.isfuture") in edges_of(s)
    assert {h.path for h in s.references("aio.base_futures.isfuture")} == {"aio/tasks.py"}


def test_candidates_below_the_floor_are_counted_not_stored(tmp_path):
    # 25 classes with `run`, no evidence for any: each would get 0.2/5 = 0.04 < the 0.1 floor
    defs = [d for i in range(25) for d in (fn(f"C{i}", 10 * i + 1, 10 * i + 5, kind="class"),
            fn("run", 10 * i + 2, 10 * i + 3, parent=f"C{i}", kind="method"))]  # fmt: skip
    defs = defs[:-2]  # 24 candidates: the most a candidate set may have
    files = {
        "lib.py": FileExtraction("lib.py", "python", defs),
        "use.py": FileExtraction(
            "use.py", "python", [fn("go", 1, 3)], [], [Call("obj.run", 2, "go")]
        ),
    }
    report = MODALITY.build(BuildContext(tmp_path, tmp_path, [], [], files, {}, tmp_path))
    assert report["calls"]["below_floor"] == 24 and report["calls"]["candidate"] == 1
    assert MODALITY.open(tmp_path, {"config": {"graph_min_confidence": 0.0}}).callees("go") == []
    keep = tmp_path / "keep"
    ctx = BuildContext(tmp_path, keep, [], [], files, {"graph_edge_floor": 0.0}, keep)
    assert MODALITY.build(ctx)["calls"]["below_floor"] == 0
    everything = MODALITY.open(keep, {"config": {"graph_min_confidence": 0.0}})
    scores = [h.score for h in everything.callees("go")]
    assert len(scores) == 24 and scores == pytest.approx([0.2 / 24**0.5] * 24)


def test_store_rejects_damage_and_other_versions(tmp_path):
    files = {"m.py": FileExtraction("m.py", "python", [fn("f", 1)], [], [Call("f", 2)])}
    graph_of(files, tmp_path)
    path = tmp_path / "graph" / gstore.FILE_NAME
    data = bytearray(path.read_bytes())
    data[-40] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptIndexError, match="checksum"):
        MODALITY.open(tmp_path, {})
    data[-40] ^= 0xFF
    data[8] = 99  # version field
    path.write_bytes(bytes(data))
    with pytest.raises(IndexVersionError):
        MODALITY.open(tmp_path, {})
    path.write_bytes(b"junk")
    with pytest.raises(CorruptIndexError):
        MODALITY.open(tmp_path, {})
    with pytest.raises(ModalityUnavailable):
        MODALITY.open(tmp_path / "elsewhere", {})


def test_empty_extraction_builds_an_empty_graph(tmp_path):
    s = graph_of({}, tmp_path)
    assert s.references("anything") == [] and s.impact("x") == [] and s.centrality([], []) == {}


def test_bad_depth_is_a_clear_error(tmp_path):
    s = graph_of({"m.py": FileExtraction("m.py", "python", [fn("f", 1)])}, tmp_path)
    with pytest.raises(BadQueryError):
        s.callers("f", depth=0)


@pytest.mark.parametrize(
    ("written", "parts"),
    [("self.a.b", ["self", "a", "b"]), ("pkg::f", ["pkg", "f"]), ("$this->m", ["this", "m"]),
     ("super().m", ["super()", "m"]), ("a.b(x).c", ["a", "b()", "c"]), ("f", ["f"])],
)  # fmt: skip
def test_split_chain(written, parts):
    assert split_chain(written) == parts


def test_test_paths():
    assert is_test_path("tests/test_x.py") and is_test_path("pkg/x_test.go")
    assert is_test_path("src/__tests__/a.test.js") and not is_test_path("src/contest.py")


# -- centrality scaling -----------------------------------------------------------------------


@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=200))
def test_percentile_scale_is_monotone_bounded_and_leaves_get_zero(raw):
    arr = np.array(raw)
    c = percentile_scale(arr, np.arange(len(arr)))
    assert np.all(c >= 0) and np.all(c <= C_MAX + 1e-6)
    order = np.argsort(arr, kind="stable")
    assert np.all(np.diff(c[order]) >= -1e-6)
    assert np.all(c[arr == arr.min()] == 0)
    b = boost(c)
    assert np.all((b >= 1.0) & (b <= 1.5))


def test_boost_reaches_its_cap_exactly_at_c_max():
    assert math.isclose(float(boost(C_MAX)), 1.5, rel_tol=1e-9)


# -- walks on random graphs (oracle: rustworkx shortest paths) -------------------------------


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 12).flatmap(
    lambda n: st.tuples(st.just(n), st.lists(st.tuples(st.integers(0, n - 1),
                                                       st.integers(0, n - 1)), max_size=40))))  # fmt: skip
def test_reverse_walk_matches_bfs_distances_and_terminates(case):
    n, pairs = case
    defs = [fn(f"f{i}", 10 * i + 1, 10 * i + 5) for i in range(n)]
    calls = [Call(f"f{b}", 10 * a + 2, f"f{a}") for a, b in pairs]
    arrays, strings, _ = build_graph(
        {"m.py": FileExtraction("m.py", "python", defs, [], calls)}, []
    )
    sections = dict(arrays)
    for name, values in strings.items():
        sections[f"{name}.blob"], sections[f"{name}.off"] = gstore.pack_strings(values)
    g = GraphIndex(sections, {})
    node = {g.qnames[i]: i for i in range(len(g)) if g.def_kind(i) == "function"}
    dg = rx.PyDiGraph()
    dg.add_nodes_from(range(n))
    dg.add_edges_from_no_data([(b, a) for a, b in pairs if a != b])
    dist = rx.digraph_dijkstra_shortest_path_lengths(dg, 0, edge_cost_fn=lambda _: 1.0)
    for depth in (1, 3, 12):
        sites, _ = g.walk_dependents([node["f0"]], depth)
        got = {int(g.qnames[s.node][1:]): s.distance for s in sites.values()}
        want = {k: int(v) for k, v in dist.items() if v <= depth}
        assert got == want
