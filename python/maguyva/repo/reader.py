"""The one way Maguyva reads a file of the repository being indexed or answered about.

Two things can make a plain `open().read()` dangerous here: a special file (a FIFO blocks the
reader forever, a device may never end or act on being opened) and a path whose real location
is outside the root (a symlink, or a directory swapped for one after indexing). So a read:

1. `stat`s the path and refuses anything but a regular file before opening it (nothing is
   opened that is a FIFO, socket or device);
2. opens it with `O_NONBLOCK` (a FIFO swapped in after the `stat` cannot block the open) and
   `fstat`s the descriptor, refusing again if it is not a regular file;
3. checks the descriptor's real path (`/proc/self/fd`, else `realpath`) against the root with
   `paths.inside`, so even a followed symlink never reads outside the root.

Every refusal is a `MaguyvaError` with one line naming the path; callers that index turn it
into a skip reason, callers that answer show it.
"""

from __future__ import annotations

import functools
import os
import stat
from pathlib import Path

from maguyva.errors import MaguyvaError
from maguyva.repo.paths import escape_error, inside, resolve_root

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
_PROC_FD = Path("/proc/self/fd")


class SpecialFileError(MaguyvaError, OSError):
    """A repository path is a FIFO, socket, device or directory: never read."""


def file_kind(mode: int) -> str:
    """A short name for a file type, for messages and skip reasons."""
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISLNK, "a symlink"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def special_error(shown: str, mode: int) -> SpecialFileError:
    return SpecialFileError(f"{shown!r}: is {file_kind(mode)}, not a regular file; not read")


def _real_path(fd: int, path: str) -> str:
    try:
        return os.readlink(_PROC_FD / str(fd))
    except OSError:
        return os.path.realpath(path)


def read_bytes(
    root: str | os.PathLike[str],
    rel: str,
    *,
    follow_symlinks: bool = True,
    shown: str | None = None,
) -> bytes:
    """The content of the root-relative file `rel`, read safely (see the module docstring).

    `follow_symlinks=False` refuses a path whose last component is a symlink (the walker's
    default); a followed link must still end inside the root. Raises `SpecialFileError`,
    `PathEscapeError` (the same message as `paths.confine`) or `OSError` (missing, denied).
    """
    text = os.fspath(root)
    real_root = _real_root(text) if os.path.isabs(text) else str(resolve_root(text))
    path = os.path.join(real_root, rel)
    return read_regular(path, follow_symlinks=follow_symlinks, shown=rel if shown is None else shown,
                        root=real_root)  # fmt: skip


def read_regular(
    path: str | os.PathLike[str], *, follow_symlinks: bool = True, shown: str | None = None,
    root: str | None = None,
) -> bytes:  # fmt: skip
    """Read `path` only if it is a regular file, without ever blocking on a special one; with
    `root` (a real path), only if the opened file's real path is inside it."""
    path = os.fspath(path)
    shown = path if shown is None else shown
    st = os.stat(path, follow_symlinks=follow_symlinks)
    if not stat.S_ISREG(st.st_mode):
        raise special_error(shown, st.st_mode)
    flags = _FLAGS | (0 if follow_symlinks else getattr(os, "O_NOFOLLOW", 0))
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise special_error(shown, st.st_mode)
        if root is not None and not inside(root, _real_path(fd, path)):
            raise escape_error(shown)
        chunks = []
        while True:
            block = os.read(fd, max(st.st_size + 1, 1 << 16))
            if not block:
                break
            chunks.append(block)
        return b"".join(chunks)
    finally:
        os.close(fd)


@functools.lru_cache(maxsize=64)
def _real_root(root: str) -> str:
    """The root's real path, once per root (a read per file must not re-resolve it)."""
    return str(resolve_root(root))


def read_text(root: str | os.PathLike[str], rel: str, **kw: object) -> str:
    """`read_bytes` decoded as UTF-8, invalid bytes replaced (what the index stores)."""
    return read_bytes(root, rel, **kw).decode("utf-8", errors="replace")  # type: ignore[arg-type]
