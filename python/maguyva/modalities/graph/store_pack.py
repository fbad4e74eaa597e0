"""Graph format 4's packed sections (issue 21, the index's size): what `graph.bin` and
`names.bin` store in place of arrays a reader can rebuild, and the rebuilding (the edges'
part on a graph's first walk, ~3 ms CPU on the standard library: `GraphIndex._edge_arrays`;
the qualified names per node).

| stored (format 4) | instead of (format 3) | rebuilt |
|---|---|---|
| `edge_nlines` (u8/u16/u32: each edge's line count) | `edge_lptr` (int64 pointers) | a cumulative sum |
| `edge_confcode` (u8) + `conf_table` (f4, <= 256 values) | `edge_conf` (f4) | a gather, the same floats |
| `edge_lines` as u16 when every line is < 65536 | int32 | nothing (read as it is) |
| edges renumbered in forward order, `node_outdeg`, `node_revdeg` (each node's edge counts) | `edge_src`, `edge_dst`, `fwd_ptr`, `fwd_idx`, `rev_ptr` | `fwd_idx` the identity, the pointers cumulative sums, the ends repeated node numbers |
| `node_qprefix_id` + `qprefixes` (each qualified name without its name, each prefix once) | `node_qname` | `prefix + name`, per node |

Each is written only when it holds (a count that does not fit, more than 256 confidences,
pointers that are not the counts, a qualified name not ending with its name): the section
is then stored as format 3 stored it, and the reader takes whichever it finds. Format-3
files have only the old sections and are read as they are.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import numpy as np

from maguyva.errors import CorruptIndexError
from maguyva.modalities.graph import store

CONF_CODES = 256


def pack_graph(arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`graph.bin`'s arrays with the packed sections in place of those they rebuild."""
    out = dict(arrays)
    n = len(arrays["node_start"])
    lptr = np.asarray(out.pop("edge_lptr"), dtype=np.int64)
    src, dst = np.asarray(out["edge_src"]), np.asarray(out["edge_dst"])
    fwd, rev = (np.asarray(out["fwd_ptr"]), np.asarray(out["fwd_idx"], dtype=np.int64)), (
        np.asarray(out["rev_ptr"]), np.asarray(out["rev_idx"], dtype=np.int64))  # fmt: skip
    if _is_csr(*fwd, src, n) and _is_csr(*rev, dst, n):
        lptr = _renumber(out, fwd, rev, lptr)
    counts = np.diff(lptr)
    out["edge_nlines"] = counts.astype(_unsigned(int(counts.max()) if counts.size else 0))
    lines = np.asarray(out["edge_lines"])
    if not lines.size or (int(lines.min()) >= 0 and int(lines.max()) < 1 << 16):
        out["edge_lines"] = lines.astype(np.uint16)
    conf = np.asarray(out["edge_conf"], dtype=np.float32)
    table, codes = np.unique(conf, return_inverse=True)
    if len(table) <= CONF_CODES:
        del out["edge_conf"]
        out["edge_confcode"], out["conf_table"] = codes.astype(np.uint8), table
    return out


def _is_csr(ptr: np.ndarray, idx: np.ndarray, ends: np.ndarray, n: int) -> bool:
    """Whether `ptr`/`idx` list every edge once, grouped by its end in `ends`."""
    m = len(ends)
    if len(ptr) != n + 1 or len(idx) != m or not np.array_equal(ptr, _counts_ptr(ends, n)):
        return False
    if m and (int(idx.min()) < 0 or int(idx.max()) >= m or int(np.bincount(idx).max()) > 1):
        return False
    return bool(np.array_equal(ends[idx], np.repeat(np.arange(n), np.diff(ptr))))


def _renumber(out: dict[str, np.ndarray], fwd: tuple[np.ndarray, np.ndarray],
              rev: tuple[np.ndarray, np.ndarray], lptr: np.ndarray) -> np.ndarray:  # fmt: skip
    """The edges of `out` renumbered in forward-CSR order (edge `j` is the old `fwd_idx[j]`),
    so that `fwd_idx` is the identity and each edge's source is implied by the out-degrees;
    `edge_dst` is implied by `rev_idx` and the in-degrees. Returns the new line pointers."""
    perm = fwd[1]
    m = len(perm)
    inv = np.empty(m, dtype=np.int64)
    inv[perm] = np.arange(m)
    counts = np.diff(lptr)[perm]
    new_ptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(counts, out=new_ptr[1:])
    gather = np.repeat(lptr[:-1][perm] - new_ptr[:-1], counts) + np.arange(int(new_ptr[-1]))
    out["edge_lines"] = np.asarray(out["edge_lines"])[gather]
    for k in ("edge_kind", "edge_conf"):
        out[k] = np.asarray(out[k])[perm]
    for k in ("edge_src", "edge_dst", "fwd_ptr", "fwd_idx", "rev_ptr"):
        del out[k]
    out["rev_idx"] = inv[rev[1]].astype(np.int32)
    for name, ptr in (("node_outdeg", fwd[0]), ("node_revdeg", rev[0])):
        degree = np.diff(ptr)
        out[name] = degree.astype(_unsigned(int(degree.max()) if degree.size else 0))
    return new_ptr


def pack_names(part: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`names.bin`'s arrays with `node_qprefix` in place of `node_qname` when every qualified
    name ends with the node's name (a definition's `Class.method` ends with `method`)."""
    q_blob, q_off = part["node_qname.blob"], np.asarray(part["node_qname.off"], dtype=np.int64)
    n_blob, n_off = part["node_name.blob"], np.asarray(part["node_name.off"], dtype=np.int64)
    if len(q_off) != len(n_off):
        return part
    n_len = np.diff(n_off)
    p_len = np.diff(q_off) - n_len
    if p_len.size and int(p_len.min()) < 0:
        return part
    # where each name byte sits in the qualified names' blob, if it is their suffix
    at = np.arange(len(n_blob), dtype=np.int64) + np.repeat(q_off[:-1] + p_len - n_off[:-1], n_len)
    if not np.array_equal(np.asarray(q_blob)[at], np.asarray(n_blob)):
        return part
    keep = np.ones(len(q_blob), dtype=bool)
    keep[at] = False
    offsets = np.zeros(len(q_off), dtype=np.int64)
    np.cumsum(p_len, out=offsets[1:])
    ids, u_blob, u_off = dedupe(np.asarray(q_blob)[keep], offsets)
    out = {k: v for k, v in part.items() if not k.startswith("node_qname.")}
    out["node_qprefix_id"] = ids.astype(_unsigned(len(u_off) - 1))
    out["qprefixes.blob"], out["qprefixes.off"] = u_blob, u_off
    return out


_P, _K = np.uint64(0x100000001B3), np.uint64(0x9E3779B97F4A7C15)


def dedupe(blob: np.ndarray, off: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The packed strings `blob`/`off` as (each string's id, the distinct strings packed), ids
    in order of first appearance: `dedupe_slow`'s answer, from a 64-bit polynomial hash of
    each string in numpy (a Python dict over 28k strings took 10-50 ms per write), checked
    byte for byte (a collision falls back to the dict)."""
    n, blob, off = len(off) - 1, np.asarray(blob, dtype=np.uint8), np.asarray(off, dtype=np.int64)
    lens = np.diff(off)
    if n == 0:
        return np.zeros(0, dtype=np.int64), blob[:0], np.zeros(1, dtype=np.int64)
    owner = np.repeat(np.arange(n), lens)
    pos = np.arange(len(blob)) - off[:-1][owner]
    powers = np.ones(max(int(lens.max()), 1), dtype=np.uint64)
    np.cumprod(np.full(len(powers) - 1, _P, dtype=np.uint64), out=powers[1:])
    with np.errstate(over="ignore"):
        terms = (blob.astype(np.uint64) + np.uint64(1)) * powers[pos]
        key = lens.astype(np.uint64) * _K
        full = lens > 0
        if full.any():
            key[full] ^= np.add.reduceat(terms, off[:-1][full])
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    ids, reps = rank[inverse.reshape(-1)], first[order]
    rep = reps[ids]
    if not (
        np.array_equal(lens[rep], lens) and np.array_equal(blob[off[:-1][rep][owner] + pos], blob)
    ):
        return dedupe_slow(blob, off)
    u_off = np.zeros(len(reps) + 1, dtype=np.int64)
    np.cumsum(lens[reps], out=u_off[1:])
    gather = np.repeat(off[:-1][reps] - u_off[:-1], lens[reps]) + np.arange(int(u_off[-1]))
    return ids, blob[gather], u_off


def dedupe_slow(blob: np.ndarray, off: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`dedupe` with a dict of the strings' bytes."""
    raw, bounds = np.asarray(blob, dtype=np.uint8).tobytes(), np.asarray(off).tolist()
    unique: dict[bytes, int] = {}
    ids = [unique.setdefault(raw[a:b], len(unique)) for a, b in itertools.pairwise(bounds)]
    u_off = np.zeros(len(unique) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, unique), dtype=np.int64, count=len(unique)), out=u_off[1:])
    return (np.array(ids, dtype=np.int64), np.frombuffer(b"".join(unique), dtype=np.uint8),
            u_off)  # fmt: skip


def _unsigned(top: int) -> type[np.unsignedinteger[Any]]:
    for dtype in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dtype).max:
            return dtype
    return np.uint64


def _counts_ptr(ends: np.ndarray, n: int) -> np.ndarray:
    """CSR pointers of edges grouped by `ends` (each node's edge count, summed)."""
    ptr = np.zeros(n + 1, dtype=np.int64)
    if len(ends):
        np.cumsum(np.bincount(ends, minlength=n)[:n], out=ptr[1:])
    return ptr


# ---- reading ----------------------------------------------------------------------------------


def edges(s: Mapping[str, np.ndarray], n: int) -> tuple[np.ndarray, ...]:
    """(`edge_src`, `edge_dst`, `fwd_ptr`, `fwd_idx`, `rev_ptr`, `rev_idx`), stored or rebuilt
    from the degrees (edges renumbered in forward order)."""
    if "node_outdeg" not in s:
        src, dst = s["edge_src"], s["edge_dst"]
        return (src, dst, pointers(s, "fwd_ptr", src, n), s["fwd_idx"],
                pointers(s, "rev_ptr", dst, n), s["rev_idx"])  # fmt: skip
    outdeg, revdeg, rev_idx = s["node_outdeg"], s["node_revdeg"], s["rev_idx"]
    m = len(rev_idx)
    if len(outdeg) != n or len(revdeg) != n or int(outdeg.sum()) != m or int(revdeg.sum()) != m:
        raise CorruptIndexError("graph: node degrees do not fit the edges")
    ptrs = []
    for degree in (outdeg, revdeg):
        ptr = np.zeros(n + 1, dtype=np.int32 if m < 2**31 else np.int64)
        np.cumsum(degree, out=ptr[1:])
        ptrs.append(ptr)
    src = _owners(ptrs[0], m)
    dst = np.full(m, -1, dtype=np.int32)
    if m:
        if not 0 <= int(rev_idx.min()) <= int(rev_idx.max()) < m:
            raise CorruptIndexError("graph: rev_idx outside the edges")
        dst[rev_idx] = _owners(ptrs[1], m)
        if int(dst.min()) < 0:
            raise CorruptIndexError("graph: rev_idx does not list every edge")
    return src, dst, ptrs[0], np.arange(m, dtype=ptrs[0].dtype), ptrs[1], rev_idx


def _owners(ptr: np.ndarray, m: int) -> np.ndarray:
    """For each of `m` slots of a CSR, the node whose run holds it (`np.repeat(arange(n),
    degrees)`, from the count of runs ended at each slot: ~4x cheaper)."""
    ends = np.bincount(ptr[1:-1], minlength=m + 1)[:m]
    return np.cumsum(ends, dtype=np.int32)


def line_pointers(s: Mapping[str, np.ndarray], m: int) -> np.ndarray:
    """`edge_lptr`, stored or rebuilt from the line counts."""
    if "edge_lptr" in s:
        return s["edge_lptr"]
    counts = s["edge_nlines"]
    if len(counts) != m:
        raise CorruptIndexError(f"graph: {len(counts)} line counts for {m} edges")
    total = int(counts.sum(dtype=np.int64))
    ptr = np.zeros(m + 1, dtype=np.int32 if total < 2**31 else np.int64)
    np.cumsum(counts, out=ptr[1:])
    if total != len(s["edge_lines"]):
        raise CorruptIndexError("graph: the line counts do not fit the lines")
    return ptr


def confidences(s: Mapping[str, np.ndarray], m: int) -> np.ndarray:
    """`edge_conf`, stored or rebuilt from the codes and their table."""
    if "edge_conf" in s:
        return s["edge_conf"]
    codes, table = s["edge_confcode"], s["conf_table"]
    if len(codes) != m or (m and int(codes.max()) >= len(table)):
        raise CorruptIndexError("graph: confidence codes do not fit their table")
    return table[codes]


def pointers(s: Mapping[str, np.ndarray], name: str, ends: np.ndarray, n: int) -> np.ndarray:
    """`rev_ptr` / `fwd_ptr`, stored or counted from the edges' ends."""
    if name in s:
        return s[name]
    if len(ends) and not 0 <= int(ends.min()) <= int(ends.max()) < n:
        raise CorruptIndexError(f"graph: an edge end outside the {n} nodes")
    ptr = _counts_ptr(ends, n)
    return ptr.astype(np.int32) if int(ptr[-1]) < 2**31 else ptr


_CODES = {1: "B", 2: "H", 4: "I", 8: "Q"}  # memoryview formats of unsigned ids by width


class JoinedTable:
    """Qualified names as `prefix + name` (the node's prefix by number), decoded per node like
    a `StringTable`."""

    def __init__(self, prefixes: store.StringTable, ids: np.ndarray,
                 names: store.StringTable) -> None:  # fmt: skip
        if len(ids) != len(names) or (len(ids) and int(ids.max()) >= len(prefixes)):
            raise CorruptIndexError("graph: qualified-name prefixes do not fit the names")
        self._prefixes, self._names = prefixes, names
        ids = np.ascontiguousarray(ids)  # indexed one by one: a memoryview item is ~10x
        self._ids = memoryview(ids).cast("B").cast(_CODES[ids.dtype.itemsize])  # a numpy one

    def __len__(self) -> int:
        return len(self._names)

    def __getitem__(self, i: int) -> str:
        return self._prefixes[self._ids[i]] + self._names[i]

    def __iter__(self):
        return iter(self.all())

    def all(self) -> list[str]:
        prefixes = self._prefixes.all()
        return [prefixes[p] + n for p, n in zip(self._ids.tolist(), self._names.all(), strict=True)]


def qualified_names(
    s: Mapping[str, np.ndarray], names: store.StringTable
) -> store.StringTable | JoinedTable:
    if "node_qprefix_id" in s:
        return JoinedTable(store.strings(s, "qprefixes"), s["node_qprefix_id"], names)
    return store.strings(s, "node_qname")


def logical(s: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The sections as format 3 names them (`edge_conf`, `edge_lptr`, `rev_ptr`, `fwd_ptr`,
    `node_qname.*`), the packed ones rebuilt: for tools and tests that compare files."""
    out = {k: s[k] for k in s}
    if "edge_nlines" in out:
        m = len(out.pop("edge_nlines"))
        out["edge_lptr"] = line_pointers(s, m).astype(np.int64)
        out["edge_lines"] = out["edge_lines"].astype(np.int32)
    if "edge_confcode" in out:
        out["edge_conf"] = confidences(s, len(out.pop("edge_confcode")))
        del out["conf_table"]
    if "node_start" in out:
        n = len(out["node_start"])
        got = edges(s, n)
        for k in ("node_outdeg", "node_revdeg"):
            out.pop(k, None)
        for k, v in zip(("edge_src", "edge_dst", "fwd_ptr", "fwd_idx", "rev_ptr", "rev_idx"), got,
                        strict=True):  # fmt: skip
            out[k] = v.astype(np.int64 if k.endswith("_ptr") else np.int32)
    if "node_qprefix_id" in out:
        names = qualified_names(s, store.strings(s, "node_name"))
        del out["node_qprefix_id"], out["qprefixes.blob"], out["qprefixes.off"]
        out["node_qname.blob"], out["node_qname.off"] = store.pack_strings(names.all())
    return out
