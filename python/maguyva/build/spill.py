"""Spilling extraction results to disk as they arrive: each file's chunks and extraction are
encoded at once and appended to its segment's spill file, so that memory is bounded by a
segment (the memory budget, `build.memory`), not by the repository."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from maguyva.errors import MaguyvaError
from maguyva.extract.types import FileExtraction
from maguyva.model import Chunk
from maguyva.repo.reader import read_bytes
from maguyva.store import blocks, spans
from maguyva.store.chunks import segment_of
from maguyva.store.extraction import encode_chunks, encode_extraction
from maguyva.store.rows import canonical_json

SPILL_DIR = "spill"  # inside the unfinished generation: encoded records while extracting

RECORD = struct.Struct("<III")


class Spill:
    """Per-segment append-only files of encoded file records, filled while extraction runs so
    that no file's extraction or chunks stay in memory; `take(n)` reads one segment's back."""

    def __init__(self, directory: Path, root: Path | None = None) -> None:
        """`root`: the repository, when the generation (`directory`'s parent) gets a text
        index: each file's chunk rows are then stored as spans of its bytes where they are
        (`store.spans`, read once more here), and the views of the build read them there."""
        self.dir = directory
        self.root = root
        directory.mkdir(parents=True, exist_ok=True)
        if root is not None:
            spans.register_root(directory.parent, root)
        self._open: dict[int, Any] = {}
        self.files = 0
        self.bytes = 0

    def add(self, path: str, chunk_bytes: bytes, fragment: bytes) -> None:
        n = segment_of(path)
        fh = self._open.get(n)
        if fh is None:
            fh = self._open[n] = open(self.dir / f"{n:02d}", "ab")  # noqa: SIM115 (closed in close)
        if self.root is not None and chunk_bytes and not blocks.is_block(chunk_bytes):
            try:
                content = read_bytes(self.root, path)
            except (OSError, MaguyvaError):
                content = None
            if content is not None:
                chunk_bytes = blocks.span_block(path, chunk_bytes, chunk_bytes.count(b"\n"),
                                                content)  # fmt: skip
        key = path.encode("utf-8", "surrogateescape")
        fh.write(RECORD.pack(len(key), len(chunk_bytes), len(fragment)))
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
            lk, lc, le = RECORD.unpack_from(data, pos)
            pos += RECORD.size
            key = data[pos : pos + lk].decode("utf-8", "surrogateescape")
            pos += lk
            out[key] = (data[pos : pos + lc], data[pos + lc : pos + lc + le])
            pos += lc + le
        path.unlink()
        return out


def spill_file(
    spill: Spill,
    digests: dict[str, str],
    languages: dict[str, str | None],
    path: str,
    ex: FileExtraction | None,
    chunks: list[Chunk],
) -> None:
    """Encode one file's extraction and chunks into the spill (the objects are then dropped)."""
    if ex is None:
        ex = FileExtraction(path, languages.get(path))
    fragment = canonical_json([digests[path], encode_extraction(ex)])
    spill.add(path, encode_chunks(chunks), fragment)


def spill_encoded(spill: Spill, digests: dict[str, str], result: Any) -> None:
    """`spill_file` for an `extract.driver.FileResult`, from the bytes its worker encoded
    (the same bytes `spill_file` makes from the objects, without decoding them here)."""
    chunk_bytes, extraction, _order = result.encoded
    fragment = b"[" + canonical_json(digests[result.path]) + b"," + extraction + b"]"
    spill.add(result.path, chunk_bytes, fragment)
