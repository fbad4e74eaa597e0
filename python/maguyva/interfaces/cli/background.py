"""`maguyva index --background`: return once the index answers, leave the embedding running.

A large build commits text, structural and graph first and embeds after
(`maguyva.build.follow`, never gate). In the background, the build runs in a detached process
(its own session: closing the terminal does not stop it; its output in `background.log` in the
index directory), and this process waits only for that build's first commit, read from the
progress file (`maguyva.build.progress.ProgressFile`), or for its end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from maguyva.build.progress import read_progress
from maguyva.errors import MaguyvaError

LOG_FILE = "background.log"
POLL_S = 0.05


def start(index_dir: Path, argv: list[str]) -> subprocess.Popen[bytes]:
    """`maguyva index ARGV` in a detached process writing to the index directory's log."""
    index_dir.mkdir(parents=True, exist_ok=True)
    with open(index_dir / LOG_FILE, "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "maguyva", "index", *argv],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
        )  # fmt: skip


def wait_searchable(index_dir: Path, child: subprocess.Popen[bytes]) -> dict[str, Any] | None:
    """The child build's progress once it committed a generation (searchable) or ended;
    None when it ended without recording any (it failed before taking the writer lock)."""
    while True:
        state = read_progress(index_dir)
        mine = state is not None and state.get("pid") == child.pid
        if mine and (state.get("generation") is not None or state.get("state") != "running"):
            return state
        if child.poll() is not None:
            state = read_progress(index_dir)
            return state if state is not None and state.get("pid") == child.pid else None
        time.sleep(POLL_S)


def last_error(index_dir: Path) -> str:
    """The last `maguyva: error: ...` line of the log (what the child said when it failed)."""
    try:
        lines = (index_dir / LOG_FILE).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "the background build failed"
    errors = [line for line in lines if line.startswith("maguyva: error:")]
    found = errors[-1] if errors else (lines[-1] if lines else "the background build failed")
    return found.removeprefix("maguyva: error: ")


def run(index_dir: Path, argv: list[str], as_json: bool, quiet: bool) -> int:
    """Start the build, wait until it answers, say where it continues; the exit code."""
    from maguyva.modalities.semantic.coverage import describe

    child = start(index_dir, argv)
    state = wait_searchable(index_dir, child)
    running = child.poll() is None
    if not running and child.returncode != 0:
        raise MaguyvaError(last_error(index_dir))
    generation = None if state is None else state.get("generation")
    semantic = None if state is None else state.get("semantic")
    if as_json:
        print(json.dumps({"generation": generation, "pid": child.pid if running else None,
                          "log": str(index_dir / LOG_FILE), "semantic": semantic}))  # fmt: skip
        return 0
    if quiet:
        return 0
    if generation is None:
        print(f"index {index_dir} is up to date")
        return 0
    line = f"searchable: generation {generation} -> {index_dir}"
    print(line + (f"; {describe(semantic)}" if semantic else ""))
    if running:
        print(f"embedding continues in the background (pid {child.pid}, log "
              f"{index_dir / LOG_FILE}); `maguyva status` shows its progress")  # fmt: skip
    return 0


def child_argv(root: Path, args: Any) -> list[str]:
    """The `maguyva index` arguments of the background build (the same build, in front)."""
    argv = [os.fspath(root)]
    if args.index_dir:
        argv += ["--index-dir", os.fspath(args.index_dir)]
    if args.modalities:
        argv += ["--modalities", args.modalities]
    if getattr(args, "memory", None):
        argv += ["--memory", args.memory]
    for text in getattr(args, "set", None) or ():
        argv += ["--set", text]
    argv += [flag for flag, on in (("--rebuild", args.rebuild), ("--wait", args.wait)) if on]
    return argv
