"""The on-disk format of the graph: one file of named numpy sections with a checksum.

Layout of `graph/graph.bin` (format 3):

    magic  b"MGVGRAPH"            8 bytes
    u32    format version
    u32    header length H
    H      header: JSON {"meta": {...}, "sections": [[name, dtype, length, offset], ...]}
    ...    sections, each 8-byte aligned, raw little-endian arrays
    u32    CRC-32 (IEEE, as `zlib.crc32`) of everything before it
    4      b"GEND"

The loader checks the magic, the version, the CRC, the header, and that the sections fill the
file exactly (a truncated or extended file is refused even before its CRC is compared). The
CRC is computed in Rust with the GIL released: by the writer section by section as it writes
(`_core.crc32_buffer`), by the reader over the mapped file.

Strings are stored as one UTF-8 blob plus an int64 offsets array (`<name>.blob`,
`<name>.off`), so that opening is a read and a few `np.frombuffer` views, with no parsing;
a reader decodes a string when it is asked for it (`StringTable`).

A graph file's meta may name `parts`: other files of the same format in the same directory
whose sections belong to it (format 2). `graph.bin` keeps the node names, paths, module names
and the nodes' kinds and files in `names.bin`, which a writer that patched a body-only edit
hard-links from the previous generation when they did not change (docs/graph-incremental.md,
"One-file update"): the rest is what an edit changes, and only it is written and checksummed.

`names.bin` also holds the name lookup sections (format 3, `name_lookup`): for every node a
name lookup can return (definitions, modules, externals), a 64-bit hash of its name
(`lookup_name.hash`, sorted, with the nodes in that order in `lookup_name.node`) and of its
lowercased name (`lookup_lower.*`; Python's `str.lower`). A reader answers "the nodes named
x" with a binary search and a check of the candidates' actual names, without decoding every
name at open (docs/graph.md).

A file is written into a generation being built and made durable by the generation's commit
(which fsyncs every new file of it: `maguyva.store.generations.IndexDir.commit`), like every other file
of a generation (`maguyva.store.generations.write_sealed`).

Format history:
1. first version.
2. `parts` (a file's sections may live in other files); format 1 is still read.
3. the trailing checksum is a CRC-32 with an end mark (was a blake2b-256 digest: ~80 ms to
   write and ~40 ms to read on a 57 MB graph, against a few ms), the sections must fill the
   file exactly, and `names.bin` has the name lookup sections. Formats 1 and 2 are still
   read (their lookups are computed when they are opened).
4. smaller (issue 21): an int64 section whose values fit in int32 is stored as int32 (string
   offsets, CSR pointers, line pointers); a section may be stored as one zstd frame (a table
   row of five fields, the fifth its stored byte count), decompressed when it is first read
   (`Sections`): the edge log whole, and in `graph.bin` what no graph question reads (chunk
   ids and their `c`, PageRank, cycle numbers); the name lookup hashes are the top 32 bits of
   the 64-bit name hash (`LOOKUP_BITS`: a collision only costs one more name compared).
   Format 3 is still read as it is.
5. a small file (`SMALL_FILE`) stores every section that shrinks as a frame and no name
   lookup (computed at open); an offsets section (`*.off`) stored as a frame, in any file,
   is the frame of its steps (a sixth field in its table row: their unsigned dtype; a
   reader sums them back). Format 4 is still read as it is.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import struct
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from maguyva import _core
from maguyva.errors import CorruptIndexError, IndexVersionError, ModalityUnavailable
from maguyva.modalities.graph.schema import NodeKind
from maguyva.store.checksums import remember_crc

MAGIC = b"MGVGRAPH"
VERSION = 5
READS = (1, 2, 3, 4, 5)  # format versions this build reads
ZSTD_LEVEL = 1  # written on every update: level 6 took ~5x the CPU for 12 % less (edge log)
SMALL_FILE = 1 << 20
"""A file whose sections (narrowed) total at most this many bytes stores every section of at
least `SMALL_SECTION` bytes as a zstd frame at `SMALL_LEVEL` when that saves a tenth: a small
tree's graph is mostly fixed-width columns of small numbers (requests: 133 to ~60 KB), and
decompressing it on first read costs well under a millisecond; a larger graph keeps its hot
sections mapped. Such a file does not store the name lookup (`LOOKUP_SECTIONS`, random
hashes: 12 KB of requests' 27 KB of names): a reader computes it from the names when it is
missing, as for formats 1-2 (~0.3 ms for requests' 1,210 nodes), and the sections the
`compress` argument names are written at `SMALL_LEVEL` too (the edge log)."""
SMALL_SECTION = 64
SMALL_LEVEL = 9
LOOKUP_BITS = 32  # format 4: the lookup hashes' width (format 3: 64)
FILE_NAME = "graph.bin"
NAMES_PART = "names.bin"
DIGEST_BYTES = 32  # formats 1 and 2: blake2b-256 trailer
END = b"GEND"
TRAILER_BYTES = 8  # format 3: u32 CRC-32 + END
LOOKUP_KINDS = (NodeKind.DEFINITION, NodeKind.EXTERNAL, NodeKind.MODULE)
LOOKUP_SECTIONS = ("lookup_name.hash", "lookup_name.node", "lookup_lower.hash",
                   "lookup_lower.node")  # fmt: skip


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
    """Lazy view of a packed string list: a string is decoded when it is asked for."""

    def __init__(self, blob: np.ndarray, offsets: np.ndarray) -> None:
        self._blob = memoryview(np.ascontiguousarray(blob, dtype=np.uint8)).cast("B")
        # int32 (format 4) or int64 offsets, kept as they are stored (no copy)
        wide = np.dtype(offsets.dtype) != np.int32
        self._offsets = np.ascontiguousarray(offsets, dtype=np.int64 if wide else np.int32)
        # indexed one by one as Python ints (a memoryview item is ~10x cheaper than a numpy one)
        self._off = memoryview(self._offsets).cast("B").cast("q" if wide else "i")
        if len(self._off) == 0:
            raise CorruptIndexError("graph: a string table without offsets")

    def __len__(self) -> int:
        return len(self._off) - 1

    def __getitem__(self, i: int) -> str:
        n = len(self._off) - 1
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"string {i} of {n}")
        off = self._off
        return str(self._blob[off[i] : off[i + 1]], "utf-8", "surrogatepass")

    def __iter__(self):
        return iter(self.all())

    def all(self) -> list[str]:
        raw = self._blob.tobytes()
        off = self._offsets.tolist()
        text = raw.decode("utf-8", "surrogatepass")
        if len(text) == len(raw):  # ASCII: character offsets are byte offsets
            return list(map(text.__getitem__, map(slice, off[:-1], off[1:])))
        return [
            raw[off[i] : off[i + 1]].decode("utf-8", "surrogatepass") for i in range(len(off) - 1)
        ]


def name_lookup(
    kind: np.ndarray, blob: np.ndarray, offsets: np.ndarray, bits: int = LOOKUP_BITS
) -> dict[str, np.ndarray]:
    """The name lookup sections (`LOOKUP_SECTIONS`) of nodes of `kind` named by the packed
    `blob`/`offsets`: the lookup nodes' name hashes and lowercased-name hashes, each sorted by
    (hash, node), with the nodes in that order. Hashing and sorting run in Rust; the
    lowercased hash of a non-ASCII name is computed from Python's `str.lower` (for ASCII,
    lowercasing the bytes is the same). `bits` 32 keeps each hash's top 32 bits (format 4:
    still sorted, the nodes of one name still together and ascending), 64 the whole hash."""
    nodes = np.flatnonzero(np.isin(kind, LOOKUP_KINDS)).astype(np.int64)
    blob = np.ascontiguousarray(blob, dtype=np.uint8)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    fix_at = _core.non_ascii_strings(blob, offsets, nodes)
    table = StringTable(blob, offsets)
    fix_hash = np.array(
        [name_hash(table[int(nodes[i])].lower()) for i in fix_at.tolist()], dtype=np.uint64
    )
    arrays = list(_core.name_lookup(blob, offsets, nodes, fix_at, fix_hash))
    if bits == 32:
        arrays[0], arrays[2] = (lookup_key(a, 32) for a in (arrays[0], arrays[2]))
    return dict(zip(LOOKUP_SECTIONS, arrays, strict=True))


def lookup_key(hashes: np.ndarray, bits: int) -> np.ndarray:
    """64-bit name hashes as the lookup sections of `bits` store them."""
    return hashes if bits == 64 else (hashes >> np.uint64(64 - bits)).astype(np.uint32)


def name_hash(name: str) -> int:
    """The lookup hash of a name (its UTF-8 bytes, lone surrogates passed through)."""
    return _core.name_hash(name.encode("utf-8", "surrogatepass"))


def write(
    directory: Path,
    arrays: dict[str, np.ndarray],
    strings: dict[str, Any],
    meta: dict[str, Any],
    file_name: str = FILE_NAME,
    version: int = VERSION,
    compress: bool | frozenset[str] = frozenset(),
) -> int:
    """Write a graph file (`graph.bin`, a part of it, or the edge log) into a generation being
    built; return its size. Not fsynced here: the generation's commit fsyncs it. Format 4:
    int64 sections narrowed to int32 when they fit, and the sections `compress` names (True:
    all) stored as zstd frames."""
    sections: dict[str, np.ndarray] = dict(arrays)
    for name, values in strings.items():
        packed = values if isinstance(values, Packed) else pack_strings(values)
        sections[f"{name}.blob"], sections[f"{name}.off"] = packed
    table = []
    offset = 0
    narrowed = {name: _narrow(np.asarray(a)) if version >= 4 else np.asarray(a)
                for name, a in sections.items()}  # fmt: skip
    small = version >= 4 and sum(a.nbytes for a in narrowed.values()) <= SMALL_FILE
    if small and all(k in narrowed for k in LOOKUP_SECTIONS):
        for k in LOOKUP_SECTIONS:  # a reader computes them from the names (`name_lookup`)
            del narrowed[k]
    sections = {}
    for name, arr in narrowed.items():
        dtype = arr.dtype.newbyteorder("<").str
        row: list[Any] = [name, dtype, int(arr.size), offset]
        frame = None
        named = version >= 4 and (compress is True or (compress and name in compress))
        if named or (small and arr.nbytes >= SMALL_SECTION):
            steps = _steps(arr) if version >= 5 and name.endswith(".off") else None
            data = arr if steps is None else steps
            level = SMALL_LEVEL if small else ZSTD_LEVEL
            frame = _core.zstd_compress(_le(data).tobytes(), level)
            if not named and len(frame) * 10 > arr.nbytes * 9:
                frame = None
        if frame is not None:
            row += [len(frame)] if steps is None else [len(frame), steps.dtype.str]
            sections[name] = np.frombuffer(frame, dtype=np.uint8)
        else:
            sections[name] = arr
        table.append(row)
        offset += (sections[name].nbytes + 7) // 8 * 8
    header = json.dumps({"meta": meta, "sections": table}, separators=(",", ":")).encode()
    head = MAGIC + struct.pack("<II", version, len(header)) + header
    head += b"\0" * ((-len(head)) % 8)
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / (file_name + ".tmp")
    digest = hashlib.blake2b(digest_size=DIGEST_BYTES) if version < 3 else None
    crc = 0
    with open(tmp, "wb") as fh:
        for chunk in _chunks(head, sections):
            if digest is not None:
                digest.update(chunk)
            else:
                crc = _core.crc32_buffer(chunk, crc)
            fh.write(chunk)
        trailer = digest.digest() if digest is not None else struct.pack("<I", crc) + END
        fh.write(trailer)
    os.replace(tmp, directory / file_name)
    if digest is None:  # the whole file's CRC, so the commit need not read it back
        return remember_crc(directory / file_name, zlib.crc32(trailer, crc))
    return (directory / file_name).stat().st_size


def _steps(arr: np.ndarray) -> np.ndarray | None:
    """An offsets section as its steps (format 5: `np.diff` from 0, in the narrowest unsigned
    type), which a reader sums back; None unless the offsets are integers that never fall."""
    if arr.dtype.kind not in "iu" or not arr.size:
        return None
    steps = np.diff(arr.astype(np.int64), prepend=0)
    if int(steps.min()) < 0:
        return None
    top = int(steps.max())
    return steps.astype(np.uint8 if top < 1 << 8 else np.uint16 if top < 1 << 16 else np.uint32)


def _narrow(arr: np.ndarray) -> np.ndarray:
    """An int64 array as int32 when every value fits (offsets and pointers, format 4)."""
    if arr.dtype != np.int64 or (
        arr.size and not (int(arr.min()) >= -(2**31) and int(arr.max()) < 2**31)
    ):
        return arr
    return arr.astype(np.int32)


def _le(arr: np.ndarray) -> np.ndarray:
    """`arr` flat, contiguous and little-endian (a view when it already is)."""
    return np.ascontiguousarray(arr.reshape(-1).astype(arr.dtype.newbyteorder("<"), copy=False))


def _chunks(head: bytes, sections: dict[str, np.ndarray]):
    """The file's bytes before its trailer, as uint8 arrays (views of the sections: no copy
    of a little-endian contiguous array)."""
    yield np.frombuffer(head, dtype=np.uint8)
    pad = np.zeros(8, dtype=np.uint8)
    for arr in sections.values():
        data = _le(np.asarray(arr))
        yield data.view(np.uint8)
        if data.nbytes % 8:
            yield pad[: 8 - data.nbytes % 8]


class Sections(Mapping[str, np.ndarray]):
    """A graph file's sections by name: views of the mapping, and (format 4) zstd sections
    decompressed on first read and kept (a race decompresses twice, to equal arrays)."""

    def __init__(self) -> None:
        self._raw: dict[str, np.ndarray] = {}
        self._frames: dict[str, tuple[np.ndarray, np.dtype, int, str]] = {}
        self._steps: dict[str, np.dtype] = {}  # format 5: frames of offsets' steps

    def __getitem__(self, name: str) -> np.ndarray:
        found = self._raw.get(name)
        if found is not None:
            return found
        frame, dtype, size, where = self._frames[name]
        steps = self._steps.get(name)
        try:
            data = _core.zstd_decompress(frame.tobytes(), size * (steps or dtype).itemsize)
        except ValueError as exc:
            raise CorruptIndexError(f"{where}: section {name} does not decompress") from exc
        if steps is not None:
            total = np.cumsum(np.frombuffer(data, dtype=steps, count=size), dtype=np.int64)
            if size and int(total[-1]) > np.iinfo(dtype).max:
                raise CorruptIndexError(f"{where}: section {name}'s offsets do not fit {dtype}")
            arr = total.astype(dtype)
            arr.flags.writeable = False
        else:
            arr = np.frombuffer(data, dtype=dtype, count=size)
        self._raw[name] = arr
        return arr

    def __iter__(self) -> Iterator[str]:
        yield from self._raw
        yield from (k for k in self._frames if k not in self._raw)

    def __len__(self) -> int:
        return len(self._raw.keys() | self._frames.keys())

    def __contains__(self, name: object) -> bool:
        return name in self._raw or name in self._frames

    def length(self, name: str) -> int:
        """A section's element count, without decompressing it."""
        return self._frames[name][2] if name in self._frames else len(self._raw[name])

    def compressed(self) -> list[str]:
        return list(self._frames)

    def update(self, other: Sections) -> None:
        self._raw.update(other._raw)
        self._frames.update(other._frames)
        self._steps.update(other._steps)


def read(directory: Path, file_name: str = FILE_NAME) -> tuple[Sections, dict[str, Any]]:
    """Read and verify a graph file: (sections, meta). The file is memory-mapped, read only
    (a generation's files are never modified in place: a writer writes a new generation, as
    for the text index's segments and the semantic vectors), and the sections are views of
    the mapping; the whole file is checksummed (format 3: ~2 ms for 42 MB)."""
    path = directory / file_name
    data = _map(path)
    start = len(MAGIC) + 8
    if len(data) < start + TRAILER_BYTES or data[: len(MAGIC)].tobytes() != MAGIC:
        raise CorruptIndexError(f"{path}: not a Maguyva graph file")
    version, hlen = struct.unpack_from("<II", data, len(MAGIC))
    if version not in READS:  # a newer format's checksum may be another: not checked
        raise IndexVersionError(
            f"{path}: graph format {version}, this Maguyva reads {READS[0]} to {READS[-1]}"
            " (rebuild the index with this version: `maguyva index --rebuild`)"
        )
    if version >= 3:
        body = data[:-TRAILER_BYTES]
        stored, end = struct.unpack_from("<I4s", data, len(body))
        if end != END or stored != _core.crc32_buffer(body):
            raise CorruptIndexError(f"{path}: checksum mismatch (file damaged or truncated)")
    else:
        if len(data) < start + DIGEST_BYTES:
            raise CorruptIndexError(f"{path}: not a Maguyva graph file")
        body, digest = data[:-DIGEST_BYTES], data[-DIGEST_BYTES:].tobytes()
        if hashlib.blake2b(memoryview(body), digest_size=DIGEST_BYTES).digest() != digest:
            raise CorruptIndexError(f"{path}: checksum mismatch (file damaged or truncated)")
    try:
        header = json.loads(body[start : start + hlen].tobytes())
        meta, table = header["meta"], header["sections"]
        base = start + hlen + (-(start + hlen)) % 8
        sections = Sections()
        filled = base
        for row in table:
            name, dtype, size, offset = row[:4]
            dt = np.dtype(dtype)
            stored = row[4] if len(row) in (5, 6) and version >= 4 else None
            steps = np.dtype(row[5]) if len(row) == 6 and version >= 5 else None
            if (
                len(row) != (4 if stored is None else 5 if steps is None else 6)
                or not all(isinstance(v, int) and v >= 0 for v in (size, offset, stored or 0))
                or (steps is not None and (steps.kind != "u" or dt.kind not in "iu"))
            ):
                raise CorruptIndexError(f"{path}: section {name} has a bad size or offset")
            at, nbytes = base + offset, size * dt.itemsize if stored is None else stored
            if at < filled or at + nbytes > len(body) or name in sections:
                raise CorruptIndexError(f"{path}: section {name} past end of file or repeated")
            if stored is None:
                sections._raw[name] = np.frombuffer(body, dtype=dt, count=size, offset=at)
            else:
                frame = np.frombuffer(body, dtype=np.uint8, count=stored, offset=at)
                sections._frames[name] = (frame, dt, size, str(path))
                if steps is not None:
                    sections._steps[name] = steps
            filled = at + (nbytes + 7) // 8 * 8
    except (ValueError, TypeError, KeyError) as exc:
        raise CorruptIndexError(f"{path}: unreadable header") from exc
    if version >= 3 and filled != len(body):
        raise CorruptIndexError(f"{path}: sections end at {filled}, the file at {len(body)}")
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


def _map(path: Path) -> np.ndarray:
    """The file as a read-only uint8 array over a shared read-only mapping."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError as exc:
        raise ModalityUnavailable(f"graph not built in this index ({path} missing)") from exc
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            raise CorruptIndexError(f"{path}: not a Maguyva graph file (empty)")
        mapped = mmap.mmap(fd, size, prot=mmap.PROT_READ)
    finally:
        os.close(fd)
    return np.frombuffer(mapped, dtype=np.uint8)


def strings(sections: Mapping[str, np.ndarray], name: str) -> StringTable:
    return StringTable(sections[f"{name}.blob"], sections[f"{name}.off"])
