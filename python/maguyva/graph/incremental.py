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
from .resolve import STAT_KEYS, GraphBuilder, Reuse, _decorated, alias_of, instance_of

LOG_FILE = "edgelog.bin"
LOG_FORMAT = 4  # bump when resolution rules change: an old log must not be replayed


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
