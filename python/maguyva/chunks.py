"""Chunking helpers shared by every modality: content-addressed ids and line-window chunks.

Syntax-aware chunking (one chunk per definition) is the structural modality's job; files with
no grammar, or when extraction fails, fall back to the line windows made here.
"""

from __future__ import annotations

import hashlib

from .model import Chunk

WINDOW_LINES = 60
WINDOW_OVERLAP = 10


def chunk_id(path: str, text: str, qualified_name: str | None = None) -> str:
    """A content-addressed id: stable while the chunk's path, name and text do not change,
    even when the chunk moves up or down the file."""
    digest = hashlib.blake2b(digest_size=10)
    digest.update(path.encode("utf-8", "surrogatepass"))
    digest.update(b"\0")
    digest.update((qualified_name or "").encode("utf-8", "surrogatepass"))
    digest.update(b"\0")
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def line_window_chunks(
    path: str, text: str, window: int = WINDOW_LINES, overlap: int = WINDOW_OVERLAP
) -> list[Chunk]:
    """Split a file into overlapping windows of lines (for files without a grammar)."""
    lines = text.splitlines()
    if not lines:
        return []
    step = max(1, window - overlap)
    chunks: list[Chunk] = []
    start = 0
    while True:
        end = min(len(lines), start + window)
        body = "\n".join(lines[start:end])
        chunks.append(
            Chunk(
                id=chunk_id(path, body, f"#{start}"),
                path=path,
                start_line=start + 1,
                end_line=end,
                kind="lines",
                header=f"{path}:{start + 1}-{end}",
                text=body,
            )
        )
        if end >= len(lines):
            return chunks
        start += step
