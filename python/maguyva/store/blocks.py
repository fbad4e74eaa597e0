"""One file's stored rows (its chunk lines or its extraction record) as a compressed block.

Segment and delta files of format 2 (`ROWS_VERSION`, the sealed header's version) are a
concatenation of blocks, one per file, in path order:

    \\x00  u32 compressed length  u32 raw length  u32 row count  u16 path length  path  zstd frame

(little-endian), or, for a file whose chunks are mostly spans of its content
(`store.spans`, format 3):

    \x01  u32 compressed length  u32 raw length  u32 row count  u16 path length  u32 CRC-32
    of the content the spans were cut from  path  zstd frame of (one JSON line of spans, then
    the rows, the spans' without their text)

The path and the count are readable without decompressing, so a reader
indexes a segment by walking the block headers. The sealed file's CRC-32 covers the whole
payload (checked when a segment is first opened, as for format 1); the frame is checked by
the decoder and its decoded length against the header. Format 1 stored the same rows
uncompressed (JSON Lines for chunks, a JSON object for extraction): a JSON row never starts
with a NUL byte, so a row is read either way (`raw`) and a generation written before format
2 still opens; a build that rewrites a segment stores every row of it as a block again.

`raw` gives a span block's rows with their texts put back (`spans.fill`), the bytes the
extractor wrote, so every reader of rows is unchanged by format 3.

zstd (the Rust core's, `_core.zstd_compress`, GIL released) at `LEVEL`: the sizes and read
latencies against format 1 and against zlib are in docs/BENCHMARKS.md (index size).
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Container, Iterator
from pathlib import Path

from maguyva import _core
from maguyva.errors import CorruptIndexError
from maguyva.store import spans
from maguyva.support import sealed

ROWS_VERSION = 4
"""The sealed version of chunk and extraction segments (and delta files) made of blocks (4:
frames written with the built-in dictionary of their kind, `DICTIONARIES`; 3: without; 2: no
span blocks; all still read: a frame names its dictionary)."""
DICTIONARIES = frozenset({"chunks", "extract"})
"""The kinds of rows with a built-in zstd dictionary (`_core.zstd_compress`, named as the kind): a
file's rows are a few KB, too few for a frame of their own to learn what every file's rows share
(requests: chunk blocks 57 to 48 KB, extraction 91 to 86 KB)."""
LEVEL = 6
_HEAD = struct.Struct("<IIIH")
_CRC = struct.Struct("<I")
MARK = 0
SPAN_MARK = 1


def is_block(data: bytes) -> bool:
    return bool(data) and data[0] in (MARK, SPAN_MARK)


def block(path: str, raw: bytes, count: int, kind: str | None = None) -> bytes:
    """`raw` (one file's rows, `count` of them, of `kind`: its dictionary) as a block; a block
    is returned as it is, and no rows as no bytes (a file without chunks has no block, as it
    had no lines)."""
    if not raw or is_block(raw):
        return raw
    name = path.encode("utf-8", "surrogateescape")
    data = _core.zstd_compress(raw, LEVEL, kind if kind in DICTIONARIES else None)
    return b"\x00" + _HEAD.pack(len(data), len(raw), count, len(name)) + name + data


def span_block(path: str, raw: bytes, count: int, content: bytes) -> bytes:
    """`block` of one file's chunk rows with the texts that are spans of `content` (the
    file's bytes) left out (`spans.strip`); a plain block when none is."""
    if not raw or is_block(raw):
        return raw
    stripped = spans.strip(raw, content)
    if stripped is None:
        return block(path, raw, count, "chunks")
    rows, which = stripped
    return span_block_of(path, rows, which, count, content)


def span_block_of(path: str, rows: bytes, which: list[list[int]], count: int,
                  content: bytes) -> bytes:  # fmt: skip
    """The span block of rows already stripped of their spans' texts (`spans.strip`'s
    result, or rows made without them: `build.windows`), `which` the spans."""
    payload = json.dumps(which, separators=(",", ":")).encode() + b"\n" + rows
    name = path.encode("utf-8", "surrogateescape")
    data = _core.zstd_compress(payload, LEVEL, "chunks")
    return (b"\x01" + _HEAD.pack(len(data), len(payload), count, len(name))
            + _CRC.pack(zlib.crc32(content)) + name + data)  # fmt: skip


def _head(data: bytes, at: int, where: Path | str) -> tuple[int, int, int, int, int]:
    """(compressed length, raw length, count, path start, data start) of the block at `at`."""
    end = at + 1 + _HEAD.size
    if data[at] not in (MARK, SPAN_MARK) or end > len(data):
        raise CorruptIndexError(f"{where}: bad row block at byte {at}")
    clen, rlen, count, plen = _HEAD.unpack_from(data, at + 1)
    if data[at] == SPAN_MARK:
        end += _CRC.size
    if end + plen + clen > len(data):
        raise CorruptIndexError(f"{where}: row block at byte {at} runs past the end")
    return clen, rlen, count, end, end + plen


def blocks(data: bytes, where: Path | str) -> Iterator[tuple[str, int, int, int]]:
    """(path, count, offset, length) of every block of a payload made of blocks."""
    at = 0
    while at < len(data):
        clen, _rlen, count, name_at, data_at = _head(data, at, where)
        path = data[name_at:data_at].decode("utf-8", "surrogateescape")
        yield path, count, at, data_at + clen - at
        at = data_at + clen


def raw(data: bytes, where: Path | str, texts: bool = True) -> bytes:
    """The rows stored in `data` (blocks, one or more, or format 1's raw rows), decompressed
    and checked; with `texts` False, the rows of a span block stay without their spans'
    texts (for a reader of lines and ids: nothing is read from the file's content)."""
    if not is_block(data):
        return data
    out = []
    at = 0
    while at < len(data):
        clen, rlen, _count, name_at, data_at = _head(data, at, where)
        try:
            rows = _core.zstd_decompress(data[data_at : data_at + clen], rlen)
        except ValueError as exc:
            raise CorruptIndexError(f"{where}: damaged row block at byte {at} ({exc})") from exc
        if data[at] == SPAN_MARK:
            rows = (_filled(data, at, name_at, data_at, rows, where) if texts
                    else rows.partition(b"\n")[2])  # fmt: skip
        out.append(rows)
        at = data_at + clen
    return b"".join(out)


def _filled(data: bytes, at: int, name_at: int, data_at: int, payload: bytes,
            where: Path | str) -> bytes:  # fmt: skip
    """A span block's decompressed payload as the rows with every text (`spans.fill`)."""
    (crc,) = _CRC.unpack_from(data, name_at - _CRC.size)
    path = data[name_at:data_at].decode("utf-8", "surrogateescape")
    head, _, rows = payload.partition(b"\n")
    try:
        which = json.loads(head)
    except ValueError as exc:
        raise CorruptIndexError(f"{where}: damaged span list in the block at byte {at}") from exc
    ranges = [(start, end) for _n, start, end in which]
    return spans.fill(rows, which, spans.texts_of(spans.generation_of(where), path, crc, ranges))


def parts(data: bytes, where: Path | str) -> tuple[bytes, dict[int, tuple[int, int]], int]:
    """One file's rows (`data`: its block, or format 1's rows) decompressed, without the
    texts of its spans, with the spans (row number -> (start line, end line)) and the CRC-32
    of the content they are cut from (`spans.fill_row` puts one text back): what a reader of
    one row needs, without filling the others."""
    if not data or data[0] != SPAN_MARK:
        return raw(data, where), {}, 0
    clen, rlen, _count, name_at, data_at = _head(data, 0, where)
    if data_at + clen != len(data):
        return raw(data, where), {}, 0
    try:
        payload = _core.zstd_decompress(data[data_at : data_at + clen], rlen)
        head, _, rows = payload.partition(b"\n")
        which = {int(n): (int(s), int(e)) for n, s, e in json.loads(head)}
    except (ValueError, TypeError) as exc:
        raise CorruptIndexError(f"{where}: damaged row block at byte 0 ({exc})") from exc
    return rows, which, _CRC.unpack_from(data, name_at - _CRC.size)[0]


def record_line(rows: bytes, chunk_id: str) -> tuple[bytes, int] | None:
    """The JSON line of the record with id `chunk_id` among one file's `rows` (records are
    `asdict` dumps: `id` first) and its row number, or None; were an id written twice, the
    last, as `store.chunks.ChunkStore.get` keeps it."""
    needle = b'{"id": ' + json.dumps(chunk_id, ensure_ascii=False).encode() + b","
    at = rows.rfind(needle)
    while at > 0 and rows[at - 1 : at] != b"\n":  # only at a record's start
        at = rows.rfind(needle, 0, at)
    if at < 0:
        return None
    end = rows.find(b"\n", at)
    return rows[at : end if end >= 0 else len(rows)], rows.count(b"\n", 0, at)


def rows_of(payload: bytes, where: Path | str, paths: Container[str], texts: bool = True) -> bytes:
    """The rows of `paths` from a payload made of blocks, decompressed (only their blocks);
    a format 1 payload is returned whole."""
    if not is_block(payload):
        return payload
    return b"".join(raw(payload[at : at + size], where, texts)
                    for p, _n, at, size in blocks(payload, where) if p in paths)  # fmt: skip


def count(data: bytes) -> int:
    """How many rows `data` (one file's rows, a block or raw chunk lines) holds."""
    if is_block(data):
        return int(_HEAD.unpack_from(data, 1)[2])
    return data.count(b"\n")


def older_format(gen_dir: Path, name: str) -> bool:
    """Is the generation's segment file `name` (relative) of format 1, rows uncompressed?
    (An update then rewrites every segment, once, instead of linking them.) False when the
    file is missing or unreadable: the update's own checks deal with that."""
    try:
        with open(gen_dir / name, "rb") as fh:
            head = fh.read(sealed.MAX_HEADER)
        return int(head.split(b" ", 3)[2]) < 2  # format 2's blocks are copied as they are
    except (OSError, ValueError, IndexError):
        return False


def check_file(path: Path, kind: str) -> None:
    """fsck of one chunk or extraction segment (or delta file): the sealed checksum, then
    every block decompressed and every row parsed as JSON; raises `CorruptIndexError`."""
    payload = sealed.read_sealed(path, kind, ROWS_VERSION)
    if not is_block(payload):  # format 1: JSON Lines, or one JSON object
        parts = payload.split(b"\n") if kind == "chunks" else [payload]
    else:
        parts = []
        for _path, n, at, length in blocks(payload, path):
            rows = raw(payload[at : at + length], path, texts=False)
            lines = rows.split(b"\n")[:-1] if kind == "chunks" else [rows]
            if kind == "chunks" and len(lines) != n:
                raise CorruptIndexError(f"{path}: a row block holds {len(lines)} rows, not {n}")
            parts += lines
    for number, part in enumerate(parts, start=1):
        if part:
            try:
                json.loads(part)
            except ValueError as exc:
                raise CorruptIndexError(f"{path}: row {number} is not JSON ({exc})") from exc
