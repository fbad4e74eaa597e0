"""`maguyva watch`: edits reach the index, bursts are debounced into few updates, new
directories are picked up, and a watch budget too small falls back to periodic checks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from durability_support import CONFIG, write_repo

from maguyva.build.watch import Watcher
from maguyva.query.engine import Engine
from maguyva.store.generations import IndexDir


def _wait_for(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def _finds(root: Path, name: str) -> bool:
    response = Engine.open(root).search(name, modalities=["structural"])
    return any(r.symbol and r.symbol.endswith(name) for r in response.results)


def _start(root: Path, **options) -> tuple[Watcher, threading.Thread]:
    watcher = Watcher(root, config=dict(CONFIG), debounce_ms=200, reconcile_s=5.0, **options)
    thread = threading.Thread(target=watcher.run, daemon=True)
    thread.start()
    assert _wait_for(lambda: IndexDir(root / ".maguyva").exists())
    return watcher, thread


def test_edits_bursts_and_new_directories(tmp_path):
    write_repo(tmp_path)
    watcher, thread = _start(tmp_path)
    try:
        time.sleep(0.5)  # let the watch start on the directories of the first index
        (tmp_path / "pkg" / "core.py").write_text("def freshly_added():\n    return 1\n")
        assert _wait_for(lambda: _finds(tmp_path, "freshly_added")), watcher.stats
        before = watcher.stats.updates
        for n in range(300):  # a burst, like a branch switch
            (tmp_path / "pkg" / f"gen_{n}.py").write_text(f"def burst_{n}():\n    return {n}\n")
        assert _wait_for(lambda: _finds(tmp_path, "burst_299")), watcher.stats
        assert watcher.stats.updates - before <= 4, watcher.stats
        (tmp_path / "newdir" / "deeper").mkdir(parents=True)
        time.sleep(0.5)
        (tmp_path / "newdir" / "deeper" / "leaf.py").write_text("def in_new_dir():\n    pass\n")
        assert _wait_for(lambda: _finds(tmp_path, "in_new_dir")), watcher.stats
        assert watcher.stats.mode == "events"
    finally:
        watcher.stop()
        thread.join(timeout=10)
    assert not thread.is_alive(), "the watcher did not stop"


def test_falls_back_to_periodic_checks_over_the_watch_budget(tmp_path):
    write_repo(tmp_path)
    watcher, thread = _start(tmp_path, max_watches=1, poll_s=0.3)
    try:
        assert _wait_for(lambda: watcher.stats.mode == "polling")
        assert "watch budget" in watcher.stats.fallback_reason
        (tmp_path / "tools" / "cli.py").write_text("def polled_in():\n    return 2\n")
        assert _wait_for(lambda: _finds(tmp_path, "polled_in")), watcher.stats
    finally:
        watcher.stop()
        thread.join(timeout=10)
    assert not thread.is_alive()


def test_event_paths_narrow_the_check_and_reconciliation_makes_up_for_lost_events(tmp_path):
    write_repo(tmp_path)
    old = time.time_ns() - 60 * 10**9  # not "racily clean": only events make files checked
    for path in tmp_path.rglob("*"):
        os.utime(path, ns=(old, old))
    watcher = Watcher(tmp_path, config=dict(CONFIG), reconcile_s=3600)
    watcher.update()  # the first check is a full one
    assert watcher.stats.full_checks == 1
    (tmp_path / "pkg" / "core.py").write_text("def seen_by_event():\n    return 1\n")
    (tmp_path / "pkg" / "render.py").write_text("def event_was_lost():\n    return 2\n")
    summary = watcher.update({"pkg/core.py"})
    assert summary is not None and summary.changes["modified"] == 1, summary
    assert watcher.stats.hinted_checks == 1 and not _finds(tmp_path, "event_was_lost")
    watcher.reconcile_s = 0.0  # the periodic full check comes due
    summary = watcher.update({"pkg/core.py"})
    assert summary is not None and summary.changes["modified"] == 1, summary.changes
    assert watcher.stats.full_checks == 2 and _finds(tmp_path, "event_was_lost")


def test_the_watch_command_end_to_end(tmp_path):
    """`maguyva watch` as a user runs it (a real process, its real events): it prepares its
    writer, an edit is searchable by another process and reported with when it became
    searchable (its graph followed), a graph question then sees it too, and Ctrl-C ends it
    with exit code 0."""
    write_repo(tmp_path, 0)
    watcher = subprocess.Popen(
        [sys.executable, "-m", "maguyva.interfaces.cli.main", "watch", str(tmp_path)], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert _wait_for(lambda: IndexDir(tmp_path / ".maguyva").exists(), 60)
        first = watcher.stdout.readline()  # the first check (a build, or a prepared writer)
        assert first.startswith("generation "), first
        time.sleep(0.5)  # the directories are watched
        core = tmp_path / "pkg/core.py"
        core.write_text(
            core.read_text() + "\n\ndef freshly_watched():\n    return load_items('x')\n"
        )
        line = watcher.stdout.readline()
        assert " ~1 " in line and "searchable after" in line, line
        assert _finds(tmp_path, "freshly_watched")
        callers = Engine.open(tmp_path).searcher("graph").callers("load_items")
        assert "pkg/core.py" in {h.path for h in callers}
    finally:
        watcher.send_signal(signal.SIGINT)
        _out, err = watcher.communicate(timeout=30)
    assert watcher.returncode == 0 and "stopped after" in err, err[-2000:]
