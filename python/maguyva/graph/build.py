"""Build the graph arrays from a repository's extraction: nodes, merged edges, adjacency in CSR
form for both directions, centrality, cycles, and the per-chunk / per-path `c` values."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..extract_types import FileExtraction
from ..model import Chunk, SourceFile
from ..retriever import chunk_spans
from . import centrality, incremental
from .modules import family_of
from .resolve import Columns, GraphBuilder
from .schema import CONF_FLOOR, DEPENDENCY_KINDS, EdgeKind, NodeKind, is_test_path

FLAG_TEST = 1
FLAG_CYCLE = 2


def _csr(n: int, keys: np.ndarray, order_by: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((order_by, keys)).astype(np.int32)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=ptr[1:])
    return ptr, order


def _same_input(cache: dict | None, name: str, inputs: tuple, compute: Callable[[], Any]) -> Any:
    """`compute()`, or the value a remembering writer computed last from equal inputs (these
    computations are deterministic: equal inputs, equal output, bit for bit)."""
    if cache is None:
        return compute()
    got = cache.get(name)
    if (
        got is not None
        and len(got[0]) == len(inputs)
        and all(
            (a == b) if isinstance(a, int) else (a.shape == b.shape and np.array_equal(a, b))
            for a, b in zip(got[0], inputs, strict=True)
        )
    ):
        return got[1]
    value = compute()
    cache[name] = (tuple(x if isinstance(x, int) else x.copy() for x in inputs), value)
    return value


def node_columns(nodes: Sequence[Any]) -> dict[str, Any]:
    """The nodes' fields as columns: kind, file, start, end (arrays), def_kind, name, qname."""
    n = len(nodes)
    return {
        "kind": np.fromiter((int(x.kind) for x in nodes), dtype=np.uint8, count=n),
        "file": np.fromiter((x.file for x in nodes), dtype=np.int32, count=n),
        "start": np.fromiter((x.start for x in nodes), dtype=np.int32, count=n),
        "end": np.fromiter((x.end for x in nodes), dtype=np.int32, count=n),
        "def_kind": [x.def_kind for x in nodes],
        "name": [x.name for x in nodes],
        "qname": [x.qname for x in nodes],
    }


def merge_edges(rows: Columns) -> tuple[np.ndarray, ...]:
    """Merge edge rows by (src, dst, kind), in order of first appearance: (src, dst, kind,
    best conf as float32, line pointers, lines) where an edge's lines are its distinct lines,
    ascending."""
    src = np.frombuffer(rows.src, dtype=np.int32)
    dst = np.frombuffer(rows.dst, dtype=np.int32)
    kind = np.frombuffer(rows.kind, dtype=np.uint8)
    if len(src) == 0:
        empty = np.zeros(0, dtype=np.int32)
        return (empty, empty.copy(), np.zeros(0, dtype=np.uint8), np.zeros(0, dtype=np.float32),
                np.zeros(1, dtype=np.int64), empty.copy())  # fmt: skip
    n = int(max(src.max(), dst.max())) + 1
    key = (src.astype(np.int64) * n + dst) * 8 + kind
    # a stable sort: the first row of each key is where that edge first appeared
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    del key
    starts = np.flatnonzero(np.r_[True, sorted_key[1:] != sorted_key[:-1]])
    del sorted_key
    first = order[starts]  # row of each edge's first appearance, edges in key order
    rank = np.argsort(first, kind="stable")  # edges in order of first appearance
    edge_of_group = np.empty(len(first), dtype=np.int64)
    edge_of_group[rank] = np.arange(len(first))
    group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(order)]))
    edge = np.empty(len(order), dtype=np.int64)
    edge[order] = edge_of_group[group]
    del group, order, edge_of_group
    first = first[rank]
    m = len(first)
    conf_rows = np.frombuffer(rows.conf, dtype=np.float64)
    line_rows = np.frombuffer(rows.line, dtype=np.int32)
    by_edge = np.lexsort((line_rows, edge))
    e_sorted = edge[by_edge]
    del edge
    l_sorted = line_rows[by_edge]
    bounds = np.flatnonzero(np.r_[True, e_sorted[1:] != e_sorted[:-1]])
    conf = np.maximum.reduceat(conf_rows[by_edge], bounds).astype(np.float32)
    del by_edge
    keep = np.r_[True, (e_sorted[1:] != e_sorted[:-1]) | (l_sorted[1:] != l_sorted[:-1])]
    lines = l_sorted[keep].astype(np.int32)
    lptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(e_sorted[keep], minlength=m), out=lptr[1:])
    return src[first], dst[first], kind[first], conf, lptr, lines


def build_graph(
    extraction: Mapping[str, FileExtraction], chunks: Sequence[Chunk]
) -> tuple[dict[str, np.ndarray], dict[str, list[str]], dict[str, Any]]:
    """Return (arrays, string tables, report) ready for `store.write` (no source text, no
    reuse: for tests and tools; the modality calls `build_with_log`)."""
    return build_with_log(extraction, chunks)[:3]


def build_with_log(
    extraction: Mapping[str, FileExtraction],
    chunks: Sequence[Chunk],
    read_text: Callable[[str], str] | None = None,
    previous: Path | None = None,
    sources: list[SourceFile] | None = None,
    floor: float = CONF_FLOOR,
    keep: Any = None,
) -> tuple[dict[str, np.ndarray], dict[str, list[str]], dict[str, Any], tuple]:
    """(arrays, string tables, report, packed edge log). `keep` (an `incremental.Memory`)
    receives the resolved builder instead of it being released, for `incremental.patch`. `read_text` gives receiver-type
    evidence; `previous` is the generation whose edge log may be replayed for unchanged files
    (see incremental.py); `sources` carry the size/mtime that stand for each file's text.

    `extraction` may be a lazy view (`indexer.SegmentExtraction`): each file's extraction is
    read once, in path order, and not kept (see `GraphBuilder.declare`)."""
    t0 = time.perf_counter()
    builder = GraphBuilder(extraction, read_text, floor)
    by_path = {f.path: f for f in sources or []}
    contents: list[bytes] = []
    signatures: list[bytes] = []

    if keep is not None:
        keep.tokens = []  # which files use which words: a declaration change's reach

    def digests(fid: int, ex: FileExtraction) -> None:
        contents.append(incremental.content_digest(ex, by_path.get(builder.paths[fid])))
        family = family_of(ex.language)
        signatures.append(incremental.declaration_signature(ex, family))
        if keep is not None:
            text = None
            if family == "py" and read_text is not None:
                try:
                    text = read_text(builder.paths[fid])
                except OSError:
                    text = None
            keep.set_tokens(fid, incremental.file_tokens(ex, family, text))

    builder.declare(digests)
    declared = (len(builder.nodes), len(builder.edges))
    reuse, reuse_note = incremental.reusable(previous, builder.paths, contents, signatures, floor)
    t_digest = time.perf_counter() - t0
    builder.resolve_all(reuse)
    if keep is not None:
        e = builder.edges
        keep.declared_nodes = declared[0]
        keep.decl = tuple(
            np.array(col[: declared[1]]) for col in (e.src, e.dst, e.kind, e.conf, e.line)
        )
        keep.builder = builder
        builder.global_cache = keep.global_cache  # type: ignore[attr-defined]
    else:
        builder.release()
    if keep is not None and not isinstance(chunks, SpanList):
        chunks = SpanList(chunk_spans(chunks))  # kept: the next patch reads only changed files'
        keep.spans = chunks
    reused_files = len(reuse.files) if reuse else 0
    del reuse  # the previous build's log columns
    t_resolve = time.perf_counter() - t0 - t_digest
    head = {"reuse": reuse_note, "reused_files": reused_files, "digest_s": round(t_digest, 3),
            "resolve_s": round(t_resolve, 3)}  # fmt: skip
    return finish(builder, chunks, contents, signatures, head)


def finish(
    builder: Any,
    chunks: Sequence[Chunk],
    contents: list[bytes],
    signatures: list[bytes],
    head: dict[str, Any],
) -> tuple[dict[str, np.ndarray], dict[str, list[str]], dict[str, Any], tuple]:
    """The arrays, string tables, report and packed edge log of a resolved build: `builder`
    is a `GraphBuilder` after `resolve_all`, or what `incremental.patch` assembles (the same
    attributes: nodes, edges, paths, languages, index, ext_nodes, unit_nodes, file_nodes,
    stats and the edge log)."""
    nodes = builder.nodes
    n = len(nodes)
    src, dst, kind, conf, lptr, lines = merge_edges(builder.edges)
    builder.edges = Columns()
    m = len(src)

    cols = getattr(builder, "node_columns", None) or node_columns(nodes)
    node_kind, node_file, node_start, node_end = (cols[k] for k in ("kind", "file", "start", "end"))
    def_kinds = sorted(set(cols["def_kind"]))
    kind_index = {k: i for i, k in enumerate(def_kinds)}
    node_dkind = np.fromiter(map(kind_index.__getitem__, cols["def_kind"]), dtype=np.uint8, count=n)
    paths = builder.paths
    test_file = np.array([is_test_path(p) for p in paths] + [False], dtype=bool)
    flags = np.where(test_file[node_file], FLAG_TEST, 0).astype(np.uint8)

    # centrality: dependency edges only (contains is structure)
    dep = np.isin(kind, np.array(sorted(DEPENDENCY_KINDS), dtype=np.uint8))
    t1 = time.perf_counter()
    cache = getattr(builder, "global_cache", None)
    pr = _same_input(cache, "pagerank", (n, src[dep], dst[dep], conf[dep]),
                     lambda: centrality.pagerank(n, src[dep], dst[dep], conf[dep].astype(np.float64)))  # fmt: skip
    indeg = np.bincount(dst[dep], minlength=n).astype(np.int32)
    raw = pr + 1e-12 * indeg  # degree breaks PageRank ties
    is_def = node_kind == NodeKind.DEFINITION
    node_c = centrality.percentile_scale(raw, np.flatnonzero(is_def))
    mod_c = centrality.percentile_scale(raw, np.flatnonzero(node_kind == NodeKind.MODULE))
    node_c = np.where(node_kind == NodeKind.MODULE, mod_c, node_c).astype(np.float32)
    node_c[node_kind == NodeKind.EXTERNAL] = 0.0
    t_centrality = time.perf_counter() - t1

    # cycles: mutual recursion among definitions, import cycles among files
    calls = (kind == EdgeKind.CALLS) & (src != dst)
    call_cycles = _same_input(cache, "call_cycles", (n, src[calls], dst[calls]),
                              lambda: centrality.strongly_connected(n, src[calls], dst[calls]))  # fmt: skip
    imp = kind == EdgeKind.IMPORTS
    to_file = _module_files(builder, dst[imp], node_kind, node_file)
    imp_src = node_file[src[imp]]
    ok = (to_file >= 0) & (imp_src >= 0) & (to_file != imp_src)
    import_cycles = _same_input(
        cache, "import_cycles", (len(paths), imp_src[ok], to_file[ok]),
        lambda: centrality.strongly_connected(len(paths), imp_src[ok], to_file[ok]),
    )  # fmt: skip
    scc = np.full(n, -1, dtype=np.int32)
    for i, comp in enumerate(call_cycles):
        scc[comp] = i
        flags[comp] |= FLAG_CYCLE
    file_cycle = np.full(len(paths), -1, dtype=np.int32)
    for i, comp in enumerate(import_cycles):
        file_cycle[comp] = i

    # per-path and per-chunk c
    file_nodes = np.array(builder.file_nodes, dtype=np.int32)
    module_of_file = np.full(len(paths), -1, dtype=np.int32)
    for unit, node in builder.unit_nodes.items():
        for fid in builder.index.units[unit]:
            module_of_file[fid] = node
    path_c = np.zeros(len(paths), dtype=np.float32)
    has_mod = module_of_file >= 0
    path_c[has_mod] = node_c[module_of_file[has_mod]]
    defs_idx = np.flatnonzero(is_def)
    np.maximum.at(path_c, node_file[defs_idx], node_c[defs_idx])
    chunk_ids, chunk_c = _chunk_centrality(
        chunks, paths, node_file, node_start, node_c, is_def, module_of_file, path_c
    )

    rev_ptr, rev_idx = _csr(n, dst, -conf)
    fwd_ptr, fwd_idx = _csr(n, src, -conf)
    arrays = {
        "node_kind": node_kind, "node_file": node_file, "node_start": node_start,
        "node_end": node_end, "node_dkind": node_dkind, "node_flags": flags,
        "node_pr": pr.astype(np.float32), "node_indeg": indeg, "node_c": node_c,
        "node_scc": scc, "edge_src": src, "edge_dst": dst, "edge_kind": kind,
        "edge_conf": conf, "edge_lptr": lptr, "edge_lines": lines,
        "rev_ptr": rev_ptr, "rev_idx": rev_idx, "fwd_ptr": fwd_ptr, "fwd_idx": fwd_idx,
        "file_node": file_nodes, "module_of_file": module_of_file, "file_cycle": file_cycle,
        "path_c": path_c, "chunk_c": chunk_c,
    }  # fmt: skip
    strings = {
        "node_name": cols["name"],
        "node_qname": cols["qname"],
        "paths": paths,
        "def_kinds": def_kinds,
        "chunk_ids": chunk_ids,
        "module_names": [builder.index.unit_of_file[f].split(":", 1)[1] for f in range(len(paths))],
    }
    kinds_count = {
        EdgeKind(k).name.lower(): int(v)
        for k, v in zip(*np.unique(kind, return_counts=True), strict=False)
    }
    report = {
        "files": len(paths),
        "languages": sorted({lang or "" for lang in builder.languages}),
        "nodes": n,
        "definitions": int(is_def.sum()),
        "external_nodes": len(builder.ext_nodes),
        "edges": m,
        "edges_by_kind": kinds_count,
        "calls": builder.stats,
        "call_cycles": len(call_cycles),
        "import_cycles": len(import_cycles),
        **head,
        "centrality_s": round(t_centrality, 3),
    }
    t2 = time.perf_counter()
    log = incremental.pack(builder, contents, signatures)
    report["log_s"] = round(time.perf_counter() - t2, 3)
    return arrays, strings, report, log


def _module_files(builder: GraphBuilder, targets: np.ndarray, node_kind, node_file) -> np.ndarray:
    """For import edge targets, the file they live in (a module node maps to its first file)."""
    out = node_file[targets].copy()
    out[node_kind[targets] == NodeKind.EXTERNAL] = -1
    return out


class SpanList(list):
    """`(path, start, end, id)` of every chunk, in `ctx.chunks`' order, already read (a
    remembering writer's: see `incremental.Memory.spans`)."""


def _chunk_centrality(chunks, paths, node_file, node_start, node_c, is_def, module_of_file,
                      path_c):  # fmt: skip
    """A chunk's c: the highest c of the definitions that start inside it; for a chunk with no
    definition (module-level code, line windows), the c of its module."""
    fid_of = {p: i for i, p in enumerate(paths)}
    spans = chunks if isinstance(chunks, SpanList) else chunk_spans(chunks)
    ids: list[str] = []
    fids: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    for path, start, end, chunk_id in spans:
        ids.append(chunk_id)
        fids.append(fid_of.get(path, -1))
        starts.append(start)
        ends.append(end)
    values = np.zeros(len(ids), dtype=np.float32)
    if not ids:
        return ids, values
    fid = np.array(fids, dtype=np.int64)
    # definitions ordered by (file, start line); a chunk's are a range of that order
    defs = np.flatnonzero(is_def)
    bias = 1 << 31
    dkey = node_file[defs].astype(np.int64) * (1 << 33) + node_start[defs].astype(np.int64) + bias
    order = np.argsort(dkey, kind="stable")
    dkey = dkey[order]
    dc = node_c[defs][order].astype(np.float32)
    base = fid * (1 << 33) + bias
    lo = np.searchsorted(dkey, base + np.array(starts, dtype=np.int64), side="left")
    hi = np.searchsorted(dkey, base + np.array(ends, dtype=np.int64), side="right")
    inside = (fid >= 0) & (hi > lo)
    if inside.any() and len(dc):
        # range maxima with a sparse table: max of two overlapping power-of-two windows
        table = [dc]
        while (1 << len(table)) <= len(dc):
            prev, half = table[-1], 1 << (len(table) - 1)
            table.append(np.maximum(prev[:-half], prev[half:]))
        q = np.flatnonzero(inside)
        length = (hi[q] - lo[q]).astype(np.int64)
        level = np.floor(np.log2(length)).astype(np.int64)
        for k in np.unique(level).tolist():
            sel = q[level == k]
            t = table[k]
            values[sel] = np.maximum(t[lo[sel]], t[hi[sel] - (1 << k)])
    module = np.flatnonzero((fid >= 0) & ~inside)
    mod = module_of_file[fid[module]]
    has = mod >= 0
    values[module[has]] = node_c[mod[has]]
    return ids, values
