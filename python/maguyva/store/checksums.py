"""A generation's CHECKSUMS table: the size and CRC-32 of every other file, written at commit
and checked by every reader open (shallow: sizes) and by fsck (deep: contents).

A file hard-linked from the previous generation keeps its recorded entry (generations are
immutable), and a file this process has just written whole brings its CRC along
(`remember_crc`), so a commit reads back only what it cannot know.
"""

from __future__ import annotations

import os
import threading
import zlib
from collections import OrderedDict
from pathlib import Path

from maguyva.errors import IndexVersionError, MaguyvaError
from maguyva.support import sealed

CHECKSUMS = "CHECKSUMS"


def _files_under(top: str) -> dict[str, os.DirEntry[str]]:
    """relative path -> directory entry of every file under `top` (scandir: the inode comes
    with the entry, no stat per file)."""
    out: dict[str, os.DirEntry[str]] = {}
    stack = [("", top)]
    while stack:
        prefix, path = stack.pop()
        try:
            entries = list(os.scandir(path))
        except FileNotFoundError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append((prefix + entry.name + "/", entry.path))
            else:
                out[prefix + entry.name] = entry
    return out


_WRITTEN_CRC: OrderedDict[tuple[int, int, int, int], int] = OrderedDict()
_WRITTEN_CRC_MAX = 64
_WRITTEN_CRC_LOCK = threading.Lock()


def _file_key(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def remember_crc(path: Path, crc: int) -> int:
    """Record the CRC-32 of a file this process has just written whole (computed from the
    bytes it wrote), so that the commit's checksum table takes it instead of reading the file
    back (~14 ms for a 10k-file tree's graph files). Keyed by the file's identity (device,
    inode, size, mtime): a file changed since is read as usual. Returns the file's size."""
    st = os.stat(path)
    with _WRITTEN_CRC_LOCK:
        _WRITTEN_CRC[_file_key(st)] = crc & 0xFFFFFFFF
        while len(_WRITTEN_CRC) > _WRITTEN_CRC_MAX:
            _WRITTEN_CRC.popitem(last=False)
    return st.st_size


def _written_crc(st: os.stat_result) -> int | None:
    with _WRITTEN_CRC_LOCK:
        return _WRITTEN_CRC.pop(_file_key(st), None)


def checksum_table(
    gen_dir: Path, previous: Path | None = None, linked: set[str] | None = None
) -> dict[str, list[int]]:
    """relative path -> [size, crc32] of every file of a generation directory except the table.
    A file hard-linked from the `previous` generation (same inode) keeps its recorded size and
    CRC instead of being read again: generations are immutable. Such files are added to
    `linked` when given (they are durable already: the commit need not fsync them). Only new
    files are statted and read."""
    known: dict[str, list[int]] = {}
    if previous is not None:
        try:
            known = sealed.read_packed_json(previous / CHECKSUMS, "checksums")
        except MaguyvaError:
            known = {}
    mine = _files_under(str(gen_dir))
    theirs = _files_under(str(previous)) if known and previous is not None else {}
    table: dict[str, list[int]] = {}
    for rel in sorted(mine):
        if rel == CHECKSUMS:
            continue
        entry = mine[rel]
        old = theirs.get(rel)
        if rel in known and old is not None and old.inode() == entry.inode():
            table[rel] = list(known[rel])
            if linked is not None:
                linked.add(rel)
            continue
        st = entry.stat(follow_symlinks=False)
        crc = _written_crc(st)
        table[rel] = [st.st_size, crc if crc is not None else checksum_table_one(Path(entry.path))]
    return table


def verify_generation(gen_dir: Path, deep: bool = True, prefix: str = "") -> list[str]:
    """Problems of one generation: missing, resized or (deep) damaged files, extra files.
    The shallow check only stats files (cheap enough for every reader open). `prefix`
    (e.g. `"text/"`) limits the check to the files under one directory."""
    try:
        table = sealed.read_packed_json(gen_dir / CHECKSUMS, "checksums")
    except IndexVersionError:  # newer, not damaged: the caller says so (`IndexDir.current`)
        raise
    except MaguyvaError as exc:
        return [str(exc)]
    except OSError as exc:
        return [f"{gen_dir / CHECKSUMS}: unreadable ({exc.strerror or exc})"]
    problems = []
    top = str(gen_dir)
    if prefix:
        table = {rel: entry for rel, entry in table.items() if rel.startswith(prefix)}
    for rel, (size, crc) in sorted(table.items()):
        try:
            actual = os.stat(os.path.join(top, rel)).st_size
        except OSError:
            problems.append(f"{gen_dir / rel}: missing")
            continue
        if actual != size:
            problems.append(f"{gen_dir / rel}: size {actual}, expected {size} (truncated or "
                            "extended)")  # fmt: skip
        elif deep:
            try:
                actual_crc = checksum_table_one(gen_dir / rel)
            except OSError as exc:  # unreadable: a finding, not a crash of fsck
                problems.append(f"{gen_dir / rel}: unreadable ({exc.strerror or exc})")
                continue
            if actual_crc != crc:
                problems.append(f"{gen_dir / rel}: checksum mismatch (the file is damaged)")
    if deep:
        for dirpath, _dirnames, filenames in os.walk(gen_dir / prefix if prefix else gen_dir):
            for name in filenames:
                rel = Path(dirpath, name).relative_to(gen_dir).as_posix()
                if rel != CHECKSUMS and rel not in table:
                    problems.append(f"{gen_dir / rel}: not part of the generation")
    return problems


def checksum_table_one(path: Path) -> int:
    return _size_and_crc(str(path))[1]


def _size_and_crc(path: str) -> tuple[int, int]:
    """A file's size and CRC-32 (zlib's), read once: in Rust (crc32fast, GIL released) when
    the native module has it, else with zlib."""
    if _crc32_file is not None:
        size, crc = _crc32_file(path)
        return int(size), int(crc)
    crc, size = 0, 0
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            crc = zlib.crc32(block, crc)
            size += len(block)
    return size, crc & 0xFFFFFFFF


try:
    from maguyva._core import crc32_file as _crc32_file
except ImportError:  # a native module built before it (the zlib fallback gives the same CRC)
    _crc32_file = None
