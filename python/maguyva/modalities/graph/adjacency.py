"""Edge rows to a graph's edges and adjacency: merging rows by (src, dst, kind) in order of
first appearance (`merge_rows`), and the CSR lists both ways with neighbours by confidence
(`_csr`, native with a numpy reference)."""

from __future__ import annotations

import numpy as np

from maguyva import _core
from maguyva.modalities.graph.resolve.rows import Columns


def _csr(n: int, keys: np.ndarray, conf: np.ndarray, near: np.ndarray | None = None,
         cache: dict | None = None, ranked: tuple[np.ndarray, int] | None = None,
         ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Adjacency of `keys` (each edge's node) as (pointers, edge numbers): a node's edges by
    confidence, highest first, ties in edge order (`ranked`: `_conf_rank` of `conf`, when
    the caller has it). One sort of distinct int64 values (node,
    rank of the confidence, edge number); given `near`, the edges in an order close to that
    one (edges in first-appearance order are nearly sorted by source; `merge_rows` gives
    them by destination), a stable sort of nearly sorted input, which is cheap."""
    conf = np.asarray(conf, dtype=np.float32)
    m = len(conf)
    rank, levels = ranked if ranked is not None else _conf_rank(conf, cache)
    cb, eb = max(levels - 1, 1).bit_length(), max(m - 1, 1).bit_length()
    native = getattr(_core, "csr_by_rank", None)
    packs = m > 0 and max(n - 1, 1).bit_length() + cb + eb <= 63
    if native is not None and packs and keys.dtype == np.int32 and rank.dtype == np.int64:
        # the same order: two stable counting sorts, by rank then by node
        return native(n, np.ascontiguousarray(keys), np.ascontiguousarray(rank), levels)
    return _csr_numpy(n, keys, conf, near, rank, levels)


def _csr_numpy(n: int, keys: np.ndarray, conf: np.ndarray, near: np.ndarray | None,
               rank: np.ndarray, levels: int) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """`_csr` with numpy (float32 `conf`, its `rank` and `levels`): the fallback when the
    native module lacks `csr_by_rank`, and the tests' reference."""
    m = len(conf)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=ptr[1:])
    cb, eb = max(levels - 1, 1).bit_length(), max(m - 1, 1).bit_length()
    if m == 0 or max(n - 1, 1).bit_length() + cb + eb > 63:
        return ptr, np.lexsort((-conf, keys)).astype(np.int32)
    c = (keys.astype(np.int64) << (cb + eb)) | (rank << eb) | np.arange(m, dtype=np.int64)
    if near is not None:
        c = c[near]
    c = np.sort(c, kind="stable")  # distinct values: the order is the same whatever the sort
    return ptr, (c & ((1 << eb) - 1)).astype(np.int32)


def _conf_rank(conf: np.ndarray, cache: dict | None) -> tuple[np.ndarray, int]:
    """Each confidence's rank among the distinct values, highest first, and their number
    (the distinct values are few and rarely change: a remembering writer keeps them)."""
    values = cache.get("conf_values") if cache is not None else None
    if values is not None and len(values):
        native = getattr(_core, "conf_ranks", None)
        if native is not None and conf.dtype == np.float32 and values.dtype == np.float32:
            got = native(np.ascontiguousarray(conf), np.ascontiguousarray(values))
            if got is not None:
                return got, len(values)
            return _conf_rank_unique(conf, cache)
        at = np.searchsorted(values, conf)
        if np.array_equal(values[np.minimum(at, len(values) - 1)], conf):
            return (len(values) - 1 - at).astype(np.int64), len(values)
    return _conf_rank_unique(conf, cache)


def _conf_rank_unique(conf: np.ndarray, cache: dict | None) -> tuple[np.ndarray, int]:
    """`_conf_rank` from the distinct values, found again (and remembered)."""
    values, inverse = np.unique(conf, return_inverse=True)
    if cache is not None:
        cache["conf_values"] = values
    return (len(values) - 1 - inverse.reshape(-1)).astype(np.int64), len(values)


def merge_edges(rows: Columns) -> tuple[np.ndarray, ...]:
    """Merge edge rows by (src, dst, kind), in order of first appearance: (src, dst, kind,
    best conf as float32, line pointers, lines) where an edge's lines are its distinct lines,
    ascending."""
    cols = (np.frombuffer(rows.src, dtype=np.int32), np.frombuffer(rows.dst, dtype=np.int32),
            np.frombuffer(rows.kind, dtype=np.uint8), np.frombuffer(rows.conf, dtype=np.float64),
            np.frombuffer(rows.line, dtype=np.int32))  # fmt: skip
    return merge_rows(*cols)[0]


def merge_rows(
    src: np.ndarray,
    dst: np.ndarray,
    kind: np.ndarray,
    conf_rows: np.ndarray,
    line_rows: np.ndarray,
    pos: np.ndarray | None = None,
    hint: np.ndarray | None = None,
) -> tuple[tuple[np.ndarray, ...], np.ndarray, np.ndarray]:
    """`merge_edges` of the rows given as columns, the rows' order by (dst, src, kind, line)
    and the merged edges' numbers in order of (dst, src, kind). `pos` (default: the row
    numbers) orders the rows for "first appearance": rows may come in any order when `pos`
    says where each stands. `hint`, a permutation of the rows, is a guess of that order (the
    previous update's, rows mapped): the rows are sorted in that order first, with a stable
    sort that is fast on nearly sorted input. The result does not depend on the hint, only
    the time does (equal rows are merged whatever their order: a maximum, a set of lines, the
    smallest position).

    Rows with equal (dst, src, kind, line) stand in `order` in the hint's order, or by row
    number (no hint, or keys too wide for one int64). numpy, not a native kernel: one was
    measured (docs/graph-incremental.md) and was no faster inside the writer unless ~110 MB of scratch
    stayed allocated between updates."""
    big = len(src)
    if big == 0:
        empty = np.zeros(0, dtype=np.int32)
        return (empty, empty.copy(), np.zeros(0, dtype=np.uint8), np.zeros(0, dtype=np.float32),
                np.zeros(1, dtype=np.int64), empty.copy()), np.zeros(0, dtype=np.int64), \
            np.zeros(0, dtype=np.int64)  # fmt: skip
    order, sk, sl, lo, nb = _sorted_rows(src, dst, kind, line_rows, hint)
    new = np.empty(big, dtype=bool)
    new[0] = True
    np.not_equal(sk[1:], sk[:-1], out=new[1:])
    distinct = new.copy()  # a row with another line than the row before, in its edge
    distinct[1:] |= sl[1:] != sl[:-1]
    starts = np.flatnonzero(new)
    del new
    group_key = sk[starts]  # (dst, src, kind) of each group, in key order
    del sk
    m = len(starts)
    # each edge's first position, and the edges in that order
    first = np.minimum.reduceat(order if pos is None else pos[order], starts)
    is_first = np.zeros(int(first.max()) + 1, dtype=bool)
    is_first[first] = True
    edge_of_group = np.cumsum(is_first, dtype=np.int64 if big >> 31 else np.int32)[first] - 1
    del is_first, first
    group = np.empty(m, dtype=np.int64)  # edges in order of first appearance -> their group
    group[edge_of_group] = np.arange(m)
    # float32 first: the cast is monotone, so the maximum of the cast is the cast of the maximum
    conf = np.maximum.reduceat(conf_rows.astype(np.float32)[order], starts)[group]
    # each edge's distinct lines, ascending: the groups' runs of distinct rows, reordered
    lines_g = (sl[distinct] + lo).astype(np.int32)
    seen = np.cumsum(distinct)
    gstart = seen[starts] - 1
    count = np.diff(np.r_[gstart, seen[-1]])
    del seen, distinct, sl
    ecount = count[group]
    lptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(ecount, out=lptr[1:])
    at = np.repeat(gstart[group] - lptr[:-1], ecount)
    at += np.arange(int(lptr[-1]), dtype=np.int64)
    lines = lines_g[at]
    key = group_key[group]  # decoded: one gather instead of one per column
    kind_e = (key & 7).astype(np.uint8)
    key >>= 3
    src_e, dst_e = (key & ((1 << nb) - 1)).astype(np.int32), (key >> nb).astype(np.int32)
    return (src_e, dst_e, kind_e, conf, lptr, lines), order, edge_of_group


def _sorted_rows(src: np.ndarray, dst: np.ndarray, kind: np.ndarray, line_rows: np.ndarray,
                 hint: np.ndarray | None):  # fmt: skip
    """The rows' order by (dst, src, kind, line) (`merge_rows`), the sorted (dst, src, kind)
    keys and lines (less `lo`, the smallest line), and `nb`, the bits of a node number."""
    nb = max(int(max(src.max(), dst.max())).bit_length(), 1)
    key = (((dst.astype(np.int64) << nb) | src) << 3) | kind  # by destination: see `_csr`
    lo = int(line_rows.min())
    lb = max((int(line_rows.max()) - lo).bit_length(), 1)
    if 2 * nb + 3 + lb <= 63:  # (key, line) in one int64
        c = (key << lb) | (line_rows.astype(np.int64) - lo)
        del key
        if hint is None:  # stable: equal rows by row number, as the native kernel has them
            order = np.argsort(c, kind="stable")
            cs = c[order]
        else:  # gathered once: the sorted order is close to the hint's (cheap to follow)
            c = c[hint]
            by = np.argsort(c, kind="stable")
            order, cs = hint[by], c[by]
            del by
        del c
        sk, sl = cs >> lb, cs & ((1 << lb) - 1)
        del cs
    else:
        order = np.lexsort((line_rows, key))
        sk, sl = key[order], line_rows[order].astype(np.int64) - lo
        del key
    return order, sk, sl, lo, nb
