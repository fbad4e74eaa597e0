"""The symbol index: every definition with its chunk. This module holds what a row is (its
columns, flags, name tokens and kind words) and the on-disk format; `symbol_build.py` writes
and checks the index, `symbol_search.py` loads it and answers look-ups.

Storage (`<generation>/structural/`, format 3): the definitions are split into `SEGMENTS` files
by a CRC of their path (`000.json` ... `255.json`, sealed, columns as JSON in one zstd frame
behind `ZHEAD` and its raw length, an empty segment's payload empty; format 2 stored the JSON
as it is and is still read), plus
`meta.json` (sealed: format, segment count, the builder's and the extractor's fingerprints,
counts per segment).
An update hard-links the segments that hold no changed file from the previous generation and
rewrites the others from the previous segment minus the changed paths plus their new
definitions, so a one-file edit rewrites one small file and the result is byte for byte the one
a from-scratch build writes (tests/test_incremental.py). Readers cache parsed segments by file
identity: a searcher opened on the next generation parses only the segments that changed.

These modules live outside `extract/` on purpose: the extraction cache is keyed by a hash of the
extraction code, and a change to the index or its ranking must not force a re-extraction.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import zlib
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from maguyva import _core
from maguyva.errors import CorruptIndexError
from maguyva.extract.types import FileExtraction
from maguyva.store.chunks import ChunkStore
from maguyva.support import sealed

FORMAT_VERSION = 3
"""1 — one `symbols.json` (still read); 2 — segments + meta.json (still read); 3 — each
segment's JSON compressed (zstd, issue 21: 3.8 MB to 1.1 MB on the standard library)."""
READS = (2, 3)
ZHEAD = b"ZSTD"  # a format-3 segment's payload: ZHEAD, u32 raw length, the zstd frame
ZSTD_LEVEL = 6
SEGMENTS = 256
"""A multiple of the indexer's 64 segments (same CRC of the path), so one indexer segment's
chunks complete four of these during a from-scratch build."""
META = "meta.json"
LEGACY_FILE = "symbols.json"
COLUMNS = ("name", "qualified", "kind", "path", "start", "end", "line", "chunk", "signature",
           "doc", "flags")  # fmt: skip
_ROW_COLUMNS = tuple(c for c in COLUMNS if c != "path")

_TOKEN = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]{2,}")


def subtokens(name: str) -> list[str]:
    """`parseConfig`, `parse_config`, `ParseConfig` -> ['parse', 'config']."""
    return [t.lower() for t in _TOKEN.findall(name)]


_NOT_IN_TOKENS = re.compile(r"[^A-Za-z\d]+")


def fold(name: str) -> str:
    """The key under which sub-token spellings meet: lower case, no separators (the
    sub-tokens joined: every ASCII letter and digit is in exactly one of them)."""
    return _NOT_IN_TOKENS.sub("", name).lower() or name.lower()


# A query's kind word -> the definition kinds it accepts.
KIND_FAMILIES: dict[str, frozenset[str]] = {
    "class": frozenset({"class", "struct", "record", "object", "interface", "trait", "protocol"}),
    "struct": frozenset({"struct", "class", "record", "union"}),
    "interface": frozenset({"interface", "trait", "protocol"}),
    "trait": frozenset({"trait", "interface", "protocol"}),
    "protocol": frozenset({"protocol", "interface", "trait"}),
    "enum": frozenset({"enum"}),
    "type": frozenset({"type", "class", "struct", "interface", "trait", "enum", "record",
                       "protocol", "union", "object"}),
    "function": frozenset({"function", "method", "macro"}),
    "method": frozenset({"method", "function"}),
    "module": frozenset({"module", "namespace"}),
    "variable": frozenset({"variable", "constant", "field"}),
    "constant": frozenset({"constant", "variable"}),
}  # fmt: skip
KIND_ALIASES = {"def": "function", "func": "function", "fn": "function", "fun": "function",
                "sub": "function", "proc": "function", "var": "variable", "let": "variable",
                "const": "constant", "namespace": "module", "mod": "module", "package": "module",
                "impl": "type", "object": "class", "record": "class"}  # fmt: skip
_KIND_RANK = {"class": 0, "struct": 0, "interface": 0, "trait": 0, "enum": 0, "protocol": 0,
              "record": 0, "object": 0, "type": 1, "function": 1, "method": 1, "macro": 2,
              "module": 2, "namespace": 2, "union": 1, "constant": 3, "variable": 3,
              "field": 4}  # fmt: skip

_TEST_DIRS = frozenset({"test", "tests", "testing", "spec", "specs", "__tests__", "testdata"})
_TEST_FILE = re.compile(
    r"(^test_.*|.*_test\.\w+|.*_tests?\.py|.*\.(test|spec)\.\w+|.*Tests?\.(java|cs|kt|scala|swift)"
    r"|.*_spec\.rb|conftest\.py)$"
)
_VENDOR_DIRS = frozenset(
    {"vendor", "third_party", "thirdparty", "node_modules", "build", "dist", "target", "external"}
)
# Files whose every definition is a declaration (stubs). Not C/C++ headers: a struct with a body
# or an inline function there is the definition; their prototypes are marked by the grammar.
_DECL_FILE = re.compile(r".*\.(pyi|d\.ts)$")

FLAG_DECL, FLAG_TEST, FLAG_VENDOR = 1, 2, 4


def is_test_path(path: str) -> bool:
    parts = path.lower().split("/")
    return any(p in _TEST_DIRS for p in parts[:-1]) or bool(_TEST_FILE.match(path.split("/")[-1]))


def is_vendor_path(path: str) -> bool:
    return any(p in _VENDOR_DIRS for p in path.lower().split("/")[:-1])


def segment_of(path: str) -> int:
    return zlib.crc32(path.encode("utf-8", "surrogateescape")) % SEGMENTS


def segment_name(n: int) -> str:
    return f"{n:03d}.json"


def builder_fingerprint() -> str:
    """Changes when this module (what a row holds, flags, format) or the writer
    (`symbol_build.py`) changes: an index built by other code is rebuilt from scratch instead
    of updated."""
    digest = hashlib.blake2b(digest_size=8)
    for name in ("symbols.py", "symbol_build.py"):
        digest.update((Path(__file__).parent / name).read_bytes())
    return digest.hexdigest()


# ---- building -------------------------------------------------------------------------------

Rows = list[list[Any]]  # one row per definition: the columns of _ROW_COLUMNS, in order


def file_rows(path: str, ex: FileExtraction, chunks: ChunkStore) -> Rows:
    """The rows of one file's definitions (definition order)."""
    test, vendor, decl_file = is_test_path(path), is_vendor_path(path), _DECL_FILE.match(path)
    rows: Rows = []
    for d in ex.definitions:
        line = d.name_line or d.start_line
        chunk = chunks.enclosing(path, line)
        flags = (
            (FLAG_DECL if d.declaration or decl_file else 0)
            | (FLAG_TEST if test else 0)
            | (FLAG_VENDOR if vendor else 0)
        )
        rows.append([d.name, d.qualified_name, d.kind, d.start_line, d.end_line, line,
                     chunk.id if chunk else None, d.signature, d.doc.split("\n\n", 1)[0][:300],
                     flags])  # fmt: skip
    return rows


def encode_segment(files: Mapping[str, Rows]) -> bytes:
    """A segment's payload: sorted paths with at least one definition, and the columns of
    their rows (path order, then definition order)."""
    paths = sorted(p for p, rows in files.items() if rows)
    rows = [row for path in paths for row in files[path]]
    cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}
    if rows:
        cols.update(zip(_ROW_COLUMNS, map(list, zip(*rows, strict=True)), strict=True))
    if not paths:  # format 3: an empty segment has an empty payload (most, in a small tree)
        return b""
    cols["path"] = [index for index, path in enumerate(paths) for _row in files[path]]
    raw = sealed.dumps_json({"paths": paths, "columns": cols})
    return ZHEAD + struct.pack("<I", len(raw)) + _core.zstd_compress(raw, ZSTD_LEVEL)


def decode_payload(payload: bytes, where: Path) -> Any:
    """A segment's payload (format 3 compressed, format 2 plain) as its JSON value."""
    if not payload:
        return {"paths": [], "columns": {c: [] for c in COLUMNS}}
    if payload[: len(ZHEAD)] == ZHEAD:
        at = len(ZHEAD) + 4
        if len(payload) < at:
            raise CorruptIndexError(f"{where}: truncated symbol segment")
        (size,) = struct.unpack_from("<I", payload, len(ZHEAD))
        try:
            payload = _core.zstd_decompress(payload[at:], size)
        except ValueError as exc:
            raise CorruptIndexError(f"{where}: symbol segment does not decompress") from exc
    try:
        return json.loads(payload)
    except ValueError as exc:
        raise CorruptIndexError(f"{where}: checksum is right but the JSON is not ({exc})") from exc


def decode_rows(payload: dict[str, Any]) -> dict[str, Rows]:
    """path -> rows of a decoded segment payload (the inverse of `encode_segment`)."""
    paths, cols = payload["paths"], payload["columns"]
    out: dict[str, Rows] = {p: [] for p in paths}
    columns = [cols[c] for c in _ROW_COLUMNS]
    for i, index in enumerate(cols["path"]):
        out[paths[index]].append([col[i] for col in columns])
    return out


def _segment_counts(files: Mapping[str, Rows]) -> list[Any]:
    kinds: dict[str, int] = defaultdict(int)
    for rows in files.values():
        for row in rows:
            kinds[row[2]] += 1
    return [sum(len(r) for r in files.values()), sum(1 for r in files.values() if r),
            dict(sorted(kinds.items()))]  # fmt: skip


def read_meta(directory: Path) -> dict[str, Any]:
    meta = sealed.read_sealed_json(directory / META, "symbols_meta", FORMAT_VERSION)
    if not isinstance(meta, dict) or meta.get("format") not in READS:
        raise CorruptIndexError(f"{directory / META}: unknown symbol index format")
    return meta


def read_segment(directory: Path, n: int) -> dict[str, Any]:
    path = directory / segment_name(n)
    payload = decode_payload(sealed.read_sealed(path, "symbols", FORMAT_VERSION), path)
    if not isinstance(payload, dict) or not isinstance(payload.get("columns"), dict):
        raise CorruptIndexError(f"{path}: malformed symbol segment")
    return payload


def _segment_problems(payload: dict[str, Any], m: int) -> list[str]:
    paths, cols = payload.get("paths"), payload.get("columns")
    if not isinstance(paths, list) or not isinstance(cols, dict):
        return ["malformed symbol segment"]
    if set(cols) != set(COLUMNS):
        return [f"columns {sorted(cols)}, expected {sorted(COLUMNS)}"]
    n = len(cols["name"])
    problems = [f"column {c} has {len(cols[c])} rows, expected {n}" for c in COLUMNS
                if not isinstance(cols[c], list) or len(cols[c]) != n]  # fmt: skip
    if problems:
        return problems
    if paths != sorted(set(paths)):
        problems.append("paths not sorted or repeated")
    wrong = [p for p in paths if not isinstance(p, str) or segment_of(p) != m]
    if wrong:
        problems.append(f"{len(wrong)} path(s) belong to another segment (e.g. {wrong[0]!r})")
    index = cols["path"]
    if any(not isinstance(i, int) or not 0 <= i < len(paths) for i in index):
        problems.append("path index out of range")
    elif index != sorted(index) or set(index) != set(range(len(paths))):
        problems.append("rows not grouped by path, or a path without rows")
    for i in range(n):
        start, end, line = cols["start"][i], cols["end"][i], cols["line"][i]
        if not all(isinstance(v, int) for v in (start, end, line)) or not (
            1 <= start <= end and line >= 1
        ):
            problems.append(f"row {i}: bad line numbers {start}, {end}, {line}")
            break
        if not isinstance(cols["name"][i], str) or not isinstance(cols["flags"][i], int):
            problems.append(f"row {i}: bad name or flags")
            break
    return problems


def _identity(path: Path | str) -> tuple[Any, ...]:
    """A segment file's identity: device, inode, size and mtime (one `stat`). Generations are
    immutable and hard-link unchanged segments, so an equal identity is the same parsed
    segment (a new file on a reused inode would also need the same size and nanosecond
    mtime)."""
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def normalize_kind(kind: str | None) -> str | None:
    """A query's kind word (`def`, `struct`, `interface`, ...) -> a KIND_FAMILIES key."""
    if not kind:
        return None
    word = kind.strip().lower()
    word = KIND_ALIASES.get(word, word)
    return word if word in KIND_FAMILIES else None


__all__ = ["COLUMNS", "FORMAT_VERSION", "SEGMENTS", "file_rows", "read_meta", "read_segment"]
