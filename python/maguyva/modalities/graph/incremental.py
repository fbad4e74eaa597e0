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
import re
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from maguyva.errors import MaguyvaError
from maguyva.extract.types import FileExtraction
from maguyva.modalities.graph import store
from maguyva.modalities.graph.receivers import scan
from maguyva.modalities.graph.resolve import (
    CALLS,
    CLOSED_BASES,
    CONTAINS,
    STAT_KEYS,
    Body,
    GraphBuilder,
    Node,
    Reuse,
    _class_words,
    _decorated,
    _receiver_word,
    _split_cached,
    alias_of,
    instance_of,
)
from maguyva.modalities.graph.schema import NodeKind
from maguyva.model import SourceFile

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
        "content": _digest_bytes(contents),
        "signature": _digest_bytes(signatures),
    }
    strings = {"paths": builder.paths, "names": list(builder.log_names)}
    meta = {"log_format": LOG_FORMAT, "stat_keys": list(STAT_KEYS), "floor": builder.floor}
    return arrays, strings, meta


def _digest_bytes(digests: Any) -> np.ndarray:
    """Per-file 16-byte digests as one byte array: a list of bytes (a build) or an (n, 16)
    array (a patch keeps them so, not as 10k bytes objects)."""
    if isinstance(digests, np.ndarray):
        return np.ascontiguousarray(digests, dtype=np.uint8).reshape(-1)
    return np.frombuffer(b"".join(digests), dtype=np.uint8)


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
    is a patch instead of a build: the resolved `GraphBuilder` (declarations, scopes and
    memos: never released), the declaration-phase edge rows, the packed edge log, the
    generation directory they were written to, and which files use which words (to find the
    files a declaration change can reach).

    Node numbers: the kept builder's nodes keep their numbers across patches (a definition
    removed stays a dead node, one added is appended); `order` lists the graph's nodes (the
    numbering a from-scratch build gives: each file's node, then its definitions) by their
    builder number, `canon` is its inverse (-1 for dead and lazily made nodes)."""

    def __init__(self) -> None:
        self.builder: GraphBuilder | None = None
        self.declared_nodes = 0
        self.decl: tuple[np.ndarray, ...] = ()  # declaration-phase rows, graph numbering
        self.decl_file = np.zeros(0, dtype=np.int32)  # the file of each row's source node
        self.log: tuple | None = None  # pack()'s (arrays, strings, meta)
        self.out_dir: Path | None = None
        self.key: tuple = ()
        self.stamp: tuple = ()  # (inode, size, mtime) of the graph.bin written
        self.spans: Any = None  # every chunk's span (`build.Spans`), in order
        self.columns: dict[str, Any] | None = None  # the declared nodes' `node_columns`
        self.packed: dict[str, tuple[np.ndarray, np.ndarray]] | None = None  # their names
        # PageRank and cycles with the edges they were computed from (build._same_input)
        self.global_cache: dict[str, Any] = {}
        self.order: np.ndarray | None = None  # graph number -> builder number (declared)
        self.canon: np.ndarray | None = None  # builder number -> graph number, or -1
        self.fstart: np.ndarray | None = None  # graph number of each file's node
        self.ndefs: np.ndarray | None = None  # number of definitions of each file
        self.tokens: list[np.ndarray] | None = None  # each file's word hashes (`file_tokens`)
        self.tok_hash = np.zeros(0, dtype=np.int64)  # every (hash, file), sorted by hash
        self.tok_file = np.zeros(0, dtype=np.int32)
        self.tok_changed: set[int] = set()  # files whose words changed since that index
        self.part: dict[str, np.ndarray] | None = None  # the names part last written
        self.part_linked = False  # ... hard-linked from the generation before
        # word -> {name: count}: names that take their meaning from the word (`_close_names`)
        self.follows: dict[str, dict[str, int]] | None = None
        # the last patch's edge rows in merged order, as `_edge_tags` (the next one's hint)
        self.edge_tags: np.ndarray | None = None
        self.edge_files = -1
        # the builder's resolution memo indexed by what invalidates an entry (`_index_memo`):
        # the oldest `memo_seen` entries of `memo_of` are indexed, the newer ones not yet
        self.memo_of: dict | None = None
        self.memo_seen = 0
        self.memo_refs = 0  # keys held by the index (some already dropped through another)
        self.memo_by_name: dict[str, list[tuple]] = {}
        self.memo_by_file: dict[int, list[tuple]] = {}
        self.memo_by_class: dict[int, list[tuple]] = {}
        self.memo_other: list[tuple] = []  # entries of kinds the index does not know

    def path_numbers(self, paths: list[str]) -> dict[str, int]:
        """path -> file number of the kept builder's `paths` (a patch adds or removes no
        file), made once per list rather than on every patch."""
        got = getattr(self, "_path_numbers", None)
        if got is None or got[0] is not paths or len(got[1]) != len(paths):
            got = (paths, {p: i for i, p in enumerate(paths)})
            self._path_numbers = got
        return got[1]

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
            from maguyva.modalities.graph.build import node_columns

            self.columns = node_columns(self.builder.nodes[: self.declared_nodes])
        if len(self.decl_file) != len(self.decl[0]) and self.columns is not None:
            self.decl_file = self.columns["file"][self.decl[0]].astype(np.int32)

    # -- numbering ------------------------------------------------------------------------

    def numbering(self) -> None:
        """Start keeping the builder's and the graph's numbering apart (both the same so far)."""
        b = self.builder
        if self.order is not None or b is None:
            return
        d = self.declared_nodes
        self.order = np.arange(d, dtype=np.int64)
        self.canon = np.full(len(b.nodes), -1, dtype=np.int64)
        self.canon[:d] = self.order
        self.fstart = np.array(b.file_nodes, dtype=np.int64)
        self.ndefs = np.diff(np.r_[self.fstart, d]) - 1
        files = np.repeat(np.arange(len(self.fstart), dtype=np.int64), self.ndefs + 1)
        b.okey = (files * _RANK + (self.order - self.fstart[files])).tolist()

    def defs_of(self, fid: int) -> list[int]:
        """Builder numbers of file `fid`'s definitions, in the graph's order."""
        b = self.builder
        assert b is not None
        if self.order is None:
            end = b.file_nodes[fid + 1] if fid + 1 < len(b.file_nodes) else self.declared_nodes
            return list(range(b.file_nodes[fid] + 1, end))
        assert self.fstart is not None and self.ndefs is not None
        at = int(self.fstart[fid]) + 1
        return self.order[at : at + int(self.ndefs[fid])].tolist()

    def graph_number(self, ids: np.ndarray) -> np.ndarray:
        """Builder numbers -> graph numbers (-1: a dead or lazily made node)."""
        if self.order is None:
            return ids
        assert self.canon is not None
        if len(self.canon) < len(self.builder.nodes):  # type: ignore[union-attr]
            grow = len(self.builder.nodes) - len(self.canon)  # type: ignore[union-attr]
            self.canon = np.r_[self.canon, np.full(grow, -1, dtype=np.int64)]
        return self.canon[ids]

    # -- words ----------------------------------------------------------------------------

    def set_tokens(self, fid: int, tokens: np.ndarray) -> None:
        assert self.tokens is not None
        if fid == len(self.tokens):
            self.tokens.append(tokens)
        else:
            self.tokens[fid] = tokens
            self.tok_changed.add(fid)

    def files_using(self, words: set[str]) -> set[int]:
        """The files whose words (`file_tokens`) include one of `words`."""
        assert self.tokens is not None
        if len(self.tok_changed) > 256 or (len(self.tok_hash) == 0 and self.tokens):
            lens = np.fromiter(map(len, self.tokens), dtype=np.int64, count=len(self.tokens))
            allh = np.concatenate(self.tokens) if self.tokens else np.zeros(0, dtype=np.int64)
            allf = np.repeat(np.arange(len(self.tokens), dtype=np.int32), lens)
            order = np.argsort(allh, kind="stable")
            self.tok_hash, self.tok_file = allh[order], allf[order]
            self.tok_changed = set()
        hs = np.unique(np.array([_hash(w) for w in words], dtype=np.int64))
        lo = np.searchsorted(self.tok_hash, hs, side="left")
        hi = np.searchsorted(self.tok_hash, hs, side="right")
        out: set[int] = set()
        for a, z in zip(lo.tolist(), hi.tolist(), strict=True):
            if z > a:
                out.update(self.tok_file[a:z].tolist())
        out -= self.tok_changed
        out.update(f for f in self.tok_changed if np.isin(self.tokens[f], hs).any())
        return out


MAX_DECLARED = 64  # more files with declaration changes than this: a build (replay) instead
_RANK = 1 << 24  # okey: file * _RANK + rank of the node in its file (0: the file's node)
_HASH_MASK = (1 << 63) - 1
_WORD = re.compile(r"[A-Za-z_$][\w$]*")


def _hash(word: str) -> int:
    return hash(word) & _HASH_MASK


def file_tokens(ex: FileExtraction, family: str, text: str | None = None) -> np.ndarray:
    """The words through which file `ex`'s resolution can depend on another file's
    declarations: every identifier of its calls, references, imports, bases, aliases and
    instances (and, for Python with source text, the receiver type names `receivers.scan`
    finds), plus each call receiver's own name (`\\0w` + word, and `\\0s` + each suffix of 4+
    letters: what `_names_class` compares with class names). As sorted unique hashes."""
    words: set[str] = set()
    find = _WORD.findall
    recv: set[str] = set()
    for c in ex.calls:
        words.update(find(c.callee))
        parts = _split_cached(c.callee)
        if len(parts) > 1:
            w = _receiver_word(parts[:-1])
            if w:
                recv.add(w)
    for r in ex.references:
        words.update(find(r.name))
    for i in ex.imports:
        words.update(find(i.module))
        if i.name:
            words.update(find(i.name))
        if i.alias:
            words.add(i.alias)
    for d in ex.definitions:
        for base in d.bases:
            words.update(find(base))
        for rhs in (alias_of(d, family), instance_of(d, family)):
            if rhs:
                words.update(find(rhs))
    if text and family == "py":
        for names in scan(text).values():
            for n in names:
                words.update(find(n))
    for w in recv:
        words.add("\0w" + w)
        words.update("\0s" + w[i:] for i in range(len(w) - 3))
    return np.unique(np.fromiter(map(_hash, words), dtype=np.int64, count=len(words)))


def patch(
    memory: Memory, extraction, changed: list[str], sources: list[SourceFile] | None
) -> tuple[Any, np.ndarray, np.ndarray, str] | None:
    """Apply the edits of `changed` to the remembered build and assemble what a full build
    would hold (`build.finish`'s input). A body-only edit re-declares the file's lines,
    imports and body in the kept builder and resolves that file again. A declaration change
    (a definition or import added, removed, renamed) declares the file again and resolves
    it and every file whose names could now resolve differently (`_reach`). None when
    anything else changed (a file added or removed, another language): the caller builds."""
    b = memory.builder
    assert b is not None and memory.log is not None
    arrays, _strings, _meta = memory.log
    fid_of = memory.path_numbers(b.paths)
    wanted = set(changed)
    by_path = {f.path: f for f in sources or [] if f.path in wanted}
    # (n, 16) arrays, the changed files' rows replaced (`pack` takes them as they are)
    contents = arrays["content"].reshape(-1, 16).copy()
    signatures = arrays["signature"].reshape(-1, 16).copy()
    work: list[tuple[int, FileExtraction]] = []
    declared: list[tuple[int, FileExtraction]] = []
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
        content = content_digest(ex, by_path.get(path))
        if sig != signatures[fid].tobytes():
            if memory.tokens is None:
                return None
            signatures[fid] = np.frombuffer(sig, dtype=np.uint8)
            contents[fid] = np.frombuffer(content, dtype=np.uint8)
            declared.append((fid, ex))
        elif content != contents[fid].tobytes():
            contents[fid] = np.frombuffer(content, dtype=np.uint8)
            work.append((fid, ex))
    if memory.tokens is not None:
        for fid, ex in work + declared:
            text = _text(b, fid) if b.scopes[fid].family == "py" else None
            memory.set_tokens(fid, file_tokens(ex, b.scopes[fid].family, text))
    if len(declared) > MAX_DECLARED:
        return None  # a branch switch: each declared file costs whole-graph renumbering
    decl = [c.copy() for c in memory.decl]
    old_log = tuple(arrays[k] for k in ("src", "target", "kind", "conf", "line"))
    reach: set[int] = set()
    if declared:
        got = _declaration_patch(memory, decl, declared)
        if got is None:
            return None
        reach, old_log = got
    reach -= {fid for fid, _ in work}
    todo = sorted([(fid, ex) for fid, ex in work] + [(fid, None) for fid in reach],
                  key=lambda w: w[0])  # fmt: skip
    stats = arrays["stats"].reshape(-1, len(STAT_KEYS)).copy()
    new_rows: dict[int, tuple[np.ndarray, ...]] = {}
    names_now = list(b.log_names)
    for fid, ex in todo:
        if ex is not None:
            if not _redeclare(b, memory, decl, fid, ex):
                return None
        elif b.bodies[fid] is None:
            other = extraction.get(b.paths[fid])
            if not isinstance(other, FileExtraction):
                return None
            b.bodies[fid] = Body.of(other)
        before = [b.stats[k] for k in STAT_KEYS]
        lo = len(b.log)
        edges, b.edges = b.edges, type(b.edges)()
        b._resolve_file(fid, [n for n in memory.defs_of(fid) if n in b.bases])
        b.edges = edges
        b.bodies[fid] = None
        log = b.log
        rows = [np.array(col[lo:], dtype=dt) for col, dt in
                zip((log.src, log.dst, log.kind, log.conf, log.line), _DTYPES, strict=True)]  # fmt: skip
        if memory.order is not None:
            rows[0] = memory.graph_number(rows[0].astype(np.int64)).astype(np.int32)
            t = rows[1].astype(np.int64)
            pos = t >= 0
            t[pos] = memory.graph_number(t[pos])
            if (rows[0] < 0).any() or (t[pos] < 0).any():
                return None  # an edge to a dead node: cannot happen, but never write one
            rows[1] = t.astype(np.int32)
        new_rows[fid] = tuple(rows)
        for col in (log.src, log.dst, log.kind, log.conf, log.line):
            del col[lo:]
        stats[fid] = [b.stats[k] - v for k, v in zip(STAT_KEYS, before, strict=True)]
        for k, v in zip(STAT_KEYS, before, strict=True):
            b.stats[k] = v
        names_now = list(b.log_names)
    assembled = _assemble(b, memory, decl, new_rows, names_now, stats, old_log)
    if assembled is None:
        return None
    memory.decl = tuple(decl)
    note = f"{len(todo)} changed files resolved, {len(b.paths) - len(todo)} kept in memory"
    if declared:
        note += f" ({len(declared)} with declaration changes, {len(reach)} reached)"
    return assembled, contents, signatures, note


def _text(b: GraphBuilder, fid: int) -> str | None:
    if b.types.read_text is None:
        return None
    try:
        return b.types.read_text(b.paths[fid])
    except OSError:
        return None


_DTYPES = (np.int32, np.int32, np.uint8, np.float64, np.int32)


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
            stars.append((b.index.resolve(fid, imp.module, imp.level)[0], imp.line))
            continue
        local = imp.alias or imp.name or b._default_binding(scope.family, imp.module)
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


def prepare(memory: Memory) -> bool:
    """Build now, in a writer's idle time, the tables a first declaration patch builds (the
    numbering, the subclass table, the memo's index, which names follow which words, the
    word index): ~1.2 CPU-s on a 10k-file tree that the first edit after a watcher starts
    would otherwise wait for. Each is what that patch would build from the same state; the
    patch then extends them. False when there is nothing kept to prepare."""
    b = memory.builder
    if b is None or memory.log is None or memory.tokens is None:
        return False
    memory.numbering()
    _direct_subclasses(b)
    _index_memo(memory, b)
    _close_names(memory, b, set())
    memory.files_using(set())
    return True


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
    base_sub = b._sub_memo
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
    memory.memo_seen = mark
    if not moved and all(b._supers.get(c, []) == old for c, old in before.items()):
        _keep_sub_memo(b, base_sub, names | memo_names, classes)
    for nm in names | memo_names:
        b._unique_top.pop(nm, None)
    b.types._lines = None
    reach |= memory.files_using(names)
    for fid in reach:
        b._touched.pop(fid, None)
    # the previous edge log in the new numbering (rows of files not reached keep their edges)
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
    cols = (src, target, arrays["kind"], arrays["conf"], arrays["line"])
    return reach, cols


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
    scope = b.scopes[fid]
    old_imports, old_stars = _import_view(scope)
    if memory.follows is not None:
        _follow(memory, _file_follows(b, memory, fid), -1)
    # forget the file's declarations: in the lists of same-named definitions (in the graph's
    # order), the file's are one run; taken out, and kept to compare with the new ones
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
    gone = set(old_ids)
    for o in old_ids:
        for table in (b.children, b.parent, b.bases, b.owner_name, b.alts, b.aliases,
                      b.instances, b.types._memo):  # fmt: skip
            table.pop(o, None)  # type: ignore[attr-defined]
        b.props.discard(o)
    b.types._memo.pop(b.file_nodes[fid], None)
    # the definitions now: a definition whose qualified name is still there keeps its node
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
    edges, b.edges = b.edges, type(b.edges)()
    stars: list[tuple[int, str, int, int]] = []
    b._declare_file(fid, b.paths[fid], ex, stars, ids)
    rows = b.edges
    b.edges = edges
    scope = b.scopes[fid]
    for _, module, level, line in stars:
        scope.stars.append((b.index.resolve(fid, module, level)[0], line))
    b.bodies[fid] = Body.of(ex)
    # what changed for other files
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
    # the graph's numbering: this file's segment replaced, the later files' moved
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
    if memory.follows is not None:
        _follow(memory, _file_follows(b, memory, fid), 1)
    old_map = canon[prev_order]  # graph numbers before -> after (-1: a removed definition)
    # columns of the declared nodes, in the graph's order
    from maguyva.modalities.graph.build import node_columns

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
    # declaration rows: this file's made again, every row renumbered
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
    return True


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
    total = len(cols[0])
    # the names in order of first appearance
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
    d = memory.declared_nodes
    idx = new_index[cid]
    target[neg] = -1 - idx
    cols[1] = target.astype(np.int32)
    target[neg] = d + idx  # the graph's numbering
    dst = target.astype(np.int32)
    del target
    # the nodes made on first use, and a module node's CONTAINS edges to its files
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
    del keep, kept
    columns = None
    if memory.columns is not None:
        from maguyva.modalities.graph.build import node_columns

        lazy = node_columns(nodes[d:])
        # the declared nodes' names do not change in a patch: packed once, the rest appended
        if memory.packed is None:
            memory.packed = {k: store.pack_strings(memory.columns[k]) for k in ("name", "qname")}
        columns = {k: np.concatenate([v, lazy[k]]) if isinstance(v, np.ndarray) else v + lazy[k]
                   for k, v in memory.columns.items() if k not in memory.packed}  # fmt: skip
        for k, (blob, off) in memory.packed.items():
            more_blob, more_off = store.pack_strings(lazy[k])
            columns[k] = store.Packed(np.concatenate([blob, more_blob]),
                                      np.concatenate([off, more_off[1:] + off[-1]]))  # fmt: skip
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


def patched_spans(memory: Memory, chunks: Any, changed: list[str]) -> Any:
    """The chunk spans (`build.Spans`) of the remembered build with the changed files' runs
    read again and spliced in: a segment-backed view orders chunks by (segment, path) and a
    path's chunks by line, so the unchanged files' spans stay where they were. None when that
    cannot be followed."""
    spans = memory.spans
    spans_of = getattr(chunks, "spans_of", None)
    if spans is None or not callable(spans_of):
        return None
    for path in sorted(set(changed)):
        spans = spans.spliced(path, list(spans_of([path])))
        if spans is None:
            return None
    return spans if len(spans) == len(chunks) else None
