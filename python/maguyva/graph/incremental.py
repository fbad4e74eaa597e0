"""Reuse of the previous generation's resolution when only file bodies changed.

Resolving a file's names reads the *declarations* of every file (definitions, their nesting,
bases and decorators, imports, and how a file's imports and top-level definitions interleave)
but the *bodies* (calls, references, source text) of that file only. So when every file's
declaration signature is unchanged, the edges of a file whose content did not change are the
ones the previous build resolved, and replaying its edge log (in the same order, so nodes and
edges get the same numbers) gives exactly what a full build gives; only the changed files are
resolved again. When any declaration changed (a definition or import added, removed,
renamed), everything is resolved again: a name anywhere may now resolve differently.

The log lives next to the graph in `graph/edgelog.bin` (same container format, checksummed);
queries never read it.
"""

from __future__ import annotations

import bisect
import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MaguyvaError
from ..extract_types import FileExtraction
from ..model import SourceFile
from . import store
from .resolve import (
    CALLS,
    CONTAINS,
    STAT_KEYS,
    Body,
    GraphBuilder,
    Node,
    Reuse,
    _decorated,
    alias_of,
    instance_of,
)
from .schema import NodeKind

LOG_FILE = "edgelog.bin"
LOG_FORMAT = 5  # bump when resolution rules change: an old log must not be replayed


def _digest(value: str) -> bytes:
    return hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def content_digest(ex: FileExtraction, source: SourceFile | None) -> bytes:
    """Everything resolution reads from a file: its extraction and (for receiver types) its
    text, represented by size and mtime as the walker reports them."""
    stamp = (source.size, source.mtime_ns) if source is not None else None
    rows = (
        ex.language, ex.error, stamp,
        [(d.kind, d.name, d.qualified_name, d.start_line, d.end_line, d.parent, d.bases,
          d.name_line) for d in ex.definitions],
        [(i.module, i.name, i.alias, i.line, i.level) for i in ex.imports],
        [(c.callee, c.line, c.caller) for c in ex.calls],
        [(r.name, r.line, r.context) for r in ex.references],
    )  # fmt: skip
    return _digest(repr(rows))


def declaration_signature(ex: FileExtraction, family: str) -> bytes:
    """What other files' resolution can see of this file; line numbers only as an order."""
    defs = sorted(ex.definitions, key=lambda d: (d.start_line, -d.end_line))
    import_lines = sorted(i.line for i in ex.imports)
    decorated = _decorated(ex, family)
    rows = [
        (d.kind, d.name, d.qualified_name, d.parent, tuple(d.bases),
         sorted(decorated.get(d.qualified_name, ())), bisect.bisect_left(import_lines, d.start_line),
         alias_of(d, family), instance_of(d, family))
        for d in defs
    ]  # fmt: skip
    imports = sorted((i.line, i.module, i.name or "", i.alias or "", i.level) for i in ex.imports)
    ranks = [(m, n, a, lv) for _, m, n, a, lv in imports]
    return _digest(repr((ex.language, rows, ranks)))


def pack(builder: GraphBuilder, contents: list[bytes], signatures: list[bytes]):
    """The edge log as (arrays, strings, meta) for `store.write`."""
    log = builder.log
    arrays = {
        "ptr": np.array(builder.log_ptr, dtype=np.int64),
        "src": np.frombuffer(log.src, dtype=np.int32),
        "target": np.frombuffer(log.dst, dtype=np.int32),
        "kind": np.frombuffer(log.kind, dtype=np.uint8),
        "conf": np.frombuffer(log.conf, dtype=np.float64),
        "line": np.frombuffer(log.line, dtype=np.int32),
        "stats": np.array(builder.file_stats, dtype=np.int64).reshape(-1, len(STAT_KEYS)),
        "content": np.frombuffer(b"".join(contents), dtype=np.uint8),
        "signature": np.frombuffer(b"".join(signatures), dtype=np.uint8),
    }
    strings = {"paths": builder.paths, "names": list(builder.log_names)}
    meta = {"log_format": LOG_FORMAT, "stat_keys": list(STAT_KEYS), "floor": builder.floor}
    return arrays, strings, meta


def reusable(
    previous: Path | None,
    paths: list[str],
    contents: list[bytes],
    signatures: list[bytes],
    floor: float,
) -> tuple[Reuse | None, str]:
    """The edge log of the unchanged files, or None with the reason a full build is needed."""
    if previous is None:
        return None, "no previous generation"
    try:
        sections, meta = store.read(Path(previous) / "graph", LOG_FILE)
    except MaguyvaError as exc:
        return None, f"previous edge log unusable: {exc}"
    if (
        meta.get("log_format") != LOG_FORMAT
        or meta.get("stat_keys") != list(STAT_KEYS)
        or meta.get("floor") != floor
    ):
        return None, "previous edge log from other resolution rules"
    if store.strings(sections, "paths").all() != paths:
        return None, "files added or removed"
    if sections["signature"].tobytes() != b"".join(signatures):
        return None, "declarations changed"
    old = sections["content"].tobytes()
    ptr = sections["ptr"].tolist()
    stats = sections["stats"].reshape(-1, len(STAT_KEYS)).tolist()
    files = {
        fid: (ptr[fid], ptr[fid + 1], stats[fid])
        for fid, c in enumerate(contents)
        if old[16 * fid : 16 * fid + 16] == c
    }
    cols = tuple(sections[k].tolist() for k in ("src", "target", "kind", "conf", "line"))
    reuse = Reuse(cols, store.strings(sections, "names").all(), files)
    return reuse, f"{len(paths) - len(files)} changed files resolved, {len(files)} reused"


def write(
    directory: Path, packed: tuple[dict[str, np.ndarray], dict[str, list[str]], dict[str, Any]]
) -> int:
    arrays, strings, meta = packed
    return store.write(directory, arrays, strings, meta, LOG_FILE)


# -- a long-running writer: patching the previous build in memory ---------------------------


class Memory:
    """What a writer that stays up keeps of the graph it built last, so that the next update
    whose changes are file bodies only is a patch instead of a build: the resolved
    `GraphBuilder` (declarations, scopes and memos: never released), the declaration-phase
    edge rows, the packed edge log and the generation directory they were written to."""

    def __init__(self) -> None:
        self.builder: GraphBuilder | None = None
        self.declared_nodes = 0
        self.decl: tuple[np.ndarray, ...] = ()
        self.decl_file = np.zeros(0, dtype=np.int32)  # the file of each row's source node
        self.log: tuple | None = None  # pack()'s (arrays, strings, meta)
        self.out_dir: Path | None = None
        self.key: tuple = ()
        self.stamp: tuple = ()  # (inode, size, mtime) of the graph.bin written
        self.spans: list | None = None  # every chunk's (path, start, end, id), in order
        self.columns: dict[str, Any] | None = None  # the declared nodes' `node_columns`
        self.packed: dict[str, tuple[np.ndarray, np.ndarray]] | None = None  # their names
        # PageRank and cycles with the edges they were computed from (build._same_input)
        self.global_cache: dict[str, Any] = {}

    def fits(self, previous: Path | None, key: tuple) -> bool:
        """Is the remembered build the graph of `previous` (the same file, not another
        writer's generation of the same name) under the same rules?"""
        # the generation was written in a temporary directory and renamed: the file is the same
        if self.builder is None or previous is None or key != self.key:
            return False
        try:
            st = (previous / store.FILE_NAME).stat()
        except OSError:
            return False
        return self.stamp == (st.st_ino, st.st_size, st.st_mtime_ns)

    def remember(self, log: tuple, out_dir: Path, key: tuple) -> None:
        arrays, strings, meta = log  # copied: `pack` views the builder's growable log
        arrays = {k: np.array(v) for k, v in arrays.items()}
        self.log, self.out_dir, self.key = (arrays, strings, meta), out_dir, key
        st = (out_dir / store.FILE_NAME).stat()
        self.stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        if self.columns is None and self.builder is not None:
            from .build import node_columns

            self.columns = node_columns(self.builder.nodes[: self.declared_nodes])
        if len(self.decl_file) != len(self.decl[0]) and self.builder is not None:
            nodes = self.builder.nodes
            self.decl_file = np.fromiter(
                (nodes[x].file for x in self.decl[0].tolist()), dtype=np.int32,
                count=len(self.decl[0]),
            )  # fmt: skip


def patch(
    memory: Memory, extraction, changed: list[str], sources: list[SourceFile] | None
) -> tuple[Any, list[bytes], list[bytes], str] | None:
    """Apply body-only edits of `changed` to the remembered build: re-declare those files'
    line numbers, imports and bodies in the kept builder, resolve them again, and assemble
    what a full build would hold (`build.finish`'s input). None when a declaration changed
    (or anything else a patch cannot follow): the caller builds normally."""
    b = memory.builder
    assert b is not None and memory.log is not None
    arrays, _strings, _meta = memory.log
    fid_of = {p: i for i, p in enumerate(b.paths)}
    by_path = {f.path: f for f in sources or []}
    contents = [bytes(c) for c in arrays["content"].reshape(-1, 16)]
    signatures = [bytes(c) for c in arrays["signature"].reshape(-1, 16)]
    work: list[tuple[int, FileExtraction]] = []
    for path in changed:
        fid = fid_of.get(path)
        ex = extraction.get(path)
        if fid is None:
            if isinstance(ex, FileExtraction):
                return None  # a file the graph did not have (no extraction before)
            continue  # not code the graph reads: its chunks' c are computed again anyway
        if not isinstance(ex, FileExtraction) or ex.language != b.languages[fid]:
            return None
        sig = declaration_signature(ex, b.scopes[fid].family)
        if sig != signatures[fid]:
            return None
        content = content_digest(ex, by_path.get(path))
        if content != contents[fid]:
            contents[fid] = content
            work.append((fid, ex))
    work.sort(key=lambda w: w[0])
    stats = arrays["stats"].reshape(-1, len(STAT_KEYS)).copy()
    new_rows: dict[int, tuple[np.ndarray, ...]] = {}
    decl = [c.copy() for c in memory.decl]
    names_now = list(b.log_names)
    for fid, ex in work:
        if not _redeclare(b, memory, decl, fid, ex):
            return None
        before = [b.stats[k] for k in STAT_KEYS]
        lo = len(b.log)
        edges, b.edges = b.edges, type(b.edges)()
        b._resolve_file(fid, [n for n in b.bases if b.nodes[n].file == fid])
        b.edges = edges
        b.bodies[fid] = None
        log = b.log
        new_rows[fid] = tuple(
            np.array(col[lo:], dtype=dt)
            for col, dt in zip(
                (log.src, log.dst, log.kind, log.conf, log.line), _DTYPES, strict=True
            )
        )
        for col in (log.src, log.dst, log.kind, log.conf, log.line):
            del col[lo:]
        stats[fid] = [b.stats[k] - v for k, v in zip(STAT_KEYS, before, strict=True)]
        for k, v in zip(STAT_KEYS, before, strict=True):
            b.stats[k] = v
        names_now = list(b.log_names)
    assembled = _assemble(b, memory, decl, new_rows, names_now, stats)
    memory.decl = tuple(decl)
    return (
        assembled,
        contents,
        signatures,
        (f"{len(work)} changed files resolved, {len(b.paths) - len(work)} kept in memory"),
    )


_DTYPES = (np.int32, np.int32, np.uint8, np.float64, np.int32)


def _redeclare(b: GraphBuilder, memory: Memory, decl: list[np.ndarray], fid: int,
               ex: FileExtraction) -> bool:  # fmt: skip
    """Refresh what `_declare_file` took from file `fid` beyond its declaration signature
    (lines of definitions and imports, the body) in the kept builder."""
    fnode = b.file_nodes[fid]
    end = b.file_nodes[fid + 1] if fid + 1 < len(b.file_nodes) else memory.declared_nodes
    defs = sorted(ex.definitions, key=lambda d: (d.start_line, -d.end_line))
    if len(defs) != end - fnode - 1:
        return False
    for node, d in zip(range(fnode + 1, end), defs, strict=True):
        n = b.nodes[node]
        if n.qname != d.qualified_name or n.name != d.name:
            return False
        n.start, n.end = d.start_line, d.end_line
        if memory.columns is not None:
            memory.columns["start"][node] = d.start_line
            memory.columns["end"][node] = d.end_line
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
            stars.append((b.index.resolve(fid, imp.module, imp.level)[0], imp.line))
            continue
        local = imp.alias or imp.name or b._default_binding(scope.family, imp.module)
        if local:
            imports.setdefault(local, []).append((imp.line, imp))
    scope.imports = {k: sorted(v, key=lambda x: x[0]) for k, v in imports.items()}
    scope.stars = stars
    b.bodies[fid] = Body.of(ex)
    b.types._lines = None
    for node in range(fnode, end):
        b.types._memo.pop(node, None)
    return True


class _Rows:
    """`Columns` as numpy arrays (what `build.merge_edges` and `pack` read)."""

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
              stats: np.ndarray) -> _Assembled:  # fmt: skip
    """What a full build holds after `resolve_all`, from the remembered log with the rows of
    the changed files replaced: the log's external / module names numbered in order of first
    appearance (as `emit` and `replay` number them), their nodes after the declared ones, and
    a module node's CONTAINS edges just before the row that first uses it."""
    assert memory.log is not None
    arrays, strings, _ = memory.log
    ptr = arrays["ptr"]
    names_old = list(strings["names"])
    cid_of = {t: i for i, t in enumerate(names_old)}
    tags = list(names_old)
    for t in names_now:
        if t not in cid_of:
            cid_of[t] = len(tags)
            tags.append(t)
    now_cid = np.array([cid_of[t] for t in names_now] or [0], dtype=np.int64)
    old_cols = tuple(arrays[k] for k in ("src", "target", "kind", "conf", "line"))
    pieces: list[tuple[np.ndarray, ...]] = []
    cids: list[np.ndarray] = []
    lengths = np.diff(ptr).copy()
    at = 0
    for fid in sorted(new_rows):
        lo, hi = int(ptr[fid]), int(ptr[fid + 1])
        pieces.append(tuple(c[at:lo] for c in old_cols))
        t = old_cols[1][at:lo].astype(np.int64)
        cids.append(np.where(t < 0, -1 - t, -1))
        rows = new_rows[fid]
        pieces.append(rows)
        t = rows[1].astype(np.int64)
        cids.append(np.where(t < 0, now_cid[np.maximum(-1 - t, 0)], -1))
        lengths[fid] = len(rows[0])
        at = hi
    pieces.append(tuple(c[at:] for c in old_cols))
    t = old_cols[1][at:].astype(np.int64)
    cids.append(np.where(t < 0, -1 - t, -1))
    cols = [np.concatenate([p[i] for p in pieces]).astype(dt, copy=False)
            for i, dt in enumerate(_DTYPES)]  # fmt: skip
    cid = np.concatenate(cids)
    neg = np.flatnonzero(cid >= 0)
    uniq, first = np.unique(cid[neg], return_index=True)
    order = np.argsort(first, kind="stable")
    new_index = np.full(len(tags), -1, dtype=np.int64)
    new_index[uniq[order]] = np.arange(len(order))
    names = [tags[c] for c in uniq[order].tolist()]
    first_row = neg[first[order]]  # the log row where each name first appears
    d = memory.declared_nodes
    target = cols[1].astype(np.int64)
    idx = new_index[cid[neg]]
    target[neg] = -1 - idx
    cols[1] = target.astype(np.int32)
    dst = cols[1].astype(np.int64)
    dst[neg] = d + idx
    # the nodes made on first use, and a module node's CONTAINS edges to its files
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
                ins_dst.append(b.file_nodes[f])
        else:
            nodes.append(Node(NodeKind.EXTERNAL, name.rsplit(".", 1)[-1], name))
            ext_nodes[name] = d + k
    src = cols[0]
    keep = (src != dst) | (cols[2] == CALLS)
    e_src, e_dst, e_kind, e_conf, e_line = src, dst.astype(np.int32), cols[2], cols[3], cols[4]
    if ins_at:
        at_arr = np.array(ins_at, dtype=np.int64)
        m = len(ins_at)
        e_src = np.insert(e_src, at_arr, np.array(ins_src, dtype=np.int32))
        e_dst = np.insert(e_dst, at_arr, np.array(ins_dst, dtype=np.int32))
        e_kind = np.insert(e_kind, at_arr, np.full(m, CONTAINS, dtype=np.uint8))
        e_conf = np.insert(e_conf, at_arr, np.ones(m))
        e_line = np.insert(e_line, at_arr, np.zeros(m, dtype=np.int32))
        keep = np.insert(keep, at_arr, np.ones(m, dtype=bool))
    edges = _Rows(tuple(
        np.concatenate([dc, ec[keep]]).astype(dt, copy=False)
        for dc, ec, dt in zip(decl, (e_src, e_dst, e_kind, e_conf, e_line), _DTYPES, strict=True)
    ))  # fmt: skip
    columns = None
    if memory.columns is not None:
        from .build import node_columns

        lazy = node_columns(nodes[d:])
        columns = {k: np.concatenate([v, lazy[k]]) if isinstance(v, np.ndarray) else v + lazy[k]
                   for k, v in memory.columns.items()}  # fmt: skip
        # the declared nodes' names do not change in a patch: packed once, the rest appended
        if memory.packed is None:
            memory.packed = {k: store.pack_strings(memory.columns[k]) for k in ("name", "qname")}
        for k, (blob, off) in memory.packed.items():
            more_blob, more_off = store.pack_strings(lazy[k])
            columns[k] = store.Packed(np.concatenate([blob, more_blob]),
                                      np.concatenate([off, more_off[1:] + off[-1]]))  # fmt: skip
    log_ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=log_ptr[1:])
    totals = stats.sum(axis=0).tolist() if len(stats) else [0] * len(STAT_KEYS)
    return _Assembled(
        floor=b.floor, paths=b.paths, languages=b.languages, index=b.index, nodes=nodes,
        edges=edges, ext_nodes=ext_nodes, unit_nodes=unit_nodes, file_nodes=b.file_nodes,
        stats=dict(zip(STAT_KEYS, (int(v) for v in totals), strict=True)), log=_Rows(tuple(cols)),
        log_ptr=log_ptr, log_names=names, file_stats=stats, node_columns=columns,
        global_cache=memory.global_cache,
    )  # fmt: skip


def patched_spans(memory: Memory, chunks: Any, changed: list[str]) -> list | None:
    """The chunk spans of the remembered build with the changed files' read again: a
    segment-backed view orders chunks by (segment, path) and a path's chunks by line, so the
    unchanged files' spans stay where they were. None when that cannot be followed."""
    from ..chunkstore import segment_of

    spans_of = getattr(chunks, "spans_of", None)
    if memory.spans is None or not callable(spans_of):
        return None
    by_path: dict[str, list] = {}
    for span in memory.spans:
        by_path.setdefault(span[0], []).append(span)
    keys = list(by_path)
    if keys != sorted(keys, key=lambda p: (segment_of(p), p)):
        return None
    for path in changed:
        by_path[path] = list(spans_of([path]))
    out = [span for p in sorted(by_path, key=lambda p: (segment_of(p), p)) for span in by_path[p]]
    return out if len(out) == len(chunks) else None
