"""The symbol index: every definition with its chunk, and the searcher that answers exact,
case-insensitive, sub-token, prefix and qualified look-ups.

Ranking, best first: how well the name matches (exact > case-insensitive > same sub-tokens >
prefix > contains the sub-tokens), the kind asked for, definitions above declarations and
re-exports, implementation above tests, first-party above vendored code, types and functions
above variables, then shorter paths, then path and position (the order of a from-scratch
build, whatever the segments).

Storage (`<generation>/structural/`, format 2): the definitions are split into `SEGMENTS` files
by a CRC of their path (`000.json` ... `255.json`, sealed, columns), plus `meta.json` (sealed:
format, segment count, the builder's and the extractor's fingerprints, counts per segment).
An update hard-links the segments that hold no changed file from the previous generation and
rewrites the others from the previous segment minus the changed paths plus their new
definitions, so a one-file edit rewrites one small file and the result is byte for byte the one
a from-scratch build writes (tests/test_incremental.py). Readers cache parsed segments by file
identity: a searcher opened on the next generation parses only the segments that changed.

This module lives outside `extract/` on purpose: the extraction cache is keyed by a hash of the
extraction code, and a change to the index or its ranking must not force a re-extraction.
"""

from __future__ import annotations

import bisect
import hashlib
import heapq
import itertools
import json
import math
import operator
import os
import re
import threading
import weakref
import zlib
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from maguyva.errors import CorruptIndexError, MaguyvaError, ModalityUnavailable
from maguyva.extract.types import FileExtraction
from maguyva.modalities.protocol import RetrieverQuery
from maguyva.model import Chunk, Hit
from maguyva.store.chunks import ChunkStore
from maguyva.store.chunks import segment_of as chunk_segment_of
from maguyva.support import sealed

FORMAT_VERSION = 2
"""1 — one `symbols.json` (still read); 2 — segments + meta.json."""
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
    """Changes when this module (what a row holds, flags, format) changes: an index built by
    other code is rebuilt from scratch instead of updated."""
    return hashlib.blake2b(Path(__file__).read_bytes(), digest_size=8).hexdigest()


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
    cols["path"] = [index for index, path in enumerate(paths) for _row in files[path]]
    return sealed.dumps_json({"paths": paths, "columns": cols})


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


class _ChunkSource:
    """Chunks by path, without decoding more than needed: through `segment(n)` when the
    indexer hands a segmented view (`indexer.SegmentChunks`), else from the plain list."""

    def __init__(self, chunks: Sequence[Chunk] | Iterable[Chunk]) -> None:
        self.segment_of: Callable[[str], int] = chunk_segment_of
        self._chunks = chunks
        segment = getattr(chunks, "segment", None)
        self._segment = segment if callable(segment) else None
        self._by_segment: dict[int, list[Chunk]] | None = None

    def segment(self, n: int) -> list[Chunk]:
        if self._segment is not None:
            return list(self._segment(n))
        if self._by_segment is None:
            self._by_segment = defaultdict(list)
            for c in self._chunks:
                self._by_segment[self.segment_of(c.path)].append(c)
        return self._by_segment.get(n, [])

    def store_for(self, paths: Iterable[str]) -> ChunkStore:
        """A ChunkStore holding the chunks of `paths` only (decoding only their segments)."""
        wanted = set(paths)
        of_paths = getattr(self._chunks, "of_paths", None)
        if callable(of_paths):  # the indexer's view reads only these files' rows
            return ChunkStore(of_paths(wanted))
        if self._segment is None and self._by_segment is None:
            return ChunkStore([c for c in self._chunks if c.path in wanted])
        chunks = [c for n in sorted({self.segment_of(p) for p in wanted})
                  for c in self.segment(n) if c.path in wanted]  # fmt: skip
        return ChunkStore(chunks)


def _write_segment(out: Path, n: int, files: Mapping[str, Rows]) -> None:
    from maguyva.store.generations import write_sealed

    write_sealed(out / segment_name(n), "symbols", encode_segment(files), FORMAT_VERSION)


def _write_meta(out: Path, meta: dict[str, Any]) -> None:
    from maguyva.store.generations import write_sealed

    write_sealed(out / META, "symbols_meta", sealed.dumps_json(meta), FORMAT_VERSION)


def read_meta(directory: Path) -> dict[str, Any]:
    meta = sealed.read_sealed_json(directory / META, "symbols_meta", FORMAT_VERSION)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_VERSION:
        raise CorruptIndexError(f"{directory / META}: unknown symbol index format")
    return meta


def read_segment(directory: Path, n: int) -> dict[str, Any]:
    path = directory / segment_name(n)
    payload = sealed.read_sealed_json(path, "symbols", FORMAT_VERSION)
    if not isinstance(payload, dict) or not isinstance(payload.get("columns"), dict):
        raise CorruptIndexError(f"{path}: malformed symbol segment")
    return payload


def build(
    out: Path,
    extraction: Mapping[str, FileExtraction],
    chunks: Sequence[Chunk] | Iterable[Chunk],
    *,
    previous: Path | None = None,
    changes: Any = None,
    extractor: str = "",
) -> dict[str, Any]:
    """Write the symbol index under `out`: an update of `previous` (the previous generation's
    `structural/`) when `changes` says what changed since it and it was built by this code from
    the same extractor; from scratch otherwise. Returns a JSON-able report."""
    out.mkdir(parents=True, exist_ok=True)
    source = _ChunkSource(chunks)
    meta = {"format": FORMAT_VERSION, "segments": SEGMENTS, "builder": builder_fingerprint(),
            "extractor": extractor}  # fmt: skip
    reason = _why_not_incremental(previous, changes, meta)
    plan = None
    if reason is None:
        assert previous is not None
        try:
            plan = _reuse(out, previous, changes)
        except (MaguyvaError, OSError, KeyError, TypeError, IndexError, ValueError) as exc:
            reason = f"previous symbol index unusable ({exc})"
            for child in out.iterdir():  # the links made before the failure
                child.unlink()
    if plan is not None:
        counts, written = _update(out, plan, extraction, source)
        mode = "incremental"
    else:
        counts, written = _from_scratch(out, extraction, source)
        mode = "from scratch"
    meta["counts"] = counts
    _write_meta(out, meta)
    kinds: dict[str, int] = defaultdict(int)
    for _symbols, _files, by_kind in counts:
        for kind, count in by_kind.items():
            kinds[kind] += count
    report = {"symbols": sum(c[0] for c in counts), "files": sum(c[1] for c in counts),
              "kinds": dict(sorted(kinds.items())), "mode": mode,
              "segments_written": written}  # fmt: skip
    if reason is not None:
        report["why_from_scratch"] = reason
    return report


def _why_not_incremental(previous: Path | None, changes: Any, meta: dict[str, Any]) -> str | None:
    if previous is None or changes is None:
        return "no previous generation"
    if getattr(changes, "reason", ""):
        return str(changes.reason)
    try:
        old = read_meta(previous)
    except MaguyvaError as exc:
        return f"previous symbol index unusable ({exc})"
    for key in ("format", "segments", "builder", "extractor"):
        if old.get(key) != meta[key]:
            return f"previous symbol index built with another {key}"
    if not isinstance(old.get("counts"), list) or len(old["counts"]) != SEGMENTS:
        return "previous symbol index has no counts"
    return None


def _from_scratch(
    out: Path, extraction: Mapping[str, FileExtraction], source: _ChunkSource
) -> tuple[list[Any], int]:
    """Every segment, one indexer segment's chunks at a time; a segment is written as soon as
    every indexer segment it draws from is done (with 256 = 4 x 64, at once)."""
    by_source: dict[int, list[str]] = defaultdict(list)
    needs: dict[int, set[int]] = defaultdict(set)
    for path in extraction:
        n, m = source.segment_of(path), segment_of(path)
        by_source[n].append(path)
        needs[m].add(n)
    pending: dict[int, dict[str, Rows]] = defaultdict(dict)
    counts: list[Any] = [[0, 0, {}] for _ in range(SEGMENTS)]
    for n in sorted(by_source):
        paths = by_source[n]
        store = ChunkStore(source.segment(n))
        for path in paths:
            pending[segment_of(path)][path] = file_rows(path, extraction[path], store)
        for m in sorted({segment_of(p) for p in paths}):
            needs[m].discard(n)
            if not needs[m]:
                _write_segment(out, m, pending[m])
                counts[m] = _segment_counts(pending.pop(m))
    for m in range(SEGMENTS):
        if m not in needs:  # no file at all in this segment
            _write_segment(out, m, {})
    return counts, SEGMENTS


class _Plan:
    """An update's reading half: the previous counts and the decoded dirty segments (clean
    segments are linked by then). Reading the previous generation may fail (it is damaged):
    the build then starts over from scratch. Writing may fail too (disk full): that aborts
    the generation, as every write failure does."""

    def __init__(self, counts: list[Any], dirty: dict[int, dict[str, Rows]],
                 gone: set[str], touched: set[str]) -> None:  # fmt: skip
        self.counts, self.dirty, self.gone, self.touched = counts, dirty, gone, touched


def _reuse(out: Path, previous: Path, changes: Any) -> _Plan:
    touched = set(changes.touched_paths())
    gone = set(changes.deleted) | {old for old, _new in changes.renamed} | touched
    dirty = {segment_of(p) for p in gone}
    counts = list(read_meta(previous)["counts"])
    decoded = {m: _previous_rows(previous, m) for m in sorted(dirty)}
    old_dir, new_dir = str(previous), str(out)
    for m in range(SEGMENTS):
        if m not in dirty:
            name = segment_name(m)
            os.link(os.path.join(old_dir, name), os.path.join(new_dir, name))
    return _Plan(counts, decoded, gone, touched)


_WRITTEN: OrderedDict[tuple[Any, ...], dict[str, Rows]] = OrderedDict()
"""The rows of the last segments this process wrote, by file identity: a long-running writer
updating the same file again finds its segment's rows here instead of decoding them."""
_WRITTEN_MAX = 8


def _previous_rows(previous: Path, m: int) -> dict[str, Rows]:
    """Segment `m` of the previous generation, as path -> rows (a copy: the caller edits it)."""
    key = _identity(previous / segment_name(m))
    rows = _WRITTEN.get(key)
    if rows is not None:
        return dict(rows)
    return decode_rows(read_segment(previous, m))


def _remember(out: Path, m: int, files: dict[str, Rows]) -> None:
    try:
        key = _identity(out / segment_name(m))
    except OSError:
        return
    _WRITTEN[key] = files
    while len(_WRITTEN) > _WRITTEN_MAX:
        _WRITTEN.popitem(last=False)


def _update(
    out: Path, plan: _Plan, extraction: Mapping[str, FileExtraction], source: _ChunkSource
) -> tuple[list[Any], int]:
    """Rewrite the dirty segments: the previous rows minus the changed paths plus their new
    rows (the clean ones are hard-linked already)."""
    store = source.store_for(p for p in plan.touched if p in extraction)
    counts = plan.counts
    for m, files in plan.dirty.items():
        for path in plan.gone:
            if segment_of(path) == m:
                files.pop(path, None)
        for path in plan.touched:
            if segment_of(path) == m and path in extraction:
                files[path] = file_rows(path, extraction[path], store)
        _write_segment(out, m, files)
        _remember(out, m, files)
        counts[m] = _segment_counts(files)
    return counts, len(plan.dirty)


# ---- verifying --------------------------------------------------------------------------------


def verify(directory: Path) -> list[str]:
    """Problems of a symbol index directory, one line each; [] when sound."""
    if (directory / LEGACY_FILE).exists() and not (directory / META).exists():
        try:
            _legacy_segment(directory)
        except MaguyvaError as exc:
            return [str(exc)]
        return []
    try:
        meta = read_meta(directory)
    except MaguyvaError as exc:
        return [str(exc)]
    problems: list[str] = []
    counts = meta.get("counts")
    if meta.get("segments") != SEGMENTS or not isinstance(counts, list) or len(counts) != SEGMENTS:
        return [f"{directory / META}: segment count does not match {SEGMENTS}"]
    expected = {META} | {segment_name(m) for m in range(SEGMENTS)}
    for child in sorted(directory.iterdir()):
        if child.name not in expected:
            problems.append(f"{child}: not part of the symbol index")
    for m in range(SEGMENTS):
        path = directory / segment_name(m)
        try:
            payload = read_segment(directory, m)
            problems.extend(f"{path}: {p}" for p in _segment_problems(payload, m))
            files = decode_rows(payload)
        except MaguyvaError as exc:
            problems.append(str(exc))
            continue
        except (KeyError, TypeError, IndexError, ValueError) as exc:
            problems.append(f"{path}: malformed symbol segment ({type(exc).__name__}: {exc})")
            continue
        if _segment_counts(files) != counts[m]:
            problems.append(f"{path}: counts differ from {META}")
    return problems


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


# ---- loading ----------------------------------------------------------------------------------


class _Segment:
    """One segment's rows and look-up tables (immutable; shared by searchers of several
    generations when the file is the same). The name tables are built at open; the sub-token
    and doc-word tables (natural-language questions, multi-word names) on first use."""

    __slots__ = ("__weakref__", "_doc_terms", "_name_terms", "c", "exact", "folded", "lower",
                 "n", "paths", "sorted_lower")  # fmt: skip

    def __init__(self, paths: list[str], cols: dict[str, list[Any]]) -> None:
        # Immutable from here: tuples, which the cyclic collector stops tracking (see below).
        self.paths = tuple(paths)
        self.c = {name: tuple(col) for name, col in cols.items()}
        self.n = len(cols["name"])
        exact: dict[str, list[int]] = defaultdict(list)
        lower: dict[str, list[int]] = defaultdict(list)
        folded: dict[str, list[int]] = defaultdict(list)
        for i, name in enumerate(cols["name"]):
            exact[name].append(i)
        for name, ids in exact.items():
            lower[name.lower()].extend(ids)
            folded[fold(name)].extend(ids)
        for table in (lower, folded):
            for ids in table.values():
                if len(ids) > 1:
                    ids.sort()  # row order, as if filled row by row
        # Row lists as tuples: the collector stops tracking a tuple of atoms (and then the
        # dict holding only such tuples), so a full collection no longer walks millions of
        # them (a reader holding the kernel subset's 722k symbols paid ~0.8 CPU-s per full
        # collection, in whatever ran then).
        self.exact, self.lower, self.folded = _frozen(exact), _frozen(lower), _frozen(folded)
        self.sorted_lower = tuple(sorted(self.lower))
        self._name_terms: dict[str, Ids] | None = None
        self._doc_terms: dict[str, Ids] | None = None

    def terms(self) -> tuple[dict[str, Ids], dict[str, Ids]]:
        """(sub-token -> rows, doc word -> rows), each built once, on first use."""
        return self.name_terms(), self.doc_terms()

    def name_terms(self) -> dict[str, Ids]:
        """Sub-token -> rows: all a look-up by name needs. Built apart from the doc words
        (three quarters of the work), so the first name look-up in a segment an edit
        rewrote does not pay for them."""
        found = self._name_terms
        if found is None:
            with _TERMS_LOCK:
                found = self._name_terms
                if found is None:
                    token: dict[str, list[int]] = defaultdict(list)
                    for name, ids in self.exact.items():
                        for tok in set(subtokens(name)):
                            token[tok].extend(ids)
                    for ids in token.values():
                        if len(ids) > 1:
                            ids.sort()
                    found = self._name_terms = _frozen(token)
        return found

    def doc_terms(self) -> dict[str, Ids]:
        """Doc-comment word (lower case) -> rows."""
        found = self._doc_terms
        if found is None:
            with _TERMS_LOCK:
                found = self._doc_terms
                if found is None:
                    doc_token: dict[str, list[int]] = defaultdict(list)
                    for i, doc in enumerate(self.c["doc"]):
                        if doc:
                            for word in {w.lower() for w in _WORD.findall(doc)}:
                                doc_token[word].append(i)
                    found = self._doc_terms = _frozen(doc_token)
        return found


Ids = tuple[int, ...]


def _frozen(table: Mapping[str, list[int]]) -> dict[str, Ids]:
    return {key: tuple(ids) for key, ids in table.items()}


_TERMS_LOCK = threading.Lock()


_CACHE: weakref.WeakValueDictionary[tuple[Any, ...], _Segment] = weakref.WeakValueDictionary()
_CACHE_LOCK = threading.Lock()
_RECENT: dict[str, list[_Segment]] = {}
"""The segments of the last generation opened per index directory, held strongly: a server
drops its engine on the old generation before opening the new one, and the new one should
still find the unchanged segments parsed. At most `_RECENT_MAX` index directories."""
_RECENT_MAX = 4


def _identity(path: Path | str) -> tuple[Any, ...]:
    """A segment file's identity: device, inode, size and mtime (one `stat`). Generations are
    immutable and hard-link unchanged segments, so an equal identity is the same parsed
    segment (a new file on a reused inode would also need the same size and nanosecond
    mtime)."""
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _load_segment(directory: Path, m: int) -> _Segment:
    try:
        key = _identity(os.path.join(directory, segment_name(m)))
    except OSError as exc:
        raise CorruptIndexError(
            f"{directory / segment_name(m)}: unreadable symbol segment ({exc})"
        ) from exc
    with _CACHE_LOCK:
        found = _CACHE.get(key)
    if found is not None:
        return found
    path = directory / segment_name(m)
    payload = read_segment(directory, m)
    problems = _segment_problems(payload, m)
    if problems:
        raise CorruptIndexError(f"{path}: {problems[0]}")
    segment = _Segment(payload["paths"], payload["columns"])
    with _CACHE_LOCK:
        _CACHE[key] = segment
    return segment


def _legacy_segment(directory: Path) -> _Segment:
    """A format-1 `symbols.json` (one file, plain JSON) as a single segment."""
    path = directory / LEGACY_FILE
    try:
        payload = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise CorruptIndexError(f"{path}: unreadable symbol index ({exc})") from exc
    if not isinstance(payload, dict) or payload.get("version") != 1:
        raise CorruptIndexError(f"{path}: unknown symbol index version")
    try:
        paths, cols = payload["paths"], payload["columns"]
        if any(len(cols[c]) != len(cols["name"]) for c in COLUMNS):
            raise ValueError("columns of different lengths")
        return _Segment(paths, cols)
    except (KeyError, TypeError, IndexError, ValueError) as exc:
        raise CorruptIndexError(f"{path}: malformed symbol index ({exc})") from exc


def load(directory: Path) -> StructuralSearcher:
    """Open the symbol index under `directory` (segments already parsed for an earlier
    generation are reused)."""
    if not (directory / META).exists():
        if (directory / LEGACY_FILE).exists():
            return StructuralSearcher([_legacy_segment(directory)])
        raise ModalityUnavailable(f"structural index not built ({directory / META} missing)")
    meta = read_meta(directory)
    if meta.get("segments") != SEGMENTS:
        raise CorruptIndexError(f"{directory / META}: {meta.get('segments')} segments, "
                                f"expected {SEGMENTS}")  # fmt: skip
    segments = [_load_segment(directory, m) for m in range(SEGMENTS)]
    key = str(Path(directory).resolve().parent.parent)  # <index>/gen-N/structural -> <index>
    with _CACHE_LOCK:
        _RECENT.pop(key, None)
        _RECENT[key] = segments
        while len(_RECENT) > _RECENT_MAX:
            _RECENT.pop(next(iter(_RECENT)))
    return StructuralSearcher(segments)


def normalize_kind(kind: str | None) -> str | None:
    """A query's kind word (`def`, `struct`, `interface`, ...) -> a KIND_FAMILIES key."""
    if not kind:
        return None
    word = kind.strip().lower()
    word = KIND_ALIASES.get(word, word)
    return word if word in KIND_FAMILIES else None


# ---- searching --------------------------------------------------------------------------------

Ref = tuple[int, int]  # (segment position, row)
Ranked = list[tuple[tuple[Any, ...], str, int, int]]  # (key, path, segment position, row)


class StructuralSearcher:
    """Read-only symbol look-ups over one index generation. Thread-safe (immutable)."""

    modality: ClassVar[str] = "structural"

    def __init__(self, segments: list[_Segment]) -> None:
        self._segs = [s for s in segments if s.n]
        self._n = sum(s.n for s in self._segs)
        self._exact = [s.exact for s in self._segs]
        self._lower = [s.lower for s in self._segs]
        self._folded = [s.folded for s in self._segs]
        self._sorted = [s.sorted_lower for s in self._segs]

    def warm(self) -> None:
        """Build every segment's sub-token and doc-word tables now (otherwise the first
        question in words builds them: ~2 s on a 10k-file tree). They live on the parsed
        segments, which later generations share, so only changed segments build them again."""
        for seg in self._segs:
            seg.terms()

    @classmethod
    def from_columns(cls, paths: list[str], cols: dict[str, list[Any]]) -> StructuralSearcher:
        return cls([_Segment(paths, cols)])

    def __len__(self) -> int:
        return self._n

    # ---- look-ups -----------------------------------------------------------------------

    def find_symbol(self, name: str, kind: str | None = None, limit: int = 20) -> list[Hit]:
        """Definitions named `name` (any spelling rule above), best first."""
        return self._hits(self._rank_name(name, normalize_kind(kind)), limit)

    def search(self, query: RetrieverQuery, k: int) -> list[Hit]:
        """By `query.target` when it looks like a name; for natural-language questions also
        by `query.terms` against symbol names and doc comments."""
        kind = normalize_kind(query.kind)
        target = _with_suffix((query.target or "").strip(), query.text)
        ranked: Ranked = []
        named = bool(target) and _looks_like_name(target)
        bare = named and query.text.strip() == target
        if named:
            ranked = self._rank_name(target, kind)
            # A query that is nothing but a name asks where it is defined, whatever the
            # classifier made of it (`bind`, `redirect` read as words).
            if query.intent == "find_definition" or bare:
                ranked = _definitive(ranked)
        # A name asked for and not found is an honest empty answer (the engine then fuses);
        # questions in words also match symbol names and doc comments (for a bare name that
        # would only re-add the weaker matches `_definitive` removed).
        if not named or (query.intent != "find_definition" and not (bare and ranked)):
            seen = {(s, i) for _k, _p, s, i in ranked}
            terms = list(query.terms) or ([] if ranked else _WORD.findall(query.text))
            extra = [e for e in self._rank_terms(terms, kind) if (e[2], e[3]) not in seen]
            ranked = ranked + extra
        return self._hits(ranked, k)

    # ---- ranking ------------------------------------------------------------------------

    def _entry(self, key: tuple[Any, ...], s: int, i: int, kind: frozenset[str] | None):
        seg = self._segs[s]
        c = seg.c
        flags = c["flags"][i]
        path = seg.paths[c["path"][i]]
        quality = (
            0 if kind is None or c["kind"][i] in kind else 1,
            1 if flags & FLAG_DECL else 0,
            1 if flags & FLAG_TEST else 0,
            1 if flags & FLAG_VENDOR else 0,
            _KIND_RANK.get(c["kind"][i], 3),
            len(path),
        )
        return ((*key, *quality), path, s, i)

    def _rank_name(self, target: str, kind_word: str | None) -> Ranked:
        target = target.strip().rstrip("()").strip()
        parts = [p for p in re.split(r"::|\.|#|->|\\", target) if p]
        if not parts:
            return []
        name, qualifier = parts[-1], parts[:-1]
        kind = KIND_FAMILIES.get(kind_word) if kind_word else None
        tiers: dict[Ref, int] = {}

        def offer(s: int, ids: Iterable[int], tier: int) -> None:
            for i in ids:
                if tiers.get((s, i), 99) > tier:
                    tiers[(s, i)] = tier

        low = name.lower()
        folded = fold(name)
        # one C-level pass over the segments per table (`map`), Python only for the hits
        for tier, (tables, key) in enumerate(
            ((self._exact, name), (self._lower, low), (self._folded, folded))
        ):
            for s, ids in enumerate(map(operator.methodcaller("get", key), tables)):
                if ids:
                    offer(s, ids, tier)
        if len(low) >= 3:
            taken, last = 0, None
            starts = map(bisect.bisect_left, self._sorted, itertools.repeat(low))
            runs = [_prefixed(keys, low, s, at)
                    for s, (keys, at) in enumerate(zip(self._sorted, starts, strict=True))
                    if at < len(keys) and keys[at].startswith(low)]  # fmt: skip
            for key, s in heapq.merge(*runs):
                if key != last:
                    taken += 1
                    if taken > 200:
                        break
                    last = key
                offer(s, self._segs[s].lower[key], 3)
        if len(tiers) < 50:
            toks = subtokens(name)
            if len(toks) >= 2:
                tables = [seg.name_terms() for seg in self._segs]
                for s, first in enumerate(map(operator.methodcaller("get", toks[0]), tables)):
                    if first:
                        lists = [first, *(tables[s].get(t) for t in toks[1:])]
                        if all(lists):
                            lists.sort(key=len)
                            offer(s, set(lists[0]).intersection(*lists[1:]), 4)
        ranked: Ranked = []
        for (s, i), tier in tiers.items():
            if qualifier:
                q_match = self._qualifier_match(s, i, qualifier)
                if q_match is None:
                    continue
                tier = tier * 2 + q_match
            ranked.append(self._entry((tier,), s, i, kind))
        ranked.sort()
        return ranked

    def _qualifier_match(self, s: int, i: int, qualifier: list[str]) -> int | None:
        """0 when the definition's qualified name ends with the qualifier, 1 when its path does
        (module-qualified `json.loads`), None when neither."""
        seg = self._segs[s]
        qual = seg.c["qualified"][i].lower().split(".")[:-1]
        want = [q.lower() for q in qualifier]
        if qual[-len(want) :] == want:
            return 0
        path = seg.paths[seg.c["path"][i]].lower()
        stem = path.rsplit(".", 1)[0].split("/")
        if stem and stem[-1] in ("__init__", "index", "mod", "lib"):
            stem = stem[:-1]
        tail = want[-len(stem) :] if len(want) <= len(stem) else want
        if stem[-len(tail) :] == tail or (want and want[-1] in stem):
            return 1
        if qual and fold(qual[-1]) == fold(want[-1]):
            return 1
        return None

    def _rank_terms(self, terms: list[str], kind_word: str | None) -> Ranked:
        kind = KIND_FAMILIES.get(kind_word) if kind_word else None
        scores: dict[Ref, float] = defaultdict(float)
        n = max(self._n, 1)
        words = set()
        for term in terms:
            words.update(subtokens(term) or [term.lower()])
        for word in words:
            if len(word) < 3:
                continue
            for weight, table in ((2.0, 0), (1.0, 1)):
                found = [(s, ids) for s, seg in enumerate(self._segs)
                         if (ids := seg.terms()[table].get(word))]  # fmt: skip
                df = sum(len(ids) for _s, ids in found)
                if df and df < n:
                    idf = math.log(n / df)
                    for s, ids in found:
                        for i in ids:
                            scores[(s, i)] += weight * idf
        ranked = [self._entry((10, -score), s, i, kind) for (s, i), score in scores.items()]
        ranked.sort()
        return ranked

    def _hits(self, ranked: Ranked, k: int) -> list[Hit]:
        hits: list[Hit] = []
        seen_chunks: set[str] = set()
        for key, path, s, i in ranked:
            if len(hits) >= k:
                break
            c = self._segs[s].c
            chunk = c["chunk"][i]
            if chunk is not None and chunk in seen_chunks:
                continue
            if chunk is not None:
                seen_chunks.add(chunk)
            snippet = c["signature"][i]
            if c["doc"][i]:
                snippet = f"{snippet}\n{c['doc'][i]}" if snippet else c["doc"][i]
            hits.append(
                Hit(
                    path=path,
                    start_line=c["start"][i],
                    end_line=c["end"][i],
                    key=chunk,
                    score=round(1.0 / (1 + key[0]) if key[0] < 10 else -key[1], 4),
                    snippet=snippet or None,
                    lines=[c["line"][i]],
                    symbol=c["qualified"][i],
                    kind=c["kind"][i],
                    extra={"declaration": bool(c["flags"][i] & FLAG_DECL)},
                )
            )
        return hits


def _prefixed(keys: list[str], prefix: str, s: int, at: int) -> Iterator[tuple[str, int]]:
    """The (at most 200) keys of a sorted list from `at` on that start with `prefix`, tagged
    with `s`."""
    for key in keys[at : at + 200]:
        if not key.startswith(prefix):
            break
        yield key, s


def _definitive(ranked: Ranked) -> Ranked:
    """For "where is X defined": only the best match tier (an exact name hides prefix and
    other-spelling matches), and only definitions when the tier has any (a prototype or a stub
    is dropped when the body exists). The engine fuses this list with text hits and boosts by
    centrality, so a weaker match left in the list can outrank the answer; `find_symbol`
    keeps the full ranking."""
    if not ranked:
        return ranked
    best = ranked[0][0][0]
    kept = [e for e in ranked if e[0][0] == best]
    bodies = [e for e in kept if e[0][2] == 0]  # key[2]: 1 for declarations
    return bodies or kept


_NAME = re.compile(r"^[A-Za-z_$][\w$]*(?:(?:\.|::|#|->)[A-Za-z_$~][\w$]*)*[?!=]?(?:\(\))?$")


def _with_suffix(target: str, text: str) -> str:
    """Ruby and Scala names may end in `?`, `!` or `=` (`valid?`, `save!`, `etag=`); the
    classifier drops it from the target, so take it back from the query text."""
    if target and target[-1] not in "?!=":
        at = text.find(target)
        while at >= 0:
            end = at + len(target)
            if (
                end < len(text)
                and text[end] in "?!="
                and (end + 1 == len(text) or text[end + 1] in " ()")
            ):
                return target + text[end]
            at = text.find(target, end)
    return target


def _looks_like_name(target: str) -> bool:
    return bool(_NAME.match(target.strip()))


__all__ = ["FORMAT_VERSION", "SEGMENTS", "StructuralSearcher", "build", "load", "verify"]
