"""A fault-injecting file layer for tests: fail the Nth write, fsync or rename, run out of disk,
or die by SIGKILL at the Nth operation.

Every durable step of a commit (writing the indexer's files, fsyncing each file and directory of
a generation, the renames) goes through `store.FILES`; `install()` swaps in a `FaultyFiles`.
Tests run as root in CI, so permission tricks cannot make writes fail: this layer can (in the
spirit of SQLite's test VFS and Lucene's MockDirectoryWrapper).

This is test code: the package never installs it, and no environment variable can (an
environment variable that SIGKILLs a production process is a trap). A child process (the kill -9
tests) gets its faults from its command line instead: `child(spec, code)` starts
`tests/support/faulty_run.py`, which installs `parse(spec)` and then runs the code or the
`maguyva` CLI. Specs: `"kill@17"` (SIGKILL itself at the 17th operation), `"fail:fsync@3"`,
`"fail:any@5"`, `"enospc@4096"` (the disk fills after 4096 bytes), or `"record"`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from maguyva.store import generations as store

RUNNER = Path(__file__).with_name("faulty_run.py")
OPS = ("write", "fsync", "rename", "mkdir", "remove")


class FaultyFiles(store.OsFiles):
    """`store.OsFiles` with faults. Operations are counted from 1, per kind and in total."""

    def __init__(
        self,
        *,
        fail_op: str | None = None,
        fail_at: int | None = None,
        kill_at: int | None = None,
        disk_bytes: int | None = None,
    ) -> None:
        if fail_op is not None and fail_op not in (*OPS, "any"):
            raise ValueError(f"unknown operation {fail_op!r}")
        self.fail_op = fail_op
        self.fail_at = fail_at
        self.kill_at = kill_at
        self.disk_bytes = disk_bytes
        self.counts: dict[str, int] = dict.fromkeys(OPS, 0)
        self.total = 0
        self.written = 0
        self.log: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def _step(self, op: str, path: Path | str) -> None:
        with self._lock:  # the commit fsyncs from several threads (store.fsync_all)
            self.counts[op] += 1
            self.total += 1
            self.log.append((op, str(path)))
            total, count = self.total, self.counts[op]
        if self.kill_at is not None and total >= self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        if self.fail_at is not None and (
            (self.fail_op == "any" and total == self.fail_at)
            or (self.fail_op == op and count == self.fail_at)
        ):
            raise OSError(errno.EIO, f"injected I/O error ({op} #{self.fail_at})", str(path))

    def write_bytes(self, path: Path, data: bytes) -> None:
        self._step("write", path)
        if self.disk_bytes is not None and self.written + len(data) > self.disk_bytes:
            room = max(0, self.disk_bytes - self.written)
            with open(path, "wb") as fh:  # a full disk leaves a partial file behind
                fh.write(data[:room])
            self.written = self.disk_bytes
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        self.written += len(data)
        super().write_bytes(path, data)

    def fsync_file(self, path: Path) -> None:
        self._step("fsync", path)
        super().fsync_file(path)

    def fsync_dir(self, path: Path) -> None:
        self._step("fsync", path)
        super().fsync_dir(path)

    def replace(self, src: Path, dst: Path) -> None:
        self._step("rename", dst)
        super().replace(src, dst)

    def mkdir(self, path: Path) -> None:
        self._step("mkdir", path)
        super().mkdir(path)

    def remove_tree(self, path: Path) -> None:
        self._step("remove", path)
        super().remove_tree(path)


def parse(spec: str) -> FaultyFiles:
    """A layer from a fault spec (see the module doc)."""
    spec = spec.strip()
    try:
        if spec == "record":
            return FaultyFiles()
        if spec.startswith("kill@"):
            return FaultyFiles(kill_at=int(spec[5:]))
        if spec.startswith("enospc@"):
            return FaultyFiles(disk_bytes=int(spec[7:]))
        if spec.startswith("fail:"):
            op, _, n = spec[5:].partition("@")
            return FaultyFiles(fail_op=op, fail_at=int(n))
    except ValueError:
        pass
    raise ValueError(f"bad fault spec {spec!r}")


def command(spec: str, *args: str, code: str | None = None) -> list[str]:
    """The argv of a child that runs `code` (with `args` as `sys.argv[1:]`) or, without code,
    the `maguyva` CLI with `args`, with the faults of `spec` installed."""
    head = [sys.executable, str(RUNNER), spec]
    return [*head, "-c", code, *args] if code is not None else [*head, "cli", *args]


def child(spec: str, *args: str, code: str | None = None, **popen: Any) -> subprocess.Popen:
    """Start `command(spec, *args, code=code)`; stdout and stderr piped unless given."""
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen(command(spec, *args, code=code), **popen)


def run(
    spec: str, *args: str, code: str | None = None, timeout: float = 120
) -> tuple[int, str, str]:
    """Run a child to its end: (returncode, stdout, stderr) as text."""
    proc = child(spec, *args, code=code, text=True)
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


@contextlib.contextmanager
def install(layer: store.OsFiles) -> Iterator[store.OsFiles]:
    """Use `layer` for every durable file operation inside the block."""
    saved = store.FILES
    store.FILES = layer
    try:
        yield layer
    finally:
        store.FILES = saved
