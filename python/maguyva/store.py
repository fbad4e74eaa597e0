"""The index directory: immutable generations and the manifest that commits them.

Layout (default `.maguyva/` under the repository root):

    manifest.json        the only commit point: names the current generation
    gen-000007/          one immutable generation (written aside, then renamed into place)
        meta.json        build report: files, modalities built, embedding model, timings
        files.json       path -> [size, mtime_ns] of every indexed file (for stale flags)
        chunks.jsonl     every chunk (see chunkstore.py)
        text/ structural/ graph/ semantic/    each modality's own files
    cache/               content-addressed caches that outlive generations (embeddings)
    lock                 advisory writer lock (fcntl; released when its process dies)

A writer builds `gen-N.tmp-<pid>`, fsyncs it, renames it to `gen-N`, then replaces
`manifest.json` by write-aside-and-rename. A reader reads the manifest once and opens that
generation, so it never sees half an index. The previous generation is kept so that a reader
that pinned it keeps working; older ones and leftovers of killed runs are removed on commit.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import CorruptIndexError, IndexBusyError, IndexNotFoundError, IndexVersionError

FORMAT_VERSION = 1
"""On-disk format history: 1 — first format (manifest + generation directories)."""

MANIFEST = "manifest.json"
DEFAULT_DIR_NAME = ".maguyva"
KEEP_GENERATIONS = 2


def default_index_dir(root: Path) -> Path:
    return root / DEFAULT_DIR_NAME


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(path: Path) -> None:
    for dirpath, _dirnames, filenames in os.walk(path):
        for name in filenames:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(dirpath))


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON aside, fsync, rename over `path`, fsync the directory."""
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


@dataclass(frozen=True, slots=True)
class Generation:
    """A committed, read-only generation of the index."""

    number: int
    path: Path
    manifest: dict[str, Any]


class IndexDir:
    """One repository's index directory."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def cache_dir(self) -> Path:
        return self.path / "cache"

    def exists(self) -> bool:
        return (self.path / MANIFEST).is_file()

    def read_manifest(self) -> dict[str, Any]:
        path = self.path / MANIFEST
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise IndexNotFoundError(
                f"no index at {self.path}; run `maguyva index` first"
            ) from None
        try:
            manifest = json.loads(raw)
            version = int(manifest["format_version"])
            int(manifest["generation"])
            str(manifest["dir"])
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptIndexError(f"{path}: unreadable manifest ({exc})") from exc
        if version > FORMAT_VERSION:
            raise IndexVersionError(
                f"{self.path} was written by a newer Maguyva (format {version}, this one reads "
                f"{FORMAT_VERSION}); upgrade Maguyva or rebuild with `maguyva index --rebuild`"
            )
        if version < FORMAT_VERSION:
            raise IndexVersionError(
                f"{self.path} uses old format {version}; rebuild with `maguyva index --rebuild`"
            )
        return manifest

    def current(self) -> Generation:
        """The committed generation a reader should use."""
        manifest = self.read_manifest()
        gen_path = self.path / manifest["dir"]
        if not gen_path.is_dir() or "/" in manifest["dir"] or ".." in manifest["dir"]:
            raise CorruptIndexError(f"{self.path}: manifest names missing generation {gen_path}")
        return Generation(int(manifest["generation"]), gen_path, manifest)

    @contextlib.contextmanager
    def writer_lock(self, wait: bool = False, timeout: float = 30.0) -> Iterator[None]:
        """Hold the one-writer lock. Raises IndexBusyError if another writer holds it."""
        self.path.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            deadline = time.monotonic() + (timeout if wait else 0.0)
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise IndexBusyError(
                            f"{self.path} is being written by another process; try again later"
                        ) from None
                    time.sleep(0.05)
            yield
        finally:
            os.close(fd)

    def next_generation_number(self) -> int:
        numbers = [0]
        for child in self.path.glob("gen-*"):
            head = child.name[4:].split(".", 1)[0]
            if head.isdigit():
                numbers.append(int(head))
        return max(numbers) + 1

    def begin(self) -> tuple[int, Path]:
        """Start a new generation; returns its number and the temporary directory to fill.
        Must be called with the writer lock held."""
        self.path.mkdir(parents=True, exist_ok=True)
        self._remove_leftovers()
        number = self.next_generation_number()
        tmp = self.path / f"gen-{number:06d}.tmp-{os.getpid()}"
        tmp.mkdir()
        return number, tmp

    def commit(self, number: int, tmp: Path, manifest: dict[str, Any]) -> Generation:
        """Make a filled generation durable and current (the single commit point)."""
        _fsync_tree(tmp)
        final = self.path / f"gen-{number:06d}"
        os.replace(tmp, final)
        _fsync_dir(self.path)
        manifest = {
            **manifest,
            "format_version": FORMAT_VERSION,
            "generation": number,
            "dir": final.name,
            "committed_at": time.time(),
        }
        write_json_atomic(self.path / MANIFEST, manifest)
        self._remove_old(keep_from=number - KEEP_GENERATIONS + 1)
        return Generation(number, final, manifest)

    def abort(self, tmp: Path) -> None:
        shutil.rmtree(tmp, ignore_errors=True)

    def _remove_leftovers(self) -> None:
        """Delete half-written generations of runs that died (their writer lock is gone,
        since we hold it now)."""
        for child in self.path.glob("gen-*.tmp-*"):
            shutil.rmtree(child, ignore_errors=True)
        for child in self.path.glob(f"{MANIFEST}.tmp-*"):
            child.unlink(missing_ok=True)

    def _remove_old(self, keep_from: int) -> None:
        for child in self.path.glob("gen-*"):
            head = child.name[4:]
            if head.isdigit() and int(head) < keep_from:
                shutil.rmtree(child, ignore_errors=True)
