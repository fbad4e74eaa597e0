"""Lazy views of a generation's chunk and extraction segments (and delta files): what the
modalities read while a build runs and what an update slices rows from, one segment or one
file at a time, never the whole repository."""

from __future__ import annotations

import bisect
import contextlib
import json
import os
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from maguyva.errors import CorruptIndexError
from maguyva.extract.types import FileExtraction
from maguyva.model import Chunk
from maguyva.store import blocks
from maguyva.store.chunks import (
    CHUNKS_DIR,
    decode_chunk_lines,
    decode_chunks,
    delta_file,
    segment_of,
)
from maguyva.store.extraction import decode_extraction
from maguyva.support import sealed

EXTRACT_DIR = "extract"  # a generation's extraction segments: EXTRACT_DIR/NN.json


def payload_start(path: Path) -> int:
    """Offset of a sealed file's payload (the header's length)."""
    with open(path, "rb") as fh:
        head = fh.read(sealed.MAX_HEADER)
    end = head.find(b"\n")
    if end < 0:
        raise CorruptIndexError(f"{path}: not a Maguyva index file (bad or missing header)")
    return end + 1


def segment_name(n: int, kind: str) -> str:
    return f"{CHUNKS_DIR}/{n:02d}.jsonl" if kind == "chunks" else f"{EXTRACT_DIR}/{n:02d}.json"


def entry_name(path: str, entry: Sequence[int], kind: str) -> str:
    """The file (relative to the generation) holding an index entry's rows of `kind`
    ("chunks" or "extract"): a delta file for a 6-element entry, else the path's segment."""
    return delta_file(entry[5], kind) if len(entry) > 5 else segment_name(segment_of(path), kind)


def entry_slice(entry: Sequence[int], kind: str) -> tuple[int, int]:
    return (entry[0], entry[1]) if kind == "chunks" else (entry[3], entry[4])


class RowFiles:
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
            got = self._fds[name] = (os.open(path, os.O_RDONLY), payload_start(path))
        return got

    def row(self, path: str, entry: Sequence[int], kind: str) -> bytes:
        fd, start = self._fd(entry_name(path, entry, kind))
        offset, length = entry_slice(entry, kind)
        data = os.pread(fd, length, start + offset)
        if len(data) != length:
            raise CorruptIndexError(f"{self.gen_dir}: short {kind} record for {path}")
        return data

    def payload(self, name: str, kind: str) -> bytes:
        got = self._payloads.get(name)
        if got is None:
            got = self._payloads[name] = sealed.read_sealed(self.gen_dir / name, kind,
                                                            blocks.ROWS_VERSION)  # fmt: skip
        return got

    def forget(self, names: Iterable[str]) -> None:
        for name in names:
            self._payloads.pop(name, None)

    def sliced(self, path: str, entry: Sequence[int], kind: str) -> bytes:
        offset, length = entry_slice(entry, kind)
        return self.payload(entry_name(path, entry, kind), kind)[offset : offset + length]

    def close(self) -> None:
        for fd, _ in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()
        self._payloads.clear()


def _rows(payload: bytes) -> list[dict[str, Any]] | None:
    """Every row of a segment's chunk lines in one JSON parse (a row holds no raw newline);
    None when that fails (a damaged row, a blank line): the caller decodes line by line. One
    parse instead of one `json.loads` per row: on the Linux kernel's 1.2M line windows the
    per-call overhead was seconds, twice (text's spans, the static tier's texts)."""
    body = payload.rstrip(b"\n")
    if not body:
        return []
    try:
        rows = json.loads(b"[" + body.replace(b"\n", b",") + b"]")
    except ValueError:
        return None
    return rows if all(isinstance(r, dict) for r in rows) else None


def parse_rows(payload: bytes) -> list[dict[str, Any]] | None:
    """`_rows` for readers outside this module: every row of chunk lines in one parse."""
    return _rows(payload)


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
        self._files = RowFiles(self.gen_dir)
        self._decoded: dict[str, list[Chunk]] = {}

    def __len__(self) -> int:
        return self._starts[-1]

    def _payload(self, n: int, texts: bool = True) -> bytes:
        """Segment `n`'s chunk lines (decompressed) as a from-scratch build would store them
        (verified); without the texts of spans unless `texts` (`blocks.raw`)."""
        where = self.gen_dir / segment_name(n, "chunks")
        if n not in self._dirty or self._index is None:
            payload = sealed.read_sealed(where, "chunks", blocks.ROWS_VERSION)
            return blocks.raw(payload, where, texts)
        paths = sorted(p for p in self._index if segment_of(p) == n)
        return b"".join(blocks.raw(self._files.sliced(p, self._index[p], "chunks"), where, texts)
                        for p in paths)  # fmt: skip

    def stored(self, n: int) -> tuple[Path, bytes] | None:
        """Segment `n`'s file and its verified payload as stored (blocks: a span's text left
        out), or None when the segment is assembled from a delta's rows (an update's): for a
        reader that cuts the spans' texts itself (`semantic.static_rows`)."""
        if n in self._dirty and self._index is not None:
            return None
        where = self.gen_dir / segment_name(n, "chunks")
        return where, sealed.read_sealed(where, "chunks", blocks.ROWS_VERSION)

    def segment(self, n: int) -> list[Chunk]:
        """The chunks of segment `n`, decoded (verified against the file's checksum)."""
        if self.counts[n] == 0:
            return []
        where = self.gen_dir / segment_name(n, "chunks")
        if n not in self._dirty:
            payload = sealed.read_sealed(where, "chunks", blocks.ROWS_VERSION)
        else:
            payload = self._payload(n)
        rows = _rows(blocks.raw(payload, where))
        if rows is None:  # the per-line decoder says which row is bad
            return decode_chunks(where) if n not in self._dirty else decode_chunk_lines(
                payload, where)  # fmt: skip
        try:
            return [Chunk(**row) for row in rows]
        except TypeError:
            return decode_chunk_lines(payload, where)

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
                    got = decode_chunk_lines(rows, self.gen_dir / entry_name(p, entry, "chunks"))
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
            payload = self._payload(n, texts=False)
            rows = _rows(payload)
            if rows is None:
                rows = (json.loads(line) for line in payload.split(b"\n") if line)
            for c in rows:
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
        self._files = RowFiles(self.gen_dir)
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
            _digest, row = json.loads(blocks.raw(data, self.gen_dir / entry_name(path, entry,
                                                                               "extract")))  # fmt: skip
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
