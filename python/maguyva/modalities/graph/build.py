"""Build the graph arrays from a repository's extraction: nodes, merged edges, adjacency in CSR
form for both directions, centrality, cycles, and the per-chunk / per-path `c` values."""

from __future__ import annotations

import bisect
import itertools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from maguyva.extract.types import FileExtraction
from maguyva.modalities.graph import centrality, incremental, store
from maguyva.modalities.graph.adjacency import _conf_rank, _csr, merge_rows
from maguyva.modalities.graph.columns import _DEF_KINDS, node_columns
from maguyva.modalities.graph.modules import family_of
from maguyva.modalities.graph.resolve.builder import GraphBuilder
from maguyva.modalities.graph.resolve.rows import Columns
from maguyva.modalities.graph.schema import (
    CONF_FLOOR,
    DEPENDENCY_KINDS,
    EdgeKind,
    NodeKind,
    is_test_path,
)
from maguyva.modalities.protocol import chunk_spans
from maguyva.model import Chunk, SourceFile

FLAG_TEST = 1
FLAG_CYCLE = 2


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
    if keep is not None and not isinstance(chunks, Spans):
        chunks = Spans.read(chunk_spans(chunks), packed=True)  # kept: a patch splices a file's
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
    rows = builder.edges
    merged, order, by_dst = merge_rows(
        *_columns(rows),
        pos=getattr(builder, "edge_pos", None),
        hint=getattr(builder, "edge_hint", None),
    )
    src, dst, kind, conf, lptr, lines = merged
    merged_to = getattr(builder, "merged_to", None)
    if merged_to is not None:
        merged_to(order)  # the next patch's hint
    del rows, merged, order
    builder.edges = Columns()
    m = len(src)

    cols = getattr(builder, "node_columns", None) or node_columns(nodes)
    node_kind, node_file, node_start, node_end = (cols[k] for k in ("kind", "file", "start", "end"))
    def_kinds, node_dkind = _def_kinds(cols)
    paths = builder.paths
    cache = getattr(builder, "global_cache", None)
    test_file = _per_file(cache, "test_file", builder,
                          lambda: np.array([is_test_path(p) for p in paths] + [False], dtype=bool))  # fmt: skip
    flags = np.where(test_file[node_file], FLAG_TEST, 0).astype(np.uint8)

    t1 = time.perf_counter()
    pr, indeg, node_c = _node_centrality(cache, n, src, dst, kind, conf, node_kind)
    is_def = node_kind == NodeKind.DEFINITION
    t_centrality = time.perf_counter() - t1

    scc, file_cycle, call_cycles, import_cycles = _cycles(
        cache, builder, n, (src, dst, kind), node_kind, node_file, flags
    )

    file_nodes = np.array(builder.file_nodes, dtype=np.int32)
    module_of_file, path_c, chunk_ids, chunk_c = _path_and_chunk_c(
        builder, chunks, node_file, node_start, node_c, is_def
    )

    ranked = _conf_rank(np.asarray(conf, dtype=np.float32), cache)  # one ranking, both ways
    rev_ptr, rev_idx = _csr(n, dst, conf, by_dst, cache, ranked)
    fwd_ptr, fwd_idx = _csr(n, src, conf, None, cache, ranked)
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
        "module_names": _per_file(cache, "module_names", builder, lambda: _module_names(builder)),
    }
    report = {
        **_counts(builder, n, m, kind, is_def, len(call_cycles), len(import_cycles)),
        **head,
        "centrality_s": round(t_centrality, 3),
    }
    t2 = time.perf_counter()
    log = incremental.pack(builder, contents, signatures)
    report["log_s"] = round(time.perf_counter() - t2, 3)
    return arrays, strings, report, log


def _counts(builder: Any, n: int, m: int, kind: np.ndarray, is_def: np.ndarray,
            call_cycles: int, import_cycles: int) -> dict[str, Any]:  # fmt: skip
    """The build report's counts: files, languages, nodes, edges by kind, calls, cycles."""
    kinds_count = {
        EdgeKind(k).name.lower(): int(v)
        for k, v in zip(*np.unique(kind, return_counts=True), strict=False)
    }
    return {
        "files": len(builder.paths),
        "languages": sorted({lang or "" for lang in builder.languages}),
        "nodes": n,
        "definitions": int(is_def.sum()),
        "external_nodes": len(builder.ext_nodes),
        "edges": m,
        "edges_by_kind": kinds_count,
        "calls": builder.stats,
        "call_cycles": call_cycles,
        "import_cycles": import_cycles,
    }


def _node_centrality(cache: Any, n: int, src: np.ndarray, dst: np.ndarray, kind: np.ndarray,
                     conf: np.ndarray, node_kind: np.ndarray):  # fmt: skip
    """PageRank over the dependency edges only (contains is structure), the in-degree, and
    `c`: definitions scaled among definitions, modules among modules, externals 0."""
    dep = np.isin(kind, np.array(sorted(DEPENDENCY_KINDS), dtype=np.uint8))
    pr = _same_input(cache, "pagerank", (n, src[dep], dst[dep], conf[dep]),
                     lambda: centrality.pagerank(n, src[dep], dst[dep], conf[dep].astype(np.float64)))  # fmt: skip
    indeg = np.bincount(dst[dep], minlength=n).astype(np.int32)
    raw = pr + 1e-12 * indeg  # degree breaks PageRank ties
    is_def = node_kind == NodeKind.DEFINITION
    node_c = centrality.percentile_scale(raw, np.flatnonzero(is_def))
    modules = np.flatnonzero(node_kind == NodeKind.MODULE)
    mod_c = centrality.percentile_scale(raw, modules, modules)  # only modules' are read
    node_c = np.where(node_kind == NodeKind.MODULE, mod_c, node_c).astype(np.float32)
    node_c[node_kind == NodeKind.EXTERNAL] = 0.0

    return pr, indeg, node_c


def _cycles(cache: Any, builder: Any, n: int, edges: tuple[np.ndarray, np.ndarray, np.ndarray],
            node_kind: np.ndarray, node_file: np.ndarray, flags: np.ndarray):  # fmt: skip
    """Mutual recursion among definitions (flagged `FLAG_CYCLE` in `flags`) and import cycles
    among files: each node's and each file's cycle number (-1: none), and the cycles."""
    src, dst, kind = edges
    paths = builder.paths
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

    return scc, file_cycle, call_cycles, import_cycles


def _path_and_chunk_c(builder: Any, chunks: Sequence[Chunk], node_file: np.ndarray,
                      node_start: np.ndarray, node_c: np.ndarray, is_def: np.ndarray):  # fmt: skip
    """Each file's module node, `c` per path (its module's or its best definition's) and per
    chunk, with the chunk ids in the order of `chunk_c`."""
    paths = builder.paths
    module_of_file = np.full(len(paths), -1, dtype=np.int32)
    for unit, node in builder.unit_nodes.items():
        for fid in builder.index.units[unit]:
            module_of_file[fid] = node
    path_c = np.zeros(len(paths), dtype=np.float32)
    has_mod = module_of_file >= 0
    path_c[has_mod] = node_c[module_of_file[has_mod]]
    defs_idx = np.flatnonzero(is_def)
    np.maximum.at(path_c, node_file[defs_idx], node_c[defs_idx])
    spans = chunks if isinstance(chunks, Spans) else Spans.read(chunk_spans(chunks))
    chunk_ids = spans.ids
    chunk_c = _chunk_centrality(spans, paths, node_file, node_start, node_c, is_def, module_of_file)

    return module_of_file, path_c, chunk_ids, chunk_c


def _def_kinds(cols: dict[str, Any]) -> tuple[list[str], np.ndarray]:
    """The definition kinds present, sorted, and each node's index in that list."""
    ids = cols.get("def_kind_id")
    if ids is None or len(ids) != len(cols["def_kind"]):
        def_kinds = sorted(set(cols["def_kind"]))
        kind_index = {k: i for i, k in enumerate(def_kinds)}
        n = len(cols["def_kind"])
        return def_kinds, np.fromiter(map(kind_index.__getitem__, cols["def_kind"]),
                                      dtype=np.uint8, count=n)  # fmt: skip
    by_id = list(_DEF_KINDS)
    def_kinds = sorted(by_id[i] for i in np.flatnonzero(np.bincount(ids)).tolist())
    table = np.zeros(len(by_id), dtype=np.uint8)
    table[[_DEF_KINDS[k] for k in def_kinds]] = np.arange(len(def_kinds))
    return def_kinds, table[ids]


def _per_file(cache: dict | None, name: str, builder: Any, compute: Callable[[], Any]) -> Any:
    """`compute()` of something that depends on the files (their paths, modules) only: a
    remembering writer's patches keep the builder's path list and module index (a file
    added or removed means a build), so it is computed once."""
    if cache is None:
        return compute()
    got = cache.get(name)
    if got is not None and got[0] is builder.paths and got[1] is builder.index:
        return got[2]
    value = compute()
    cache[name] = (builder.paths, builder.index, value)
    return value


def _module_names(builder: Any) -> list[str]:
    return [builder.index.unit_of_file[f].split(":", 1)[1] for f in range(len(builder.paths))]


def _columns(rows: Any) -> tuple[np.ndarray, ...]:
    """The five columns of `Columns` (array.array) or `incremental._Rows` (numpy) as arrays."""
    dtypes = (np.int32, np.int32, np.uint8, np.float64, np.int32)
    return tuple(
        np.frombuffer(c, dtype=dt) if not isinstance(c, np.ndarray) else c
        for c, dt in zip((rows.src, rows.dst, rows.kind, rows.conf, rows.line), dtypes, strict=True)
    )


def _module_files(builder: GraphBuilder, targets: np.ndarray, node_kind, node_file) -> np.ndarray:
    """For import edge targets, the file they live in (a module node maps to its first file)."""
    out = node_file[targets].copy()
    out[node_kind[targets] == NodeKind.EXTERNAL] = -1
    return out


class Spans:
    """Every chunk's `(path, start, end, id)`, in `ctx.chunks`' order, as arrays: the runs of
    one path's consecutive chunks (`paths`, `ptr`), each chunk's first and last line, and the
    ids (a list, or packed as `store.Packed`). A remembering writer keeps its build's and
    splices a changed file's run in the next update (`incremental.patched_spans`)."""

    __slots__ = ("end", "ids", "keys", "paths", "ptr", "start")

    def __init__(self, paths: list[str], ptr: np.ndarray, start: np.ndarray, end: np.ndarray,
                 ids: list[str] | store.Packed) -> None:  # fmt: skip
        self.paths, self.ptr, self.start, self.end, self.ids = paths, ptr, start, end, ids
        self.keys: list[tuple[int, str]] | None = None  # (segment, path) of each run, sorted

    def __len__(self) -> int:
        return len(self.start)

    @classmethod
    def read(cls, spans: Iterable[tuple[str, int, int, str]], packed: bool = False) -> Spans:
        paths: list[str] = []
        lengths: list[int] = []
        starts: list[int] = []
        ends: list[int] = []
        ids: list[str] = []
        last = None
        for path, start, end, chunk_id in spans:
            if path != last:
                paths.append(path)
                lengths.append(0)
                last = path
            lengths[-1] += 1
            starts.append(start)
            ends.append(end)
            ids.append(chunk_id)
        ptr = np.zeros(len(paths) + 1, dtype=np.int64)
        np.cumsum(np.array(lengths, dtype=np.int64), out=ptr[1:])
        return cls(paths, ptr, np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64),
                   store.Packed(*store.pack_strings(ids)) if packed else ids)  # fmt: skip

    def spliced(self, path: str, spans: Sequence[tuple[str, int, int, str]]) -> Spans | None:
        """These spans with `path`'s run replaced by `spans` (its chunks now; a new run in
        (segment, path) order if it had none), or None when the runs are not each path's
        chunks in (segment, path) order (the order a segment-backed view gives)."""
        from maguyva.store.chunks import segment_of

        if not isinstance(self.ids, store.Packed):
            return None
        keys = self.keys
        if keys is None:
            keys = [(segment_of(p), p) for p in self.paths]
            if any(a >= b for a, b in itertools.pairwise(keys)):
                return None
        k = (segment_of(path), path)
        run = bisect.bisect_left(keys, k)
        lengths = np.diff(self.ptr)
        paths = self.paths
        lo = hi = int(self.ptr[run])
        if run < len(keys) and keys[run] == k:
            hi = int(self.ptr[run + 1])
        else:  # a file that had no chunks
            keys = [*keys[:run], k, *keys[run:]]
            paths = [*paths[:run], path, *paths[run:]]
            lengths = np.insert(lengths, run, 0)
        new_start = np.array([s[1] for s in spans], dtype=np.int64)
        new_end = np.array([s[2] for s in spans], dtype=np.int64)
        blob, off = self.ids
        nb, no = store.pack_strings([s[3] for s in spans])
        b0, b1 = int(off[lo]), int(off[hi])
        ids = store.Packed(np.concatenate([blob[:b0], nb, blob[b1:]]),
                           np.concatenate([off[:lo], no[:-1] + b0, off[hi:] - b1 + b0 + no[-1]]))  # fmt: skip
        lengths[run] = len(spans)
        ptr = np.zeros(len(paths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=ptr[1:])
        out = Spans(paths, ptr, np.concatenate([self.start[:lo], new_start, self.start[hi:]]),
                    np.concatenate([self.end[:lo], new_end, self.end[hi:]]), ids)  # fmt: skip
        out.keys = keys
        return out


def _chunk_centrality(spans: Spans, paths, node_file, node_start, node_c, is_def,
                      module_of_file):  # fmt: skip
    """A chunk's c: the highest c of the definitions that start inside it; for a chunk with no
    definition (module-level code, line windows), the c of its module."""
    values = np.zeros(len(spans), dtype=np.float32)
    if not len(spans):
        return values
    fid_of = {p: i for i, p in enumerate(paths)}
    run_fid = np.array([fid_of.get(p, -1) for p in spans.paths], dtype=np.int64)
    fid = np.repeat(run_fid, np.diff(spans.ptr))
    # definitions ordered by (file, start line); a chunk's are a range of that order
    defs = np.flatnonzero(is_def)
    bias = 1 << 31
    dkey = node_file[defs].astype(np.int64) * (1 << 33) + node_start[defs].astype(np.int64) + bias
    order = np.argsort(dkey, kind="stable")  # already sorted in a build's numbering: cheap
    dkey = dkey[order]
    dc = node_c[defs][order].astype(np.float32)
    base = fid * (1 << 33) + bias
    lo = np.searchsorted(dkey, base + spans.start, side="left")
    hi = np.searchsorted(dkey, base + spans.end, side="right")
    inside = (fid >= 0) & (hi > lo)
    q = np.flatnonzero(inside)
    if len(q) and len(dc):
        # range maxima: `reduceat` over the (start, end) pairs interleaved (a pair's second
        # index only ends the range before it; its own value is dropped)
        ext = np.r_[dc, np.float32(0)]
        at = np.empty(2 * len(q), dtype=np.int64)
        at[0::2], at[1::2] = lo[q], hi[q]
        values[q] = np.maximum.reduceat(ext, at)[0::2]
    module = np.flatnonzero((fid >= 0) & ~inside)
    mod = module_of_file[fid[module]]
    has = mod >= 0
    values[module[has]] = node_c[mod[has]]
    return values
