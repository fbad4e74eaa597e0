"""The evidence of the duck-typing round (parameters, co-called methods, inheriting
subclasses, receiver scopes) through a writer that stays up: after each edit, body-only or a
declaration change in another file that alters a candidate's evidence, the remembered graph
equals a build from scratch, array for array (docs/graph.md, "Incremental build")."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from graph_support import assert_same_graph, build_with

from maguyva.modalities.graph import store as gstore
from maguyva.modalities.graph import store_pack
from maguyva.modalities.graph.modality import GraphModality

REPO = {
    "duck/__init__.py": "",
    "duck/events.py": """
        class Handle:
            def cancel(self):
                pass

            def cancelled(self):
                pass


        class Task:
            def cancel(self):
                pass

            def done(self):
                pass
        """,
    "duck/widgets.py": """
        class Misc:
            def cget(self, key):
                pass


        class Font:
            def cget(self, key):
                pass
        """,
    "duck/timer.py": """
        def cancel():
            pass
        """,
    "duck/use.py": """
        from duck import events, timer, widgets


        def stop(t):
            if not t.done():
                t.cancel()


        def padding(w):
            w.pack()
            return w.cget("padx")


        def outer(timer):
            h = widgets.Font()

            def inner():
                return h.cget("size")

            return timer.cancel()
        """,
}

EDITS = [
    # (file, old, new): declaration changes in the defining files, then a body edit
    ("duck/events.py", "    def cancelled(self):", "    def done(self):\n        pass\n\n    def cancelled(self):"),
    ("duck/widgets.py", "class Font:", "class Pack:\n    def pack(self):\n        pass\n\n\nclass Widget(Misc, Pack):\n    pass\n\n\nclass Font:"),
    ("duck/events.py", "class Task:", "class Lazy:\n    def __getattr__(self, name):\n        pass\n\n    def cancel(self):\n        pass\n\n\nclass Task:"),
    # body only: the parameter no longer hides the module `timer` (its function `cancel`)
    ("duck/use.py", "def outer(timer):", "def outer(other):"),
    ("duck/events.py", "class Task:\n    def cancel(self):", "class Task:\n    def stop(self):"),
]  # fmt: skip


_build = build_with


@pytest.mark.parametrize("upto", range(1, len(EDITS) + 1))
def test_edits_that_change_duck_typing_evidence_equal_a_full_build(tmp_path, upto):
    root = tmp_path / "repo"
    for rel, text in REPO.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text).lstrip())
    writer = GraphModality()
    _build(writer, root, tmp_path / "g0")
    previous = tmp_path / "g0"
    for i, (rel, old, new) in enumerate(EDITS[:upto], start=1):
        path = root / rel
        assert old in path.read_text()
        path.write_text(path.read_text().replace(old, new, 1))
        _build(writer, root, tmp_path / f"g{i}", previous, [rel])
        previous = tmp_path / f"g{i}"
    _build(GraphModality(), root, tmp_path / "scratch")
    assert_same_graph(previous, tmp_path / "scratch")
    before = store_pack.logical(gstore.read(tmp_path / f"g{upto - 1}" / "graph")[0])
    after = store_pack.logical(gstore.read(previous / "graph")[0])
    assert any(  # each edit matters: the graph differs from the previous generation's
        not np.array_equal(before[k], after[k]) for k in ("edge_src", "edge_dst", "edge_conf")
    )
