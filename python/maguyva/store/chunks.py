"""The chunks of one index generation, persisted once and shared by every modality.

Stored as JSON Lines (`chunks.jsonl`, sealed: see sealed.py) in the generation directory. Loading builds a per-path
interval list so that any (path, line) maps to its enclosing chunk: the engine uses that to give
every retriever's hit the same key, so that agreement between retrievers is fused.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import re
import threading
import zlib
from collections import OrderedDict
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from maguyva.errors import CorruptIndexError
from maguyva.model import Chunk
from maguyva.store import blocks, spans
from maguyva.store.file_states import DELTA_KIND as DELTA_KIND
from maguyva.store.file_states import FILES_DELTA as FILES_DELTA
from maguyva.store.file_states import FILES_JSON as FILES_JSON
from maguyva.store.file_states import apply_state_delta as apply_state_delta
from maguyva.store.file_states import file_states as file_states
from maguyva.store.file_states import read_delta
from maguyva.store.file_states import read_file_states as read_file_states
from maguyva.store.file_states import state_delta as state_delta
from maguyva.store.generations import write_sealed
from maguyva.store.identity import identity, may_serve
from maguyva.support.sealed import read_sealed

FILE_NAME = "chunks.jsonl"
CHUNKS_DIR = "chunks"  # the indexer writes a generation's chunks as CHUNKS_DIR/NN.jsonl
SEGMENTS = 64
"""Chunks and extraction are split into segments by a hash of the path (`segment_of`): an
update rewrites the segments holding changed files and hard-links the others from the previous
generation (generations are immutable, so sharing inodes is safe)."""


def write_chunks(gen_dir: Path, chunks: list[Chunk]) -> None:
    """Write all chunks of a generation (sorted by path and line for locality), sealed."""
    ordered = sorted(chunks, key=lambda c: (c.path, c.start_line, c.end_line, c.id))
    payload = "".join(json.dumps(asdict(c), ensure_ascii=False) + "\n" for c in ordered)
    write_sealed(gen_dir / FILE_NAME, "chunks", payload.encode())


def segment_of(path: str) -> int:
    """The segment (of `SEGMENTS`) that holds a path's chunks and extraction."""
    return zlib.crc32(path.encode("utf-8", "surrogateescape")) % SEGMENTS


DELTA_DIR = "delta"


def delta_file(number: int, kind: str) -> str:
    """Relative name of delta `number`'s chunk (`kind` "chunks") or extraction file."""
    suffix = "chunks.jsonl" if kind == "chunks" else "extract.json"
    return f"{DELTA_DIR}/{number:06d}.{suffix}"


def decode_chunk_lines(payload: bytes, where: Path) -> list[Chunk]:
    """Chunks from JSON Lines (a verified payload or a slice of one; compressed blocks,
    `store.blocks`, are decompressed first)."""
    payload = blocks.raw(payload, where)
    chunks: list[Chunk] = []
    for number, line in enumerate(payload.split(b"\n"), start=1):
        if not line:
            continue
        try:
            chunks.append(Chunk(**json.loads(line)))
        except (ValueError, TypeError) as exc:
            raise CorruptIndexError(f"{where}:{number}: bad chunk record") from exc
    return chunks


def decode_chunks(path: Path) -> list[Chunk]:
    """One sealed chunk file, verified (header, size, checksum) and decoded."""
    return decode_chunk_lines(read_sealed(path, "chunks", blocks.ROWS_VERSION), path)


class ChunkStore:
    """Read-only view of a generation's chunks, by id and by (path, line)."""

    def __init__(self, chunks: list[Chunk]) -> None:
        self._by_id = {c.id: c for c in chunks}
        self._by_path: dict[str, list[Chunk]] = {}
        for c in sorted(chunks, key=lambda c: (c.path, c.start_line, -c.end_line)):
            self._by_path.setdefault(c.path, []).append(c)
        self._starts = {p: [c.start_line for c in cs] for p, cs in self._by_path.items()}

    @classmethod
    def open(cls, gen_dir: Path) -> ChunkStore:
        """Load and verify (header, size, checksum) all of a generation's chunks."""
        if (gen_dir / CHUNKS_DIR).is_dir():
            lazy = SegmentedChunkStore(gen_dir, inherit=False)
            return cls([c for p in lazy.paths() for c in lazy.by_path(p)])
        path = gen_dir / FILE_NAME
        return cls(decode_chunks(path) if path.exists() else [])

    @classmethod
    def lazy(cls, gen_dir: Path) -> ChunkStore | SegmentedChunkStore:
        """A view that decodes a segment the first time one of its paths is asked for: what a
        query touches is a handful of files, so opening a new generation after a one-file edit
        costs nothing up front (loading all of an 11k-file kernel subset took 5-6 s). Falls
        back to `open` for an unsegmented generation."""
        if (gen_dir / CHUNKS_DIR).is_dir():
            return SegmentedChunkStore(gen_dir)
        return cls.open(gen_dir)

    def __len__(self) -> int:
        return len(self._by_id)

    def get(self, chunk_id: str, path: str | None = None) -> Chunk | None:
        """The chunk with id `chunk_id` (`path`, its file, helps the segmented store)."""
        return self._by_id.get(chunk_id)

    def record(self, chunk_id: str, path: str, text: bool = True) -> Chunk | None:
        """`get` for one chunk of `path` whose id is known to be right (a hit's): the
        segmented store decodes that record alone, not the file's other rows (and, with
        `text` false, may leave its text empty)."""
        chunk = self._by_id.get(chunk_id)
        return chunk if chunk is not None and chunk.path == path else None

    def by_path(self, path: str) -> list[Chunk]:
        return self._by_path.get(path, [])

    def paths(self) -> list[str]:
        return list(self._by_path)

    def warm(self) -> None:
        """Nothing to do: a whole store is decoded when opened (`SegmentedChunkStore.warm`)."""

    def enclosing(self, path: str, line: int) -> Chunk | None:
        """The smallest chunk of `path` that contains `line`, or None."""
        chunks = self._by_path.get(path)
        if not chunks:
            return None
        upto = bisect.bisect_right(self._starts[path], line)
        best: Chunk | None = None
        for chunk in chunks[:upto]:
            if chunk.start_line <= line <= chunk.end_line and (
                best is None or chunk.end_line - chunk.start_line < best.end_line - best.start_line
            ):
                best = chunk
        return best


_Decoded = dict[tuple[int, ...], tuple[Path, Any]]
"""File identity (device, inode, size, mtime; -1 appended for a delta file) -> (the path it
was decoded from, what was decoded)."""

_RECENT: dict[Path, _Decoded] = {}
"""Per index directory, what the last opened `SegmentedChunkStore` decoded, by file identity:
the next generation hard-links its unchanged segments, so a reader opening it after an update
takes them over instead of decoding them again (`_carries` says when that is safe)."""
_RECENT_LOCK = threading.Lock()
_RECENT_MAX = 4  # index directories


def _identity(path: Path) -> tuple[int, ...] | None:
    try:
        return identity(path)
    except FileNotFoundError:
        return None


def _carries(source: Path, path: Path, key: tuple[int, ...], value: Any) -> bool:
    """May what was decoded from `source` (identity `key`) serve `path`, another generation's
    file of that identity? A segment table holding its file open keeps the inode from being
    reused, so the identity alone proves it is the same file; anything else (a delta file's
    payload, a segment decoded whole) needs `source` to still be a link of it."""
    if isinstance(value, _SegmentRows) and value.fd is not None:
        return True
    return may_serve(source, path, (key[0], key[1], key[2], key[3]))


_PATH_AT_LINE_START = re.compile(rb'\{"id": "[^"\\\n]*", "path": ("(?:[^"\\\n]|\\.)*")')
"""A chunk record's path, read without decoding the record (records are `asdict` dumps: `id`
first, then `path`)."""

DECODED_PATHS = 4096
"""Per store, how many files' decoded chunks are kept (least recently used dropped): a query
that touches 40,000 files of the kernel must not keep 1.2 million chunk objects (10 GB)."""


RAW_PATHS = 64
"""Per store, how many files' decompressed rows `record` keeps (its rows are not decoded)."""

RECORDS = 8192
"""Per store, the decoded records without span text `record` keeps: every result of a common
literal (`"self"` ranks 5,008 stdlib chunks), so a repeated one reads no record."""

_Parts = tuple[bytes, dict[int, tuple[int, int]], int, dict[int, bytes]]
"""One file's rows decompressed, their spans and CRC (`blocks.parts`), the span rows filled."""


class _SegmentRows:
    """One verified chunk segment as a path -> byte range table over its file: a path's rows
    are read (`pread`) and decoded only when asked for. The file descriptor stays open so a
    later generation that hard-links the same file, or a collected generation, reads the same
    inode. A segment whose records do not follow the expected layout is decoded whole.

    `file` is where the table was first read; a later generation's store that takes it over
    (a hard link) passes its own path as `where` to every read that fills span texts: they
    are cut from the content of the generation the reader holds (its lease keeps it), never
    from the one the table came from, which the writer collects two commits later (issue 17:
    the texts came back empty, "not the one they were cut from")."""

    def __init__(self, path: Path) -> None:
        self.file = path
        self.fd: int | None = None
        self.start = 0
        self.ranges: dict[str, tuple[int, int, int]] = {}  # path -> (offset, length, count)
        self.whole: ChunkStore | None = None
        if not path.exists():
            self.whole = ChunkStore([])
            return
        payload = read_sealed(path, "chunks", blocks.ROWS_VERSION)
        if blocks.is_block(payload):
            self.ranges = {p: (at, length, n) for p, n, at, length in blocks.blocks(payload, path)}
        elif not self._index(payload):
            self.ranges = {}
            self.whole = ChunkStore(decode_chunk_lines(payload, path))
            return
        self.fd = os.open(path, os.O_RDONLY)
        self.start = os.fstat(self.fd).st_size - len(payload)

    def _index(self, payload: bytes) -> bool:
        """Fill `ranges` from the records' paths; False when a record is not where expected or
        a path's rows are not contiguous."""
        lines = payload.count(b"\n") + (0 if payload.endswith(b"\n") or not payload else 1)
        found = 0
        last: bytes | None = None
        begin = 0
        count = 0

        def close(end: int) -> bool:
            try:
                name = json.loads(last) if last is not None else None
            except ValueError:
                return False
            if name is None or name in self.ranges:
                return name is None
            self.ranges[name] = (begin, end - begin, count)
            return True

        at = 0
        size = len(payload)
        while at < size:
            m = _PATH_AT_LINE_START.match(payload, at)
            if m is None:
                return False
            found += 1
            raw = m.group(1)
            if raw != last:
                if not close(at):
                    return False
                last, begin, count = raw, at, 0
            count += 1
            nl = payload.find(b"\n", m.end())
            at = size if nl < 0 else nl + 1
        if not close(len(payload)):
            return False
        return found == lines

    def __del__(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)

    def paths(self) -> list[str]:
        return self.whole.paths() if self.whole is not None else list(self.ranges)

    def count(self, path: str) -> int:
        if self.whole is not None:
            return len(self.whole.by_path(path))
        entry = self.ranges.get(path)
        return entry[2] if entry else 0

    def raw(self, path: str) -> bytes | None:
        """`path`'s records, undecoded (None when the segment has none or is decoded whole)."""
        entry = self.ranges.get(path)
        if entry is None or self.whole is not None:
            return None
        assert self.fd is not None
        data = os.pread(self.fd, entry[1], self.start + entry[0])
        if len(data) != entry[1]:
            raise CorruptIndexError(f"{self.file}: truncated after it was verified")
        return data

    def rows(self, path: str, where: Path) -> ChunkStore | None:
        """`path`'s chunks as a store (None when the segment has none); span texts are cut
        from the generation of `where` (the reader's own segment path)."""
        if self.whole is not None:
            return self.whole if self.whole.by_path(path) else None
        data = self.raw(path)
        return None if data is None else ChunkStore(decode_chunk_lines(data, where))

    def find(self, chunk_id: str, where: Path) -> Chunk | None:
        """The chunk with id `chunk_id`, by a scan of the raw records (span texts as `rows`)."""
        if self.whole is not None:
            return self.whole.get(chunk_id)
        assert self.fd is not None
        size = os.fstat(self.fd).st_size - self.start
        payload = blocks.raw(os.pread(self.fd, size, self.start), where)
        needle = b'{"id": ' + json.dumps(chunk_id).encode() + b","
        at = payload.find(needle)
        while at > 0 and payload[at - 1 : at] != b"\n":  # only at a record's start
            at = payload.find(needle, at + 1)
        if at < 0:
            return None
        end = payload.find(b"\n", at)
        chunks = decode_chunk_lines(payload[at : end if end >= 0 else len(payload)], where)
        return chunks[0] if chunks else None


class SegmentedChunkStore:
    """`ChunkStore`'s interface over the indexer's 64 segment files, each verified (checksum)
    on first use and kept as a path -> byte range table, plus the generation's delta
    (`files-delta.json`): a file re-extracted since the segments were written is read from its
    delta file, only its own rows. A file's chunks are decoded when asked for and the last
    `DECODED_PATHS` files' are kept, so memory stays bounded however many files queries touch.
    Thread-safe. `get` without a path scans every segment; the engine passes the path it
    already knows. Segment tables and delta files read by the previous store of the same index
    directory are reused when the file is the same (a hard link)."""

    def __init__(self, gen_dir: Path, inherit: bool = True) -> None:
        self.gen_dir = Path(gen_dir)
        delta = read_delta(self.gen_dir)
        self._overrides: dict[str, list[int] | None] = dict(delta["index"]) if delta else {}
        self._segments: dict[int, _SegmentRows] = {}
        self._rows: OrderedDict[str, ChunkStore | None] = OrderedDict()  # path -> its rows
        self._raw: OrderedDict[str, _Parts] = OrderedDict()  # path -> its rows (`_parts`)
        self._records: OrderedDict[tuple[str, str], Chunk | None] = OrderedDict()
        self._lock = threading.Lock()
        self._decoded: _Decoded = {}  # what this generation's files decoded to (or took over)
        self._inherited: _Decoded = {}  # the last store's, taken over only by `_carries`
        if inherit:
            with _RECENT_LOCK:
                self._inherited = _RECENT.pop(self.gen_dir.parent, {})
                _RECENT[self.gen_dir.parent] = self._decoded
                while len(_RECENT) > _RECENT_MAX:
                    _RECENT.pop(next(iter(_RECENT)))
            # what this generation shares with the last one is carried over now, not on first
            # use: a warmed store's tables survive any number of reopens (the rest is dropped)
            if self._inherited:
                mine = {k: p for n in range(SEGMENTS)
                        if (k := _identity(p := self._where(n)))}  # fmt: skip
                numbers = {e[5] for e in self._overrides.values() if e is not None}
                mine |= {(*k, -1): p for n in numbers
                         if (k := _identity(p := self.gen_dir / delta_file(n, "chunks")))}  # fmt: skip
                for key, (source, value) in self._inherited.items():
                    path = mine.get(key)
                    if path is not None and _carries(source, path, key, value):
                        self._decoded[key] = (path, value)

    def _reuse(self, path: Path, key: tuple[int, ...] | None, make: Any) -> Any:
        """What `path` (identity `key`) decodes to: decoded by this store or taken over from
        the last one when `_carries` allows, else `make()`."""
        if key is None:
            return make()
        got = self._decoded.get(key)  # this generation's files: one identity, one file
        if got is None:
            old = self._inherited.get(key)
            got = old if old is not None and _carries(old[0], path, key, old[1]) else None
            got = (path, got[1] if got is not None else make())
            self._decoded[key] = got
        return got[1]

    def _where(self, n: int) -> Path:
        """Segment `n`'s file in this store's generation: what every read of its rows names
        (span texts come from this generation, whichever one the table was read at)."""
        return self.gen_dir / CHUNKS_DIR / f"{n:02d}.jsonl"

    def _segment(self, n: int) -> _SegmentRows:
        with self._lock:
            rows = self._segments.get(n)
            if rows is None:
                path = self._where(n)
                rows = self._reuse(path, _identity(path), lambda: _SegmentRows(path))
                self._segments[n] = rows
            return rows

    def _delta_payload(self, number: int) -> bytes:
        """A delta chunk file's payload, verified once per file (and per process)."""
        path = self.gen_dir / delta_file(number, "chunks")
        key = _identity(path)
        if key is None:
            raise CorruptIndexError(f"{path}: missing")
        return self._reuse(path, (*key, -1),
                           lambda: read_sealed(path, "chunks", blocks.ROWS_VERSION))  # fmt: skip

    def _delta_rows(self, path: str, entry: list[int]) -> ChunkStore:
        where = self.gen_dir / delta_file(entry[5], "chunks")
        try:
            payload = self._delta_payload(entry[5])
            rows = payload[entry[0] : entry[0] + entry[1]]
        except (TypeError, IndexError) as exc:
            raise CorruptIndexError(f"{where}: bad delta entry for {path}") from exc
        return ChunkStore(decode_chunk_lines(rows, where))

    def _store(self, path: str) -> ChunkStore | None:
        """The store holding `path`'s current rows (None: the file has none or left the index)."""
        with self._lock:
            if path in self._rows:
                self._rows.move_to_end(path)
                return self._rows[path]
        if path in self._overrides:
            entry = self._overrides[path]
            store = self._delta_rows(path, entry) if entry is not None else None
        else:
            n = segment_of(path)
            store = self._segment(n).rows(path, self._where(n))
        with self._lock:
            self._rows[path] = store
            while len(self._rows) > DECODED_PATHS:
                self._rows.popitem(last=False)
        return store

    def _all(self) -> list[_SegmentRows]:
        return [self._segment(n) for n in range(SEGMENTS)]

    def warm(self) -> None:
        """Verify and index every segment and delta file now rather than on the first query
        that lands in it (~10 ms each on a 10k-file tree): a long-running server calls it once
        in the background, and later generations inherit the tables of the files they share."""
        self._all()
        for entry in list(self._overrides.values()):
            if entry is not None:
                self._delta_payload(entry[5])

    def __len__(self) -> int:
        base = sum(
            rows.count(p) for rows in self._all() for p in rows.paths() if p not in self._overrides
        )
        return base + sum(e[2] for e in self._overrides.values() if e is not None)

    def get(self, chunk_id: str, path: str | None = None) -> Chunk | None:
        if path is not None:
            store = self._store(path)
            chunk = store.get(chunk_id) if store is not None else None
            return chunk if chunk is not None and chunk.path == path else None
        for p, entry in self._overrides.items():
            if entry is not None and (chunk := self.get(chunk_id, p)) is not None:
                return chunk
        for n, rows in enumerate(self._all()):
            chunk = rows.find(chunk_id, self._where(n))
            if chunk is not None and chunk.path not in self._overrides:
                return chunk
        return None

    def record(self, chunk_id: str, path: str, text: bool = True) -> Chunk | None:
        """`get(chunk_id, path)` decoding only that record when `path`'s rows are not decoded
        yet: a literal found in 400 files shows each file's best chunk, and decoding all of
        their 16,000 rows (one `json.loads` each) was most of the answer (issue 21). With
        `text` false the chunk comes without its text (a span row's is not cut from the
        content: a result with a snippet of its own shows none of it), and the last `RECORDS`
        of those are kept; this store is one generation's, so an update opens a new one."""
        if text:
            return self._record(chunk_id, path, text)
        key = (path, chunk_id)
        with self._lock:
            if key in self._records:
                self._records.move_to_end(key)
                return self._records[key]
        found = self._record(chunk_id, path, text)
        if found is not None and found.text:
            found = replace(found, text="")
        with self._lock:
            self._records[key] = found
            while len(self._records) > RECORDS:
                self._records.popitem(last=False)
        return found

    def _record(self, chunk_id: str, path: str, text: bool) -> Chunk | None:
        with self._lock:
            decoded, cached = path in self._rows, self._rows.get(path)
        if decoded:
            return cached.record(chunk_id, path) if cached is not None else None
        got = self._parts(path)
        if got is None or isinstance(got, ChunkStore):
            return got.record(chunk_id, path) if got is not None else None
        where, (rows, which, crc, filled) = got
        found_line = blocks.record_line(rows, chunk_id)
        if found_line is None:
            return None
        line, number = found_line
        if number in filled:
            line = filled[number]
        elif number in which and text:  # a span: its text from the file's stored content (kept)
            texts = spans.texts_of(spans.generation_of(where), path, crc, [which[number]])
            line = filled[number] = spans.fill_row(line, texts[0])
        found = decode_chunk_lines(line, where)  # a span row left unfilled has no text
        return found[0] if found and found[0].path == path else None

    def _parts(self, path: str) -> tuple[Path, _Parts] | ChunkStore | None:
        """`path`'s rows as `blocks.parts` gives them (and the span rows filled so far), read
        and decompressed on first use and kept for the next `RAW_PATHS` files; a segment
        decoded whole instead; None when the file left the index."""
        if path in self._overrides:
            entry = self._overrides[path]
            if entry is None:
                return None
            where = self.gen_dir / delta_file(entry[5], "chunks")
        else:
            segment = self._segment(segment_of(path))
            if segment.whole is not None:
                return segment.whole
            where = self._where(segment_of(path))
        with self._lock:
            got = self._raw.get(path)
        if got is not None:
            return where, got
        if path in self._overrides:
            entry = self._overrides[path]
            try:
                data: bytes | None = self._delta_payload(entry[5])[entry[0] : entry[0] + entry[1]]
            except (TypeError, IndexError) as exc:
                raise CorruptIndexError(f"{where}: bad delta entry for {path}") from exc
        else:
            data = segment.raw(path)
        got = (*blocks.parts(data or b"", where), {})
        with self._lock:  # the next question showing this file decompresses nothing
            self._raw[path] = got
            while len(self._raw) > RAW_PATHS:
                self._raw.popitem(last=False)
        return where, got

    def by_path(self, path: str) -> list[Chunk]:
        store = self._store(path)
        return store.by_path(path) if store is not None else []

    def paths(self) -> list[str]:
        base = (p for rows in self._all() for p in rows.paths() if p not in self._overrides)
        return sorted([*base, *(p for p, e in self._overrides.items() if e is not None)])

    def enclosing(self, path: str, line: int) -> Chunk | None:
        store = self._store(path)
        return store.enclosing(path, line) if store is not None else None
