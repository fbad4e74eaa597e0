"""The chunks of one index generation, persisted once and shared by every modality.

Stored as JSON Lines (`chunks.jsonl`, sealed: see sealed.py) in the generation directory. Loading builds a per-path
interval list so that any (path, line) maps to its enclosing chunk: the engine uses that to give
every retriever's hit the same key, so that agreement between retrievers is fused.
"""

from __future__ import annotations

import bisect
import json
import threading
import zlib
from dataclasses import asdict
from pathlib import Path

from .errors import CorruptIndexError
from .model import Chunk
from .sealed import read_sealed

FILE_NAME = "chunks.jsonl"
CHUNKS_DIR = "chunks"  # the indexer writes a generation's chunks as CHUNKS_DIR/NN.jsonl
SEGMENTS = 64
"""Chunks and extraction are split into segments by a hash of the path (`segment_of`): an
update rewrites the segments holding changed files and hard-links the others from the previous
generation (generations are immutable, so sharing inodes is safe)."""


def write_chunks(gen_dir: Path, chunks: list[Chunk]) -> None:
    """Write all chunks of a generation (sorted by path and line for locality), sealed."""
    from .store import write_sealed

    ordered = sorted(chunks, key=lambda c: (c.path, c.start_line, c.end_line, c.id))
    payload = "".join(json.dumps(asdict(c), ensure_ascii=False) + "\n" for c in ordered)
    write_sealed(gen_dir / FILE_NAME, "chunks", payload.encode())


def segment_of(path: str) -> int:
    """The segment (of `SEGMENTS`) that holds a path's chunks and extraction."""
    return zlib.crc32(path.encode("utf-8", "surrogateescape")) % SEGMENTS


def decode_chunks(path: Path) -> list[Chunk]:
    """One sealed chunk file, verified (header, size, checksum) and decoded."""
    payload = read_sealed(path, "chunks")
    chunks: list[Chunk] = []
    for number, line in enumerate(payload.split(b"\n"), start=1):
        if not line:
            continue
        try:
            chunks.append(Chunk(**json.loads(line)))
        except (ValueError, TypeError) as exc:
            raise CorruptIndexError(f"{path}:{number}: bad chunk record") from exc
    return chunks


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
        segments = gen_dir / CHUNKS_DIR
        paths = sorted(segments.glob("*.jsonl")) if segments.is_dir() else [gen_dir / FILE_NAME]
        chunks: list[Chunk] = []
        for path in paths:
            if path.exists():
                chunks.extend(decode_chunks(path))
        return cls(chunks)

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

    def by_path(self, path: str) -> list[Chunk]:
        return self._by_path.get(path, [])

    def paths(self) -> list[str]:
        return list(self._by_path)

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


class SegmentedChunkStore:
    """`ChunkStore`'s interface over the indexer's 64 segment files, each decoded (and its
    checksum verified) on first use and kept. Thread-safe. `get` without a path and `paths`
    and `len` need every segment; the engine passes the path it already knows."""

    def __init__(self, gen_dir: Path) -> None:
        self.gen_dir = gen_dir
        self._segments: dict[int, ChunkStore] = {}
        self._lock = threading.Lock()

    def _segment(self, n: int) -> ChunkStore:
        with self._lock:
            store = self._segments.get(n)
            if store is None:
                path = self.gen_dir / CHUNKS_DIR / f"{n:02d}.jsonl"
                store = ChunkStore(decode_chunks(path) if path.exists() else [])
                self._segments[n] = store
            return store

    def _all(self) -> list[ChunkStore]:
        return [self._segment(n) for n in range(SEGMENTS)]

    def __len__(self) -> int:
        return sum(len(s) for s in self._all())

    def get(self, chunk_id: str, path: str | None = None) -> Chunk | None:
        if path is not None:
            return self._segment(segment_of(path)).get(chunk_id)
        for store in self._all():
            if (chunk := store.get(chunk_id)) is not None:
                return chunk
        return None

    def by_path(self, path: str) -> list[Chunk]:
        return self._segment(segment_of(path)).by_path(path)

    def paths(self) -> list[str]:
        return sorted(p for store in self._all() for p in store.paths())

    def enclosing(self, path: str, line: int) -> Chunk | None:
        return self._segment(segment_of(path)).enclosing(path, line)
