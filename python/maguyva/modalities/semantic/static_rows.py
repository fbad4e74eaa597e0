"""The static rows of every chunk of a generation (`static_part.build_only`), a batch at a time:
no chunk's text outlives its batch, and each row is written at its place as it is computed.

Why: on the Linux kernel (1.2M line windows) `build_only` held every window's text, the
float32 rows of every batch, their concatenation and its float16 copy at once: stage 1's peak
was 8.3 GiB. The rows keep the paths' order (a Hamming search breaks ties by row), so a
batch's rows go to their final places: the codes (48 bytes a row) in memory, the floats (768
bytes a row, float16) with `pwrite` into the `.npy` file, the same bytes `np.save` writes.

A line window's text is never built in Python: its span block (`store.blocks`) says which
lines it is, and the file's bytes, read once, go to Rust with the windows' headers
(`embed.static.static_embed_spans`, the files read there on every core, confined to the
root as `repo.reader` reads them). A window Rust leaves out (not ASCII, a `\\r`, bytes
changed since they were cut) and a row stored with its text take the general path
(`blocks.raw`, `texts.embed_text`), as does a generation whose segments are not all blocks.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from maguyva.errors import CorruptIndexError
from maguyva.modalities.semantic.embed import ProviderIdentity
from maguyva.modalities.semantic.embed.base import Embeddings
from maguyva.modalities.semantic.embed.static import static_embed, static_embed_spans
from maguyva.modalities.semantic.texts import embed_text
from maguyva.model import Chunk
from maguyva.store import blocks
from maguyva.store.chunks import decode_chunk_lines
from maguyva.store.views import SegmentChunks, parse_rows

BATCH = 8192
"""Chunks per static call: a batch's texts (or its files' bytes) are all that is held."""

Span = tuple[str, int, int, str]  # (path, start line, end line, chunk id)


class RowSink:
    """The static part's codes and floats of `n` rows, filled in any order: codes in memory,
    floats (float16) written straight into `floats_path`, a `.npy` file of shape (n, dim)."""

    def __init__(self, codes_path: Path, floats_path: Path, n: int, width: int, dim: int) -> None:
        self.codes_path = codes_path
        self.codes = np.zeros((n, width), np.uint8)
        self.row_bytes = dim * 2
        header = {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float16)),
                  "fortran_order": False, "shape": (n, dim)}  # fmt: skip
        with open(floats_path, "wb") as fh:
            np.lib.format.write_array_header_1_0(fh, header)
            self.offset = fh.tell()
            fh.truncate(self.offset + n * self.row_bytes)
        self.fd = os.open(floats_path, os.O_WRONLY)
        self.filled = 0

    def put(self, positions: list[int], got: Embeddings) -> None:
        """Rows `positions` get `got`'s codes and floats (runs of consecutive rows: one write)."""
        if not positions:
            return
        where = np.asarray(positions, np.int64)
        self.codes[where] = got.codes
        assert got.floats is not None
        order = np.argsort(where, kind="stable")
        where, floats = where[order], got.floats[order].astype(np.float16)
        cuts = [0, *(np.flatnonzero(np.diff(where) != 1) + 1).tolist(), len(where)]
        for a, b in itertools.pairwise(cuts):
            os.pwrite(self.fd, floats[a:b].tobytes(), self.offset + int(where[a]) * self.row_bytes)
        self.filled += len(positions)

    def close(self) -> None:
        os.close(self.fd)
        np.save(self.codes_path, self.codes)


@dataclass
class _Batch:
    """Chunks waiting for one static call: spans of file contents, and texts."""

    paths: list[str] = field(default_factory=list)
    crcs: list[int] = field(default_factory=list)
    spans: list[tuple[int, int, int]] = field(default_factory=list)
    heads: list[str] = field(default_factory=list)
    span_rows: list[tuple[int, int]] = field(default_factory=list)  # (file in `files`, row)
    span_at: list[int] = field(default_factory=list)
    files: list[tuple[bytes, Path]] = field(default_factory=list)  # the file's block, segment
    texts: list[str] = field(default_factory=list)
    text_at: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.spans) + len(self.texts)


@dataclass
class StaticRows:
    """What `build` made: each path's chunk ids in row order, and the rows embedded."""

    by_path: list[tuple[str, list[str]]]
    static: int


def build(chunks: Any, identity: ProviderIdentity, root: Path, sink_for: Callable[[int], RowSink],
          progress: Callable[[str, int, int], None]) -> StaticRows:  # fmt: skip
    """The static rows of every chunk of `chunks` (a generation's view, or any sequence), in
    the paths' order (within a path by start line, end line, id), written to the sink that
    `sink_for(rows)` opens."""
    limit = (identity.max_tokens or 8192) * 8  # `texts.embed_text`'s cut
    counts = _block_counts(chunks)
    if counts is None:
        return _general(chunks, identity, sink_for, progress)
    offsets, at = {}, 0
    for path in sorted(counts):
        offsets[path] = at
        at += counts[path]
    sink = sink_for(at)
    by_path: dict[str, list[str]] = {}
    batch = _Batch()
    try:
        for n in range(len(chunks.counts)):
            if not chunks.counts[n]:
                continue
            stored = chunks.stored(n)
            assert stored is not None  # `_block_counts` checked
            where, payload = stored
            for path, count, start, size in blocks.blocks(payload, where):
                data = payload[start : start + size]
                keys = _add_file(batch, path, count, data, where, offsets[path], identity)
                by_path[path] = keys
                if len(batch) >= BATCH:
                    _flush(batch, sink, limit, identity, root)
                    batch = _Batch()
                    progress("static", sink.filled, at)
        _flush(batch, sink, limit, identity, root)
        progress("static", sink.filled, at)
    finally:
        sink.close()
    if sink.filled != at:
        raise CorruptIndexError(f"{chunks.gen_dir}: {sink.filled} static rows for {at} chunks")
    return StaticRows(sorted(by_path.items()), at)


def _block_counts(chunks: Any) -> dict[str, int] | None:
    """Each path's row count from the block headers of every segment (nothing decompressed),
    or None when `chunks` is not a generation's view of block segments (the general path)."""
    if not isinstance(chunks, SegmentChunks):
        return None
    counts: dict[str, int] = {}
    for n in range(len(chunks.counts)):
        if not chunks.counts[n]:
            continue
        stored = chunks.stored(n)
        if stored is None or not blocks.is_block(stored[1]):
            return None
        for path, count, _at, _size in blocks.blocks(stored[1], stored[0]):
            counts[path] = counts.get(path, 0) + count
    return counts if sum(counts.values()) == len(chunks) else None


def _add_file(batch: _Batch, path: str, count: int, data: bytes, where: Path, first: int,
              identity: ProviderIdentity) -> list[str]:  # fmt: skip
    """One file's rows into `batch` (rows `first`.. in the static part); returns their ids in
    row order."""
    body, which, crc = blocks.parts(data, where)
    rows = parse_rows(body)
    if rows is None or len(rows) != count or not all("id" in r for r in rows):
        rows = [_row(c) for c in decode_chunk_lines(blocks.raw(data, where), where)]
    order = sorted(range(len(rows)), key=lambda r: (rows[r]["start_line"], rows[r]["end_line"],
                                                    rows[r]["id"]))  # fmt: skip
    rank = {r: first + i for i, r in enumerate(order)}
    file = -1
    for r, row in enumerate(rows):
        if r not in which:
            batch.texts.append(embed_text(Chunk(**row), identity))
            batch.text_at.append(rank[r])
            continue
        if file < 0:
            file = len(batch.paths)
            batch.paths.append(path if _plain(path) else "")  # "": cut the general way
            batch.crcs.append(crc)
            batch.files.append((data, where))
        batch.spans.append((file, row["start_line"], row["end_line"]))
        batch.heads.append(row.get("header") or "")
        batch.span_rows.append((file, r))
        batch.span_at.append(rank[r])
    return [rows[r]["id"] for r in order]


def _row(chunk: Chunk) -> dict[str, Any]:
    return {f: getattr(chunk, f) for f in Chunk.__dataclass_fields__}


def _plain(path: str) -> bool:
    """Can the path go to Rust as a string (not one with an undecodable byte escaped)?"""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _flush(batch: _Batch, sink: RowSink, limit: int, identity: ProviderIdentity,
           root: Path) -> None:  # fmt: skip
    if batch.spans:

        def texts_of(left: list[int]) -> list[str]:
            filled: dict[int, list[dict[str, Any]]] = {}
            out = []
            for i in left:
                file, r = batch.span_rows[i]
                if file not in filled:
                    data, where = batch.files[file]
                    raw = blocks.raw(data, where)
                    filled[file] = parse_rows(raw) or [
                        _row(c) for c in decode_chunk_lines(raw, where)]  # fmt: skip
                out.append(embed_text(Chunk(**filled[file][r]), identity))
            return out

        got = static_embed_spans(str(root), batch.paths, batch.crcs, batch.spans, batch.heads,
                                 limit, texts_of)  # fmt: skip
        sink.put(batch.span_at, got)
    if batch.texts:
        sink.put(batch.text_at, static_embed(batch.texts))


def _general(chunks: Iterable[Chunk], identity: ProviderIdentity,
             sink_for: Callable[[int], RowSink],
             progress: Callable[[str, int, int], None]) -> StaticRows:  # fmt: skip
    """`build` for any sequence of chunks: their spans first (ids and lines, no text), then
    the chunks again, a batch of texts at a time."""
    spans: Iterator[Span] = (chunks.spans() if isinstance(chunks, SegmentChunks)
                             else ((c.path, c.start_line, c.end_line, c.id) for c in chunks))  # fmt: skip
    found: dict[str, list[tuple[int, int, str]]] = {}
    for path, start, end, key in spans:
        found.setdefault(path, []).append((start, end, key))
    by_path = [(path, [key for *_, key in sorted(keys)]) for path, keys in sorted(found.items())]
    del found
    at = {key: i for i, key in enumerate(key for _, keys in by_path for key in keys)}
    total = len(at)
    sink = sink_for(total)
    texts: list[str] = []
    where: list[int] = []
    try:
        for chunk in chunks:
            texts.append(embed_text(chunk, identity))
            where.append(at[chunk.id])
            if len(texts) >= BATCH:
                sink.put(where, static_embed(texts))
                texts, where = [], []
                progress("static", sink.filled, total)
        if texts:
            sink.put(where, static_embed(texts))
        progress("static", sink.filled, total)
    finally:
        sink.close()
    return StaticRows(by_path, total)
