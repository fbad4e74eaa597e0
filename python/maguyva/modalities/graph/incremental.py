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

from maguyva.errors import MaguyvaError
from maguyva.extract.types import FileExtraction
from maguyva.modalities.graph import store
from maguyva.modalities.graph.assemble import _assemble
from maguyva.modalities.graph.follows import _close_names
from maguyva.modalities.graph.memo import _index_memo
from maguyva.modalities.graph.memory import _DTYPES, MAX_DECLARED, Memory, file_tokens
from maguyva.modalities.graph.redeclare import _declaration_patch, _direct_subclasses, _redeclare
from maguyva.modalities.graph.resolve.builder import GraphBuilder
from maguyva.modalities.graph.resolve.names import _decorated, alias_of, instance_of
from maguyva.modalities.graph.resolve.rows import STAT_KEYS, Body, Reuse
from maguyva.model import SourceFile

LOG_FILE = "edgelog.bin"
LOG_FORMAT = 6  # bump when resolution rules change: an old log must not be replayed


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
        for name in sections.compressed():  # format 4 stores it compressed: all read here
            sections[name]
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
    return store.write(directory, arrays, strings, meta, LOG_FILE, compress=True)


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
        rows = _resolve_again(memory, extraction, decl, fid, ex, stats)
        if rows is None:
            return None
        new_rows[fid] = rows
        names_now = list(b.log_names)
    assembled = _assemble(b, memory, decl, new_rows, names_now, stats, old_log)
    if assembled is None:
        return None
    memory.decl = tuple(decl)
    note = f"{len(todo)} changed files resolved, {len(b.paths) - len(todo)} kept in memory"
    if declared:
        note += f" ({len(declared)} with declaration changes, {len(reach)} reached)"
    return assembled, contents, signatures, note


def _resolve_again(memory: Memory, extraction, decl: list[np.ndarray], fid: int,
                   ex: FileExtraction | None, stats: np.ndarray) -> tuple[np.ndarray, ...] | None:  # fmt: skip
    """Resolve file `fid` again in the kept builder (re-declared first when its body changed,
    `ex`; else only reached by a declaration change) and return its edge rows in the graph's
    numbering, leaving the builder's log and statistics as they were (`stats[fid]` takes
    the file's share). None when the file cannot be patched."""
    b = memory.builder
    assert b is not None
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
    for col in (log.src, log.dst, log.kind, log.conf, log.line):
        del col[lo:]
    stats[fid] = [b.stats[k] - v for k, v in zip(STAT_KEYS, before, strict=True)]
    for k, v in zip(STAT_KEYS, before, strict=True):
        b.stats[k] = v
    return tuple(rows)


def _text(b: GraphBuilder, fid: int) -> str | None:
    if b.types.read_text is None:
        return None
    try:
        return b.types.read_text(b.paths[fid])
    except OSError:
        return None


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
