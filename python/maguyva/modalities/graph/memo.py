"""The kept builder's resolution memo, indexed by what invalidates an entry, so that a
declaration patch drops only the entries a change can reach."""

from __future__ import annotations

from itertools import islice
from typing import Any

from maguyva.modalities.graph.memory import Memory
from maguyva.modalities.graph.resolve.builder import GraphBuilder


def _keep_sub_memo(b: GraphBuilder, sub: dict, names: set[str], classes: set[int]) -> None:
    """No class's bases or subclasses changed: the subclass sets and families stay, and so
    do the receiver words of a method candidate (`_names_class`, `_inheritors`) unless a
    member of its name changed somewhere (an override added or removed: another class may
    inherit it) or it is a definition of a declared file."""
    for c in (*classes, *(c for nm in names for c in b.methods.get(nm, ()))):
        sub.pop(("cw", c), None)
        sub.pop(("cw", c, "ih"), None)
    sub.update(b._sub_memo)  # what the patch computed since, with the table as it is now
    b._sub_memo = sub


def _index_memo(memory: Memory, b: GraphBuilder) -> None:
    """Index the memo entries made since the last declaration patch by what drops them:
    `("u", unit, name)` by name; `("i", file, name)` by name and file; `("m", class, name)`
    by name, class and the class's file; `("al" | "in", node)` by the node's name and file;
    `("b", class)` needs none (dropped by key). The memo only grows between patches (entries
    are added, never replaced), so the new entries are the last ones in its order."""
    memo = b._memo
    if (
        memory.memo_of is not memo
        or len(memo) < memory.memo_seen  # entries went some other way: index it all again
        or memory.memo_refs > 4 * len(memo) + 100_000
    ):
        memory.memo_of, memory.memo_seen, memory.memo_refs = memo, 0, 0
        memory.memo_by_name, memory.memo_by_file, memory.memo_by_class = {}, {}, {}
        memory.memo_other = []
    new = len(memo) - memory.memo_seen
    if new <= 0:
        return
    keys = list(memo) if not memory.memo_seen else list(islice(reversed(memo), new))
    by_name, by_file, by_class = memory.memo_by_name, memory.memo_by_file, memory.memo_by_class
    other = memory.memo_other
    nodes = b.nodes
    refs = 0
    for k in keys:
        t = k[0]
        if t == "u":
            by_name.setdefault(k[2], []).append(k)
            refs += 1
        elif t == "i":
            by_name.setdefault(k[2], []).append(k)
            by_file.setdefault(k[1], []).append(k)
            refs += 2
        elif t == "m":
            by_name.setdefault(k[2], []).append(k)
            by_class.setdefault(k[1], []).append(k)
            by_file.setdefault(nodes[k[1]].file, []).append(k)
            refs += 3
        elif t == "b":
            pass
        elif t == "al" or t == "in":
            n = nodes[k[1]]
            by_name.setdefault(n.name, []).append(k)
            by_file.setdefault(n.file, []).append(k)
            refs += 2
        else:
            other.append(k)
    memory.memo_refs += refs
    memory.memo_seen = len(memo)


def _drop_memo(memory: Memory, memo: dict, index: dict, what: Any) -> None:
    """Drop the memo entries `index` files under each of `what` (and forget them there)."""
    for x in what:
        keys = index.pop(x, None)
        if keys:
            memory.memo_refs -= len(keys)
            for k in keys:
                memo.pop(k, None)
