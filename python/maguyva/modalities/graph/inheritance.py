"""What a declaration patch changes through inheritance: classes whose bases resolve
differently, and classes that open or close for duck typing."""

from __future__ import annotations

from maguyva.modalities.graph.memory import Memory
from maguyva.modalities.graph.resolve.builder import GraphBuilder
from maguyva.modalities.graph.resolve.names import CLOSED_BASES, _class_words


def _subclasses_then_and_now(b: GraphBuilder, before: dict[int, list[int]]):
    """(a class's direct superclasses, its direct subclasses), each before the patch or
    now: the table now (`GraphBuilder._subclasses`) and, for the classes moved by the
    patch, their resolved bases before."""
    direct, supers = b.direct_subclasses(), b._supers
    old_kids: dict[int, list[int]] = {}
    for c, old in before.items():
        for p in old:
            old_kids.setdefault(p, []).append(c)

    def parents(x: int) -> list[int]:
        return [*before.get(x, ()), *supers.get(x, ())]

    def kids(x: int) -> list[int]:
        return [*direct.get(x, ()), *old_kids.get(x, ())]

    return parents, kids


def _inheritance(b: GraphBuilder, memory: Memory, before: dict[int, list[int]],
                 old_touched: dict, names: set[str], reach: set[int]) -> tuple[set, set]:  # fmt: skip
    """Classes whose bases resolve differently: their subclasses' (inclusive) names and
    members may now mean something else (a method found through another base), their files
    are read again, and so are the files whose candidate evidence (`_evidence`,
    `_names_class`) reads the changed subclass sets. `before`: the resolved bases before the
    patch of every class whose bases were resolved again (the others' did not change)."""
    changed = set()
    for c, old in before.items():
        now = b._supers.get(c, [])
        if old != now:  # bases in another order too: a member is looked up in that order
            changed.update((c, p) for p in {*old, *now})
    if not changed:
        return set(), set()
    parents, kids = _subclasses_then_and_now(b, before)
    up: set[int] = set()
    todo = [p for _, p in changed]
    while todo:
        x = todo.pop()
        if x not in up:
            up.add(x)
            todo.extend(parents(x))
    down: set[int] = set()
    todo = [c for c, _ in changed]
    while todo:
        x = todo.pop()
        if x in down:
            continue
        down.add(x)
        todo.extend(kids(x))
    units = set()
    words: set[str] = set()
    for x in down:
        n = b.nodes[x]
        names.add(n.name)
        names.update(b.children.get(x, {}))
        reach.add(n.file)
        units.add(b.index.unit_of_file[n.file])
        for w in _class_words(n.name):
            words.update("\0w" + w[i:] for i in range(len(w) - 2))
            if len(w) >= 4:
                words.add("\0s" + w)
    reach.update(f for f, t in old_touched.items() if not t.isdisjoint(units))
    reach |= memory.files_using(words)
    return down, up


def _open_here(b: GraphBuilder, cls: int, supers: list[int] | None = None) -> bool:
    """A class that may have any member by itself (`GraphBuilder._open_class`, without its
    bases): a `__getattr__`, or a written base that resolves to no class of the repository."""
    if "__getattr__" in b.children.get(cls, {}):
        return True
    written = sum(1 for w in b.bases.get(cls, ()) if w not in CLOSED_BASES)
    return written > len(b._supers.get(cls, ()) if supers is None else supers)


def _duck_typing(b: GraphBuilder, memory: Memory, before: dict[int, list[int]],
                 then_open: dict[int, bool], classes: set[int], down: set[int],
                 names: set[str], reach: set[int]) -> None:  # fmt: skip
    """Duck typing (`_has_members`) asks whether some class inheriting a candidate method,
    or one of its subclasses, has every other method called on the receiver or may have any
    (`_open_class`). The answer changes for the methods of a class's ancestors when the class
    becomes open or closed (a `__getattr__`, or a base from outside the repository, added or
    removed) or gains or loses subclass edges while it is open: their names join `names` (so
    their callers are reached), with the members of a class that opened or closed and of its
    subclasses. A class with several bases that gains or loses subclass edges joins the
    members of one base's side to the other's: a call of one side's method with one of the
    other side's on the same receiver may change, and so the files that call a name of
    each side are reached."""
    parents, kids = _subclasses_then_and_now(b, before)

    def then(y: int) -> bool:  # (a declared file's class made by the patch: not before)
        if y in classes:
            return then_open.get(y, False)
        return _open_here(b, y, before.get(y))

    def above(x: int) -> set[int]:
        out: set[int] = set()
        todo = list(parents(x))
        while todo:
            y = todo.pop()
            if y not in out:
                out.add(y)
                todo.extend(parents(y))
        return out

    def members(xs) -> set[str]:
        return {m for y in xs for m in b.children.get(y, {})}

    opened = {c for c in classes if then_open.get(c, False) != _open_here(b, c)}
    todo, below = list(opened), set()
    while todo:
        x = todo.pop()
        if x not in below:
            below.add(x)
            todo.extend(kids(x))
    for x in below | down:
        up = above(x)
        if x in below or any(then(y) or _open_here(b, y) for y in (x, *up)):
            names.update(members((x, *up)))
            continue
        bases = {*before.get(x, ()), *b._supers.get(x, ())}
        if len(bases) < 2:
            continue  # one base: the class has its members and its own (in `names` already)
        sides = [members({y, *above(y)}) for y in bases]
        users = [memory.files_using(side) for side in sides]
        for i, mine in enumerate(users):
            others = set().union(*(u for j, u in enumerate(users) if j != i))
            reach |= mine & others
