"""The chunks of one index generation, persisted once and shared by every modality.

Stored as JSON Lines (`chunks.jsonl`, sealed: see sealed.py) in the generation directory. Loading builds a per-path
interval list so that any (path, line) maps to its enclosing chunk: the engine uses that to give
every retriever's hit the same key, so that agreement between retrievers is fused.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import asdict
from pathlib import Path

from .errors import CorruptIndexError
from .model import Chunk
from .sealed import read_sealed

FILE_NAME = "chunks.jsonl"


def write_chunks(gen_dir: Path, chunks: list[Chunk]) -> None:
    """Write all chunks of a generation (sorted by path and line for locality), sealed."""
    from .store import write_sealed

    ordered = sorted(chunks, key=lambda c: (c.path, c.start_line, c.end_line, c.id))
    payload = "".join(json.dumps(asdict(c), ensure_ascii=False) + "\n" for c in ordered)
    write_sealed(gen_dir / FILE_NAME, "chunks", payload.encode())


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
        """Load and verify (header, size, checksum) a generation's chunks."""
        segments = gen_dir / "chunks"  # segmented by the indexer (see indexer.SEGMENTS)
        paths = sorted(segments.glob("*.jsonl")) if segments.is_dir() else [gen_dir / FILE_NAME]
        chunks: list[Chunk] = []
        for path in paths:
            if not path.exists():
                continue
            payload = read_sealed(path, "chunks")
            for number, line in enumerate(payload.split(b"\n"), start=1):
                if not line:
                    continue
                try:
                    chunks.append(Chunk(**json.loads(line)))
                except (ValueError, TypeError) as exc:
                    raise CorruptIndexError(f"{path}:{number}: bad chunk record") from exc
        return cls(chunks)

    def __len__(self) -> int:
        return len(self._by_id)

    def get(self, chunk_id: str) -> Chunk | None:
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
