"""Declaring changed files again in the kept builder: a body-only edit (`_redeclare`) and a
declaration change (`_declaration_patch`: new nodes, renumbering, the names it reaches)."""

from __future__ import annotations

import bisect
from itertools import islice
from typing import Any

import numpy as np

from maguyva.extract.types import FileExtraction
from maguyva.modalities.graph import store
from maguyva.modalities.graph.columns import node_columns
from maguyva.modalities.graph.follows import _close_names, _file_follows, _follow
from maguyva.modalities.graph.inheritance import _duck_typing, _inheritance, _open_here
from maguyva.modalities.graph.memo import _drop_memo, _index_memo, _keep_sub_memo
from maguyva.modalities.graph.memory import _DTYPES, _RANK, Memory
from maguyva.modalities.graph.resolve.builder import GraphBuilder
from maguyva.modalities.graph.resolve.rows import Body, Node
from maguyva.modalities.graph.schema import NodeKind


def _redeclare(b: GraphBuilder, memory: Memory, decl: list[np.ndarray], fid: int,
               ex: FileExtraction) -> bool:  # fmt: skip
    """Refresh what `_declare_file` took from file `fid` beyond its declaration signature
    (lines of definitions and imports, the body) in the kept builder."""
    ids = memory.defs_of(fid)
    defs = sorted(ex.definitions, key=lambda d: (d.start_line, -d.end_line))
    if len(defs) != len(ids):
        return False
    at = (int(memory.fstart[fid]) if memory.fstart is not None else b.file_nodes[fid]) + 1
    for k, (node, d) in enumerate(zip(ids, defs, strict=True)):
        n = b.nodes[node]
        if n.qname != d.qualified_name or n.name != d.name:
            return False
        n.start, n.end = d.start_line, d.end_line
        if memory.columns is not None:
            memory.columns["start"][at + k] = d.start_line
            memory.columns["end"][at + k] = d.end_line
    # the declaration-phase CONTAINS rows of this file's definitions carry their lines
    lo, hi = np.searchsorted(memory.decl_file, [fid, fid + 1])
    if hi - lo != len(defs):
        return False
    decl[4][lo:hi] = [d.start_line for d in defs]
    scope = b.scopes[fid]
    imports: dict[str, list] = {}
    stars = []
    for imp in ex.imports:
        if imp.name == "*" and not imp.alias:
            stars.append((b.star_unit(fid, imp.module, imp.level, imp.line), imp.line))
            continue
        local = b._local_name(scope.family, imp)
        if local:
            imports.setdefault(local, []).append((imp.line, imp))
    scope.imports = {k: sorted(v, key=lambda x: x[0]) for k, v in imports.items()}
    scope.stars = stars
    b.bodies[fid] = Body.of(ex)
    b.types._lines = None
    for node in ids:
        b.types._memo.pop(node, None)
    b.types._memo.pop(b.file_nodes[fid], None)
    return True


# -- declaration changes ------------------------------------------------------------------


def _view(b: GraphBuilder, node: int) -> tuple:
    """Everything another file's resolution can read of a definition node."""
    n = b.nodes[node]
    scope = b.scopes[n.file]
    return (n.name, n.qname, n.def_kind, b.parent.get(node), tuple(b.bases.get(node, ())),
            b.owner_name.get(node), node in b.props, tuple(b.alts.get(node, ())),
            b.aliases.get(node), b.instances.get(node), scope.top.get(n.name) == node,
            scope.defs.get(n.qname) == node, tuple(sorted(b.children.get(node, {}).items())),
            node in b.methods.get(n.name, ()))  # fmt: skip


def _import_view(scope) -> tuple[dict[str, tuple], list]:
    last = {k: (v[-1][1].module, v[-1][1].name, v[-1][1].alias, v[-1][1].level)
            for k, v in scope.imports.items()}  # fmt: skip
    return last, [u for u, _ in scope.stars]


def _direct_subclasses(b: GraphBuilder) -> dict[int, list[int]]:
    return b.direct_subclasses()


def _declaration_patch(memory: Memory, decl: list[np.ndarray],
                       declared: list[tuple[int, FileExtraction]]):  # fmt: skip
    """Declare files `declared` again in the kept builder (definitions that did not change
    keep their nodes; removed ones die, added ones are appended), renumber the graph, and
    return (the files to resolve again, the previous edge log in the new numbering), or None."""
    b = memory.builder
    assert b is not None and memory.log is not None
    memory.numbering()
    assert memory.order is not None and memory.fstart is not None and memory.ndefs is not None
    _direct_subclasses(b)  # the table before the change (made once, then moved class by class)
    _index_memo(memory, b)
    old_touched = dict(b._touched)
    old_order = memory.order
    classes = {n for fid, _ in declared for n in memory.defs_of(fid)}
    names: set[str] = set()
    then_open: dict[int, bool] = {}  # the declared files' classes: open before the patch?
    for fid, ex in declared:
        if not _declare_again(b, memory, decl, fid, ex, names, then_open):
            return None
    reach = {fid for fid, _ in declared}
    # the declared files' definitions before and after: their bases are resolved again
    classes.update(n for fid in reach for n in memory.defs_of(fid))
    base_sub = b._sub_memo
    mark, moved, before, memo_names = _drop_stale_memos(
        memory, b, classes, names, reach, then_open, old_touched
    )
    memory.memo_seen = mark
    if not moved and all(b._supers.get(c, []) == old for c, old in before.items()):
        _keep_sub_memo(b, base_sub, names | memo_names, classes)
    for nm in names | memo_names:
        b._unique_top.pop(nm, None)
    b.types._lines = None
    reach |= memory.files_using(names)
    for fid in reach:
        b._touched.pop(fid, None)
    cols = _renumbered_log(memory, old_order, reach)
    return None if cols is None else (reach, cols)


def _drop_stale_memos(memory: Memory, b: GraphBuilder, classes: set[int], names: set[str],
                      reach: set[int], then_open: dict[int, bool], old_touched: dict):  # fmt: skip
    """Drop the memo entries a declaration change may have made wrong, widening `names` and
    `reach` until a pass finds nothing new; (the memo entries the last pass left, whether a
    list of direct subclasses changed, the resolved bases before the patch of the classes
    moved, the member names looked up through a class whose bases changed)."""
    # the memos: an entry is dropped when what it was computed from may have changed (a
    # changed name, a declared file, a class whose bases name a changed word, the subclass
    # sets); everything else (most of it) is kept, so that files resolved again are as cheap
    # as in a full build. Each pass drops more, and the entries the pass before computed.
    memo = b._memo
    gone_files = set(reach)
    _close_names(memory, b, names)
    stale: set[int] | None = None
    memo_names: set[str] = set()
    down: set[int] = set()
    dropped: tuple[set, set, set] = (set(), set(), set())  # names, stale classes, down
    before: dict[int, list[int]] = {}  # resolved bases before the patch of the classes moved
    moved = False  # a list of direct subclasses changed
    mark = -1  # entries of `memo` the pass before left; after them, what it computed
    size = -1
    while True:
        files = memory.files_using(names) | reach
        now = {c for f in files for c in memory.defs_of(f) if c in b.bases}
        wide = names | memo_names
        if stale is not None and now <= stale and len(wide) == size:
            break
        stale = now if stale is None else stale | now
        size = len(wide)
        if mark < 0:
            _drop_memo(memory, memo, memory.memo_by_file, gone_files)
            for c in classes:  # (a class whose bases all went is not in `stale`)
                memo.pop(("b", c), None)
            for k in memory.memo_other:
                memo.pop(k, None)
            memory.memo_other = []
        else:
            for k in list(islice(reversed(memo), len(memo) - mark)):
                del memo[k]
        _drop_memo(memory, memo, memory.memo_by_name, wide - dropped[0])
        _drop_memo(memory, memo, memory.memo_by_class, down - dropped[2])
        for c in stale - dropped[1]:
            memo.pop(("b", c), None)
        dropped[0].update(wide)
        dropped[1].update(stale)
        dropped[2].update(down)
        b._sub_memo = {}  # the subclass sets, their families and receiver words
        b._trans.clear()
        mark = len(memo)
        got, now_moved = b.update_subclasses(classes | stale | b._bases_cut)
        moved = moved or now_moved
        for c, old in got.items():
            before.setdefault(c, old)
        b._sub_memo = {}  # made while the table was half moved
        down, up = _inheritance(b, memory, before, old_touched, names, reach)
        _duck_typing(b, memory, before, then_open, classes, down, names, reach)
        if down:  # a lookup through a class whose bases changed may find another member
            memo_names |= {m for x in up | down for m in b.children.get(x, {})}
        _close_names(memory, b, names)
    return mark, moved, before, memo_names


def _renumbered_log(memory: Memory, old_order: np.ndarray, reach: set[int]):
    """The previous edge log in the new numbering (rows of files not reached keep their
    edges), or None when a kept file has an edge to a removed definition."""
    assert memory.log is not None
    canon = memory.graph_number(old_order).astype(np.int32)  # old graph numbers -> new
    arrays = memory.log[0]
    src, target = arrays["src"], arrays["target"]
    if not np.array_equal(canon, np.arange(len(canon), dtype=np.int32)):
        src = canon[src]
        pos = target >= 0
        target = np.where(pos, canon[np.maximum(target, 0)], target)
        bad = np.flatnonzero((src < 0) | (pos & (target < 0)))
        if len(bad):
            owners = set((np.searchsorted(arrays["ptr"], bad, side="right") - 1).tolist())
            if not owners <= reach:
                return None  # a kept file's edge to a removed definition: the reach is wrong
    return (src, target, arrays["kind"], arrays["conf"], arrays["line"])


def _declare_again(b: GraphBuilder, memory: Memory, decl: list[np.ndarray], fid: int,
                   ex: FileExtraction, names: set[str],
                   then_open: dict[int, bool] | None = None) -> bool:  # fmt: skip
    """Declare file `fid` again from `ex`; add to `names` every name whose meaning to
    another file may have changed; `then_open`: whether each of its classes was open
    before (`_open_here`)."""
    assert memory.order is not None and memory.fstart is not None and memory.ndefs is not None
    assert b.okey is not None
    old_ids = memory.defs_of(fid)
    if then_open is not None:
        then_open.update((o, _open_here(b, o)) for o in old_ids if o in b.bases or o in b.children)
    old_views = {o: _view(b, o) for o in old_ids}
    old_imports, old_stars = _import_view(b.scopes[fid])
    if memory.follows is not None:
        _follow(memory, _file_follows(b, memory, fid), -1)
    old_lists = _forget_declarations(b, fid, old_ids)
    ids = _definitions_now(b, fid, ex, old_ids)
    edges, b.edges = b.edges, type(b.edges)()
    stars: list[tuple[int, str, int, int]] = []
    b._declare_file(fid, b.paths[fid], ex, stars, ids)
    rows = b.edges
    b.edges = edges
    scope = b.scopes[fid]
    for _, module, level, line in stars:
        scope.stars.append((b.star_unit(fid, module, level, line), line))
    b.bodies[fid] = Body.of(ex)
    if not _names_changed(b, fid, old_ids, ids, old_views, old_lists, old_imports, old_stars,
                          names):  # fmt: skip
        return False
    a, old_n, old_map, canon = _renumber(memory, b, fid, ids)
    if memory.follows is not None:
        _follow(memory, _file_follows(b, memory, fid), 1)
    _splice_columns(memory, b, ids, a, old_n)
    _splice_declaration_rows(memory, decl, rows, fid, canon, old_map)
    return True


def _forget_declarations(b: GraphBuilder, fid: int, old_ids: list[int]) -> dict[str, tuple]:
    """Take file `fid`'s definitions out of the builder's tables. In the lists of same-named
    definitions (in the graph's order) the file's are one run: the runs taken out, by name,
    to compare with the new ones."""
    old_lists = {}
    for nm in dict.fromkeys(b.nodes[o].name for o in old_ids):
        got = []
        for table in (b.by_name, b.methods):
            lst = table.get(nm, [])
            lo, hi = _file_run(b, lst, fid)
            got.append(lst[lo:hi])
            if hi > lo:
                del lst[lo:hi]
                if not lst:
                    del table[nm]
        old_lists[nm] = tuple(got)
    for o in old_ids:
        for table in (b.children, b.parent, b.bases, b.owner_name, b.alts, b.aliases,
                      b.instances, b.types._memo):  # fmt: skip
            table.pop(o, None)  # type: ignore[attr-defined]
        b.props.discard(o)
    b.types._memo.pop(b.file_nodes[fid], None)
    return old_lists


def _definitions_now(
    b: GraphBuilder, fid: int, ex: FileExtraction, old_ids: list[int]
) -> list[int]:
    """The builder nodes of `ex`'s definitions in order: a definition whose qualified name is
    still there keeps its node (its lines and kind refreshed), a new one is appended."""
    defs = sorted(ex.definitions, key=lambda d: (d.start_line, -d.end_line))
    pool: dict[str, list[int]] = {}
    for o in old_ids:
        pool.setdefault(b.nodes[o].qname, []).append(o)
    ids: list[int] = []
    for rank, d in enumerate(defs, start=1):
        got = pool.get(d.qualified_name)
        if got:
            node = got.pop(0)
            n = b.nodes[node]
            n.name, n.start, n.end, n.def_kind = d.name, d.start_line, d.end_line, d.kind
        else:
            node = b._node(Node(NodeKind.DEFINITION, d.name, d.qualified_name, fid,
                                d.start_line, d.end_line, d.kind))  # fmt: skip
        ids.append(node)
        while len(b.okey) <= node:
            b.okey.append(0)
        b.okey[node] = fid * _RANK + rank
    return ids


def _names_changed(b: GraphBuilder, fid: int, old_ids: list[int], ids: list[int],
                   old_views: dict[int, tuple], old_lists: dict[str, tuple],
                   old_imports: dict[str, tuple], old_stars: list, names: set[str]) -> bool:  # fmt: skip
    """Add to `names` what changed for other files: definitions whose view changed, the
    same-named lists, imports, star exports, the JS default export. False when the star
    exports are too many to follow."""
    gone = set(old_ids)
    scope = b.scopes[fid]
    new_ids = set(ids)
    for node in gone | new_ids:
        if node not in gone or node not in new_ids or old_views[node] != _view(b, node):
            names.add(b.nodes[node].name)
    for nm, old in old_lists.items():
        if tuple(lst[slice(*_file_run(b, lst, fid))] for lst in
                 (b.by_name.get(nm, []), b.methods.get(nm, []))) != old:  # fmt: skip
            names.add(nm)
    new_imports, new_stars = _import_view(scope)
    for local in old_imports.keys() | new_imports.keys():
        if old_imports.get(local) != new_imports.get(local):
            names.add(local)
    if old_stars != new_stars:
        exported = _exported(b, set(old_stars) | set(new_stars))
        if exported is None:
            return False
        names |= exported
    if scope.family == "js" and [b.nodes[o].name for o in old_ids if old_views[o][10]] != [
        b.nodes[n].name for n in ids if scope.top.get(b.nodes[n].name) == n
    ]:
        names.add("default")  # `import X from './m'` takes a module's only top-level definition
    return True


def _renumber(memory: Memory, b: GraphBuilder, fid: int, ids: list[int]):
    """The graph's numbering with file `fid`'s segment replaced by `ids` and the later files'
    moved: (the segment's first graph number, its old length, old graph numbers -> new,
    builder numbers -> graph numbers)."""
    assert memory.order is not None and memory.fstart is not None and memory.ndefs is not None
    a = int(memory.fstart[fid]) + 1
    old_n = int(memory.ndefs[fid])
    prev_order = memory.order
    new_arr = np.array(ids, dtype=np.int64)
    memory.order = np.concatenate([prev_order[:a], new_arr, prev_order[a + old_n :]])
    memory.fstart[fid + 1 :] += len(ids) - old_n
    memory.ndefs[fid] = len(ids)
    canon = np.full(len(b.nodes), -1, dtype=np.int64)  # builder numbers -> graph numbers
    canon[memory.order] = np.arange(len(memory.order))
    memory.canon = canon
    memory.declared_nodes = len(memory.order)
    old_map = canon[prev_order]  # graph numbers before -> after (-1: a removed definition)
    return a, old_n, old_map, canon


def _splice_columns(memory: Memory, b: GraphBuilder, ids: list[int], a: int, old_n: int) -> None:
    """Replace the declared nodes' columns (and packed names) of the file's segment."""
    cols = memory.columns
    if cols is not None:
        new_cols = node_columns([b.nodes[i] for i in ids])
        for k, v in cols.items():
            if isinstance(v, np.ndarray):
                cols[k] = np.concatenate([v[:a], new_cols[k], v[a + old_n :]])
            else:
                v[a : a + old_n] = new_cols[k]
        if memory.packed is not None:
            for k, (blob, off) in list(memory.packed.items()):
                nb, no = store.pack_strings(new_cols[k])
                lo_b, hi_b = int(off[a]), int(off[a + old_n])
                memory.packed[k] = (
                    np.concatenate([blob[:lo_b], nb, blob[hi_b:]]),
                    np.concatenate(
                        [off[:a], no[:-1] + lo_b, off[a + old_n :] - hi_b + lo_b + no[-1]]
                    ),
                )


def _splice_declaration_rows(memory: Memory, decl: list[np.ndarray], rows: Any, fid: int,
                             canon: np.ndarray, old_map: np.ndarray) -> None:  # fmt: skip
    """This file's declaration rows made again, every row renumbered."""
    lo, hi = (int(x) for x in np.searchsorted(memory.decl_file, [fid, fid + 1]))
    mine = [np.array(c, dtype=dt) for c, dt in
            zip((rows.src, rows.dst, rows.kind, rows.conf, rows.line), _DTYPES, strict=True)]  # fmt: skip
    mine[0] = canon[mine[0].astype(np.int64)].astype(np.int32)
    mine[1] = canon[mine[1].astype(np.int64)].astype(np.int32)
    for i in range(5):
        c = decl[i]
        if i < 2:
            c = old_map[c.astype(np.int64)].astype(np.int32)
        decl[i] = np.concatenate([c[:lo], mine[i], c[hi:]])
    memory.decl_file = np.concatenate([memory.decl_file[:lo],
                                       np.full(len(mine[0]), fid, dtype=np.int32),
                                       memory.decl_file[hi:]])  # fmt: skip


def _file_run(b: GraphBuilder, nodes: list[int], fid: int) -> tuple[int, int]:
    """Where file `fid`'s definitions are in `nodes`, a list in the graph's order (`okey`)."""
    assert b.okey is not None
    key = b.okey.__getitem__
    return (bisect.bisect_left(nodes, fid * _RANK, key=key),
            bisect.bisect_left(nodes, (fid + 1) * _RANK, key=key))  # fmt: skip


def _exported(b: GraphBuilder, units: set) -> set[str] | None:
    """Every name `lookup_in_unit` can find in `units` (through their star imports too)."""
    out: set[str] = set()
    todo = [u for u in units if u is not None]
    seen = set(todo)
    while todo:
        unit = todo.pop()
        for f in b.index.units.get(unit, []):
            out.update(b.scopes[f].top)
            out.update(b.scopes[f].imports)
            for star, _ in b.scopes[f].stars:
                if star is not None and star not in seen:
                    seen.add(star)
                    todo.append(star)
        if len(out) > 200_000:
            return None
    return out
