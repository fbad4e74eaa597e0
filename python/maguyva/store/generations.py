"""The index directory: immutable generations and the manifest that commits them.

Layout (default `.maguyva/` under the repository root):

    manifest.json        the only commit point: names the current generation (sealed)
    gen-000007/          one immutable generation (written aside, then renamed into place)
        CHECKSUMS        size and CRC-32 of every other file of the generation (sealed)
        meta.json        build report (sealed)
        files.json       per-file state: size, mtime, content digest; directories (sealed)
        chunks/ extract/ every chunk and the per-file extraction, in segments (sealed; see
                         indexer.py), reused by incremental builds
        files-delta.json, delta/   after a small update: the re-extracted files' rows over
                         hard-linked segments (chunkstore.py, indexer.py)
        text/ structural/ graph/ semantic/    each modality's own files
    leases/gen-000007    readers hold a shared lock here while they use generation 7
    cache/               content-addressed caches that outlive generations (embeddings)
    lock                 advisory writer lock (flock; released when its process dies)

Commit protocol (the one for every sub-index): a writer fills `gen-N.tmp-<pid>`, writes the
checksum table, fsyncs every new file and every directory in it (a file hard-linked from the
previous generation is durable already), renames it to `gen-N`, fsyncs the index
directory, then writes `manifest.json` aside, fsyncs it, renames it over the old one and fsyncs
the directory. The manifest rename is the single commit point: a crash before it leaves the
previous generation current, a crash after it the new one. Readers read the manifest once and
pin that generation with a lease; old generations are deleted only when no lease is held.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from maguyva.errors import (
    CorruptIndexError,
    IndexBusyError,
    IndexNotFoundError,
    IndexVersionError,
    MaguyvaError,
)
from maguyva.store.checksums import CHECKSUMS, checksum_table, verify_generation
from maguyva.support import sealed
from maguyva.support.pools import shared_pool

FORMAT_VERSION = 3
"""On-disk format history:
1 — manifest + generation directories, plain JSON files.
2 — every file the indexer writes is sealed (header + CRC-32); CHECKSUMS table per generation;
    files.json records content digests; extract.json; reader leases.
3 — a generation may carry a delta over hard-linked segments (`files-delta.json`, `delta/`):
    a reader of format 2 would miss it, so it must refuse such an index. Format 2 is format 3
    without a delta and is read as it is (the next update writes format 3).
"""
MIN_FORMAT_VERSION = 2
"""The oldest format read without rebuilding."""

MANIFEST = "manifest.json"
DEFAULT_DIR_NAME = ".maguyva"
TRASH = "trash-"  # a collected generation being deleted in the background
KEEP_GENERATIONS = 2
LEASES = "leases"


class OldIndexFormat(IndexVersionError):
    """The index was written by an older format; the indexer rebuilds it."""


class IndexWriteError(MaguyvaError):
    """Writing a new generation failed (I/O error, disk full); the previous one still serves."""


def default_index_dir(root: Path) -> Path:
    return root / DEFAULT_DIR_NAME


class OsFiles:
    """The durable file operations of a commit. Tests swap in a fault-injecting subclass
    (`tests/support/faults.py`); production code never installs one."""

    def write_bytes(self, path: Path, data: bytes) -> None:
        with open(path, "wb") as fh:
            fh.write(data)

    def fsync_file(self, path: Path) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def fsync_dir(self, path: Path) -> None:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def replace(self, src: Path, dst: Path) -> None:
        os.replace(src, dst)

    def mkdir(self, path: Path) -> None:
        path.mkdir()

    def remove_tree(self, path: Path) -> None:
        shutil.rmtree(path, ignore_errors=True)


FILES: OsFiles = OsFiles()
"""The file layer in use: the one hook for fault injection. Module-level so that a test (in
its own process, or a child it starts through `tests/support/faulty_run.py`) can replace it;
nothing in the package reads an environment variable to do so."""


def write_sealed(path: Path, kind: str, payload: bytes, version: int = 1) -> None:
    """Write a sealed file inside a generation being built (fsynced at commit)."""
    FILES.write_bytes(path, sealed.seal(kind, payload, version))


def write_sealed_atomic(path: Path, kind: str, payload: bytes, version: int = 1) -> None:
    """Write a sealed file aside, fsync it, rename it over `path`, fsync the directory."""
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    FILES.write_bytes(tmp, sealed.seal(kind, payload, version))
    FILES.fsync_file(tmp)
    FILES.replace(tmp, path)
    FILES.fsync_dir(path.parent)


def trash_pool() -> ThreadPoolExecutor:
    """The one thread deleting collected generations (joined at interpreter exit)."""
    return shared_pool("trash", 1)


def fsync_all(files: list[Path], directories: list[Path]) -> None:
    """fsync every file and directory (through `FILES`), concurrently: the file system's
    journal then commits them together (on ext4, 10 small files and 6 directories: ~8 ms
    instead of ~26 ms one after the other). Returns when all are done; raises the first
    error after every one has finished."""
    ops: list[tuple[Any, Path]] = [(FILES.fsync_file, p) for p in files]
    ops += [(FILES.fsync_dir, d) for d in directories]
    if len(ops) <= 1:
        for fn, path in ops:
            fn(path)
        return
    futures = [shared_pool("fsync", 8).submit(fn, path) for fn, path in ops]
    error: BaseException | None = None
    for future in futures:
        try:
            future.result()
        except BaseException as exc:  # re-raised below, once the others have finished
            error = error or exc
    if error is not None:
        raise error


_HELD_LOCKS: set[int] = set()
"""File descriptors of the flocks this process holds (the writer lock, leases)."""


def _drop_held_locks_in_child() -> None:
    """After `fork`, point every held lock's descriptor at /dev/null in the child. A flock
    belongs to the open file description, which a forked child shares: an extraction worker
    that outlived a killed writer would otherwise hold the index lock forever (issue 20, C1).
    The descriptor numbers stay valid (the parent's code that closes them later still works)
    but no longer refer to the lock file. `exec` needs nothing: Python opens them CLOEXEC."""
    if not _HELD_LOCKS:
        return
    try:
        null = os.open(os.devnull, os.O_RDONLY)
    except OSError:
        return
    for fd in list(_HELD_LOCKS):
        with contextlib.suppress(OSError):
            os.dup2(null, fd, inheritable=False)
    os.close(null)
    _HELD_LOCKS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_held_locks_in_child)


class Lease:
    """A shared lock on `leases/<generation>`: while held, no writer deletes the generation.
    Released when closed, garbage-collected, or when the process dies."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd
        if fd is not None:
            _HELD_LOCKS.add(fd)

    def close(self) -> None:
        if self.fd is not None:
            _HELD_LOCKS.discard(self.fd)
            os.close(self.fd)
            self.fd = None

    def __del__(self) -> None:
        self.close()


@dataclass(frozen=True)
class Generation:
    """A committed, read-only generation of the index (pinned while `lease` is held)."""

    number: int
    path: Path
    manifest: dict[str, Any]
    lease: Lease | None = field(default=None, compare=False, repr=False)

    def release(self) -> None:
        if self.lease is not None:
            self.lease.close()


class IndexDir:
    """One repository's index directory."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @property
    def cache_dir(self) -> Path:
        return self.path / "cache"

    def exists(self) -> bool:
        return (self.path / MANIFEST).is_file()

    def read_manifest(self) -> dict[str, Any]:
        path = self.path / MANIFEST
        if not path.is_file():
            raise IndexNotFoundError(f"no index at {self.path}; run `maguyva index` first")
        if not sealed.is_sealed(path):
            if _old_manifest(path):
                raise OldIndexFormat(
                    f"{self.path} uses an older index format; run `maguyva index` to rebuild it"
                )
            raise CorruptIndexError(
                f"{path}: damaged (not a Maguyva manifest); run `maguyva index --repair`"
            )
        manifest = sealed.read_sealed_json(path, "manifest", max_version=FORMAT_VERSION)
        try:
            version = int(manifest["format_version"])
            int(manifest["generation"])
            name = str(manifest["dir"])
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptIndexError(f"{path}: unreadable manifest ({exc})") from exc
        if version > FORMAT_VERSION:
            raise IndexVersionError(
                f"{self.path} was written by a newer Maguyva (format {version}, this one reads "
                f"{FORMAT_VERSION}); upgrade Maguyva or rebuild with `maguyva index --rebuild`"
            )
        if version < MIN_FORMAT_VERSION:
            raise OldIndexFormat(
                f"{self.path} uses old format {version}; run `maguyva index` to rebuild it"
            )
        if not name.startswith("gen-") or "/" in name or ".." in name:
            raise CorruptIndexError(f"{path}: bad generation name {name!r}")
        return manifest

    def current(self, pin: bool = True) -> Generation:
        """The committed generation a reader should use, pinned by a lease (so a concurrent
        writer does not delete it) and checked: every file present with its recorded size."""
        for _attempt in range(20):
            manifest = self.read_manifest()
            gen_path = self.path / manifest["dir"]
            lease = self.lease(manifest["dir"]) if pin else None
            if not gen_path.is_dir():
                if lease is not None:
                    lease.close()
                if manifest != self._peek_manifest():
                    continue  # a writer committed and collected meanwhile: read again
                raise CorruptIndexError(
                    f"{self.path}: manifest names missing generation {gen_path}; "
                    "run `maguyva index --repair`"
                )
            problems = verify_generation(gen_path, deep=False)
            if problems:
                if lease is not None:
                    lease.close()
                raise CorruptIndexError(
                    f"{problems[0]}" + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else "")
                    + "; run `maguyva fsck` or `maguyva index --repair`"
                )  # fmt: skip
            return Generation(int(manifest["generation"]), gen_path, manifest, lease)
        raise IndexBusyError(f"{self.path}: generations changed too fast to pin one; retry")

    def _peek_manifest(self) -> dict[str, Any] | None:
        try:
            return self.read_manifest()
        except MaguyvaError:
            return None

    def lease(self, gen_name: str) -> Lease | None:
        """Take a shared lease on a generation; None when the directory is read-only."""
        leases = self.path / LEASES
        try:
            leases.mkdir(exist_ok=True)
            fd = os.open(leases / gen_name, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
        except OSError:
            os.close(fd)
            return None
        return Lease(fd)

    def generations(self) -> list[int]:
        """Numbers of the committed generation directories present, ascending."""
        found = []
        for child in self.path.glob("gen-*"):
            head = child.name[4:]
            if head.isdigit() and child.is_dir():
                found.append(int(head))
        return sorted(found)

    @contextlib.contextmanager
    def writer_lock(self, wait: bool = False, timeout: float = 30.0) -> Iterator[None]:
        """Hold the one-writer lock (flock: it dies with its process, so a killed writer never
        leaves a stale lock). Raises IndexBusyError, naming the holder, when it is taken."""
        self.path.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        _HELD_LOCKS.add(fd)
        try:
            deadline = time.monotonic() + (timeout if wait else 0.0)
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
                        who = f" (pid {holder})" if holder.isdigit() else ""
                        if holder.isdigit() and not _pid_alive(int(holder)):
                            who = (f" (pid {holder}, no longer running: a process it started "
                                   "still holds the lock)")  # fmt: skip
                        raise IndexBusyError(
                            f"{self.path} is being written by another process{who}; "
                            "try again later or pass --wait"
                        ) from None
                    time.sleep(0.05)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            yield
        finally:
            _HELD_LOCKS.discard(fd)
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
        self.remove_leftovers()
        number = self.next_generation_number()
        tmp = self.path / f"gen-{number:06d}.tmp-{os.getpid()}"
        FILES.mkdir(tmp)
        return number, tmp

    def commit(
        self, number: int, tmp: Path, manifest: dict[str, Any], previous: Path | None = None
    ) -> Generation:
        """Make a filled generation durable and current (the single commit point). Files
        hard-linked from `previous` keep their checksums without being read again and are not
        fsynced again (their data became durable when `previous` was committed; the new
        directory entries are made durable by the directory fsyncs)."""
        try:
            linked: set[str] = set()
            table = checksum_table(tmp, previous, linked)
            write_sealed(
                tmp / CHECKSUMS, "checksums", sealed.dumps_json_packed(table), sealed.PACKED_VERSION
            )
            new_files: list[Path] = []
            directories: list[Path] = []
            for dirpath, _dirnames, filenames in os.walk(tmp):
                prefix = os.path.relpath(dirpath, tmp).replace(os.sep, "/")
                prefix = "" if prefix == "." else prefix + "/"
                new_files += [Path(dirpath, n) for n in filenames if prefix + n not in linked]
                directories.append(Path(dirpath))
            fsync_all(new_files, directories)
            final = self.path / f"gen-{number:06d}"
            FILES.replace(tmp, final)
            FILES.fsync_dir(self.path)
            manifest = {
                **manifest,
                "format_version": FORMAT_VERSION,
                "generation": number,
                "dir": final.name,
                "committed_at": time.time(),
            }
            manifest_path = self.path / MANIFEST
            tmp_manifest = manifest_path.with_name(f"{MANIFEST}.tmp-{os.getpid()}")
            FILES.write_bytes(tmp_manifest, sealed.seal("manifest", sealed.dumps_json(manifest)))
            FILES.fsync_file(tmp_manifest)
            FILES.replace(tmp_manifest, manifest_path)  # the commit point
        except OSError as exc:
            serving = ("the previous generation still serves" if self.exists()
                       else "no index was written (there was none before)")  # fmt: skip
            raise IndexWriteError(
                f"could not write the new index generation ({exc.strerror or exc}: "
                f"{exc.filename or self.path}); {serving}"
            ) from exc
        try:
            FILES.fsync_dir(self.path)
        except OSError as exc:
            raise IndexWriteError(
                f"generation {number} is committed and current, but syncing {self.path} failed "
                f"({exc.strerror or exc}): it may not survive a power loss"
            ) from exc
        # A from-scratch build (no `previous`: `--rebuild`, a first build, an unreadable or
        # old-format index) keeps no predecessor: nothing of it is shared or wanted. An update
        # keeps the one before it. A leased generation is kept either way (its readers go
        # on) and collected by a later commit once released.
        keep = KEEP_GENERATIONS if previous is not None else 1
        self.collect(keep_from=number - keep + 1, background=True)
        return Generation(number, final, manifest)

    def point_manifest_at(self, number: int, extra: dict[str, Any]) -> None:
        """Make an existing, verified generation current again (used by repair)."""
        manifest = {**extra, "format_version": FORMAT_VERSION, "generation": number,
                    "dir": f"gen-{number:06d}", "committed_at": time.time()}  # fmt: skip
        write_sealed_atomic(self.path / MANIFEST, "manifest", sealed.dumps_json(manifest))

    def abort(self, tmp: Path) -> None:
        shutil.rmtree(tmp, ignore_errors=True)

    def remove_leftovers(self) -> list[str]:
        """Delete half-written generations and manifests of runs that died (their writer lock
        is gone, since we hold it now). Returns what was removed."""
        removed = []
        for child in self.path.glob("gen-*.tmp-*"):
            shutil.rmtree(child, ignore_errors=True)
            removed.append(child.name)
        for child in self.path.glob("*.json.tmp-*"):  # the manifest's and scan state's
            child.unlink(missing_ok=True)
            removed.append(child.name)
        for child in self.path.glob(f"{TRASH}*"):  # collected, not yet deleted
            if _trash_pid(child.name) == os.getpid():
                continue  # this process's deleter is on it (a long-running writer's last commit)
            shutil.rmtree(child, ignore_errors=True)
            removed.append(child.name)
        return removed

    def collect(
        self, keep_from: int, protect: int | None = None, background: bool = False
    ) -> list[int]:
        """Delete generations older than `keep_from` that no reader leases (and never the
        current one, `protect`). Returns the numbers deleted. `background`: each is renamed
        to `trash-*` at once (so it is no longer a generation) and its files are deleted by a
        background thread; a trash directory left by a killed process is removed by the next
        writer (`remove_leftovers`)."""
        deleted = []
        for number in self.generations():
            if number >= keep_from or number == protect:
                continue
            name = f"gen-{number:06d}"
            if self._delete_unleased(name, background):
                deleted.append(number)
        leases = self.path / LEASES
        if leases.is_dir():
            for lease in leases.iterdir():
                if not (self.path / lease.name).exists():
                    self._delete_unleased(lease.name)
        return deleted

    def _delete_unleased(self, name: str, background: bool = False) -> bool:
        lease_path = self.path / LEASES / name
        try:
            (self.path / LEASES).mkdir(exist_ok=True)
            fd = os.open(lease_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            return False
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False  # a reader still uses it: a later commit collects it
            # the directory goes first, the lease file last: a reader that locks the lease
            # file afterwards finds the directory gone and reads the manifest again
            if background and (self.path / name).is_dir():
                trash = self.path / f"{TRASH}{name}-{os.getpid()}-{time.monotonic_ns()}"
                FILES.replace(self.path / name, trash)
                trash_pool().submit(shutil.rmtree, trash, True)
            else:
                FILES.remove_tree(self.path / name)
            lease_path.unlink(missing_ok=True)
            return True
        finally:
            os.close(fd)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def _trash_pid(name: str) -> int | None:
    """The pid of the process that collected a `trash-<generation>-<pid>-<ns>` directory."""
    parts = name.split("-")
    return int(parts[-2]) if len(parts) >= 3 and parts[-2].isdigit() else None


def _old_manifest(path: Path) -> bool:
    """Is `path` a plain-JSON manifest of format 1?"""
    try:
        data = json.loads(path.read_bytes()[: 1 << 20])
        return isinstance(data, dict) and int(data.get("format_version", 0)) < MIN_FORMAT_VERSION
    except (OSError, ValueError, TypeError):
        return False
