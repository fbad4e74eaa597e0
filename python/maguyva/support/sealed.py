"""Sealed files: a one-line header (magic, kind, format version, payload length, checksums)
followed by the payload. Every file the indexer itself writes uses it (manifest, meta, files,
chunks, extraction, the generation's checksum table).

    MAGUYVA <kind> <version> <length> <crc32 of payload> <crc32 of the header so far>\\n<payload>

The header is text so that `tail -n +2 file | jq` still works. The loader checks, in order: the
magic, the header's own checksum, the kind, the version (a newer one is refused with a clear
message, never misread), the payload length against the file length (before reading a byte of
the payload), then the payload checksum. CRC-32 catches every single-bit flip and every burst up
to 32 bits; it is a corruption check, not an authentication.
"""

from __future__ import annotations

import json
import os
import re
import zlib
from pathlib import Path
from typing import Any

from maguyva.errors import CorruptIndexError, IndexVersionError

MAGIC = b"MAGUYVA"
MAX_HEADER = 128
_HEADER = re.compile(rb"MAGUYVA ([a-z_]{1,32}) (\d{1,6}) (\d{1,15}) ([0-9a-f]{8}) ([0-9a-f]{8})")


def crc32(data: bytes | memoryview) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def seal(kind: str, payload: bytes, version: int = 1) -> bytes:
    """The sealed bytes of `payload` (header + payload)."""
    head = b"%s %s %d %d %08x" % (MAGIC, kind.encode(), version, len(payload), crc32(payload))
    return head + b" %08x\n" % crc32(head) + payload


def _parse_header(path: Path, head: bytes, kind: str | None) -> tuple[str, int, int, int, int]:
    """(kind, version, payload length, payload crc, header length); raises on a bad header."""
    end = head.find(b"\n")
    if not head.startswith(MAGIC) or end < 0:
        raise CorruptIndexError(f"{path}: not a Maguyva index file (bad or missing header)")
    m = _HEADER.fullmatch(head[:end])
    if m is None or int(m.group(5), 16) != crc32(head[: m.start(5) - 1]):
        raise CorruptIndexError(f"{path}: damaged header")
    found = m.group(1).decode()
    if kind is not None and found != kind:
        raise CorruptIndexError(f"{path}: holds {found!r} data, expected {kind!r}")
    return found, int(m.group(2)), int(m.group(3)), int(m.group(4), 16), end + 1


def unseal(path: Path, data: bytes, kind: str | None, max_version: int) -> bytes:
    """The payload of sealed `data` read from `path`, verified."""
    found, version, length, crc, start = _parse_header(path, data[:MAX_HEADER], kind)
    if version > max_version:
        raise IndexVersionError(
            f"{path}: written by a newer Maguyva ({found} format {version}; this one reads up to "
            f"{max_version}); upgrade Maguyva or rebuild with `maguyva index --rebuild`"
        )
    if len(data) - start != length:
        raise CorruptIndexError(
            f"{path}: truncated or extended ({len(data) - start} payload bytes, header says "
            f"{length})"
        )
    payload = data[start:]
    if crc32(payload) != crc:
        raise CorruptIndexError(f"{path}: checksum mismatch (the file is damaged)")
    return payload


def read_sealed(path: Path, kind: str, max_version: int = 1) -> bytes:
    """Read and verify a sealed file. The size recorded in the header is checked against the
    file's length before the payload is read, so a damaged header never drives an allocation."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(MAX_HEADER)
            _, _, length, _, start = _parse_header(path, head, kind)
            size = os.fstat(fh.fileno()).st_size
            if size - start != length:
                raise CorruptIndexError(
                    f"{path}: truncated or extended ({size - start} payload bytes, header says "
                    f"{length})"
                )
            fh.seek(0)
            data = fh.read()
    except FileNotFoundError:
        raise CorruptIndexError(f"{path}: missing") from None
    return unseal(path, data, kind, max_version)


def read_sealed_json(path: Path, kind: str, max_version: int = 1) -> Any:
    """The JSON payload of a sealed file, plain or packed (`dumps_json_packed`)."""
    payload = read_sealed(path, kind, max_version)
    if payload[:1] == PACKED:
        try:
            payload = zlib.decompress(payload)
        except zlib.error as exc:
            raise CorruptIndexError(f"{path}: checksum is right but the payload does not "
                                    f"decompress ({exc})") from exc  # fmt: skip
    try:
        return json.loads(payload)
    except ValueError as exc:
        raise CorruptIndexError(f"{path}: checksum is right but the JSON is not ({exc})") from exc


def dumps_json(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()


PACKED = b"x"
"""The first byte of a zlib stream: a JSON text never starts with it, so a packed payload is
told from a plain one by its first byte (`read_sealed_json` reads both)."""


def dumps_json_packed(data: Any) -> bytes:
    """`dumps_json` compressed (zlib, level 6): for the tables a generation writes whole and
    reads at open (its checksum table, its file state: a line per file of paths that share
    their prefixes; requests' 28 KB to ~6 KB). Seal it as PACKED_VERSION."""
    return zlib.compress(dumps_json(data), 6)


PACKED_VERSION = 2
"""The version the packed tables (a generation's CHECKSUMS and files.json) are sealed with.
Version 1 payloads were plain JSON until packing came, and packed ones were first sealed as
version 1 too: a Maguyva from before packing read their zlib bytes as JSON and called the
file damaged. Sealed as 2, such a reader (it reads up to 1) says the file was written by a
newer Maguyva. `read_packed_json` reads both versions, plain or packed."""


def read_packed_json(path: Path, kind: str) -> Any:
    """The JSON payload of a packed table (`dumps_json_packed`), sealed as version 1 or 2."""
    return read_sealed_json(path, kind, PACKED_VERSION)


def is_sealed(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(MAGIC) + 1) == MAGIC + b" "
    except OSError:
        return False
