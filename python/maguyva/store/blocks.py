"""One file's stored rows (its chunk lines or its extraction record) as a compressed block.

Segment and delta files of format 2 (`ROWS_VERSION`, the sealed header's version) are a
concatenation of blocks, one per file, in path order:

    \\x00  u32 compressed length  u32 raw length  u32 row count  u16 path length  path  zstd frame

(little-endian). The path and the count are readable without decompressing, so a reader
indexes a segment by walking the block headers. The sealed file's CRC-32 covers the whole
payload (checked when a segment is first opened, as for format 1); the frame is checked by
the decoder and its decoded length against the header. Format 1 stored the same rows
uncompressed (JSON Lines for chunks, a JSON object for extraction): a JSON row never starts
with a NUL byte, so a row is read either way (`raw`) and a generation written before format
2 still opens; a build that rewrites a segment stores every row of it as a block again.

zstd (the Rust core's, `_core.zstd_compress`, GIL released) at `LEVEL`: the sizes and read
latencies against format 1 and against zlib are in docs/BENCHMARKS.md (index size).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Container, Iterator
from pathlib import Path

from maguyva import _core
from maguyva.errors import CorruptIndexError
from maguyva.support import sealed

ROWS_VERSION = 2
"""The sealed version of chunk and extraction segments (and delta files) made of blocks."""
LEVEL = 6
_HEAD = struct.Struct("<IIIH")
MARK = 0


def is_block(data: bytes) -> bool:
    return bool(data) and data[0] == MARK


def block(path: str, raw: bytes, count: int) -> bytes:
    """`raw` (one file's rows, `count` of them) as a block; a block is returned as it is,
    and no rows as no bytes (a file without chunks has no block, as it had no lines)."""
    if not raw or is_block(raw):
        return raw
    name = path.encode("utf-8", "surrogateescape")
    data = _core.zstd_compress(raw, LEVEL)
    return b"\x00" + _HEAD.pack(len(data), len(raw), count, len(name)) + name + data


def _head(data: bytes, at: int, where: Path | str) -> tuple[int, int, int, int, int]:
    """(compressed length, raw length, count, path start, data start) of the block at `at`."""
    end = at + 1 + _HEAD.size
    if data[at] != MARK or end > len(data):
        raise CorruptIndexError(f"{where}: bad row block at byte {at}")
    clen, rlen, count, plen = _HEAD.unpack_from(data, at + 1)
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


def raw(data: bytes, where: Path | str) -> bytes:
    """The rows stored in `data` (blocks, one or more, or format 1's raw rows), decompressed
    and checked."""
    if not is_block(data):
        return data
    out = []
    at = 0
    while at < len(data):
        clen, rlen, _count, _name_at, data_at = _head(data, at, where)
        try:
            rows = _core.zstd_decompress(data[data_at : data_at + clen], rlen)
        except ValueError as exc:
            raise CorruptIndexError(f"{where}: damaged row block at byte {at} ({exc})") from exc
        out.append(rows)
        at = data_at + clen
    return b"".join(out)


def rows_of(payload: bytes, where: Path | str, paths: Container[str]) -> bytes:
    """The rows of `paths` from a payload made of blocks, decompressed (only their blocks);
    a format 1 payload is returned whole."""
    if not is_block(payload):
        return payload
    return b"".join(raw(payload[at : at + size], where)
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
        return int(head.split(b" ", 3)[2]) < ROWS_VERSION
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
            rows = raw(payload[at : at + length], path)
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
