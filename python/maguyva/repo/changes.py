"""Change detection: which files were added, modified, deleted or renamed since the last index.

The previous generation records, per indexed (and per skipped) file, its size, mtime and content
digest, and the mtime of every directory the walker enters (those that hold one, and every
non-ignored directory below them: `IgnoreRules` decides with the walker's rules) and of the
ignore files in them. A check then costs one `stat` per file and per directory (with `hints`,
the watcher's event paths, only those):

- no directory and no ignore file changed: the file set can only change by content, so only the
  files whose size or mtime moved are re-read, re-classified (binary, too large, too many
  trigrams: the walker's rules) and re-hashed;
- a directory or an ignore file changed: files may have appeared or vanished, so the Rust walker
  lists the tree again (a `git checkout` therefore costs one walk, not one per file).

A file whose stat changed but whose digest did not (a `touch`, a save without edits, a branch
switch and back) is unchanged. The digest is git's blob id (SHA-1 of `blob <size>\\0<bytes>`):
in a git repository the ids of files that git's index records as unchanged (its stat data,
`git.git_digests`) are read from it instead of hashing the files; elsewhere they are computed. Renames are a deletion and an
addition with the same digest. Files modified within the filesystem's timestamp granularity of a
check are "racy" (as in git) and re-hashed on the next check even when their stat looks equal.
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from maguyva.errors import PathEscapeError
from maguyva.model import SourceFile
from maguyva.repo import large
from maguyva.repo.git import git_digests
from maguyva.repo.ignore import IgnoreRules
from maguyva.repo.languages import EXTENSIONS
from maguyva.repo.reader import SpecialFileError, read_bytes
from maguyva.repo.walk import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_TRIGRAMS, walk_repository

IGNORE_FILES = (".gitignore", ".maguyvaignore")
RACY_NS = 2_000_000_000  # coarse filesystems (2 s FAT, 1 s ext3) and clock skew
GIT_THRESHOLD = 64
"""Below this many files to hash, hashing them is cheaper than asking git."""


def _language(path: str) -> str | None:
    """`languages.detect_language` without building a path object (it runs for every file of
    the repository on every update): the suffix as `PurePosixPath.suffix` defines it."""
    name = path[path.rfind("/") + 1 :]
    dot = name.rfind(".")
    return EXTENSIONS.get(name[dot:].lower()) if 0 < dot < len(name) - 1 else None


@dataclass(slots=True)
class RepoState:
    """What one generation saw of the working tree (persisted in `files.json`)."""

    files: dict[str, list[Any]] = field(default_factory=dict)  # path -> [size, mtime_ns, digest]
    skipped: dict[str, list[Any]] = field(default_factory=dict)  # path -> [size, mtime, reason]
    dirs: dict[str, int] = field(default_factory=dict)  # dir ("" = root) -> mtime_ns
    ignores: dict[str, list[int]] = field(default_factory=dict)  # ignore file -> [size, mtime]
    fingerprint: str = ""
    scanned_at_ns: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"files": self.files, "skipped": self.skipped, "dirs": self.dirs,
                "ignores": self.ignores, "fingerprint": self.fingerprint,
                "scanned_at_ns": self.scanned_at_ns}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RepoState:
        return cls(data["files"], data["skipped"], data["dirs"], data["ignores"],
                   data["fingerprint"], data["scanned_at_ns"])  # fmt: skip

    def source_files(self) -> list[SourceFile]:
        return [SourceFile(p, s[0], s[1], _language(p)) for p, s in sorted(self.files.items())]

    def skip_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for _size, _mtime, reason in self.skipped.values():
            counts[reason] = counts.get(reason, 0) + 1
        return counts


@dataclass(slots=True)
class ChangeSet:
    """The difference between two states. `renamed` pairs are (old, new) with equal content;
    they appear in neither `added` nor `deleted`."""

    added: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)
    walked: bool = False  # the tree was walked again (a directory or ignore file changed)
    reason: str = ""  # why everything is new, for a first or a forced full build
    hashed: int = 0  # files whose content was read to compute a digest

    @property
    def empty(self) -> bool:
        return not (self.added or self.modified or self.deleted or self.renamed)

    def touched_paths(self) -> set[str]:
        """Paths whose extraction must be computed again (new content or a new path)."""
        return {*self.added, *self.modified, *(new for _old, new in self.renamed)}

    def summary(self) -> dict[str, Any]:
        return {"added": len(self.added), "modified": len(self.modified),
                "deleted": len(self.deleted), "renamed": len(self.renamed),
                "walked": self.walked, "hashed": self.hashed,
                **({"reason": self.reason} if self.reason else {})}  # fmt: skip


def blob_digest(data: bytes) -> str:
    """Git's blob id of `data`."""
    h = hashlib.sha1(b"blob %d\0" % len(data), usedforsecurity=False)
    h.update(data)
    return h.hexdigest()


def fingerprint(config: dict[str, Any]) -> str:
    """What, besides file content, decides the indexed file set: a change means a full walk."""
    keys = (
        "max_file_bytes",
        "allow_large",
        "follow_symlinks",
        "max_trigrams",
        "hard_max_file_bytes",
    )
    return repr([(k, config.get(k)) for k in keys])


def estimate_distinct_trigrams(data: bytes) -> int:
    """The walker's estimate (rust/src/walk.rs), vectorised: linear counting of ASCII-folded
    trigrams over a 2^17-bit map. Must agree with the Rust code bit for bit."""
    import numpy as np  # here, not at the top: a search imports this module and needs no numpy

    bits = 1 << 17
    raw = np.frombuffer(data, dtype=np.uint8)
    folded = np.where((raw >= 65) & (raw <= 90), raw + 32, raw).astype(np.uint32)
    packed = (folded[:-2] << 16) | (folded[1:-1] << 8) | folded[2:]
    h = ((packed * np.uint32(0x9E3779B1)) >> np.uint32(15)) & np.uint32(bits - 1)
    set_bits = int(np.unique(h).size)
    zero = max(float(bits - set_bits), 1.0) / bits
    return int(-bits * np.log(zero))


def classify(rel: str, size: int, data: bytes | None, config: dict[str, Any]) -> str | None:
    """The walker's skip reason for a file's content, or None when it is indexable."""
    max_bytes = config.get("max_file_bytes", DEFAULT_MAX_FILE_BYTES)
    allow = config.get("allow_large") or []
    if isinstance(allow, str):
        allow = [allow]
    if size > max_bytes and not any(fnmatch.fnmatchcase(rel, g) for g in allow):
        if not large.admits(rel, size, config):
            return "too_large"
        if data is None:
            return "unreadable"
        return "binary" if b"\0" in data else None  # no trigram test: see repo/large.py
    if data is None:
        return "unreadable"
    if b"\0" in data:
        return "binary"
    max_trigrams = config.get("max_trigrams", DEFAULT_MAX_TRIGRAMS)
    if len(data) > max_trigrams + 2 and estimate_distinct_trigrams(data) > max_trigrams:
        return "too_many_trigrams"
    return None


def _stat(path: Path | str) -> os.stat_result | None:
    try:
        return os.stat(path, follow_symlinks=False)
    except OSError:
        return None


def _dirs_of(root: Path, paths: list[str]) -> dict[str, int]:
    """The directories the walker enters, with mtimes: every ancestor of `paths` (indexed and
    skipped files) and every non-hidden directory below them that the ignore rules do not
    exclude. A directory that holds no indexed file (only ignored ones, or none) is recorded
    with its whole non-ignored subtree, so a file created anywhere in it is noticed; an ignored
    tree (`node_modules/`, `build/`) is neither recorded nor listed."""
    dirs: set[str] = {""}
    for p in paths:
        parent = p.rpartition("/")[0]
        while parent not in dirs:
            dirs.add(parent)
            parent = parent.rpartition("/")[0]
    rules = IgnoreRules(root)
    out: dict[str, int] = {}
    stack = sorted(dirs)
    while stack:
        d = stack.pop()
        if d in out:
            continue
        base = root / d if d else root
        try:
            st = base.stat()
            subdirs = []
            with os.scandir(base) as it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
                        subdirs.append(f"{d}/{entry.name}" if d else entry.name)
        except OSError:
            continue
        out[d] = st.st_mtime_ns
        for sub in subdirs:
            if sub not in dirs and sub not in out and not rules.ignored_dir(sub):
                stack.append(sub)
    return out


def _ignores_of(root: Path, dirs: dict[str, int]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    candidates = [f"{d}/{n}" if d else n for d in dirs for n in IGNORE_FILES]
    candidates.append(".git/info/exclude")
    for rel in candidates:
        st = _stat(root / rel)
        if st is not None:
            out[rel] = [st.st_size, st.st_mtime_ns]
    return out


def scan(
    root: Path,
    config: dict[str, Any],
    previous: RepoState | None,
    *,
    force_walk: bool = False,
    hints: Iterable[str] | None = None,
) -> tuple[RepoState, ChangeSet]:
    """Compare the working tree with `previous`; returns the new state and the changes.

    `hints` (paths relative to `root`, files or directories) are what OS events named since
    the previous check (`maguyva watch`): only they, their directories and the racily clean
    files are statted, the rest of `previous` is taken as it is. None: every recorded file and
    directory is statted (the CLI, and the watcher's periodic reconciliation)."""
    started_ns = time.time_ns()
    fp = fingerprint(config)
    changes = ChangeSet()
    if previous is None or previous.fingerprint != fp:
        changes.reason = "first build" if previous is None else "walk settings changed"
        previous_files: dict[str, list[Any]] = {}
    else:
        previous_files = previous.files
    need_walk = force_walk or previous is None or previous.fingerprint != fp
    hinted = _hinted(previous, hints) if hints is not None and previous is not None else None
    if not need_walk and previous is not None:
        need_walk = _layout_changed(root, previous, hinted)

    state = RepoState(fingerprint=fp, scanned_at_ns=started_ns)
    racy_after = previous.scanned_at_ns - RACY_NS if previous else 0
    to_hash: list[str] = []
    if need_walk:
        to_hash = _walk(root, config, previous_files, racy_after, started_ns, state, changes)
    else:
        assert previous is not None
        _restat(root, config, previous, hinted, racy_after, state, changes)

    _fill_digests(root, state, to_hash, changes)
    _diff(previous_files, state.files, changes)
    return state, changes


def _walk(root: Path, config: dict[str, Any], previous_files: dict[str, list[Any]],
          racy_after: int, started_ns: int, state: RepoState, changes: ChangeSet) -> list[str]:  # fmt: skip
    """Fill `state` from a walk of the tree: a file whose size and mtime did not move (and is
    not racy) keeps its digest; the others are returned, to be hashed."""
    to_hash: list[str] = []
    changes.walked = True
    walked = walk_repository(root, config)
    skipped_reasons = dict(walked.skipped_files)
    for f in walked.files:
        old = previous_files.get(f.path)
        if old and old[0] == f.size and old[1] == f.mtime_ns and f.mtime_ns < racy_after:
            state.files[f.path] = [f.size, f.mtime_ns, old[2]]
        else:
            state.files[f.path] = [f.size, f.mtime_ns, ""]
            to_hash.append(f.path)
    for path, reason in skipped_reasons.items():
        st = _stat(root / path)
        state.skipped[path] = [st.st_size if st else 0, st.st_mtime_ns if st else 0, reason]
    # A directory (or ignore file) modified within the racy window may have changed after
    # the walker listed it: its mtime is recorded as unknown (0), so the next check walks
    # again instead of trusting a listing older than the mtime it would compare with.
    racy_layout = started_ns - RACY_NS
    state.dirs = {d: (m if m < racy_layout else 0)
                  for d, m in _dirs_of(root, [*state.files, *state.skipped]).items()}  # fmt: skip
    state.ignores = {rel: [size, m if m < racy_layout else 0]
                     for rel, (size, m) in _ignores_of(root, state.dirs).items()}  # fmt: skip
    return to_hash


def _restat(root: Path, config: dict[str, Any], previous: RepoState, hinted: _Hinted | None,
            racy_after: int, state: RepoState, changes: ChangeSet) -> None:  # fmt: skip
    """Fill `state` without a walk (the layout did not change): stat the recorded files (with
    `hinted`, only those and the racy ones), read and hash again those whose stat moved."""
    state.dirs = dict(previous.dirs)
    state.ignores = dict(previous.ignores)
    if hinted is not None:  # unhinted records stay as they are (racy ones are re-checked)
        check = hinted.files | {p for p, r in previous.files.items() if r[1] >= racy_after}
        state.files = {p: r for p, r in previous.files.items() if p not in check}
        state.skipped = {p: r for p, r in previous.skipped.items() if p not in check}
        records = [(p, r) for p in sorted(check)
                   if (r := previous.files.get(p) or previous.skipped.get(p))]  # fmt: skip
    else:
        records = [*previous.files.items(), *previous.skipped.items()]
    top = os.path.join(root, "")  # string joins: a path object per file cost half the pass
    for path, (size, mtime, *rest) in records:
        st = _stat(top + path)
        if st is None:
            continue  # deleted (its directory's mtime did not move: e.g. replaced by rename)
        same = st.st_size == size and st.st_mtime_ns == mtime and mtime < racy_after
        if same and path in previous.files:
            state.files[path] = [size, mtime, rest[0]]
            continue
        if same:
            state.skipped[path] = [size, mtime, rest[0]]
            continue
        data = _read(root, path, st.st_size, config)
        reason = data if isinstance(data, str) else classify(path, st.st_size, data, config)
        if reason is not None:
            state.skipped[path] = [st.st_size, st.st_mtime_ns, reason]
        else:
            assert data is not None
            state.files[path] = [st.st_size, st.st_mtime_ns, blob_digest(data)]
            changes.hashed += 1


def _read(root: Path, rel: str, size: int, config: dict[str, Any]) -> bytes | str:
    """A changed file's content, or the walker's skip reason when it cannot be read (a special
    file, a link that leaves the root or, unless followed, any link)."""
    max_bytes = config.get("max_file_bytes", DEFAULT_MAX_FILE_BYTES)
    if (
        size > max_bytes
        and not config.get("allow_large")
        and size > large.hard_limit(config)  # below it, `classify` decides (repo/large.py)
    ):
        return b""
    try:
        return read_bytes(root, rel, follow_symlinks=bool(config.get("follow_symlinks")))
    except SpecialFileError:
        return "not_regular"
    except PathEscapeError:
        return "outside_root"
    except OSError as exc:
        return "not_regular" if exc.errno == errno.ELOOP else "unreadable"


@dataclass(slots=True)
class _Hinted:
    """What a set of event paths asks the stat pass to look at."""

    files: set[str]  # known (indexed or skipped) files named by an event
    dirs: set[str]  # recorded directories named by an event or holding a named path
    ignores: set[str]  # ignore files named by an event (known or new)


def _hinted(previous: RepoState, hints: Iterable[str]) -> _Hinted:
    out = _Hinted(set(), set(), set())
    for raw in hints:
        rel = raw.strip("/")
        if rel in previous.files or rel in previous.skipped:
            out.files.add(rel)
        if rel in previous.dirs:
            out.dirs.add(rel)
        parent, _, name = rel.rpartition("/")
        if parent in previous.dirs:
            out.dirs.add(parent)
        if name in IGNORE_FILES or rel == ".git/info/exclude":
            out.ignores.add(rel)
    return out


def _layout_changed(root: Path, previous: RepoState, hinted: _Hinted | None = None) -> bool:
    """Did any recorded directory or ignore file change (files may have come or gone)? With
    `hinted`, only the directories and ignore files the events named are looked at."""
    dirs = previous.dirs if hinted is None else {d: previous.dirs[d] for d in hinted.dirs}
    top = os.path.join(root, "")  # "root/": string joins, this runs for every directory
    for d, mtime in dirs.items():
        st = _stat(top + d if d else root)
        if st is None or st.st_mtime_ns != mtime:
            return True
    if hinted is not None:
        for rel in hinted.ignores:
            old = previous.ignores.get(rel)
            st = _stat(top + rel)
            if (st is None) != (old is None) or (
                st is not None and old is not None and [st.st_size, st.st_mtime_ns] != old
            ):
                return True
        return False
    for rel, (size, mtime) in previous.ignores.items():
        st = _stat(top + rel)
        if st is None or st.st_size != size or st.st_mtime_ns != mtime:
            return True
    for d in previous.dirs:  # an ignore file created where there was none
        for name in IGNORE_FILES:
            rel = f"{d}/{name}" if d else name
            if rel not in previous.ignores and _stat(top + rel) is not None:
                return True
    return False


def _fill_digests(root: Path, state: RepoState, paths: list[str], changes: ChangeSet) -> None:
    known = git_digests(root) if len(paths) > GIT_THRESHOLD else None
    for path in paths:
        digest = known.get(path) if known else None
        if digest is None:
            try:
                digest = blob_digest(read_bytes(root, path))
            except OSError:
                digest = "unreadable"
            changes.hashed += 1
        state.files[path][2] = digest


def _diff(old: dict[str, list[Any]], new: dict[str, list[Any]], changes: ChangeSet) -> None:
    added = [p for p in new if p not in old]
    deleted = [p for p in old if p not in new]
    changes.modified = sorted(p for p in new if p in old and new[p][2] != old[p][2])
    by_digest: dict[str, list[str]] = {}
    for p in sorted(deleted):
        by_digest.setdefault(old[p][2], []).append(p)
    still_added = []
    for p in sorted(added):
        olds = by_digest.get(new[p][2])
        if olds:
            changes.renamed.append((olds.pop(0), p))
        else:
            still_added.append(p)
    renamed_from = {o for o, _n in changes.renamed}
    changes.added = still_added
    changes.deleted = sorted(p for p in deleted if p not in renamed_from)


def is_stale(root: Path | str, path: str, record: list[Any] | None) -> bool:
    """Has `path` changed since it was indexed? Stat first; on a stat change, compare content
    digests so that a `touch` does not mark a result stale. `root` as a `str` (the engine
    keeps one) saves a `pathlib` conversion per result shown."""
    if record is None:
        return False
    st = _stat(os.path.join(root, path))  # a str join: this runs for every result shown
    return stale_given(root, path, record, None if st is None else (st.st_size, st.st_mtime_ns))


def stale_of(root: str, paths: list[str], states: dict[str, list[Any]]) -> dict[str, bool]:
    """`is_stale` of each of `paths` (`states`: the recorded states by path), their files
    stat'ed in one native call (`_core.lstat_states`, the GIL released): a common literal
    shows hundreds of files, and a Python `os.stat` per file was a visible share (issue 21)."""
    from maguyva import _core  # the native module, loaded by the engine anyway

    asked = [path for path in dict.fromkeys(paths) if states.get(path) is not None]
    stale = dict.fromkeys(paths, False)
    for path, state in zip(asked, _core.lstat_states(root, asked), strict=True):
        stale[path] = stale_given(root, path, states[path], state)
    return stale


def stale_given(
    root: Path | str, path: str, record: list[Any] | None, state: tuple[int, int] | None
) -> bool:
    """`is_stale` with the file's `(size, mtime_ns)` already taken (None: it could not be
    stat'ed), as `_core.lstat_states` takes them for every result of an answer at once."""
    if record is None:
        return False
    if state is None:
        return True
    if state[0] == record[0] and state[1] == record[1]:
        return False
    if state[0] != record[0] or len(record) < 3:
        return True
    try:
        return blob_digest(read_bytes(root, path)) != record[2]
    except OSError:
        return True
