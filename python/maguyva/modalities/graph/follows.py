"""Which names take their meaning from which words (an import's local name, an alias, an
instance): a declaration patch widens its changed names through them."""

from __future__ import annotations

from maguyva.modalities.graph.memory import _WORD, Memory
from maguyva.modalities.graph.resolve.builder import GraphBuilder


def _file_follows(b: GraphBuilder, memory: Memory, fid: int) -> list[tuple[str, str]]:
    """(word, name) pairs of file `fid`: `name` takes its meaning from `word` (an import's
    local name from its module and imported name, an alias or instance variable from what
    it renames or calls)."""
    find = _WORD.findall
    out = []
    for local, specs in b.scopes[fid].imports.items():
        imp = specs[-1][1]
        out.extend((w, local) for w in find(imp.module) + ([imp.name] if imp.name else []))
    for node in memory.defs_of(fid):
        for table in (b.aliases, b.instances):
            rhs = table.get(node)
            if rhs:
                out.extend((w, b.nodes[node].name) for w in find(rhs))
    return out


def _follow(memory: Memory, pairs: list[tuple[str, str]], step: int) -> None:
    assert memory.follows is not None
    for w, name in pairs:
        got = memory.follows.setdefault(w, {})
        got[name] = got.get(name, 0) + step
        if not got[name]:
            del got[name]


def _close_names(memory: Memory, b: GraphBuilder, names: set[str]) -> None:
    """Names that take their meaning from a changed name: an import's local name (a
    re-export, `from .x import f as g`), an alias variable (`g = x.f`), an instance
    (`inst = Cls()`)."""
    if memory.follows is None:
        memory.follows = {}
        for fid in range(len(b.paths)):
            _follow(memory, _file_follows(b, memory, fid), 1)
    follows = memory.follows
    todo = list(names)
    while todo:
        for nxt in follows.get(todo.pop(), ()):
            if nxt not in names:
                names.add(nxt)
                todo.append(nxt)
