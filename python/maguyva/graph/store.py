"""The on-disk format of the graph: one file of named numpy sections with a checksum.

Layout of `graph/graph.bin`:

    magic  b"MGVGRAPH"            8 bytes
    u32    format version
    u32    header length H
    H      header: JSON {"meta": {...}, "sections": [[name, dtype, length, offset], ...]}
    ...    sections, each 8-byte aligned, raw little-endian arrays
    32     blake2b-256 digest of everything before it

Strings are stored as one UTF-8 blob plus an int64 offsets array (`<name>.blob`,
`<name>.off`), so that opening is a read and a few `np.frombuffer` views, with no parsing.

A graph file's meta may name `parts`: other files of the same format in the same directory
whose sections belong to it (format 2). `graph.bin` keeps the node names, paths, module names
and the nodes' kinds and files in `names.bin`, which a writer that patched a body-only edit
hard-links from the previous generation when they did not change (docs/graph.md, "One-file
update"): the rest is what an edit changes, and only it is written, checksummed and fsynced.

Format history:
1. first version.
2. `parts` (a file's sections may live in other files); format 1 is still read.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..errors import CorruptIndexError, IndexVersionError, ModalityUnavailable

MAGIC = b"MGVGRAPH"
VERSION = 2
READS = (1, 2)  # format versions this build reads
FILE_NAME = "graph.bin"
NAMES_PART = "names.bin"
DIGEST_BYTES = 32


def pack_strings(values: list[str]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    if not values:
        return np.zeros(0, dtype=np.uint8), offsets
    blob = "".join(values).encode("utf-8", "surrogatepass")
    lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] != len(blob):  # not all ASCII: byte lengths differ from character counts
        # only the non-ASCII strings are encoded one by one (their byte lengths)
        for i in np.flatnonzero(
            np.fromiter(map(str.isascii, values), dtype=bool, count=len(values)) == 0
        ).tolist():
            lengths[i] = len(values[i].encode("utf-8", "surrogatepass"))
        np.cumsum(lengths, out=offsets[1:])
    return np.frombuffer(blob, dtype=np.uint8), offsets


class Packed(NamedTuple):
    """A string list already packed (`pack_strings`'s blob and offsets): `write` takes it as is."""

    blob: np.ndarray
    offsets: np.ndarray

    def __len__(self) -> int:  # type: ignore[override]
        return len(self.offsets) - 1


class StringTable:
    """Lazy view of a packed string list."""

    def __init__(self, blob: np.ndarray, offsets: np.ndarray) -> None:
        self._blob = blob.tobytes()
        self._off = offsets.tolist()

    def __len__(self) -> int:
        return len(self._off) - 1

    def __getitem__(self, i: int) -> str:
        return self._blob[self._off[i] : self._off[i + 1]].decode("utf-8", "surrogatepass")

    def all(self) -> list[str]:
        blob, off = self._blob, self._off
        return [
            blob[off[i] : off[i + 1]].decode("utf-8", "surrogatepass") for i in range(len(self))
        ]


def write(
    directory: Path,
    arrays: dict[str, np.ndarray],
    strings: dict[str, Any],
    meta: dict[str, Any],
    file_name: str = FILE_NAME,
    version: int = VERSION,
) -> int:
    """Write a graph file (`graph.bin`, a part of it, or the edge log) atomically; return
    its size."""
    sections: dict[str, np.ndarray] = dict(arrays)
    for name, values in strings.items():
        packed = values if isinstance(values, Packed) else pack_strings(values)
        sections[f"{name}.blob"], sections[f"{name}.off"] = packed
    table = []
    offset = 0
    for name, arr in sections.items():
        arr = np.ascontiguousarray(arr)
        dtype = arr.dtype.newbyteorder("<").str
        table.append([name, dtype, int(arr.size), offset])
        offset += (arr.nbytes + 7) // 8 * 8
    header = json.dumps({"meta": meta, "sections": table}, separators=(",", ":")).encode()
    head = MAGIC + struct.pack("<II", version, len(header)) + header
    head += b"\0" * ((-len(head)) % 8)
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / (file_name + ".tmp")
    digest = hashlib.blake2b(digest_size=DIGEST_BYTES)
    with open(tmp, "wb") as fh:
        for chunk in _chunks(head, sections):
            digest.update(chunk)
            fh.write(chunk)
        fh.write(digest.digest())
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, directory / file_name)
    return (directory / file_name).stat().st_size


def _chunks(head: bytes, sections: dict[str, np.ndarray]):
    yield head
    for arr in sections.values():
        data = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
        yield data
        if len(data) % 8:
            yield b"\0" * (8 - len(data) % 8)


def read(
    directory: Path, file_name: str = FILE_NAME
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read and verify a graph file: (sections, meta)."""
    path = directory / file_name
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise ModalityUnavailable(f"graph not built in this index ({path} missing)") from exc
    if len(data) < len(MAGIC) + 8 + DIGEST_BYTES or data[: len(MAGIC)] != MAGIC:
        raise CorruptIndexError(f"{path}: not a Maguyva graph file")
    version, hlen = struct.unpack_from("<II", data, len(MAGIC))
    if version not in READS:
        raise IndexVersionError(
            f"{path}: graph format {version}, this Maguyva reads {READS[0]} to {READS[-1]}"
            " (rebuild the index with this version: `maguyva index --rebuild`)"
        )
    body, digest = data[:-DIGEST_BYTES], data[-DIGEST_BYTES:]
    if hashlib.blake2b(body, digest_size=DIGEST_BYTES).digest() != digest:
        raise CorruptIndexError(f"{path}: checksum mismatch (file damaged or truncated)")
    start = len(MAGIC) + 8
    try:
        header = json.loads(body[start : start + hlen])
    except ValueError as exc:
        raise CorruptIndexError(f"{path}: unreadable header") from exc
    base = start + hlen + (-(start + hlen)) % 8
    buf = memoryview(body)
    sections: dict[str, np.ndarray] = {}
    for name, dtype, size, offset in header["sections"]:
        dt = np.dtype(dtype)
        end = base + offset + size * dt.itemsize
        if end > len(body):
            raise CorruptIndexError(f"{path}: section {name} past end of file")
        sections[name] = np.frombuffer(buf[base + offset : end], dtype=dt)
    meta = header["meta"]
    for part in meta.get("parts", []) if isinstance(meta, dict) else []:
        if not isinstance(part, str) or "/" in part or part == file_name:
            raise CorruptIndexError(f"{path}: bad part name {part!r}")
        try:
            more, _ = read(directory, part)
        except ModalityUnavailable as exc:
            raise CorruptIndexError(f"{path}: its part {part} is missing") from exc
        if more.keys() & sections.keys():
            raise CorruptIndexError(f"{path}: part {part} repeats sections")
        sections.update(more)
    return sections, meta


def strings(sections: dict[str, np.ndarray], name: str) -> StringTable:
    return StringTable(sections[f"{name}.blob"], sections[f"{name}.off"])
