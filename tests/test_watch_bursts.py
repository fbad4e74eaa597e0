"""`maguyva watch` and a burst that creates a new nested directory: every file written during
the burst is searchable once it ends, through the watcher's own updates (the reconciliation is
set far beyond the test's timeout, so it cannot be what converged)."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from durability_support import write_repo

from maguyva.query.engine import Engine

FILES = 400
TIMEOUT_S = 120.0  # generous (a loaded machine); the reconciliation would come after 3600 s


def _lines(stream, out: queue.Queue) -> None:
    for line in stream:
        out.put(line)


def _indexed_under(root: Path, prefix: str) -> set[str]:
    response = Engine.open(root).search(
        "burst_marker", modalities=["text"], limit=1000, fixed_strings=True
    )
    return {r.path for r in response.results if r.path.startswith(prefix)}


def test_a_burst_into_a_new_nested_directory_converges_when_it_ends(tmp_path):
    write_repo(tmp_path, 0)
    cmd = [sys.executable, "-m", "maguyva.interfaces.cli.main", "watch", str(tmp_path),
           "--json", "--reconcile-s", "3600"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_lines, args=(proc.stdout, lines), daemon=True).start()
    try:
        first = json.loads(lines.get(timeout=TIMEOUT_S))  # the first build: the watcher is up
        assert first["generation"] >= 1, first
        deep = tmp_path / "fresh" / "nested" / "deeper"
        deep.mkdir(parents=True)
        for n in range(FILES):
            (deep / f"mod_{n}.py").write_text(f"def burst_marker_{n}():\n    return {n}\n")
        ended = time.monotonic()
        found: set[str] = set()
        while len(found) < FILES and time.monotonic() < ended + TIMEOUT_S:
            found = _indexed_under(tmp_path, "fresh/nested/deeper/")  # another process's view
            time.sleep(0.05)  # a poll interval (the state is what is waited for)
        took = time.monotonic() - ended
        assert len(found) == FILES, (len(found), took)
        reported = 0  # the watcher's own reports: it committed them, no reconciliation ran
        while reported < FILES:
            reported += json.loads(lines.get(timeout=TIMEOUT_S))["changes"].get("added", 0)
        print(f"searchable {took:.2f} s after the burst of {FILES} files")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    assert proc.returncode == 0, proc.stderr.read()[-2000:]
