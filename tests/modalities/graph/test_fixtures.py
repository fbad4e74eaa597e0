"""Fixture repositories (tests/fixtures/graph/<language>) where callers, callees, references
and impact are known by construction, run through the real walker and structural extractor."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from maguyva.build.indexer import build_index
from maguyva.modalities.graph import MODALITY, GraphSearcher
from maguyva.modalities.graph.centrality import boost
from maguyva.modalities.protocol import BuildContext, RetrieverQuery
from maguyva.modalities.structural.modality import extract_repository
from maguyva.model import Hit
from maguyva.query.engine import Engine
from maguyva.repo.walk import walk_repository
from maguyva.store.chunks import write_chunks

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "graph"


def _build(language: str, tmp: Path) -> tuple[GraphSearcher, dict]:
    root = FIXTURES / language
    files = walk_repository(root).files
    extraction, chunks, _ = extract_repository(root, files, {"jobs": 1})
    write_chunks(tmp, chunks)
    ctx = BuildContext(root, tmp, files, chunks, extraction, {}, tmp)
    report = MODALITY.build(ctx)
    return MODALITY.open(tmp, {}), report


@pytest.fixture(scope="module")
def py(tmp_path_factory) -> tuple[GraphSearcher, dict]:
    return _build("python", tmp_path_factory.mktemp("gpy"))


@pytest.fixture(scope="module")
def go(tmp_path_factory) -> GraphSearcher:
    return _build("go", tmp_path_factory.mktemp("ggo"))[0]


@pytest.fixture(scope="module")
def js(tmp_path_factory) -> GraphSearcher:
    return _build("js", tmp_path_factory.mktemp("gjs"))[0]


def by_file(hits: list[Hit]) -> dict[str, list[int]]:
    assert len({h.path for h in hits}) == len(hits), "one hit per file"
    return {h.path: h.lines for h in hits}


def symbols(hits: list[Hit]) -> set[str]:
    return {h.symbol for h in hits if h.symbol}


# -- Python -----------------------------------------------------------------------------------


def test_python_references_list_every_site_per_file(py):
    s, _ = py
    assert by_file(s.references("app.util.normalize")) == {
        "app/store.py": [1, 7],  # `from .util import normalize`, the call in Store.get
        "app/service.py": [11],  # two calls through `app.util.normalize` on one line
    }


def test_python_callers_direct_then_transitive(py):
    s, _ = py
    assert by_file(s.callers("normalize", depth=1)) == {"app/store.py": [7], "app/service.py": [11]}
    assert by_file(s.callers("normalize", depth=2)) == {
        "app/store.py": [7, 15],  # CachedStore.get -> super().get
        "app/service.py": [7, 11],  # handle -> s.get (a candidate: unknown receiver)
        "tests/test_service.py": [5],  # test_clean -> clean
    }


def test_python_impact_ranks_by_distance_and_lists_tests_last(py):
    s, _ = py
    hits = s.impact("normalize", depth=2)
    assert by_file(hits) == {
        "app/store.py": [1, 7, 15],
        "app/service.py": [7, 11],
        "tests/test_service.py": [1, 5],
    }
    assert [h.extra["is_test"] for h in hits] == [False, False, True]
    assert hits[-1].extra["distance"] == 2
    assert all(h.extra["distance"] == 1 for h in hits[:2])


def test_python_callees(py):
    s, _ = py
    assert symbols(s.callees("Store.get")) == {"app.store.Store._load", "app.util.normalize"}
    assert symbols(s.callees("Store._load")) == {"app.util.ping", "builtins.len"}
    assert symbols(s.callees("CachedStore.get")) == {"app.store.Store.get", "builtins.super"}


def test_python_ambiguous_target_lists_candidates(py):
    s, _ = py
    hits = s.references("render")
    assert hits, "callers of either definition are still returned"
    cands = {(c["name"], c["path"]) for c in hits[0].extra["candidates"]}
    assert cands == {("app.views.render", "app/views.py"), ("app.legacy.render", "app/legacy.py")}
    assert hits[0].extra["ambiguous"] is True
    # a qualified target is not ambiguous
    assert "candidates" not in s.references("app.views.render")[0].extra


def test_python_cycles_terminate_and_are_reported_once(py):
    s, report = py
    assert report["call_cycles"] == 2  # ping <-> pong, first <-> second
    assert report["import_cycles"] == 1  # cycle_a <-> cycle_b
    hits = s.impact("ping", depth=10)
    paths = [h.path for h in hits]
    assert len(paths) == len(set(paths))
    assert hits[0].extra["cycle_with"] == ["app.util.pong"]
    assert "app/util.py" in paths and "app/store.py" in paths
    callers = s.callers("first", depth=10)
    assert by_file(callers) == {"app/cycle_b.py": [5], "app/legacy.py": [5]}


def test_python_search_protocol_and_centrality(py):
    s, _ = py
    q = RetrieverQuery(text="who calls normalize", intent="find_references", target="normalize")
    hits = s.search(q, 10)
    assert [h.path for h in hits] == ["app/store.py", "app/service.py"]
    assert all(h.key for h in hits), "hit keys are the enclosing chunks' ids"
    d = s.search(RetrieverQuery(text="Store", intent="find_definition", target="Store"), 5)
    assert d[0].symbol == "app.store.Store" and d[0].path == "app/store.py"
    u = s.search(RetrieverQuery(text="x", intent="understand_code", target="", terms=["ping"]), 5)
    assert [h.symbol for h in u] == ["app.util.ping"]
    c = s.centrality([h.key for h in hits if h.key], ["app/util.py", "app/views.py", "nope.py"])
    assert "nope.py" not in c and len(c) == 4
    assert c["app/util.py"] > c["app/views.py"]
    assert all(1.0 <= boost(v) <= 1.5 for v in c.values())


def test_engine_routes_who_calls_to_graph_directly(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "python", root)
    build_index(root, config={"modalities": ["text", "structural", "graph"]})
    response = Engine.open(root).search("who calls normalize")
    assert response.fusion_strategy == "direct"
    assert response.modalities == ["graph"]
    got = {r.path: r.lines for r in response.results}
    assert got == {"app/store.py": [1, 7], "app/service.py": [11]}


# -- Go ---------------------------------------------------------------------------------------


def test_go_packages_and_receivers(go):
    assert by_file(go.references("Normalize")) == {"store/store.go": [10], "main.go": [12]}
    assert symbols(go.callees("Normalize")) == {"util.helper", "strings.TrimSpace"}
    assert symbols(go.callees("Store.Get")) == {"store.Store.load", "util.Normalize"}
    assert by_file(go.callers("Store.Get")) == {"main.go": [12], "store/store_test.go": [7]}
    hits = go.impact("Normalize", depth=2)
    assert by_file(hits) == {"store/store.go": [10], "main.go": [12], "store/store_test.go": [7]}
    assert hits[-1].path == "store/store_test.go" and hits[-1].extra["is_test"]


# -- JavaScript / TypeScript ------------------------------------------------------------------


def test_js_imports_require_and_aliases(js):
    assert by_file(js.references("normalize")) == {
        "src/util.js": [6],
        "src/store.ts": [1, 6],  # `import { normalize as norm }`, `norm(key)`
        "src/index.js": [9],  # `util.normalize` (require) and `u.normalize` (import * as u)
    }
    assert symbols(js.callees("Store.get")) == {"src.store.Store.load", "src.util.normalize"}
    assert symbols(js.callees("run")) == {
        "src.store.Store",
        "src.store.Store.get",
        "src.util.normalize",
        "express",
    }
    assert by_file(js.impact("normalize", depth=2)) == {
        "src/util.js": [6],
        "src/index.js": [9, 12],
        "src/store.ts": [1, 6, 10],
        "src/__tests__/index.test.js": [1, 4],
    }
