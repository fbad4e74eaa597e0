"""A reader that reopens the graph of a new generation reuses the name tables when the names
did not change (a body edit) and rebuilds them when they did (a definition added)."""

from __future__ import annotations

import shutil
from pathlib import Path

from graph_support import build_graph

from maguyva.graph.searcher import GraphSearcher

REPO = {
    "pkg/__init__.py": "",
    "pkg/core.py": """
        def helper(x):
            return x + 1
        """,
    "pkg/use.py": """
        from pkg.core import helper


        def run():
            return helper(2)
        """,
}


def test_unchanged_names_are_shared_and_changed_names_rebuilt(tmp_path: Path) -> None:
    first = build_graph(tmp_path / "r1", REPO, tmp_path / "g1")
    same = tmp_path / "g1-copy"
    shutil.copytree(first, same)
    a, b = GraphSearcher.open(first).graph, GraphSearcher.open(same).graph
    assert a.by_name is b.by_name and a.names is b.names
    assert "added_later" not in a.by_name
    changed = dict(REPO)
    changed["pkg/core.py"] += "\n\ndef added_later():\n    return helper(3)\n"
    second = build_graph(tmp_path / "r2", changed, tmp_path / "g2")
    c = GraphSearcher.open(second).graph
    assert c.by_name is not a.by_name
    assert [c.names[n] for n in c.by_name["added_later"]] == ["added_later"]
    assert "added_later" not in a.by_name  # the shared tables were not mutated
    # answers from the shared tables equal those of a fresh decode
    fresh = GraphSearcher.open(same)
    assert fresh.graph.find("helper") == a.find("helper") != []
