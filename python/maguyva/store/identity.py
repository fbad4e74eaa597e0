"""A file's identity, as the caches of immutable index files key by it, and the check that
lets an entry decoded from one generation's file serve another generation.

Generations are immutable and hard-link the files an update did not change, so a file of
the new generation with the identity (device, inode, size, mtime) of one decoded from the
old generation is usually that very file. Not always: once the old generation is collected
its inodes are free, and the file system hands them to the next files written (ext4 does at
once); a new file of equal size and mtime (timestamps are coarse: a clock tick, a second on
some file systems; or copied with `os.utime`) then has the old identity and other bytes. So
an entry remembers the path it was decoded from, and serves another path only while that
path still names the same inode: two live links of one file are the same bytes."""

from __future__ import annotations

import os
from pathlib import Path

Identity = tuple[int, int, int, int]


def identity(path: Path | str) -> Identity:
    """(device, inode, size, mtime_ns) of `path` (one `stat`); OSError when it is gone."""
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def may_serve(source: Path | str, path: Path | str, key: Identity) -> bool:
    """May an entry decoded from `source`, whose identity was `key`, serve `path` (whose
    identity is `key` now)? Yes for the same path (generation directories are never
    rewritten), or while `source` still has that identity: both are then links of one live
    file. A source gone proves nothing (its inode may be a new file's): decode again."""
    if os.fspath(source) == os.fspath(path):
        return True
    try:
        return identity(source) == key
    except OSError:
        return False
