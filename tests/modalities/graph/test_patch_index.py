"""The indexes a remembering graph writer keeps so that a declaration patch costs what the
change reaches (`incremental._index_memo`, the direct-subclass table moved class by class,
the class-word prefilter grown per declared file, the subclass memos kept when no class's
bases changed): each edit below would leave a stale entry in one of them, so the patched
graph must still equal a from-scratch build, and the edit must matter (the graph differs
from the previous generation's)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
from graph_support import assert_same_graph, build_with

from maguyva.modalities.graph import store as gstore
from maguyva.modalities.graph import store_pack
from maguyva.modalities.graph.modality import GraphModality

REPO = {
    "pkg/__init__.py": "",
    "pkg/bases.py": """
        class A:
            def m(self):
                return 1


        class B:
            def m(self):
                return 2


        class X(A, B):
            pass


        class Keeper:
            def hold(self):
                return 3


        class Grip:
            def hold(self):
                return 4
        """,
    "pkg/sub.py": """
        from pkg.bases import X


        class Y(X):
            def run(self):
                return self.m()
        """,
    "pkg/shapes.py": """
        class Circle:
            def area(self):
                return 1


        class Square:
            def area(self):
                return 2
        """,
    "pkg/use.py": """
        from pkg import other, shapes


        def total(circle, hexagon, thing, holder):
            thing.hold()
            holder.hold()
            hexagon.area()
            return circle.area()


        def duck(obj):
            obj.hold()
            return obj.squeeze()
        """,
    "pkg/other.py": """
        def helper():
            return 0
        """,
    "pkg/mro.py": """
        class Alpha:
            def spin(self):
                return 1


        class Beta:
            def spin(self):
                return 2
        """,
    "pkg/cross.py": """
        from pkg.mro import Alpha, Beta


        class Cross(Alpha, Beta):
            pass
        """,
    "pkg/spin.py": """
        def go(cross):
            return cross.spin()
        """,
}

# (file, old, new) applied in order through one writer; each changes another file's edges
EDITS = [
    # the bases of X swap places: `Y.run`'s `self.m()` is now B.m (the same subclass edges in
    # another order: the memoised member lookups below X must go)
    ("pkg/bases.py", "class X(A, B):", "class X(B, A):"),
    # a class renamed: `circle.area()` no longer names its class
    ("pkg/shapes.py", "class Circle:", "class Disc:"),
    # a class word never seen before, in another file: `hexagon.area()` names it (the class
    # words grow with each file declared again)
    ("pkg/other.py", "def helper():",
     "class Hexagon:\n    def area(self):\n        return 3\n\n\ndef helper():"),
    # an unrelated definition: no class's bases changed, the subclass memos are kept ...
    ("pkg/other.py", "def helper():", "def helper2():\n    return 1\n\n\ndef helper():"),
    # ... then a subclass of Keeper in `other`, which use.py imports: the kept subclass sets
    # and families must take it (`thing.hold()` gains evidence for Keeper.hold)
    ("pkg/other.py", "def helper2():",
     "from pkg.bases import Keeper\n\n\nclass Holder(Keeper):\n    pass\n\n\ndef helper2():"),
    # Holder overrides `hold` (its bases unchanged, the subclass memos kept): Keeper.hold's
    # inheriting classes (and so the class words `holder.hold()` is checked against) change
    ("pkg/other.py", "class Holder(Keeper):\n    pass\n",
     "class Holder(Keeper):\n    def hold(self):\n        return 5\n"),
    # X loses a base: Y's lookups and the subclass sets below A and B change again
    ("pkg/bases.py", "class X(B, A):", "class X(B):"),
    # a method added to a class: the memoised member lookups by that name go
    ("pkg/bases.py", "class B:\n", "class B:\n    def hold(self):\n        return 6\n\n"),
    # X loses its last base: its own resolved bases (memoised) go too
    ("pkg/bases.py", "class X(B):", "class X:"),
    # ... and gets one back
    ("pkg/bases.py", "class X:", "class X(A):"),
    # a subclass removed: its node dies, the subclass table and families must drop it
    ("pkg/other.py", "class Holder(Keeper):\n    def hold(self):\n        return 5\n", ""),
    # a class renamed that another file imports by its old name: every memo entry about
    # `X` goes, those the patches computed while moving classes included
    ("pkg/bases.py", "class X(A):", "class Z(A):"),
    # a body edit: spin.py resolved by the writer (`cross.spin()`: the receiver word `cross`
    # names Cross, which inherits Alpha.spin) ...
    ("pkg/spin.py", "    return cross.spin()", "    len(cross)\n    return cross.spin()"),
    # ... then Cross's bases swap: it inherits Beta.spin, the receiver words kept for the
    # candidates must go though no class gained or lost a subclass
    ("pkg/cross.py", "class Cross(Alpha, Beta):", "class Cross(Beta, Alpha):"),
    # a base from outside the repository (resolving to nothing, as before): Grip may now have
    # any member, so `obj.hold(); obj.squeeze()` (duck typing) fits Grip.hold, though nothing
    # that use.py names changed
    ("pkg/bases.py", "class Grip:", "class Grip(LibraryBase):"),
]  # fmt: skip


_build = build_with


def _edges(gen: Path) -> dict[str, np.ndarray]:
    return store_pack.logical(gstore.read(gen / "graph")[0])


@pytest.mark.parametrize("upto", range(1, len(EDITS) + 1))
def test_declaration_patches_keep_their_indexes_right(tmp_path, upto):
    root = tmp_path / "repo"
    for rel, text in REPO.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text).lstrip())
    writer = GraphModality()
    _build(writer, root, tmp_path / "g0")
    _build(writer, root, tmp_path / "g1", tmp_path / "g0", [])  # remembers
    previous = tmp_path / "g1"
    for i, (rel, old, new) in enumerate(EDITS[:upto], start=2):
        path = root / rel
        assert old in path.read_text(), (rel, old)
        path.write_text(path.read_text().replace(old, new, 1))
        report = _build(writer, root, tmp_path / f"g{i}", previous, [rel])
        assert report.get("mode") == "patch", report["reuse"]
        previous = tmp_path / f"g{i}"
    _build(GraphModality(), root, tmp_path / "scratch")
    assert_same_graph(previous, tmp_path / "scratch")
    before, after = _edges(tmp_path / f"g{upto}"), _edges(previous)
    assert any(
        not np.array_equal(before[k], after[k]) for k in ("edge_src", "edge_dst", "edge_conf")
    )


DUCK = {
    "pkg/__init__.py": "",
    "pkg/bases.py": """
        class Base:
            def m(self):
                return 1


        class Mixin:
            def extra(self):
                return 2


        class Other:
            def m(self):
                return 3
        """,
    "pkg/use.py": """
        def f(x):
            x.m()
            return x.extra()


        def h(y):
            y.r()
            return y.zzz()
        """,
    "pkg/new.py": """
        from pkg.bases import Base, Mixin


        def g():
            return 0
        """,
    "pkg/root.py": """
        class Root:
            def r(self):
                return 1


        class Other2:
            def r(self):
                return 2
        """,
    "pkg/chain.py": """
        class Mid:
            def q(self):
                return 1
        """,
    "pkg/opened.py": """
        from pkg.chain import Mid


        class Opened(Mid, Lib):
            pass
        """,
}


@pytest.mark.parametrize(
    "step",
    [
        # a subclass of two classes: Base.m is now inherited by a class that has `extra`
        ("pkg/new.py", "def g():", "class N(Base, Mixin):\n    pass\n\n\ndef g():"),
        # a subclass with a base from outside the repository: it may have any member
        ("pkg/new.py", "def g():", "class N(Base, Lib):\n    pass\n\n\ndef g():"),
        # a subclass with `__getattr__`
        ("pkg/new.py", "def g():",
         "class N(Base):\n    def __getattr__(self, name):\n        return name\n\n\ndef g():"),
        # `__getattr__` on the class itself
        ("pkg/bases.py", "class Base:\n",
         "class Base:\n    def __getattr__(self, name):\n        return name\n\n"),
        # a base for Mid: Root.r is now inherited by Opened, a subclass of Mid in another file
        # that may have any member (`y.r(); y.zzz()` fits it)
        ("pkg/chain.py", "class Mid:", "from pkg.root import Root\n\n\nclass Mid(Root):"),
    ],
)  # fmt: skip
def test_duck_typing_reaches_the_callers_of_the_methods_a_changed_class_inherits(tmp_path, step):
    """`x.m(); x.extra()` in use.py names nothing the edit changes, but whether Base.m has
    an inheriting class with `extra` (or one that may have any member) does: the callers of
    the changed class's inherited methods are reached (`incremental._duck_typing`)."""
    root = tmp_path / "repo"
    for rel, text in DUCK.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text).lstrip())
    writer = GraphModality()
    _build(writer, root, tmp_path / "g0")
    _build(writer, root, tmp_path / "g1", tmp_path / "g0", [])
    rel, old, new = step
    path = root / rel
    path.write_text(path.read_text().replace(old, new, 1))
    report = _build(writer, root, tmp_path / "g2", tmp_path / "g1", [rel])
    assert report.get("mode") == "patch", report["reuse"]
    _build(GraphModality(), root, tmp_path / "scratch")
    assert_same_graph(tmp_path / "g2", tmp_path / "scratch")
    before, after = _edges(tmp_path / "g1"), _edges(tmp_path / "scratch")
    assert not np.array_equal(before["edge_conf"], after["edge_conf"])
