"""A first build's timeline as a user meets it, on defaults (issue 17).

    python benches/build_timeline.py ROOT --question 'where is QuerySet defined' \
        [--expect django/db/models/query.py] [--stop-after meaning|heads|full] [--maguyva PATH]

Runs `maguyva index ROOT --index-dir FRESH` (nothing else: the defaults a fresh clone has) and,
while it runs, from other processes as a user's shell would: `maguyva status --json` and the
question through `maguyva search --json`, one after the other, again and again. Prints the
seconds from the start of `maguyva index` to each milestone, as soon as a poll sees it (a
milestone lies between the previous poll and this one: the poll interval is printed too):

- `first_answer`: the question printed any result;
- `expected_answer`: its first result is the `--expect` path;
- `meaning`: every chunk has a vector of some tier (static or transformer);
- `heads`: every chunk has at least its head's transformer vector;
- `full`: the semantic modality is complete;
- `done`: `maguyva index` exited (its exit code, CPU seconds of it and its children).

Also the peak resident memory of the build's process tree (the sum over its processes, read
from /proc at each poll) and the load average at the start and the end. `--stop-after` ends
the build with SIGTERM once that milestone is seen (the kernel's later stages take hours).
One JSON line at the end; `--log FILE` keeps every poll.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MILESTONES = ("first_answer", "expected_answer", "meaning", "heads", "full", "done")


def _tree_rss_kib(pid: int) -> int:
    """Resident memory of `pid` and its descendants, from /proc (0 once they are gone)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo.extend(children.get(p, ()))
        try:
            with open(f"/proc/{p}/status") as fh:
                total += next((int(ln.split()[1]) for ln in fh if ln.startswith("VmRSS:")), 0)
        except OSError:
            continue
    return total


def _status(maguyva: str, root: Path, index_dir: Path) -> dict[str, Any]:
    out = subprocess.run(
        [maguyva, "status", "--root", str(root), "--index-dir", str(index_dir), "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError:
        return {}


def _first_path(maguyva: str, root: Path, index_dir: Path, question: str) -> str | None:
    out = subprocess.run(
        [maguyva, "search", question, "--root", str(root), "--index-dir", str(index_dir), "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    for line in out.stdout.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if event.get("type") == "begin":
            return str(event["data"]["path"]["text"])
    return None


def _reached(status: dict[str, Any]) -> set[str]:
    """Semantic milestones this status shows. `pending` counts chunks with no transformer
    vector, `static` those of them that have a static one (see `maguyva status --json`)."""
    committed = ((status.get("modalities") or {}).get("semantic") or {}).get("coverage")
    sem = (status.get("build") or {}).get("semantic") or committed or {}
    seen: set[str] = set()
    chunks = sem.get("chunks")
    if not isinstance(chunks, int) or chunks != status.get("chunks"):
        return seen  # a stage whose chunks are not yet the whole build's
    if sem.get("static") == sem.get("pending"):
        seen.add("meaning")
    if sem.get("pending") == 0:
        seen.update(("meaning", "heads"))
    if sem.get("complete"):
        seen.update(("meaning", "heads", "full"))
    return seen


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--question", required=True)
    ap.add_argument("--expect", help="the path the question's first result should be")
    ap.add_argument("--stop-after", choices=MILESTONES[2:5])
    ap.add_argument("--maguyva", default=str(Path(sys.executable).with_name("maguyva")))
    ap.add_argument("--index-dir", type=Path, help="default: a fresh temporary directory")
    ap.add_argument("--log", type=Path)
    args = ap.parse_args()
    index_dir = args.index_dir or Path(tempfile.mkdtemp(prefix="timeline-")) / "idx"
    load_start = os.getloadavg()
    t0 = time.monotonic()
    build = subprocess.Popen(
        [args.maguyva, "index", str(args.root), "--index-dir", str(index_dir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    at: dict[str, float] = {}
    peak_kib, polls, last = 0, 0, 0.0
    log = args.log.open("w") if args.log else None
    while True:
        exited = build.poll() is not None  # polled once more after the exit: its last state
        peak_kib = max(peak_kib, _tree_rss_kib(build.pid))
        status = _status(args.maguyva, args.root, index_dir)
        path = _first_path(args.maguyva, args.root, index_dir, args.question)
        now = time.monotonic() - t0
        polls += 1
        seen = _reached(status)
        if path is not None:
            seen.add("first_answer")
            if args.expect and path == args.expect:
                seen.add("expected_answer")
        for name in seen:
            at.setdefault(name, round(now, 1))
        if log:
            log.write(json.dumps({"t": round(now, 1), "path": path, "status": status}) + "\n")
        if exited:
            at.setdefault("done", round(now, 1))
            break
        if args.stop_after and args.stop_after in at:
            build.send_signal(signal.SIGTERM)
            build.wait()
            break
        last = now
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({
        "root": str(args.root), "question": args.question, "seconds": at,
        "poll_interval_s": round(last / max(polls - 1, 1), 1), "exit": build.returncode,
        "cpu_s_with_polls": round(kids.ru_utime + kids.ru_stime, 1),
        "peak_tree_rss_gib": round(peak_kib / 2**20, 2),
        "load_start": [round(x, 2) for x in load_start],
        "load_end": [round(x, 2) for x in os.getloadavg()],
        "utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
    }))  # fmt: skip
    return 0 if build.returncode in (0, -signal.SIGTERM) else 1


if __name__ == "__main__":
    sys.exit(main())
