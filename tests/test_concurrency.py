"""Readers in other processes search in a loop while a writer commits many generations: every
answer equals some generation's golden answer. Two writers: one writes, the other waits or is
told the index is busy."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from durability_support import answers, build, index_in_child, write_repo

from maguyva.errors import IndexBusyError
from maguyva.store.generations import IndexDir

READER = """
import json, signal, sys, time
sys.path.insert(0, sys.argv[2])
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
from pathlib import Path
from durability_support import answers
root, deadline = Path(sys.argv[1]), time.monotonic() + float(sys.argv[3])
seen, errors = [], []
while time.monotonic() < deadline and not stop:
    try:
        seen.append(answers(root))
        if len(seen) == 1:
            print("ready", flush=True)
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
print(json.dumps({"seen": seen, "errors": errors}))
"""


def _goldens(tmp_path_factory, variants) -> list[str]:
    out = []
    for variant in variants:
        root = tmp_path_factory.mktemp(f"golden{variant}")
        write_repo(root, variant)
        build(root)
        out.append(json.dumps(answers(root)))
    return out


def _readers_during_commits(tmp_path, tmp_path_factory, commits: int, readers: int) -> int:
    goldens = set(_goldens(tmp_path_factory, (0, 1, 2, 3)))
    root = tmp_path / "repo"
    root.mkdir()
    write_repo(root, 0)
    build(root)
    tests_dir = str(Path(__file__).parent)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", READER, str(root), tests_dir, "600"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(readers)
    ]
    try:
        for p in procs:  # every reader has answered once before the writer starts
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        for n in range(commits):
            write_repo(root, (n + 1) % 4)
            assert not build(root).noop
        for p in procs:  # let them run a little on the last generation, then stop them
            p.terminate()
        total = 0
        for p in procs:
            out, _err = p.communicate(timeout=60)
            if not out:
                continue  # terminated mid-print: nothing to check
            result = json.loads(out)
            assert result["errors"] == []
            for seen in result["seen"]:
                assert json.dumps(seen) in goldens, "a reader saw a mix of generations"
            total += len(result["seen"])
    finally:
        for p in procs:
            p.kill()
    return total


def test_readers_in_other_processes_during_commits(tmp_path, tmp_path_factory):
    searches = _readers_during_commits(tmp_path, tmp_path_factory, commits=8, readers=2)
    assert searches >= 4


@pytest.mark.slow
def test_readers_in_other_processes_during_many_commits(tmp_path, tmp_path_factory):
    searches = _readers_during_commits(tmp_path, tmp_path_factory, commits=100, readers=4)
    print(f"{searches} reader searches checked against the goldens")
    assert searches >= 100


def test_second_writer_waits_or_is_told_busy(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    write_repo(root, 0)
    build(root)
    index = IndexDir(root / ".maguyva")
    with index.writer_lock():
        with pytest.raises(IndexBusyError, match="being written by another process"):
            build(root)
        write_repo(root, 1)
        child = index_in_child(root)  # waits for the lock (wait_for_lock=True)
        time.sleep(1.0)
        assert child.poll() is None, "the second writer did not wait"
        generation = index.current().number
    _out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert index.current().number == generation + 1
