"""Build a new index generation, incrementally: detect what changed, re-extract only that,
then each modality builds its part from the whole (reused + new) extraction.

A small update writes no segment: it hard-links them and writes the re-extracted files' rows
as a delta (`delta/`, `files-delta.json`; see chunkstore.py), folded into the segments once it
grows past `DELTA_MAX_BYTES`.

`build_index()` is the one-shot entry point (CLI, demo, MCP). Memory is bounded by a segment,
not by the repository: each file's extraction and chunks are encoded as soon as they arrive and
spilled to disk, the 64 segments are then written one at a time (unchanged ones hard-linked
from the previous generation), and modalities read them through lazy views. A long-running
writer (`maguyva watch`) keeps one `Indexer`, which checks the previous generation's segments
once, not per edit.

One modality failing does not lose the others: its failure is recorded in the manifest and
reported as "unavailable" by every query until the next successful build. An I/O error (disk
full, failed fsync) aborts the whole generation instead: the previous one keeps serving.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import functools
import json
import logging
import os
import re
import shutil
import struct
import subprocess
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from maguyva.build import follow
from maguyva.build.progress import ProgressFile
from maguyva.config import SCHEMA, effective_config
from maguyva.errors import CorruptIndexError, IndexVersionError, MaguyvaError, ModalityUnavailable
from maguyva.extract import grammars
from maguyva.extract.cache import ExtractCache
from maguyva.extract.chunks import line_window_chunks
from maguyva.extract.types import FileExtraction
from maguyva.modalities.protocol import BuildContext
from maguyva.modalities.registry import BUILD_ORDER, load_modality
from maguyva.modalities.semantic.coverage import coverage
from maguyva.model import Chunk, SourceFile
from maguyva.repo import large as large_files
from maguyva.repo.changes import RACY_NS, ChangeSet, RepoState, scan
from maguyva.repo.reader import SpecialFileError, read_regular, read_text
from maguyva.store import generations as _store
from maguyva.store.chunks import (
    CHUNKS_DIR,
    DELTA_DIR,
    DELTA_KIND,
    FILES_DELTA,
    FILES_JSON,
    SEGMENTS,
    apply_state_delta,
    decode_chunk_lines,
    decode_chunks,
    delta_file,
    read_delta,
    segment_of,
    state_delta,
)
from maguyva.store.extraction import (
    EXTRACTION_SCHEMA,
    builders_fingerprint,
    decode_extraction,
    encode_chunks,
    encode_extraction,
    extractor_fingerprint,
)
from maguyva.store.generations import (
    CHECKSUMS,
    FORMAT_VERSION,
    Generation,
    IndexDir,
    IndexWriteError,
    default_index_dir,
    write_sealed,
    write_sealed_atomic,
)
from maguyva.support import sealed

log = logging.getLogger("maguyva.index")


Progress = Callable[[str, int, int], None]

EXTRACT_JSON = "extract.json"  # format 2 before segments (such an index is extracted again once)
EXTRACT_DIR = "extract"
SPILL_DIR = "spill"  # inside the unfinished generation: encoded records while extracting
META_JSON = "meta.json"
CHUNKS_FILE = "chunks.jsonl"
SCAN_STATE = "scan.json"  # the last no-op check's state, so the next check starts from it


@dataclass(slots=True)
class BuildSummary:
    """What a build did: the generation, per-phase seconds, per-modality status, and what
    changed (`noop` when nothing did and no generation was written)."""

    generation: int
    index_dir: str
    files: int
    chunks: int
    skipped: dict[str, int]
    timings_s: dict[str, float] = field(default_factory=dict)
    modalities: dict[str, dict[str, Any]] = field(default_factory=dict)
    changes: dict[str, Any] = field(default_factory=dict)
    noop: bool = False
    built_for: list[str] = field(default_factory=list)  # the modalities it was built for
    not_started: list[str] = field(default_factory=list)  # asked for by default, never built


def _same_state(old: RepoState, new: RepoState) -> bool:
    """Equal apart from the scan time, and no file recent enough to be re-hashed next time."""
    if (old.files, old.skipped, old.dirs, old.ignores) != (
        new.files, new.skipped, new.dirs, new.ignores):  # fmt: skip
        return False
    racy = old.scanned_at_ns - RACY_NS
    return all(r[1] < racy for r in old.files.values())


def _git_commit(root: Path) -> str | None:
    """`git rev-parse HEAD`, read from `.git/` when it is a plain repository (HEAD naming a
    loose or packed ref, or a detached commit): every update records it, a process costs
    several milliseconds. Anything else (a worktree's `.git` file, no ref yet) asks git."""
    top = next((d for d in (root, *root.parents) if (d / ".git").exists()), None)
    if top is None:
        return None  # not in a git repository
    git = top / ".git"
    if not git.is_dir():
        return _ask_git(root)
    try:
        head = read_regular(git / "HEAD").decode().strip()
        if not head.startswith("ref: "):
            return head if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", head) else _ask_git(root)
        ref = head[5:].strip()
        if ".." in ref or not ref.startswith("refs/"):
            return _ask_git(root)
        try:
            commit = read_regular(git / ref).decode().strip()
        except FileNotFoundError:
            commit = ""
            with contextlib.suppress(FileNotFoundError):
                for line in read_regular(git / "packed-refs").decode().splitlines():
                    sha, _, name = line.partition(" ")
                    if name == ref:
                        commit = sha
                        break
        if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", commit):
            return commit
    except SpecialFileError:
        return None  # a FIFO for HEAD would block git as well: no commit, and no wait
    except (OSError, UnicodeDecodeError):
        pass
    return _ask_git(root)


def _ask_git(root: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True, text=True, check=True, timeout=10,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


# ---- segments: written once, read lazily ---------------------------------------------------

SEGMENT_INDEX_VERSION = 1
"""`files.json` carries, next to the file state, where each file's rows sit in its segments:
`path -> [chunk offset, chunk bytes, chunks, extraction offset, extraction bytes]` (offsets in
the sealed payload). The next build links or slices segments with it instead of decoding them,
and `SegmentExtraction` reads one file's extraction without decoding its segment."""

_RECORD = struct.Struct("<III")


def _dumps(value: Any) -> bytes:
    """JSON exactly as `sealed.dumps_json` writes it (so a segment is the same bytes whether
    it was assembled from fragments or dumped whole)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()


class _Spill:
    """Per-segment append-only files of encoded file records, filled while extraction runs so
    that no file's extraction or chunks stay in memory; `take(n)` reads one segment's back."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._open: dict[int, Any] = {}
        self.files = 0
        self.bytes = 0

    def add(self, path: str, chunk_bytes: bytes, fragment: bytes) -> None:
        n = segment_of(path)
        fh = self._open.get(n)
        if fh is None:
            fh = self._open[n] = open(self.dir / f"{n:02d}", "ab")  # noqa: SIM115 (closed in close)
        key = path.encode("utf-8", "surrogateescape")
        fh.write(_RECORD.pack(len(key), len(chunk_bytes), len(fragment)))
        fh.write(key)
        fh.write(chunk_bytes)
        fh.write(fragment)
        self.files += 1
        self.bytes += len(chunk_bytes) + len(fragment)

    def close(self) -> None:
        for fh in self._open.values():
            fh.close()
        self._open.clear()

    def take(self, n: int) -> dict[str, tuple[bytes, bytes]]:
        """Segment `n`'s records (path -> (chunk lines, extraction fragment)); removes them."""
        fh = self._open.pop(n, None)
        if fh is not None:
            fh.close()
        path = self.dir / f"{n:02d}"
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return {}
        out: dict[str, tuple[bytes, bytes]] = {}
        pos = 0
        while pos < len(data):
            lk, lc, le = _RECORD.unpack_from(data, pos)
            pos += _RECORD.size
            key = data[pos : pos + lk].decode("utf-8", "surrogateescape")
            pos += lk
            out[key] = (data[pos : pos + lc], data[pos + lc : pos + lc + le])
            pos += lc + le
        path.unlink()
        return out


def _payload_start(path: Path) -> int:
    """Offset of a sealed file's payload (the header's length)."""
    with open(path, "rb") as fh:
        head = fh.read(sealed.MAX_HEADER)
    end = head.find(b"\n")
    if end < 0:
        raise CorruptIndexError(f"{path}: not a Maguyva index file (bad or missing header)")
    return end + 1


def _segment_name(n: int, kind: str) -> str:
    return f"{CHUNKS_DIR}/{n:02d}.jsonl" if kind == "chunks" else f"{EXTRACT_DIR}/{n:02d}.json"


def _entry_name(path: str, entry: Sequence[int], kind: str) -> str:
    """The file (relative to the generation) holding an index entry's rows of `kind`
    ("chunks" or "extract"): a delta file for a 6-element entry, else the path's segment."""
    return delta_file(entry[5], kind) if len(entry) > 5 else _segment_name(segment_of(path), kind)


def _entry_slice(entry: Sequence[int], kind: str) -> tuple[int, int]:
    return (entry[0], entry[1]) if kind == "chunks" else (entry[3], entry[4])


class _RowFiles:
    """A generation's segment and delta files, read by index entry: one file's rows with one
    `pread` (`row`), or whole verified payloads (`payload`, kept) to slice many rows from."""

    def __init__(self, gen_dir: Path) -> None:
        self.gen_dir = Path(gen_dir)
        self._fds: dict[str, tuple[int, int]] = {}
        self._payloads: dict[str, bytes] = {}

    def _fd(self, name: str) -> tuple[int, int]:
        got = self._fds.get(name)
        if got is None:
            path = self.gen_dir / name
            got = self._fds[name] = (os.open(path, os.O_RDONLY), _payload_start(path))
        return got

    def row(self, path: str, entry: Sequence[int], kind: str) -> bytes:
        fd, start = self._fd(_entry_name(path, entry, kind))
        offset, length = _entry_slice(entry, kind)
        data = os.pread(fd, length, start + offset)
        if len(data) != length:
            raise CorruptIndexError(f"{self.gen_dir}: short {kind} record for {path}")
        return data

    def payload(self, name: str, kind: str) -> bytes:
        got = self._payloads.get(name)
        if got is None:
            got = self._payloads[name] = sealed.read_sealed(self.gen_dir / name, kind)
        return got

    def forget(self, names: Iterable[str]) -> None:
        for name in names:
            self._payloads.pop(name, None)

    def sliced(self, path: str, entry: Sequence[int], kind: str) -> bytes:
        offset, length = _entry_slice(entry, kind)
        return self.payload(_entry_name(path, entry, kind), kind)[offset : offset + length]

    def close(self) -> None:
        for fd, _ in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()
        self._payloads.clear()


class SegmentChunks(Sequence[Chunk]):
    """Every chunk of a generation, read from its segment files one segment at a time.

    Iterating decodes one segment, yields its chunks and drops them: what a modality keeps is
    its own business, the view holds at most one decoded segment (the last one indexed). Order:
    segment by segment, within a segment by path and line. `len()` costs nothing.

    With `index` (path -> entry) and `overridden` (the paths of the generation's delta), a
    segment holding an overridden path is assembled from its files' rows wherever they live;
    `of_paths`/`spans_of` read just the given files' rows (what an update needs)."""

    def __init__(
        self,
        gen_dir: Path,
        counts: list[int],
        index: Mapping[str, Sequence[int]] | None = None,
        overridden: Iterable[str] = (),
    ) -> None:
        self.gen_dir = Path(gen_dir)
        self.counts = list(counts)
        self._starts = [0]
        for c in self.counts:
            self._starts.append(self._starts[-1] + c)
        self._cached: tuple[int, list[Chunk]] | None = None
        self._index = index
        self._dirty = {segment_of(p) for p in overridden}
        self._files = _RowFiles(self.gen_dir)
        self._decoded: dict[str, list[Chunk]] = {}

    def __len__(self) -> int:
        return self._starts[-1]

    def _payload(self, n: int) -> bytes:
        """Segment `n`'s chunk lines as a from-scratch build would write them (verified)."""
        if n not in self._dirty or self._index is None:
            return sealed.read_sealed(self.gen_dir / _segment_name(n, "chunks"), "chunks")
        paths = sorted(p for p in self._index if segment_of(p) == n)
        return b"".join(self._files.sliced(p, self._index[p], "chunks") for p in paths)

    def segment(self, n: int) -> list[Chunk]:
        """The chunks of segment `n`, decoded (verified against the file's checksum)."""
        if self.counts[n] == 0:
            return []
        if n not in self._dirty:
            return decode_chunks(self.gen_dir / _segment_name(n, "chunks"))
        return decode_chunk_lines(self._payload(n), self.gen_dir / _segment_name(n, "chunks"))

    def of_paths(self, paths: Iterable[str]) -> list[Chunk]:
        """The chunks of `paths` (unknown ones have none), reading only their rows."""
        if self._index is None:
            wanted = set(paths)
            return [c for n in sorted({segment_of(p) for p in wanted})
                    for c in self.segment(n) if c.path in wanted]  # fmt: skip
        out: list[Chunk] = []
        for p in sorted(set(paths)):
            got = self._decoded.get(p)
            if got is None:
                entry = self._index.get(p)
                got = []
                if entry is not None and entry[1]:
                    rows = self._files.row(p, entry, "chunks")
                    got = decode_chunk_lines(rows, self.gen_dir / _entry_name(p, entry, "chunks"))
                if len(self._decoded) < 256:  # an update's few files (text and structural ask)
                    self._decoded[p] = got
            out.extend(got)
        return out

    def spans_of(self, paths: Iterable[str]) -> list[tuple[str, int, int, str]]:
        """`(path, start_line, end_line, id)` of the chunks of `paths`."""
        return [(c.path, c.start_line, c.end_line, c.id) for c in self.of_paths(paths)]

    def __iter__(self) -> Iterator[Chunk]:
        for n in range(len(self.counts)):
            if self.counts[n]:
                yield from self.segment(n)

    def spans(self) -> Iterator[tuple[str, int, int, str]]:
        """`(path, start_line, end_line, id)` of every chunk, in iteration order, without
        building `Chunk` objects (see `retriever.chunk_spans`)."""
        for n in range(len(self.counts)):
            if not self.counts[n]:
                continue
            for line in self._payload(n).split(b"\n"):
                if line:
                    c = json.loads(line)
                    yield c["path"], c["start_line"], c["end_line"], c["id"]

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("chunk index out of range")
        n = bisect.bisect_right(self._starts, i) - 1
        if self._cached is None or self._cached[0] != n:
            self._cached = (n, self.segment(n))
        return self._cached[1][i - self._starts[n]]

    def close(self) -> None:
        self._files.close()

    def __repr__(self) -> str:
        return f"SegmentChunks({self.gen_dir}, {len(self)} chunks)"


class SegmentExtraction(Mapping[str, FileExtraction]):
    """path -> FileExtraction of a generation, decoded per file on access from the extraction
    segments or delta files (one `pread` and one small JSON decode; the last `cache` files are
    kept).

    Keys iterate in path order. Reading every value decodes the whole extraction once but holds
    none of it: a modality that needs every file's extraction at once builds that itself."""

    def __init__(self, gen_dir: Path, index: Mapping[str, Sequence[int]], cache: int = 256) -> None:
        self.gen_dir = Path(gen_dir)
        self._index = index
        self._paths = sorted(index)
        self._files = _RowFiles(self.gen_dir)
        self._lru: OrderedDict[str, FileExtraction] = OrderedDict()
        self._cache = cache

    def __len__(self) -> int:
        return len(self._paths)

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __contains__(self, path: object) -> bool:
        return path in self._index

    def __getitem__(self, path: str) -> FileExtraction:
        hit = self._lru.get(path)
        if hit is not None:
            self._lru.move_to_end(path)
            return hit
        entry = self._index[path]  # KeyError for an unknown path, as a dict would
        data = self._files.row(path, entry, "extract")
        try:
            _digest, row = json.loads(data)
            ex = decode_extraction(path, row)
        except (ValueError, TypeError) as exc:
            raise CorruptIndexError(f"{self.gen_dir}: bad extraction record for {path}") from exc
        self._lru[path] = ex
        if len(self._lru) > self._cache:
            self._lru.popitem(last=False)
        return ex

    def close(self) -> None:
        self._files.close()
        self._lru.clear()

    def __del__(self) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SegmentExtraction({self.gen_dir}, {len(self)} files)"


DELTA_MAX_BYTES = 8 << 20
"""A small update writes the re-extracted files' rows to a delta file instead of rewriting
their segments; once the live delta files hold more than this, the next update folds them
into the segments (rewrites the segments they touch and `files.json`)."""
DELTA_MAX_FILES = 8
"""More live delta files than this are merged into one (the next update's)."""
DELTA_MAX_PATHS = 4096
"""More overridden paths than this (a large checkout): fold at once."""


@dataclass(slots=True)
class _Previous:
    """What the next build reuses of the current generation: its directory, each file's
    digest and index entry (`index`: where its rows are, segment or delta), and the layout:
    the base `files.json` (its state and index) and the delta over it."""

    path: Path
    digests: dict[str, str]
    index: dict[str, list[int]]
    base_state: dict[str, Any] = field(default_factory=dict)
    base_index: dict[str, list[int]] = field(default_factory=dict)
    delta: dict[str, list[int] | None] = field(default_factory=dict)
    delta_sizes: dict[int, int] = field(default_factory=dict)
    base_counts: list[int] = field(default_factory=list)


def _counts(index: Mapping[str, Sequence[int]]) -> list[int]:
    """Chunks per segment of an index."""
    counts = [0] * SEGMENTS
    for p, e in index.items():
        counts[segment_of(p)] += e[2]
    return counts


@dataclass(slots=True)
class _FileIndex:
    """A generation's `files.json` with its `files-delta.json` applied."""

    state: dict[str, Any]
    index: dict[str, list[int]]
    base_state: dict[str, Any]
    base_index: dict[str, list[int]]
    delta: dict[str, list[int] | None]
    delta_sizes: dict[int, int]
    version: int | None


def read_file_index(gen_dir: Path) -> _FileIndex:
    """Read (and verify) a generation's file state and segment index, delta applied."""
    data = sealed.read_sealed_json(Path(gen_dir) / FILES_JSON, "files")
    base_state = data["state"]
    segs = data.get("segments") or {}
    base_index = {p: list(e) for p, e in (segs.get("files") or {}).items()}
    delta = read_delta(gen_dir)
    if delta is None:
        return _FileIndex(base_state, base_index, base_state, base_index, {}, {},
                          segs.get("version"))  # fmt: skip
    overrides: dict[str, list[int] | None] = {
        p: (list(e) if e is not None else None) for p, e in delta["index"].items()
    }
    index = dict(base_index)
    for p, e in overrides.items():
        if e is None:
            index.pop(p, None)
        else:
            index[p] = e
    sizes = {int(k): int(v) for k, v in (delta.get("sizes") or {}).items()}
    return _FileIndex(apply_state_delta(base_state, delta["state"]), index, base_state,
                      base_index, overrides, sizes, segs.get("version"))  # fmt: skip


@dataclass(slots=True)
class _Layout:
    """What `Indexer._write` wrote: the logical index (path -> entry), chunks per segment, the
    base state and index, the delta over them and its files' sizes."""

    index: dict[str, list[int]]
    counts: list[int]
    base_state: dict[str, Any]
    base_index: dict[str, list[int]]
    delta: dict[str, list[int] | None]
    delta_sizes: dict[int, int]
    rewritten: int
    mode: str  # segments | fold | delta
    base_counts: list[int] = field(default_factory=list)  # chunks per segment of base_index

    def report(self) -> dict[str, Any]:
        return {"mode": self.mode, "segments_rewritten": self.rewritten,
                "delta_paths": len(self.delta), "delta_files": len(self.delta_sizes),
                "delta_bytes": sum(self.delta_sizes.values())}  # fmt: skip


def _write_rows(
    tmp: Path,
    names: tuple[str, str],
    extractor: str,
    rows: list[tuple[str, bytes, int, bytes]],
    index: dict[str, list[int]],
    delta: int | None = None,
) -> int:
    """Write a chunk file and an extraction file (`names`) from `rows` (path, chunk lines,
    chunk count, extraction fragment; sorted by path); fill `index` (entries of a `delta`
    file carry its number). Returns the chunk count."""
    chunk_parts: list[bytes] = []
    extract_parts = [b'{"extractor":', _dumps(extractor), b',"files":{']
    coff = 0
    eoff = sum(len(p) for p in extract_parts)
    total = 0
    for i, (path, chunk_bytes, count, fragment) in enumerate(rows):
        key = (b"," if i else b"") + _dumps(path) + b":"
        extract_parts.append(key)
        eoff += len(key)
        extract_parts.append(fragment)
        entry = [coff, len(chunk_bytes), count, eoff, len(fragment)]
        index[path] = entry if delta is None else [*entry, delta]
        chunk_parts.append(chunk_bytes)
        coff += len(chunk_bytes)
        eoff += len(fragment)
        total += count
    extract_parts.append(b'},"schema":' + _dumps(EXTRACTION_SCHEMA) + b"}")
    write_sealed(tmp / names[0], "chunks", b"".join(chunk_parts))
    write_sealed(tmp / names[1], "extract", b"".join(extract_parts))
    return total


def _write_segment(
    tmp: Path,
    n: int,
    extractor: str,
    rows: list[tuple[str, bytes, int, bytes]],
    index: dict[str, list[int]],
) -> int:
    """Write chunk and extraction segment `n` from `rows`; see `_write_rows`."""
    names = (_segment_name(n, "chunks"), _segment_name(n, "extract"))
    return _write_rows(tmp, names, extractor, rows, index)


def stored_rows(gen_dir: Path) -> tuple[bytes, dict[str, Any]]:
    """A generation's chunks (the segments' JSON Lines, segment by segment, as a from-scratch
    build writes them) and extraction (path -> [digest, row]), delta applied: what an
    incremental build must store identically to a from-scratch one."""
    fi = read_file_index(gen_dir)
    counts = [0] * SEGMENTS
    for p, e in fi.index.items():
        counts[segment_of(p)] += e[2]
    view = SegmentChunks(gen_dir, counts, fi.index, fi.delta)
    files = _RowFiles(gen_dir)
    try:
        chunks = b"".join(view._payload(n) for n in range(SEGMENTS) if counts[n])
        extraction = {p: json.loads(files.sliced(p, e, "extract")) for p, e in fi.index.items()}
    finally:
        view.close()
        files.close()
    return chunks, extraction


# ---- the indexer ---------------------------------------------------------------------------

Extract = Callable[
    [Path, list[SourceFile], dict[str, Any], Progress],
    tuple[dict[str, FileExtraction], list[Chunk], dict[str, Any]],
]
"""An extraction step: `(root, files, config, progress) -> (extraction by path, chunks,
report)`, the signature of `structural.extract_repository`. `Indexer(extract=...)` replaces
the default (streaming, all cores) step with it; `scale.distributed` passes its own."""


class _Phases:
    """The progress callback, remembering each phase's last total so the indexer can close a
    phase a modality reported itself (`(phase, total, total)`)."""

    def __init__(self, progress: Progress, also: Progress | None = None) -> None:
        self.progress = progress
        self.also = also  # the progress file, for other processes
        self.totals: dict[str, int] = {}
        self.lock = threading.RLock()  # a modality built in a thread reports under it

    def __call__(self, phase: str, done: int, total: int) -> None:
        with self.lock:
            self.totals[phase] = total
            self.progress(phase, done, total)
            if self.also is not None:
                self.also(phase, done, total)

    def start(self, phase: str, total: int) -> None:
        self(phase, 0, total)

    def end(self, phase: str) -> None:
        total = self.totals.get(phase, 1) or 1
        self(phase, total, total)


class _Slices(_Phases):
    """The embedding of consecutive semantic slices (`follow`) as one phase: one name, the
    earlier slices' count carried over (its rate and ETA are the whole embedding's)."""

    def __init__(self, phases: _Phases) -> None:
        super().__init__(phases)
        self.name: str | None = None
        self.before = self.last = 0

    def __call__(self, phase: str, done: int, total: int) -> None:
        if phase.startswith("embed"):
            self.name = self.name or phase
            self.last = done
            phase, done, total = self.name, self.before + done, self.before + total
        super().__call__(phase, done, total)

    def next_slice(self) -> None:
        self.before += self.last
        self.last = 0


class Indexer:
    """Keeps one repository's index current. Not thread-safe; one per writer process (the
    writer lock serialises writers across processes).

    Memory stays bounded by a segment, not the repository: extraction results are encoded and
    spilled to per-segment files as they arrive, each segment is then written once, and the
    modalities read chunks and extraction through lazy views (`SegmentChunks`,
    `SegmentExtraction`). A `memory` budget in the configuration picks the number of
    extraction processes (`scale.memory.plan_for_budget`) when `jobs` is not set."""

    def __init__(
        self,
        root: Path,
        *,
        config: dict[str, Any] | None = None,
        progress: Progress | None = None,
        extract: Extract | None = None,
    ) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise MaguyvaError(f"{self.root}: not a directory")
        effective = effective_config(self.root, config)
        self.config = effective.values
        # a configuration that names its modalities builds those; the default keeps what the
        # index was built with (`_keep_modalities`)
        self._modalities_chosen = effective.sources.get("modalities", "default") != "default"
        self._not_started: list[str] = []
        self.index = IndexDir(
            Path(self.config["index_dir"])
            if self.config.get("index_dir")
            else default_index_dir(self.root)
        )
        self.progress: Progress = progress or (lambda phase, done, total: None)
        self.extract = extract
        self._extractor = extractor_fingerprint()
        self._verified: int | None = None  # a generation whose segments we wrote or checked
        # What this writer knows of the generation it committed last (or checked last), so a
        # long-running writer does not decode `files.json` on every update: the generation's
        # (number, commit time), its file state, its index and layout.
        self._memo_key: tuple[int, Any] | None = None
        self._memo_state: RepoState | None = None
        self._memo_prev: _Previous | None = None
        self._loaded: tuple[tuple[int, Any], _FileIndex] | None = None
        self._files_memo: tuple[dict[str, list[Any]], list[SourceFile]] | None = None
        self.last_state: RepoState | None = None
        # `graph_follows` when the configuration leaves it unset: long-running writers set it
        self.follows_by_default = False
        self._update_started = 0.0
        self._progress_file: ProgressFile | None = None
        self.budget_plan = None
        if self.config.get("memory"):
            from maguyva.build.memory import parse_size, plan_for_budget

            self.budget_plan = plan_for_budget(parse_size(self.config["memory"]))
            if not self.config.get("jobs"):
                self.config["jobs"] = self.budget_plan.jobs

    # -- previous state ----------------------------------------------------------------------

    def _current(self) -> Generation | None:
        """The current generation, or None when there is none we may build on (missing, older
        format, damaged: the next build is then a full one). A newer format is refused."""
        try:
            return self.index.current(pin=False)
        except IndexVersionError as exc:
            if "newer" in str(exc):
                raise
            log.warning("%s; rebuilding", exc)
        except CorruptIndexError as exc:
            log.warning("%s; rebuilding from scratch", exc)
        except MaguyvaError:
            pass
        return None

    def _memo_for(self, current: Generation) -> bool:
        """Is what this writer remembers (state, index) about `current`? A generation is
        immutable, and another writer's commit or a repair gives another number or time."""
        return self._memo_key == (current.number, current.manifest.get("committed_at"))

    def _file_index(self, current: Generation) -> _FileIndex:
        key = (current.number, current.manifest.get("committed_at"))
        if self._loaded is None or self._loaded[0] != key:
            self._loaded = (key, read_file_index(current.path))
        return self._loaded[1]

    def _previous_state(self, current: Generation | None) -> RepoState | None:
        if current is None:
            return None
        if self._memo_for(current) and self._memo_state is not None:
            return self._memo_state
        try:
            saved = sealed.read_sealed_json(self.index.path / SCAN_STATE, "scan")
            if saved.get("generation") == current.number:
                return RepoState.from_json(saved["state"])
        except (MaguyvaError, KeyError, TypeError):
            pass
        try:
            return RepoState.from_json(self._file_index(current).state)
        except (MaguyvaError, KeyError, TypeError, ValueError, AttributeError) as exc:
            log.warning("%s: unusable file state (%s); walking again", current.path, exc)
            return None

    def _reusable(self, current: Generation) -> _Previous | None:
        """The current generation's per-file digests and segment index, when its segments can
        be linked or sliced: same extractor, segmented, with an index, every segment and delta
        file sound. None otherwise (every file is then extracted again)."""
        if current.manifest.get("built_for", {}).get("extractor") != self._extractor:
            return None
        if self._memo_for(current) and self._memo_prev is not None:
            return self._memo_prev
        try:
            fi = self._file_index(current)
            if fi.version != SEGMENT_INDEX_VERSION:
                return None  # an older layout: extract again once
            digests = {p: r[2] for p, r in fi.state["files"].items() if p in fi.index}
            if self._verified != current.number:  # checksums of what we may link, once
                for n in range(SEGMENTS):
                    sealed.read_sealed(current.path / _segment_name(n, "chunks"), "chunks")
                    sealed.read_sealed(current.path / _segment_name(n, "extract"), "extract")
                for d in {e[5] for e in fi.delta.values() if e is not None}:
                    sealed.read_sealed(current.path / delta_file(d, "chunks"), "chunks")
                    sealed.read_sealed(current.path / delta_file(d, "extract"), "extract")
                self._verified = current.number
        except (MaguyvaError, KeyError, TypeError, ValueError, AttributeError) as exc:
            log.warning("%s: previous extraction unusable (%s); extracting again", current.path,
                        exc)  # fmt: skip
            return None
        finally:
            self._loaded = None
        return _Previous(current.path, digests, fi.index, fi.base_state, fi.base_index,
                         fi.delta, fi.delta_sizes)  # fmt: skip

    # -- one update --------------------------------------------------------------------------

    def update(
        self, *, wait_for_lock: bool = False, rebuild: bool = False, force_walk: bool = False,
        hints: Iterable[str] | None = None, prepare: bool = False,
    ) -> BuildSummary:  # fmt: skip
        """Bring the index up to date; a no-op (no new generation) when nothing changed.
        `force_walk` lists the tree again even when no directory seems to have changed;
        `hints` (the watcher's event paths) limit the stat pass to them (`changes.scan`).
        `prepare` (a watcher starting): when nothing changed, build anyway (a generation
        with the same answers, no backlog embedded) so that the modalities keep what they
        built in memory, and build the graph's patch tables, so that the first edit is as
        fast as the ones after it."""
        timings: dict[str, float] = {}
        with self.index.writer_lock(wait=wait_for_lock):
            self._progress_file = ProgressFile(self.index.path)
            phases = _Phases(self.progress, self._progress_file)
            try:
                summary = self._update(timings, phases, rebuild, force_walk, hints, prepare)
            except BaseException:
                self._progress_file.finish("stopped")
                raise
            self._progress_file.finish("done")
            return summary

    def _update(
        self, timings: dict[str, float], phases: _Phases, rebuild: bool, force_walk: bool,
        hints: Iterable[str] | None, prepare: bool,
    ) -> BuildSummary:  # fmt: skip
        started = self._update_started = time.perf_counter()
        phases.start("scan", 0)
        current = None if rebuild else self._current()
        self._keep_modalities(current if not rebuild else self._current())
        previous = self._previous_state(current)
        state, changes = scan(
            self.root, self.config, previous, force_walk=rebuild or force_walk,
            hints=None if rebuild else hints,
        )  # fmt: skip
        if rebuild:
            changes.reason = "rebuild requested"
        timings["scan"] = time.perf_counter() - started
        self.last_state = state
        phases("scan", len(state.files), len(state.files))
        wanted = list(self.config.get("modalities") or BUILD_ORDER)
        noop = current is not None and changes.empty and follow.behind(
            current.manifest) is None and current.manifest.get("built_for") == (
            self._built_for(wanted))  # fmt: skip
        if noop:
            assert current is not None
            self._save_scan_state(current, previous, state)
            if not self._memo_for(current):
                self._memo_key = (current.number, current.manifest.get("committed_at"))
                self._memo_prev = None
            self._memo_state = state
            resumed = None if prepare else self._resume(current, state, timings, phases)
            if resumed is not None:
                return resumed
            if not prepare:
                return self._summary(current, state, changes, timings, noop=True)
        # only a build with nothing to do is a warm one: a modality built for the first
        # time (another configuration, a new model) still embeds everything
        warm = prepare and noop
        summary = self._build(current, state, changes, timings, wanted, phases, warm=warm)
        graph = summary.modalities.get("graph", {}).get("report", {})
        if warm and graph and graph.get("mode") != "patch":
            # once more, now as a patch: it leaves the merge order the next patch starts
            # from (the first edit's graph then costs what the later ones do: ~0.3 s
            # instead of ~0.55 s on a 10k-file tree)
            again = self._current()
            summary = self._build(again, state, changes, timings, wanted, phases, warm=True)
        if prepare:
            started = time.perf_counter()
            for language in sorted({f.language for f in self._source_files(state)
                                    if f.language}):  # fmt: skip
                grammars.load(language)  # the first edit's extraction need not
            summary.timings_s["grammars"] = time.perf_counter() - started
        for name in ("graph", "semantic") if prepare else ():
            if name in wanted:  # the first edit's one-time work, done now
                started = time.perf_counter()
                modality = load_modality(name)
                done = modality.prepare() if name == "graph" else modality.prepare(self.config)
                if done:
                    summary.timings_s[f"{name}_prepare"] = time.perf_counter() - started
        summary.timings_s["total"] = time.perf_counter() - self._update_started
        return summary

    def _settings(self) -> dict[str, Any]:
        """The configuration keys this build ran with that differ from their defaults (flags,
        environment, files alike: what the index was built with)."""
        return {key: self.config.get(key) for key, setting in SCHEMA.items()
                if key in self.config and self.config.get(key) != setting.default}  # fmt: skip

    def _keep_modalities(self, current: Generation | None) -> None:
        """Unless the configuration names its modalities, build those the index was built
        with: a plain `maguyva index` after `--modalities text,structural,graph` must not
        start minutes of embedding; the default's others are reported (`not_started`)."""
        if self._modalities_chosen or current is None:
            return
        built = current.manifest.get("built_for", {}).get("modalities")
        if not isinstance(built, list) or not built:
            return
        default = list(self.config.get("modalities") or BUILD_ORDER)
        self._not_started = [m for m in default if m not in built]
        self.config["modalities"] = list(built)

    def _save_scan_state(
        self, current: Generation, previous: RepoState | None, state: RepoState
    ) -> None:
        """Remember a no-op check's directory mtimes and touched files, so the next check
        need not walk or hash again."""
        if previous is not None and _same_state(previous, state):
            return
        payload = sealed.dumps_json({"generation": current.number, "state": state.to_json()})
        try:
            write_sealed_atomic(self.index.path / SCAN_STATE, "scan", payload)
        except OSError as exc:
            log.warning("could not save the scan state: %s", exc)

    def _build(
        self,
        current: Generation | None,
        state: RepoState,
        changes: ChangeSet,
        timings: dict[str, float],
        wanted: list[str],
        phases: _Phases,
        warm: bool = False,
    ) -> BuildSummary:
        started = time.perf_counter()
        prev = self._reusable(current) if current is not None else None
        timings["load_previous"] = time.perf_counter() - started
        files = self._source_files(state)
        digests = {p: r[2] for p, r in state.files.items()}
        old = prev.digests if prev is not None else {}
        redo = [f for f in files if old.get(f.path) != digests[f.path]]
        views: list[Any] = []

        serving = ("the previous generation still serves" if current is not None
                   else "no index was written (there was none before)")  # fmt: skip

        def failed(step: str, why: str) -> str:
            return f"could not {step} the new index generation ({why}); {serving}"

        with self._new_generation(views, failed) as (number, tmp):
            started = time.perf_counter()
            spill = _Spill(tmp / SPILL_DIR)
            try:
                phases.start("extract", len(redo))
                extract_report = self._extract(redo, digests, spill)
                phases.end("extract")
            finally:
                spill.close()
            timings["extract"] = time.perf_counter() - started
            started = time.perf_counter()
            phases.start("write", SEGMENTS)
            layout = self._write(tmp, number, state, files, digests, redo, prev, spill, phases)
            shutil.rmtree(tmp / SPILL_DIR, ignore_errors=True)
            timings["segments_rewritten"] = float(layout.rewritten)
            timings["write"] = time.perf_counter() - started
            phases.end("write")
            ctx = self._context(tmp, layout, files, phases, views,
                                current.path if current is not None else None, changes)  # fmt: skip
            chunks = ctx.chunks
            self.index.cache_dir.mkdir(parents=True, exist_ok=True)

            def own_views() -> BuildContext:
                """The same context with its own chunk view (views are not shared between
                threads: see `_build_modalities`)."""
                mine = SegmentChunks(tmp, layout.counts, layout.index, layout.delta)
                views.append(mine)
                return dataclasses.replace(ctx, chunks=mine)

            graph_behind = current is not None and follow.behind(current.manifest) is not None
            defer = not graph_behind and self._follows(current, changes)
            slices = not defer and not warm and self._semantic_follows(current, changes, wanted)
            overrides: dict[str, dict[str, Any]] = {}
            if graph_behind:  # built in full: the rows a patch would need are not those behind
                reason = dataclasses.replace(changes, reason="the graph was behind")
                overrides["graph"] = {"changes": reason}
            if defer:  # the edit's own chunks, for a moment: the rest follows (`follow`)
                overrides["semantic"] = {"config": follow.urgent_config(self.config)}
            elif warm or (slices and _small_update(changes)):
                # warm: nothing to embed, a backlog would only delay the start; a small update
                # with a backlog: the edit's chunks now, the backlog in the slices after
                overrides["semantic"] = {"config": {**self.config, follow.BACKLOG: False}}
            elif slices:  # never gate: searchable now, embedded in the generations after
                overrides["semantic"] = {"config": follow.first_config(self.config)}
            modalities = _build_modalities(ctx, self.config, timings, phases, fork=own_views,
                                           skip={"graph"} if defer else set(),
                                           overrides=overrides)  # fmt: skip
            if defer:
                assert current is not None
                modalities["graph"] = follow.link_behind(
                    current.path, current.manifest, tmp, changes
                )
            self._close(views)
            manifest = {
                "root": str(self.root),
                "commit": _git_commit(self.root),
                "files": len(files),
                "chunks": len(chunks),
                "skipped": state.skip_counts(),
                "large": large_files.report(self.root, state.files, self.config),
                "extract": extract_report,
                "changes": changes.summary(),
                "modalities": modalities,
                "built_for": self._built_for(wanted),
                "settings": self._settings(),
                "timings_s": {k: round(v, 4) for k, v in timings.items()},
                "layout": layout.report(),
                "embedding": modalities.get("semantic", {}).get("report", {}).get("provider"),
            }
            write_sealed(tmp / META_JSON, "meta", sealed.dumps_json(manifest))
            started = time.perf_counter()
            phases.start("commit", 1)
            generation = self.index.commit(
                number, tmp, manifest, previous=current.path if current is not None else None
            )
            timings["commit"] = time.perf_counter() - started
            phases.end("commit")
        (self.index.path / SCAN_STATE).unlink(missing_ok=True)
        if redo:  # the generation now holds what the cache kept for an interrupt
            self._extract_cache().clear()
        self._remember(generation, state, digests, layout)
        if defer:
            # wall seconds from the update's start to the first commit (its phases overlap)
            timings["searchable"] = time.perf_counter() - self._update_started
            generation = self._follow_up(generation, "graph", changes, files, layout, timings,
                                         phases)  # fmt: skip
            self._remember(generation, state, digests, layout)
            if follow.backlog(generation.manifest):
                # the same change set: the edited files' chunks still without a vector go
                # first; for a slice, so that the watcher stays responsive
                sliced = follow.backlog_config(self.config)
                generation = self._follow_up(generation, "semantic", changes, files, layout,
                                             timings, phases, sliced)  # fmt: skip
                self._remember(generation, state, digests, layout)
            modalities = generation.manifest.get("modalities", modalities)
        if slices:
            timings["searchable"] = time.perf_counter() - self._update_started
            first = modalities.get("semantic", {}).get("report") or {}
            generation = self._embed_slices(generation, state, digests, files, layout, timings,
                                            phases, first)  # fmt: skip
            modalities = generation.manifest.get("modalities", modalities)
        return self._summary(generation, state, changes, timings, modalities=modalities)

    def _remember(self, generation: Generation, state: RepoState, digests: dict[str, str],
                  layout: _Layout) -> None:  # fmt: skip
        """What the next update needs of the generation just committed."""
        if self._progress_file is not None:
            semantic = generation.manifest.get("modalities", {}).get("semantic", {})
            report = semantic.get("report") if semantic.get("built") else None
            self._progress_file.committed(generation.number,
                                          coverage(report) if report else None)  # fmt: skip
        self._verified = generation.number
        self._memo_key = (generation.number, generation.manifest.get("committed_at"))
        self._memo_state = state
        self._memo_prev = _Previous(generation.path, digests, layout.index, layout.base_state,
                                    layout.base_index, layout.delta, layout.delta_sizes,
                                    layout.base_counts)  # fmt: skip

    def _built_for(self, wanted: list[str]) -> dict[str, Any]:
        """What a generation is built for: an index built for anything else is updated whole."""
        return {"modalities": wanted, "extractor": self._extractor,
                "builders": builders_fingerprint()}  # fmt: skip

    def _follows(self, current: Generation | None, changes: ChangeSet) -> bool:
        """Is this update one whose graph follows in a second generation (`follow`)? Not when
        the index was built for other modalities or builders: a modality new to it is built
        whole, at once."""
        if current is None or not follow.wanted(self.config, self.follows_by_default):
            return False
        wanted = list(self.config.get("modalities") or BUILD_ORDER)
        graph = current.manifest.get("modalities", {}).get("graph", {})
        return (
            "graph" in wanted
            and bool(graph.get("built"))
            and _small_update(changes)
            and current.manifest.get("built_for") == self._built_for(wanted)
        )

    def _semantic_follows(self, current: Generation | None, changes: ChangeSet,
                          wanted: list[str]) -> bool:  # fmt: skip
        """Does this update commit before its embedding (`follow`, never gate)? A first
        build, a rebuild or a large update; or a one-shot writer's small update that finds
        the current generation's embedding unfinished; not another small update, whose few
        chunks embed in the time a second commit would take."""
        if "semantic" not in wanted or self.config.get("semantic_follows") is False:
            return False
        if not _small_update(changes):
            return True  # a long-running writer's first build too: it answers, then embeds
        if follow.wanted(self.config, self.follows_by_default):
            return False  # its small updates: `graph_follows` slices the backlog per edit
        return current is not None and follow.semantic_left(current.manifest) > 0

    def _resume(self, current: Generation, state: RepoState, timings: dict[str, float],
                phases: _Phases) -> BuildSummary | None:  # fmt: skip
        """Nothing changed, but the current generation's embedding is unfinished (killed,
        interrupted, out of budget): embed the rest in slices from it, nothing else built
        again. None when there is nothing to resume."""
        wanted = list(self.config.get("modalities") or BUILD_ORDER)
        if follow.wanted(self.config, self.follows_by_default):
            return None  # a writer whose updates follow embeds its backlog a slice per edit
        if not self._semantic_follows(current, ChangeSet(), wanted) or not follow.semantic_left(
            current.manifest
        ):  # fmt: skip
            return None
        prev = self._reusable(current)
        if prev is None:
            return None
        layout = _Layout(prev.index, _counts(prev.index), prev.base_state, prev.base_index,
                         prev.delta, prev.delta_sizes, 0, "linked", prev.base_counts)  # fmt: skip
        files = self._source_files(state)
        digests = {p: r[2] for p, r in state.files.items()}
        timings["searchable"] = time.perf_counter() - self._update_started
        generation = self._embed_slices(current, state, digests, files, layout, timings, phases)
        summary = self._summary(generation, state, ChangeSet(reason="embedding resumed"),
                                timings)  # fmt: skip
        summary.timings_s["total"] = time.perf_counter() - self._update_started
        return summary

    def _embed_slices(self, generation: Generation, state: RepoState, digests: dict[str, str],
                      files: list[SourceFile], layout: _Layout, timings: dict[str, float],
                      phases: _Phases, first: dict[str, Any] | None = None) -> Generation:  # fmt: skip
        """Semantic follows (`follow`): embed what `generation` left, a slice at a time, each
        slice committed as the next generation, until nothing is left, the budget or the cap
        is spent, a slice fails or embeds nothing. `first`: the semantic report of this
        update's first generation (what it embedded counts against the budget and the cap).
        Returns the last committed generation."""
        first = first or {}
        if first.get("error"):
            return generation  # the provider failed: the next update tries again
        spent_s = float(first.get("embed_seconds") or 0.0)
        embedded = int(first.get("new") or 0)
        sliced = _Slices(phases)
        while follow.semantic_left(generation.manifest):
            config = follow.slice_config(self.config, spent_s, embedded)
            if config is None:
                break
            generation = self._follow_up(generation, "semantic", ChangeSet(), files, layout,
                                         timings, sliced, config)  # fmt: skip
            self._remember(generation, state, digests, layout)
            sliced.next_slice()
            status = generation.manifest["modalities"]["semantic"]
            report = status.get("report") or {}
            if not status.get("built") or report.get("error") or not report.get("new"):
                break
            spent_s += float(report.get("embed_seconds") or 0.0)
            embedded += int(report["new"])
        return generation

    def _follow_up(
        self,
        generation: Generation,
        name: str,
        changes: ChangeSet,
        files: list[SourceFile],
        layout: _Layout,
        timings: dict[str, float],
        phases: _Phases,
        config: dict[str, Any] | None = None,
    ) -> Generation:
        """Commit the generation after `generation`: its files hard-linked but those of the
        modality `name`, built again for `changes` (`follow`: the graph of an update committed
        with its graph behind, then the semantic backlog it left) under `config` (default:
        the writer's)."""
        label = follow.LABELS[name]
        started = time.perf_counter()
        views: list[Any] = []

        def failed(step: str, why: str) -> str:
            return (f"generation {generation.number} is committed, but the next one, for its "
                    f"{label}, could not {step} ({why}): the next update does it")  # fmt: skip

        with self._new_generation(views, failed) as (number, tmp):
            follow.link_generation(generation.path, tmp, {name, META_JSON, CHECKSUMS})
            ctx = self._context(tmp, layout, files, phases, views, generation.path, changes)
            if config is not None:
                ctx = dataclasses.replace(ctx, config=config)
            key = follow.TIMINGS[name]
            timings[f"{key}_link"] = time.perf_counter() - started
            started = time.perf_counter()
            phases.start(name, 1)
            status = _build_one(name, ctx)
            phases.end(name)
            timings[key] = time.perf_counter() - started
            self._close(views)
            manifest = {k: v for k, v in generation.manifest.items() if k not in _COMMIT_KEYS}
            manifest["modalities"] = {**manifest["modalities"], name: status}
            manifest[f"{key}_of"] = generation.number
            manifest["timings_s"] = {k: round(v, 4) for k, v in timings.items()}
            write_sealed(tmp / META_JSON, "meta", sealed.dumps_json(manifest))
            started = time.perf_counter()
            done = self.index.commit(number, tmp, manifest, previous=generation.path)
            timings[f"{key}_commit"] = time.perf_counter() - started
        return done

    def _context(
        self,
        tmp: Path,
        layout: _Layout,
        files: list[SourceFile],
        phases: _Phases,
        views: list[Any],
        previous: Path | None,
        changes: ChangeSet | None = None,
    ) -> BuildContext:
        """The modalities' context for the generation in `tmp`: lazy views of its segments
        (added to `views`, closed by the caller)."""
        chunks = SegmentChunks(tmp, layout.counts, layout.index, layout.delta)
        extraction = SegmentExtraction(tmp, layout.index)
        views += [chunks, extraction]
        return BuildContext(
            root=self.root, out_dir=tmp, files=files, chunks=chunks, extraction=extraction,
            config=self.config, cache_dir=self.index.cache_dir, progress=phases,
            previous_dir=previous, changes=changes,
        )  # fmt: skip

    @contextlib.contextmanager
    def _new_generation(
        self, views: list[Any], failed: Callable[[str, str], str]
    ) -> Iterator[tuple[int, Path]]:
        """A generation to fill: (its number, its temporary directory). On any failure the
        `views` opened on it are closed and it is removed (the last committed generation
        still serves); an OSError (disk full, I/O) becomes an `IndexWriteError` saying
        `failed(step, why)`, step "start" or "write"."""
        try:
            number, tmp = self.index.begin()
        except OSError as exc:
            why = f"{exc.strerror or exc}: {exc.filename or self.index.path}"
            raise IndexWriteError(failed("start", why)) from exc
        try:
            yield number, tmp
        except OSError as exc:
            self._close(views)
            self.index.abort(tmp)
            raise IndexWriteError(
                failed("write", f"{exc.strerror or exc}: {exc.filename or tmp}")
            ) from exc
        except BaseException:
            self._close(views)
            self.index.abort(tmp)
            raise

    def _source_files(self, state: RepoState) -> list[SourceFile]:
        """`state.source_files()`, reusing the previous update's objects for the files whose
        record is the same object (a hinted scan keeps the unchanged records)."""
        memo = self._files_memo
        if memo is None or len(memo[0]) != len(state.files) or memo[0].keys() != state.files.keys():
            files = state.source_files()
        else:
            old_records, old_files = memo
            files = []
            for f in old_files:
                record = state.files[f.path]
                if record is not old_records[f.path]:
                    f = SourceFile(f.path, record[0], record[1], f.language)
                files.append(f)
        self._files_memo = (state.files, files)
        return files

    @staticmethod
    def _close(views: list[Any]) -> None:
        for view in views:
            with contextlib.suppress(Exception):
                view.close()

    def _extract_cache(self) -> ExtractCache:
        return ExtractCache.open(self.index.cache_dir, self._extractor)

    def _extract(
        self, files: list[SourceFile], digests: dict[str, str], spill: _Spill
    ) -> dict[str, Any]:
        """Extract `files` (only the changed ones) into `spill`, encoded, one file at a time;
        returns the extraction report. The `extract` hook when given; otherwise structural
        extraction on all cores when available, line-window chunks when not."""
        if not files:
            return {"files": 0}
        languages = {f.path: f.language for f in files}
        put = functools.partial(_spill_file, spill, digests, languages)
        if self.extract is not None:
            extraction, chunks, report = self.extract(self.root, files, self.config,
                                                      self.progress)  # fmt: skip
            by_path: dict[str, list[Chunk]] = {}
            for c in chunks:
                by_path.setdefault(c.path, []).append(c)
            del chunks
            for f in files:
                put(f.path, extraction.pop(f.path, None), by_path.pop(f.path, []))
            return report
        try:
            from maguyva.extract import grammars  # noqa: F401 (is tree-sitter importable?)
            from maguyva.extract.driver import DEFAULT_BUDGET_S, caching, extract_files
        except ImportError:
            for source in files:
                try:
                    text = read_text(self.root, source.path)
                except OSError:
                    text = ""
                put(source.path, None, line_window_chunks(source.path, text) if text else [])
            return {"structural": "unavailable; line windows"}
        # Finished files go to the extraction cache as they complete, so a Ctrl-C or a crash
        # before the commit does not lose them; the next run takes them from there.
        from maguyva.modalities.structural.modality import ExtractionTally

        budget = float(self.config.get("structural_budget_s") or DEFAULT_BUDGET_S)
        tally = ExtractionTally(budget)
        seen: set[str] = set()
        with caching(self._extract_cache()) as counts:
            stream = extract_files(self.root, files, jobs=self.config.get("jobs"),
                                   budget_s=budget, progress=self.progress)  # fmt: skip
            with contextlib.closing(stream):
                for result in stream:
                    if result.path in seen or result.path not in digests:
                        continue
                    seen.add(result.path)
                    _spill_encoded(spill, digests, result)
                    tally.add(result)
        for f in files:  # a file the extractor did not report: indexed without chunks
            if f.path not in seen:
                put(f.path, None, [])
        return {**tally.report(), "extract_cached": counts["cached"]}

    def _write_segments(
        self,
        tmp: Path,
        files: list[SourceFile],
        prev: _Previous | None,
        dirty: set[int],
        spill: _Spill,
        phases: _Phases,
    ) -> tuple[dict[str, list[int]], list[int], int]:
        """Write the chunk and extraction segments, one at a time: a segment without a changed
        file is hard-linked from the previous generation; the others are assembled from the
        spilled new records and slices of the previous segment. Returns the segment index,
        the chunk count per segment and how many segments were written."""
        groups: dict[int, list[str]] = {n: [] for n in range(SEGMENTS)}
        for f in files:
            groups[segment_of(f.path)].append(f.path)
        _store.FILES.mkdir(tmp / CHUNKS_DIR)
        _store.FILES.mkdir(tmp / EXTRACT_DIR)
        index: dict[str, list[int]] = {}
        counts = [0] * SEGMENTS
        written = 0
        old = _RowFiles(prev.path) if prev is not None else None
        for n, paths in groups.items():
            names = (_segment_name(n, "chunks"), _segment_name(n, "extract"))
            if prev is not None and n not in dirty and all(p in prev.index for p in paths) \
                    and _link_all(prev.path, tmp, names):  # fmt: skip
                for p in paths:
                    index[p] = prev.index[p]
                    counts[n] += prev.index[p][2]
                phases("write", n + 1, SEGMENTS)
                continue
            new = spill.take(n)
            rows = []
            for p in paths:  # sorted, as `files` is
                if p in new:
                    chunk_bytes, fragment = new.pop(p)
                else:
                    assert old is not None
                    e = prev.index[p]  # type: ignore[union-attr]
                    chunk_bytes = old.sliced(p, e, "chunks")
                    fragment = old.sliced(p, e, "extract")
                rows.append((p, chunk_bytes, chunk_bytes.count(b"\n"), fragment))
            del new
            if old is not None:  # this segment's payloads are done with (deltas are kept)
                old.forget(names)
            counts[n] = _write_segment(tmp, n, self._extractor, rows, index)
            written += 1
            phases("write", n + 1, SEGMENTS)
        if old is not None:
            old.close()
        return index, counts, written

    def _write(
        self,
        tmp: Path,
        number: int,
        state: RepoState,
        files: list[SourceFile],
        digests: dict[str, str],
        redo: list[SourceFile],
        prev: _Previous | None,
        spill: _Spill,
        phases: _Phases,
    ) -> _Layout:
        """Write the generation's chunks, extraction and file state. A small update (the
        previous generation reusable, its delta small) hard-links the segments and
        `files.json` and writes only the re-extracted files' rows as a delta; otherwise (or
        once the delta has grown past `DELTA_MAX_*`) the segments holding a change or a delta
        row are rewritten, the others linked, and `files.json` written whole."""
        state_json = state.to_json()
        redone = {f.path for f in redo}
        if prev is not None:
            delta: dict[str, list[int] | None] = {}
            for p, e in prev.delta.items():
                if p in redone:
                    continue
                if p in digests:
                    delta[p] = e
                elif p in prev.base_index:
                    delta[p] = None
            for p in prev.index.keys() - digests.keys():
                if p in prev.base_index:
                    delta[p] = None
            live = {e[5] for e in delta.values() if e is not None}
            merge = len(live) + (1 if redo else 0) > DELTA_MAX_FILES
            live_bytes = sum(prev.delta_sizes.get(d, 0) for d in live) + spill.bytes
            fold = live_bytes > DELTA_MAX_BYTES or len(delta) + len(redone) > DELTA_MAX_PATHS
            if not fold:
                layout = self._write_delta(tmp, number, state_json, redone, prev, delta, live,
                                           merge, spill)  # fmt: skip
                if layout is not None:
                    return layout
        gone = (prev.index.keys() - digests.keys()) if prev is not None else set()
        dirty = {segment_of(p) for p in (*redone, *gone)}
        if prev is not None:
            dirty |= {segment_of(p) for p in prev.delta}
        index, counts, rewritten = self._write_segments(tmp, files, prev, dirty, spill, phases)
        write_sealed(tmp / FILES_JSON, "files", sealed.dumps_json({
            "state": state_json,
            "segments": {"version": SEGMENT_INDEX_VERSION, "files": index},
        }))  # fmt: skip
        return _Layout(index, counts, state_json, index, {}, {}, rewritten,
                       "segments" if prev is None or not prev.delta else "fold",
                       list(counts))  # fmt: skip

    def _write_delta(
        self,
        tmp: Path,
        number: int,
        state_json: dict[str, Any],
        redone: set[str],
        prev: _Previous,
        delta: dict[str, list[int] | None],
        live: set[int],
        merge: bool,
        spill: _Spill,
    ) -> _Layout | None:
        """The small-update layout (see `_write`); None when the previous generation's files
        cannot be linked (nothing is left behind then)."""
        _store.FILES.mkdir(tmp / CHUNKS_DIR)
        _store.FILES.mkdir(tmp / EXTRACT_DIR)
        names = [FILES_JSON] + [_segment_name(n, k) for n in range(SEGMENTS)
                                for k in ("chunks", "extract")]  # fmt: skip
        kept = set() if merge else live
        if redone or live:
            _store.FILES.mkdir(tmp / DELTA_DIR)
        names += [delta_file(d, k) for d in sorted(kept) for k in ("chunks", "extract")]
        if not _link_all(prev.path, tmp, tuple(names)):
            for sub in (CHUNKS_DIR, EXTRACT_DIR, DELTA_DIR):
                shutil.rmtree(tmp / sub, ignore_errors=True)
            return None
        new: dict[str, tuple[bytes, bytes]] = {}
        for n in range(SEGMENTS):
            new.update(spill.take(n))
        moved = sorted(redone | ({p for p, e in delta.items() if e is not None} if merge
                                 else set()))  # fmt: skip
        sizes = {d: prev.delta_sizes.get(d, 0) for d in kept}
        if moved:
            old = _RowFiles(prev.path)
            rows = []
            for p in moved:
                if p in new:
                    chunk_bytes, fragment = new.pop(p)
                else:
                    e = delta[p]
                    assert e is not None
                    chunk_bytes, fragment = old.sliced(p, e, "chunks"), old.sliced(p, e, "extract")
                rows.append((p, chunk_bytes, chunk_bytes.count(b"\n"), fragment))
            old.close()
            entries: dict[str, list[int]] = {}
            files = (delta_file(number, "chunks"), delta_file(number, "extract"))
            _write_rows(tmp, files, self._extractor, rows, entries, delta=number)
            delta.update(entries)
            sizes[number] = sum((tmp / f).stat().st_size for f in files)
        index = dict(prev.base_index)
        counts = list(prev.base_counts) if prev.base_counts else _counts(prev.base_index)
        for p, e in delta.items():
            n = segment_of(p)
            if p in prev.base_index:
                counts[n] -= prev.base_index[p][2]
            if e is None:
                index.pop(p, None)
            else:
                index[p] = e
                counts[n] += e[2]
        write_sealed(tmp / FILES_DELTA, DELTA_KIND, sealed.dumps_json({
            "version": 1,
            "state": state_delta(prev.base_state, state_json),
            "index": delta,
            "sizes": {str(d): b for d, b in sizes.items()},
        }))  # fmt: skip
        return _Layout(index, counts, prev.base_state, prev.base_index, delta, sizes, 0, "delta",
                       prev.base_counts or _counts(prev.base_index))  # fmt: skip

    def _summary(
        self,
        generation: Generation,
        state: RepoState,
        changes: ChangeSet,
        timings: dict[str, float],
        *,
        noop: bool = False,
        modalities: dict[str, dict[str, Any]] | None = None,
    ) -> BuildSummary:
        return BuildSummary(
            generation=generation.number,
            index_dir=str(self.index.path),
            files=len(state.files),
            chunks=int(generation.manifest.get("chunks", 0)),
            skipped=state.skip_counts(),
            timings_s=timings,
            modalities=modalities if modalities is not None
            else generation.manifest.get("modalities", {}),
            changes=changes.summary(),
            noop=noop,
            built_for=list(self.config.get("modalities") or BUILD_ORDER),
            not_started=list(self._not_started),
        )  # fmt: skip


def _spill_file(
    spill: _Spill,
    digests: dict[str, str],
    languages: dict[str, str | None],
    path: str,
    ex: FileExtraction | None,
    chunks: list[Chunk],
) -> None:
    """Encode one file's extraction and chunks into the spill (the objects are then dropped)."""
    if ex is None:
        ex = FileExtraction(path, languages.get(path))
    fragment = _dumps([digests[path], encode_extraction(ex)])
    spill.add(path, encode_chunks(chunks), fragment)


def _spill_encoded(spill: _Spill, digests: dict[str, str], result: Any) -> None:
    """`_spill_file` for an `extract.driver.FileResult`, from the bytes its worker encoded
    (the same bytes `_spill_file` makes from the objects, without decoding them here)."""
    chunk_bytes, extraction, _order = result.encoded
    fragment = b"[" + _dumps(digests[result.path]) + b"," + extraction + b"]"
    spill.add(result.path, chunk_bytes, fragment)


def build_index(
    root: Path,
    *,
    config: dict[str, Any] | None = None,
    progress: Progress | None = None,
    wait_for_lock: bool = False,
    rebuild: bool = False,
    extract: Extract | None = None,
) -> BuildSummary:
    """Bring the index of the repository at `root` up to date (incrementally; a no-op when
    nothing changed; from scratch with `rebuild`)."""
    return Indexer(root, config=config, progress=progress, extract=extract).update(
        wait_for_lock=wait_for_lock, rebuild=rebuild
    )


def _link_all(previous: Path | None, tmp: Path, names: tuple[str, ...]) -> bool:
    """Hard-link `names` from the previous generation; False (and nothing linked) if any fails."""
    assert previous is not None
    done = []
    try:
        for name in names:
            os.link(previous / name, tmp / name)
            done.append(tmp / name)
    except OSError:
        for path in done:
            path.unlink(missing_ok=True)
        return False
    return True


OVERLAP_MAX_CHANGES = 32
"""An update that changed at most this many files builds the semantic part in a thread while
the others build (see `_build_modalities`); a bigger one builds everything in order."""


_COMMIT_KEYS = ("format_version", "generation", "dir", "committed_at")  # set by the commit


def _build_modalities(
    ctx: BuildContext,
    config: dict[str, Any],
    timings: dict[str, float],
    phases: _Phases | None = None,
    fork: Callable[[], BuildContext] | None = None,
    skip: set[str] | frozenset[str] = frozenset(),
    overrides: dict[str, dict[str, Any]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Build each wanted modality in order; each is a progress phase (`(name, 0, n)` before,
    `(name, n, n)` after, whatever the modality reports in between).

    A small update (`OVERLAP_MAX_CHANGES`) with `fork` (a context with views of its own) builds
    the semantic part in a thread alongside the others: its time is mostly the embedding
    model, which releases the GIL, while the graph's patch is Python; on a 10k-file tree the
    two overlap for ~40 ms of a one-file edit. Progress calls are serialised (`_Phases.lock`);
    its result (or error: an OSError still aborts the generation) is taken in the usual order.

    `skip`: modalities left out (the caller fills their status: `follow`); `overrides`: the
    context fields a modality gets of its own (the graph's change set when it must build in
    full, the semantic configuration when its backlog follows)."""
    phases = phases or _Phases(ctx.progress)
    wanted = set(config.get("modalities") or BUILD_ORDER) - set(skip)
    overrides = overrides or {}

    def own(name: str, base: BuildContext) -> BuildContext:
        fields = overrides.get(name)
        return dataclasses.replace(base, **fields) if fields else base

    status: dict[str, dict[str, Any]] = {}
    background: dict[str, _Background] = {}
    if fork is not None and "semantic" in wanted and _small_update(ctx.changes):
        background["semantic"] = _Background("semantic", own("semantic", fork()), phases)
    try:
        for name in BUILD_ORDER:
            if name in skip:
                continue
            if name not in wanted:
                status[name] = {"built": False, "reason": "not selected in configuration"}
                continue
            if name in background:
                status[name], timings[name] = background.pop(name).result()
                continue
            started = time.perf_counter()
            phases.start(name, 1)
            status[name] = _build_one(name, own(name, ctx))
            timings[name] = time.perf_counter() - started
            phases.end(name)
    except KeyboardInterrupt:
        # Ctrl-C stops now: the thread (a daemon) is not waited for, its generation is never
        # committed and what it leaves in the temporary directory is cleaned on the next open
        background.clear()
        raise
    finally:
        # another error: wait, so that no build of this update still runs into the next one
        for task in background.values():
            task.thread.join()
    return status


def _small_update(changes: Any) -> bool:
    if changes is None or getattr(changes, "reason", "") or changes.empty:
        return False
    count = len(changes.added) + len(changes.modified) + len(changes.deleted)
    return count + len(changes.renamed) <= OVERLAP_MAX_CHANGES


def _build_one(name: str, ctx: BuildContext) -> dict[str, Any]:
    """One modality's build and its status; OSError (disk full, I/O) propagates."""
    try:
        return {"built": True, "report": load_modality(name).build(ctx)}
    except ModalityUnavailable as exc:
        return {"built": False, "reason": str(exc)}
    except MaguyvaError as exc:
        log.warning("%s: build failed: %s", name, exc)
        return {"built": False, "reason": f"build failed: {exc}"}
    except OSError:
        raise  # disk full or an I/O error: abort the generation, keep the previous one
    except Exception as exc:  # one modality's bug must not lose the others' work
        log.exception("%s: build failed", name)
        return {"built": False, "reason": f"build failed: {type(exc).__name__}: {exc}"}


class _Background:
    """One modality built in a daemon thread (a process that exits does not wait for it)."""

    def __init__(self, name: str, ctx: BuildContext, phases: _Phases) -> None:
        self.name = name
        self.started = time.perf_counter()
        self.took = 0.0
        self.status: dict[str, Any] | None = None
        self.error: BaseException | None = None

        def run() -> None:
            try:
                phases.start(name, 1)
                self.status = _build_one(name, ctx)
                phases.end(name)
            except BaseException as exc:  # handed to the caller by `result`
                self.error = exc
            finally:
                self.took = time.perf_counter() - self.started

        self.thread = threading.Thread(target=run, name=f"maguyva-build-{name}", daemon=True)
        self.thread.start()

    def result(self) -> tuple[dict[str, Any], float]:
        self.thread.join()
        if self.error is not None:
            raise self.error
        assert self.status is not None
        return self.status, self.took


__all__ = [
    "FORMAT_VERSION",
    "BuildSummary",
    "Extract",
    "Indexer",
    "SegmentChunks",
    "SegmentExtraction",
    "build_index",
]
