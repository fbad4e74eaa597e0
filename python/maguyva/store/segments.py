"""Immutable extraction segments and the cache that lets an interrupted build resume.

A build's files are split into partitions by a hash of the path (so an edit to one file
changes one partition). Each partition is extracted (and optionally embedded) independently
into a `Segment`: its files' packed extraction and chunks, and embeddings when asked. A
segment is identified by the content hash of its partition (paths, file digests, extractor
fingerprint, embedding model), so a segment found in the cache is exactly what extracting the
partition again would produce: a restarted build reuses every segment the killed one finished.

Segments are written to `<index>/cache/segments/` as sealed files (checksummed; a torn write
is detected and recomputed) with atomic renames: a kill leaves either a whole segment or none.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import pickle
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from maguyva.errors import MaguyvaError
from maguyva.extract.driver import Packed
from maguyva.model import SourceFile
from maguyva.support import sealed

log = logging.getLogger("maguyva.scale")

SEGMENT_KIND = "segment"
SEGMENT_VERSION = 1


@dataclass(frozen=True, slots=True)
class Partition:
    """The files of one partition, with their content digests (from the scan)."""

    number: int
    files: tuple[SourceFile, ...]
    digests: tuple[str, ...]

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)

    def key(self, salt: str) -> str:
        """Content hash of the partition: changes when any file's path or content changes, or
        when `salt` (extractor fingerprint, embedding model) does."""
        h = hashlib.blake2b(digest_size=16)
        h.update(salt.encode() + b"\0")
        for f, digest in zip(self.files, self.digests, strict=True):
            h.update(f.path.encode("utf-8", "surrogateescape") + b"\0" + digest.encode() + b"\n")
        return h.hexdigest()


@dataclass(slots=True)
class Segment:
    """What one task produced for one partition. `rows` are `extract.driver.pack` tuples (one
    per file). When the task embedded: `hashes` (content hash of each embedded text, as the
    semantic modality computes it), their `codes` (uint8 rows) and `floats` (when the provider
    returns them), and `model`, the provider identity's cache key."""

    key: str
    rows: list[Packed]
    hashes: list[str] = field(default_factory=list)
    codes: np.ndarray | None = None
    floats: np.ndarray | None = None
    model: str | None = None
    seconds: float = 0.0
    worker: str = ""


def partition(files: list[SourceFile], digests: dict[str, str], count: int) -> list[Partition]:
    """Split `files` into `count` partitions by a CRC of the path (stable across runs and
    machines; empty partitions are dropped)."""
    if count < 1:
        raise MaguyvaError(f"partitions must be >= 1, got {count}")
    groups: list[list[SourceFile]] = [[] for _ in range(count)]
    for f in sorted(files, key=lambda f: f.path):
        groups[zlib.crc32(f.path.encode("utf-8", "surrogateescape")) % count].append(f)
    return [
        Partition(n, tuple(g), tuple(digests[f.path] for f in g)) for n, g in enumerate(groups) if g
    ]


def default_partitions(files: Iterable[SourceFile], workers: int) -> int:
    """Enough partitions to balance `workers` (4 per worker) and keep each about 8 MiB, so
    a segment's result is small in memory and a kill loses little work."""
    total = sum(f.size for f in files)
    return max(4 * max(1, workers), min(4096, total // (8 << 20) + 1))


# Modules that moved when the package was laid out by pipeline stage: segments written
# before the move name the old modules, and must still load.
_MOVED_MODULES = {
    "maguyva.extract_types": "maguyva.extract.types",
    "maguyva.scale.segments": "maguyva.store.segments",
    "maguyva.chunks": "maguyva.extract.chunks",
}


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(_MOVED_MODULES.get(module, module), name)


class SegmentCache:
    """Finished segments by key, on disk. Safe against kills (write-aside and rename) and
    shared by concurrent builders (same key, same content: last rename wins, both valid)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.seg"

    def get(self, key: str) -> Segment | None:
        path = self.path(key)
        if not path.is_file():
            return None
        try:
            payload = sealed.read_sealed(path, SEGMENT_KIND, max_version=SEGMENT_VERSION)
            segment = _Unpickler(io.BytesIO(zlib.decompress(payload))).load()
        except (
            MaguyvaError,
            OSError,
            pickle.UnpicklingError,
            zlib.error,
            EOFError,
            AttributeError,
            ImportError,
        ) as exc:
            log.warning("%s: unusable segment (%s); recomputing", path, exc)
            path.unlink(missing_ok=True)
            return None
        if not isinstance(segment, Segment) or segment.key != key:
            path.unlink(missing_ok=True)
            return None
        return segment

    def put(self, segment: Segment) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        payload = zlib.compress(pickle.dumps(segment, protocol=pickle.HIGHEST_PROTOCOL), 1)
        final = self.path(segment.key)
        tmp = final.with_suffix(f".tmp-{os.getpid()}")
        with open(tmp, "wb") as out:
            out.write(sealed.seal(SEGMENT_KIND, payload, SEGMENT_VERSION))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, final)

    def keys(self) -> set[str]:
        if not self.directory.is_dir():
            return set()
        return {p.stem for p in self.directory.glob("*.seg")}

    def prune(self, keep: set[str]) -> int:
        """Remove segments not in `keep` (after a commit, only the current ones matter)."""
        removed = 0
        for key in self.keys() - keep:
            self.path(key).unlink(missing_ok=True)
            removed += 1
        for leftover in self.directory.glob("*.tmp-*") if self.directory.is_dir() else []:
            leftover.unlink(missing_ok=True)
        return removed


__all__ = [
    "Partition",
    "Segment",
    "SegmentCache",
    "default_partitions",
    "partition",
]
