"""Assembling what a full build holds from the remembered edge log with the changed files'
rows replaced (`build.finish`'s input), and the edge rows' tags for the next patch's hint."""

from __future__ import annotations

from typing import Any

import numpy as np

from maguyva.modalities.graph import store
from maguyva.modalities.graph.columns import node_columns
from maguyva.modalities.graph.memory import _DTYPES, Memory
from maguyva.modalities.graph.resolve.builder import GraphBuilder
from maguyva.modalities.graph.resolve.rows import CALLS, CONTAINS, STAT_KEYS, Node
from maguyva.modalities.graph.schema import NodeKind


class _Rows:
    """`Columns` as numpy arrays (what `adjacency.merge_edges` and `pack` read)."""

    __slots__ = ("conf", "dst", "kind", "line", "src")

    def __init__(self, cols: tuple[np.ndarray, ...]) -> None:
        self.src, self.dst, self.kind, self.conf, self.line = cols

    def __len__(self) -> int:
        return len(self.src)


class _Assembled:
    """The attributes of a resolved `GraphBuilder` that `build.finish` and `pack` read."""

    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


def _assemble(b: GraphBuilder, memory: Memory, decl: list[np.ndarray],
              new_rows: dict[int, tuple[np.ndarray, ...]], names_now: list[str],
              stats: np.ndarray, old_cols: tuple[np.ndarray, ...]) -> _Assembled:  # fmt: skip
    """What a full build holds after `resolve_all`, from the remembered log with the rows of
    the changed files replaced: the log's external / module names numbered in order of first
    appearance (as `emit` and `replay` number them), their nodes after the declared ones, and
    a module node's CONTAINS edges just before the row that first uses it.

    The edge rows are laid out as the declaration rows, the log's rows, then the CONTAINS
    rows of the module nodes, with each row's position in a full build's order (`edge_pos`:
    `build.merge_rows` takes the first appearance from it), and `edge_hint`, the previous
    update's sorted order of the rows mapped to this layout (a row keeps its file and its
    rank in the file's rows: `edge_tag`)."""
    assert memory.log is not None
    cols, lengths, tags = _spliced_log(memory, new_rows, names_now, old_cols)
    d = memory.declared_nodes
    names, first_row, dst = _first_appearance(cols, tags, d)
    nodes, file_nodes, ext_nodes, unit_nodes, ins = _lazy_nodes(b, memory, names, first_row)
    edges, pos, log_ptr, tag, hint = _edge_rows(memory, decl, cols, dst, ins, lengths)
    columns = _all_node_columns(memory, nodes) if memory.columns is not None else None
    totals = stats.sum(axis=0).tolist() if len(stats) else [0] * len(STAT_KEYS)

    def merged_to(order: np.ndarray) -> None:
        memory.edge_tags = tag[order] if tag is not None else None

    return _Assembled(
        floor=b.floor, paths=b.paths, languages=b.languages, index=b.index, nodes=nodes,
        edges=edges, ext_nodes=ext_nodes, unit_nodes=unit_nodes, file_nodes=file_nodes,
        stats=dict(zip(STAT_KEYS, (int(v) for v in totals), strict=True)), log=_Rows(tuple(cols)),
        log_ptr=log_ptr, log_names=names, file_stats=stats, node_columns=columns,
        global_cache=memory.global_cache, edge_pos=pos, edge_hint=hint, merged_to=merged_to,
    )  # fmt: skip


def _spliced_log(memory: Memory, new_rows: dict[int, tuple[np.ndarray, ...]],
                 names_now: list[str], old_cols: tuple[np.ndarray, ...]):  # fmt: skip
    """The log's rows with each changed file's run replaced by its new rows, a target name
    numbered by its place in `tags` (`names_now`, then the log's other names); the run
    lengths per file and `tags`."""
    assert memory.log is not None
    arrays, strings, _ = memory.log
    ptr = arrays["ptr"]
    # a name's number in `names_now` (the kept builder's `log_names`: never renumbered)
    stable_of = {t: i for i, t in enumerate(names_now)}
    tags = list(names_now)
    for t in strings["names"]:
        if t not in stable_of:
            stable_of[t] = len(tags)
            tags.append(t)
    old_stable = np.array([stable_of[t] for t in strings["names"]] or [0], dtype=np.int64)
    pieces: list[tuple[np.ndarray, ...]] = []
    lengths = np.diff(ptr).copy()
    at = 0

    def old_piece(lo: int, hi: int) -> tuple[np.ndarray, ...]:
        t = old_cols[1][lo:hi]
        neg = t < 0
        if neg.any():
            t = t.astype(np.int64)
            t[neg] = -1 - old_stable[-1 - t[neg]]
        return (old_cols[0][lo:hi], t, *(c[lo:hi] for c in old_cols[2:]))

    for fid in sorted(new_rows):
        lo, hi = int(ptr[fid]), int(ptr[fid + 1])
        pieces.append(old_piece(at, lo))
        pieces.append(new_rows[fid])
        lengths[fid] = len(new_rows[fid][0])
        at = hi
    pieces.append(old_piece(at, len(old_cols[0])))
    cols = [np.concatenate([p[i] for p in pieces]).astype(dt, copy=False)
            for i, dt in enumerate(_DTYPES)]  # fmt: skip
    del pieces
    return cols, lengths, tags


def _first_appearance(cols: list[np.ndarray], tags: list[str], d: int):
    """Number the target names of `cols` in order of first appearance (as `emit` numbers
    them; `cols[1]` renumbered in place): the names, the row where each first appears, and
    the targets in the graph's numbering (a name's node after the `d` declared ones)."""
    total = len(cols[0])
    target = cols[1].astype(np.int64)
    neg = np.flatnonzero(target < 0)
    cid = -1 - target[neg]
    first = np.full(len(tags), total, dtype=np.int64)
    np.minimum.at(first, cid, neg)
    used = np.flatnonzero(first < total)
    used = used[np.argsort(first[used], kind="stable")]
    new_index = np.full(len(tags), -1, dtype=np.int64)
    new_index[used] = np.arange(len(used))
    names = [tags[c] for c in used.tolist()]
    first_row = first[used]  # the log row where each name first appears
    idx = new_index[cid]
    target[neg] = -1 - idx
    cols[1] = target.astype(np.int32)
    target[neg] = d + idx  # the graph's numbering
    dst = target.astype(np.int32)
    del target
    return names, first_row, dst


def _lazy_nodes(b: GraphBuilder, memory: Memory, names: list[str], first_row: np.ndarray):
    """The graph's nodes with those made on first use appended (module and external nodes,
    in the order of `names`), and each module node's CONTAINS rows to its files (where to
    insert them, sources, targets)."""
    d = memory.declared_nodes
    file_nodes = memory.fstart.tolist() if memory.fstart is not None else b.file_nodes
    if memory.columns is not None:
        nodes: list = [None] * d  # only counted: the declared nodes' columns are kept
    elif memory.order is not None:
        nodes = [b.nodes[i] for i in memory.order.tolist()]
    else:
        nodes = list(b.nodes[:d])
    ext_nodes: dict[str, int] = {}
    unit_nodes: dict[str, int] = {}
    ins_at: list[int] = []
    ins_src: list[int] = []
    ins_dst: list[int] = []
    for k, tag in enumerate(names):
        name = tag[2:]
        if tag[0] == "u":
            short = name.split(":", 1)[1]
            files = b.index.units[name]
            nodes.append(Node(NodeKind.MODULE, short.replace("::", ".").rsplit(".", 1)[-1],
                              short, files[0]))  # fmt: skip
            unit_nodes[name] = d + k
            for f in files:
                ins_at.append(int(first_row[k]))
                ins_src.append(d + k)
                ins_dst.append(file_nodes[f])
        else:
            nodes.append(Node(NodeKind.EXTERNAL, name.rsplit(".", 1)[-1], name))
            ext_nodes[name] = d + k
    return nodes, file_nodes, ext_nodes, unit_nodes, (ins_at, ins_src, ins_dst)


def _edge_rows(memory: Memory, decl: list[np.ndarray], cols: list[np.ndarray],
               dst: np.ndarray, ins: tuple[list[int], list[int], list[int]],
               lengths: np.ndarray):  # fmt: skip
    """The edge rows (declaration rows, the log's kept rows, the module CONTAINS rows), each
    row's position in a full build's order, the log's pointer per file, and the tags and
    hint of `_edge_tags`."""
    ins_at, ins_src, ins_dst = ins
    total = len(cols[0])
    src = cols[0]
    keep = (src != dst) | (cols[2] == CALLS)
    n_decl = len(decl[0])
    n_ins = len(ins_at)
    # positions in a full build's row order: the CONTAINS rows inserted before their row
    at_arr = np.array(ins_at, dtype=np.int64)
    shift = np.zeros(total + 1, dtype=np.int64)
    np.add.at(shift, at_arr, 1)
    np.cumsum(shift, out=shift)
    kept = np.flatnonzero(keep)
    pos = np.concatenate([np.arange(n_decl, dtype=np.int64), n_decl + kept + shift[kept],
                          n_decl + at_arr + np.arange(n_ins, dtype=np.int64)])  # fmt: skip
    del shift
    ins = (np.array(ins_src, dtype=np.int32), np.array(ins_dst, dtype=np.int32),
           np.full(n_ins, CONTAINS, dtype=np.uint8), np.ones(n_ins), np.zeros(n_ins, dtype=np.int32))  # fmt: skip
    edges = _Rows(tuple(
        np.concatenate([dc, ec[keep], ic]).astype(dt, copy=False)
        for dc, ec, ic, dt in zip(decl, (src, dst, cols[2], cols[3], cols[4]), ins, _DTYPES,
                                  strict=True)
    ))  # fmt: skip
    log_ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=log_ptr[1:])
    tag, hint = _edge_tags(memory, n_decl, keep, log_ptr, n_ins)
    return edges, pos, log_ptr, tag, hint


def _all_node_columns(memory: Memory, nodes: list) -> dict[str, Any]:
    """The kept declared nodes' columns with the lazily made nodes' appended (names packed)."""
    assert memory.columns is not None
    lazy = node_columns(nodes[memory.declared_nodes :])
    # the declared nodes' names do not change in a patch: packed once, the rest appended
    if memory.packed is None:
        memory.packed = {k: store.pack_strings(memory.columns[k]) for k in ("name", "qname")}
    columns = {k: np.concatenate([v, lazy[k]]) if isinstance(v, np.ndarray) else v + lazy[k]
               for k, v in memory.columns.items() if k not in memory.packed}  # fmt: skip
    for k, (blob, off) in memory.packed.items():
        more_blob, more_off = store.pack_strings(lazy[k])
        columns[k] = store.Packed(np.concatenate([blob, more_blob]),
                                  np.concatenate([off, more_off[1:] + off[-1]]))  # fmt: skip
    return columns


_TAG_SHIFT = 32  # edge_tag: segment << 32 | rank of the row in its segment


def _edge_tags(memory: Memory, n_decl: int, keep: np.ndarray, log_ptr: np.ndarray,
               n_ins: int) -> tuple[np.ndarray | None, np.ndarray | None]:  # fmt: skip
    """Each edge row's tag (its segment: a file's declaration rows, a file's log rows; the
    module CONTAINS rows have none; and its rank there) and the previous update's sorted
    order as a permutation of this layout's rows (None on the first patch)."""
    files = len(log_ptr) - 1
    decl_file = memory.decl_file
    if len(decl_file) != n_decl:  # not known: no tags, no hint
        memory.edge_files = -1
        return None, None
    ck = np.zeros(len(keep) + 1, dtype=np.int64)
    np.cumsum(keep, out=ck[1:])
    # the segments are contiguous (declaration rows by file, then log rows by file), the
    # module CONTAINS rows last (segment 2 * files: no tag that a later layout matches)
    seg_len = np.r_[np.bincount(decl_file, minlength=files), np.diff(ck[log_ptr]), n_ins]
    seg_start = np.zeros(len(seg_len) + 1, dtype=np.int64)
    np.cumsum(seg_len, out=seg_start[1:])
    base = (np.arange(len(seg_len), dtype=np.int64) << _TAG_SHIFT) - seg_start[:-1]
    tag = np.repeat(base, seg_len)
    tag += np.arange(len(tag), dtype=np.int64)
    old = memory.edge_tags
    if old is None or memory.edge_files != files:
        memory.edge_files = files
        return tag, None
    oseg = old >> _TAG_SHIFT
    off = old - (oseg << _TAG_SHIFT)
    seg_len[-1] = 0  # untagged
    ok = off < seg_len[oseg]
    cand = seg_start[oseg[ok]] + off[ok]
    mark = np.zeros(len(tag), dtype=bool)
    mark[cand] = True
    return tag, np.concatenate([cand, np.flatnonzero(~mark)])
