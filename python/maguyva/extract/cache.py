"""Per-file extraction results kept outside any generation, so that an interrupted build
(Ctrl-C, a crash) does not lose the extraction it finished: the next run finds them here.

Entries live in `<index>/cache/extract/<extractor fingerprint>/<ab>/<rest>`, named by a hash
of the file's path and content, and hold the driver's encoded row, sealed (a torn or damaged
entry is ignored and the file extracted again). Workers write them as they finish each file;
a successful commit empties the cache, since the new generation then holds the same data.
Writes are best effort (no fsync, errors ignored): it is a cache, never the index.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maguyva.errors import MaguyvaError
from maguyva.support import sealed

KIND = "xcache"
VERSION = 2  # 2: a JSON head line, then the chunk and extraction bytes as the index stores them
CACHEABLE = frozenset({"ok", "no_grammar"})
"""Timeouts and errors depend on the machine's load or on a bug: extract those again."""


@dataclass(frozen=True, slots=True)
class ExtractCache:
    """A directory of cached extraction rows for one extractor version (picklable: workers
    receive it with their batches)."""

    directory: Path

    @classmethod
    def open(cls, cache_root: Path, fingerprint: str) -> ExtractCache:
        """The cache for `fingerprint` under `cache_root` (`<index>/cache`); entries of other
        extractor versions can never be used again and are removed."""
        base = cache_root / "extract"
        with contextlib.suppress(OSError):
            for other in base.iterdir():
                if other.name != fingerprint:
                    shutil.rmtree(other, ignore_errors=True)
        return cls(base / fingerprint)

    def _entry(self, path: str, data: bytes) -> Path:
        digest = hashlib.blake2b(digest_size=16)
        digest.update(path.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(data)
        name = digest.hexdigest()
        return self.directory / name[:2] / name[2:]

    def get(self, path: str, data: bytes) -> tuple[Any, ...] | None:
        """The cached row (`driver.encode_row`) for `path` with content `data`, or None."""
        entry = self._entry(path, data)
        try:
            raw = entry.read_bytes()
            payload = sealed.unseal(entry, raw, KIND, VERSION)
            if not raw.startswith(b"MAGUYVA %s %d " % (KIND.encode(), VERSION)):
                return None
            end = payload.index(b"\n")
            head = json.loads(payload[:end])
            *fields, order, chunk_length = head
            if len(fields) != 7 or fields[0] != path:
                return None
            fields[6] = tuple(fields[6])  # the counts
            body = payload[end + 1 :]
            encoded = (body[:chunk_length], body[chunk_length:], order)
        except (OSError, ValueError, TypeError, MaguyvaError):
            return None
        return (*fields, encoded)

    def put(self, path: str, data: bytes, row: tuple[Any, ...]) -> None:
        """Remember `row` (`driver.encode_row`) for `path` with content `data`."""
        entry = self._entry(path, data)
        tmp = entry.with_name(f"{entry.name}.tmp-{os.getpid()}")
        *fields, (chunk_bytes, extraction_bytes, order) = row
        try:
            head = json.dumps([*fields, order, len(chunk_bytes)], ensure_ascii=False,
                              separators=(",", ":")).encode()  # fmt: skip
            entry.parent.mkdir(parents=True, exist_ok=True)
            payload = b"".join((head, b"\n", chunk_bytes, extraction_bytes))
            tmp.write_bytes(sealed.seal(KIND, payload, VERSION))
            os.replace(tmp, entry)
        except (OSError, TypeError, ValueError):
            with contextlib.suppress(OSError):
                tmp.unlink()

    def clear(self) -> None:
        """Drop every entry (after a commit: the generation now holds them)."""
        shutil.rmtree(self.directory, ignore_errors=True)
