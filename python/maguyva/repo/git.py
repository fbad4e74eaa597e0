"""The repository's current git commit, recorded by every build: read from `.git/` when it
can be, asking git only when it must."""

from __future__ import annotations

import contextlib
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


def ask_git(root: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True, text=True, check=True, timeout=10,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None
