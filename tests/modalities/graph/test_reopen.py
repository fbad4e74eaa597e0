"""A reader that reopens the graph of a new generation decodes no name at open: its name
lookups (`by_name`, `by_lower`) come from the stored hash sections and answer exactly what
dicts built from every decoded name would, before and after a definition is added."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from graph_support import build_graph

from maguyva.modalities.graph import store as gstore
from maguyva.modalities.graph.query import GraphIndex
from maguyva.modalities.graph.schema import NodeKind
from maguyva.modalities.graph.searcher import GraphSearcher

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "graph"

REPO = {
    "pkg/__init__.py": "",
    "pkg/core.py": """
        def helper(x):
            return x + 1


        class Helper:
            def helper(self):
                return helper(1)
        """,
    "pkg/use.py": """
        import os
        from pkg.core import helper, Helper


        def run():
            return helper(2) + Helper().helper() + len(os.sep)
        """,
}


def reference(g: GraphIndex) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """The name tables as the reader built them before format 3: every name decoded."""
    by_name: dict[str, list[int]] = {}
    by_lower: dict[str, list[int]] = {}
    kinds = (NodeKind.DEFINITION, NodeKind.EXTERNAL, NodeKind.MODULE)
    names = g.names.all()
    for node in np.flatnonzero(np.isin(g.kind, kinds)).tolist():
        by_name.setdefault(names[node], []).append(node)
        by_lower.setdefault(names[node].lower(), []).append(node)
    return by_name, by_lower


def assert_lookups_match(g: GraphIndex) -> None:
    by_name, by_lower = reference(g)
    assert by_name, "a graph without lookup nodes proves nothing"
    for key, nodes in by_name.items():
        assert g.by_name.get(key) == nodes and g.by_name[key] == nodes and key in g.by_name
    for key, nodes in by_lower.items():
        assert g.by_lower.get(key, []) == nodes, key
    for key in ("", "nothing_named_so", "HELPER", "Helper", "helper", "x" * 100):
        assert g.by_name.get(key, []) == by_name.get(key, []), key
        assert g.by_lower.get(key, []) == by_lower.get(key, []), key
        assert (key in g.by_name) == (key in by_name)


def test_lookups_equal_decoded_tables_and_follow_an_added_definition(tmp_path: Path) -> None:
    first = GraphSearcher.open(build_graph(tmp_path / "r1", REPO, tmp_path / "g1")).graph
    assert_lookups_match(first)
    assert first.by_lower.get("helper") == sorted(first.by_name["helper"] + first.by_name["Helper"])
    assert "added_later" not in first.by_name
    changed = dict(REPO)
    changed["pkg/core.py"] += "\n\ndef added_later():\n    return helper(3)\n"
    second = GraphSearcher.open(build_graph(tmp_path / "r2", changed, tmp_path / "g2"))
    g = second.graph
    assert_lookups_match(g)
    assert [g.names[n] for n in g.by_name["added_later"]] == ["added_later"]
    assert [g.full_name(n) for n in g.find("added_later")] == ["pkg.core.added_later"]
    assert second.references("added_later") == [] and second.definition("added_later")


def test_the_fixture_graphs_lookups_equal_decoded_tables(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(gstore, "SMALL_FILE", 0)  # a small file stores no lookup
    for language in ("python", "go", "js"):
        root = tmp_path / language
        shutil.copytree(FIXTURES / language, root)
        out = build_graph(root, {}, tmp_path / f"g-{language}")
        sections, _ = gstore.read(out / "graph")
        assert set(gstore.LOOKUP_SECTIONS) <= sections.keys()
        assert_lookups_match(GraphSearcher.open(out).graph)


def test_sections_without_lookups_compute_them(tmp_path: Path, monkeypatch) -> None:
    """Sections of an older file (or built in memory) have no lookup sections: the reader
    computes them, and answers as from the stored ones."""
    monkeypatch.setattr(gstore, "SMALL_FILE", 0)  # stored: not a small file
    out = build_graph(tmp_path / "r", REPO, tmp_path / "g")
    sections, meta = gstore.read(out / "graph")
    stored = GraphIndex(sections, meta)
    bare = {k: v for k, v in sections.items() if k not in gstore.LOOKUP_SECTIONS}
    computed = GraphIndex(bare, meta)
    assert_lookups_match(computed)
    for key in reference(stored)[0]:
        assert computed.by_name[key] == stored.by_name[key]
        assert computed.find(key) == stored.find(key)


def test_find_orders_candidates_as_the_sort_key_does(tmp_path: Path) -> None:
    """`find` picks definitions, else modules, else externals, best first by (test, -c, node)
    (vectorised): the same list as `sorted` with that key, for every name of the fixture."""
    checked = 0
    for language in ("python", "go", "js"):
        shutil.copytree(FIXTURES / language, tmp_path / language)
        g = GraphSearcher.open(build_graph(tmp_path / language, {}, tmp_path / f"g-{language}"))
        checked += _check_find(g.graph)
    # a name defined in many files, tests among them, called more or less often
    many = {f"pkg/m{i}.py": f"def run():\n    return {i}\n\n\ndef Run():\n    return 0\n"
            for i in range(6)}  # fmt: skip
    many["tests/test_run.py"] = "from pkg.m1 import run\n\n\ndef run_test():\n    return run()\n"
    many["pkg/use.py"] = "".join(f"from pkg.m{i} import run as r{i}\n" for i in range(6)) + (
        "\n\ndef main():\n    return r2() + r2() + r4() + r5()\n"
    )
    g = GraphSearcher.open(build_graph(tmp_path / "many", many, tmp_path / "g-many")).graph
    assert len(g.find("run")) == 6
    checked += _check_find(g)
    assert checked >= 3  # names with several candidates, where the order matters


def _check_find(g: GraphIndex) -> int:
    by_name, by_lower = reference(g)
    checked = 0
    for name in sorted(by_name):
        if not name.isidentifier():
            continue
        cands = by_name.get(name) or by_lower.get(name.lower(), [])
        for kind in (NodeKind.DEFINITION, NodeKind.MODULE, NodeKind.EXTERNAL):
            chosen = [n for n in cands if g.kind[n] == kind]
            if chosen:
                break
        want = sorted(chosen, key=lambda n: (g.is_test(n), -float(g.c[n]), n))
        assert g.find(name) == want, name
        checked += len(want) > 1
    return checked
