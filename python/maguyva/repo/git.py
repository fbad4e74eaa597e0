"""The repository's current git commit, recorded by every build: read from `.git/` when it
can be, asking git only when it must; and the blob ids git already knows (`git_digests`).

A repository's own `.git/config` is the repository's, not the user's: one unpacked from an
archive (which the user owns, so `safe.directory` does not stop it) can name programs that
git runs for read-only commands: `core.fsmonitor` runs for `ls-files`, a clean filter
(`filter.<name>.clean` or `.process`, chosen by `.gitattributes`) for `diff-files` on a racily
clean entry, and a filter `process` that never answers hangs it. So every git command here
runs through `run_git`: fsmonitor and hooks pinned off on the command line (which outranks
every config file), no optional locks, no prompt, no pager; and only commands that never read
file content (`rev-parse`, `ls-files`): whether a working file still matches git's index is
decided here from the index's stat data, never by `diff-files`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import subprocess
from pathlib import Path

from maguyva.repo.reader import SpecialFileError, read_regular


def git_commit(root: Path) -> str | None:
    """`git rev-parse HEAD`, read from `.git/` when it is a plain repository (HEAD naming a
    loose or packed ref, or a detached commit): every update records it, a process costs
    several milliseconds. Anything else (a worktree's `.git` file, no ref yet) asks git."""
    top = next((d for d in (root, *root.parents) if (d / ".git").exists()), None)
    if top is None:
        return None  # not in a git repository
    git = top / ".git"
    if not git.is_dir():
        return ask_git(root)
    try:
        head = read_regular(git / "HEAD").decode().strip()
        if not head.startswith("ref: "):
            return head if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", head) else ask_git(root)
        ref = head[5:].strip()
        if ".." in ref or not ref.startswith("refs/"):
            return ask_git(root)
        try:
            commit = read_regular(git / ref).decode().strip()
        except FileNotFoundError:
            commit = ""
            with contextlib.suppress(FileNotFoundError):
                for line in read_regular(git / "packed-refs").decode().splitlines():
                    sha, _, name = line.partition(" ")
                    if name == ref:
                        commit = sha
                        break
        if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", commit):
            return commit
    except SpecialFileError:
        return None  # a FIFO for HEAD would block git as well: no commit, and no wait
    except (OSError, UnicodeDecodeError):
        pass
    return ask_git(root)


SAFE_OPTIONS = ("--no-optional-locks", "-c", "core.fsmonitor=false", "-c",
                "core.hooksPath=/dev/null", "-c", "core.untrackedCache=false")  # fmt: skip
"""Before the subcommand: what a repository's config may not turn on for us."""
_SAFE_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "GIT_PAGER": "cat",
             "PAGER": "cat", "GIT_ASKPASS": "", "SSH_ASKPASS": ""}  # fmt: skip


def run_git(root: Path | None, *args: str, timeout: float = 60) -> bytes | None:
    """`git [-C root] <safe options> args...`: its stdout, or None when git fails, is missing
    or takes longer than `timeout` seconds (see the module docstring for what is pinned)."""
    where = ["-C", str(root)] if root is not None else []
    try:
        return subprocess.run(
            ["git", *where, *SAFE_OPTIONS, *args], capture_output=True, check=True,
            timeout=timeout, stdin=subprocess.DEVNULL, env={**os.environ, **_SAFE_ENV},
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None


def ask_git(root: Path) -> str | None:
    out = run_git(root, "rev-parse", "HEAD", timeout=10)
    return out.decode(errors="replace").strip() or None if out is not None else None


_DEBUG = re.compile(
    rb"  ctime: (\d+):(\d+)\n  mtime: (\d+):(\d+)\n  dev: \d+\tino: (\d+)\n"
    rb"  uid: \d+\tgid: \d+\n  size: (\d+)\tflags: [0-9a-f]+\n"
)
_U32 = (1 << 32) - 1


def git_digests(root: Path) -> dict[str, str] | None:
    """Blob ids of the tracked files under `root` (relative to it) whose working copy git's
    index says is unchanged; None outside a git repository.

    Unchanged means what git's own stat check means, without reading content: ctime, mtime
    (seconds and nanoseconds), inode and size equal to the index's record (git keeps them
    truncated to 32 bits), and the file older than the index (a file modified in the same
    instant the index was written is "racy": hashed by the caller). An archive unpacked with
    its `.git` never matches (its ctimes and inodes are new), so its files are hashed."""
    listed = run_git(root, "ls-files", "-s", "--debug", "-z")
    index = run_git(root, "rev-parse", "--git-path", "index", timeout=10)
    if listed is None or index is None:
        return None
    try:
        index_path = Path(index.decode().strip())
        index_ns = (index_path if index_path.is_absolute() else root / index_path).stat()
    except (OSError, UnicodeDecodeError):
        return None
    out: dict[str, str] = {}
    parts = listed.split(b"\0")
    for record, after in itertools.pairwise(parts):
        stats = _DEBUG.match(after)
        if record.startswith(b"  ctime"):  # the stat lines of the previous entry, then this one
            record = _DEBUG.sub(b"", record, count=1)
        meta, _, path = record.partition(b"\t")
        fields = meta.split(b" ")  # mode, blob id, stage: regular files of stage 0 only
        if stats is None or len(fields) != 3 or fields[2] != b"0":
            continue
        if not fields[0].startswith(b"100"):
            continue
        rel = path.decode("utf-8", "surrogateescape")
        try:
            st = os.lstat(os.path.join(root, rel))
        except OSError:
            continue
        c_s, c_ns, m_s, m_ns, ino, size = (int(g) for g in stats.groups())
        if (st.st_ctime_ns // 10**9 & _U32, st.st_ctime_ns % 10**9) != (c_s, c_ns):
            continue
        if (st.st_mtime_ns // 10**9 & _U32, st.st_mtime_ns % 10**9) != (m_s, m_ns):
            continue
        if st.st_ino & _U32 != ino or st.st_size & _U32 != size:
            continue
        if st.st_mtime_ns >= index_ns.st_mtime_ns:
            continue  # racy: modified as the index was written; git would read the content
        out[rel] = fields[1].decode()
    return out
