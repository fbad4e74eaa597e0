"""Searches during a background first build: does any answer mix two generations? (issue 17)

    python benches/reader_race.py CORPUS [--maguyva PATH] [--searches 400]

Copies CORPUS (a real tree, e.g. the psutil 7.1.3 sdist) to a fresh directory, starts
`maguyva index ROOT --background` there, and while the detached build commits its later
generations (the embedding slices) runs `maguyva search` in a loop from this process, with
mixed intents, through the warm server as a user's shell does. It counts the searches whose
stderr says a chunk's "stored content is not the one they were cut from" (a reader cutting
span texts from another generation's content). Prints one JSON line: searches, warned,
generations seen, load, UTC; exits 1 when a search warned.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WARNING = "stored content is not the one they were cut from"
QUERIES = (
    "cpu_percent",
    "how is the memory usage of a process computed",
    "def virtual_memory",
    '"/proc/stat"',
    "who calls disk_usage",
    "code similar to: def cpu_times(percpu=False):",
    "where are network connections of a process listed",
    "net_if_addrs",
    "what happens when a process is not found",
    "boot_time",
)


def _alive(pid: object) -> bool:
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--maguyva", default=str(Path(sys.executable).with_name("maguyva")))
    ap.add_argument(
        "--searches",
        type=int,
        default=400,
        help="this many searches (fewer when the build ends first)",
    )
    ap.add_argument(
        "--until-done",
        action="store_true",
        help="search until the build ends, however many searches that takes",
    )
    ap.add_argument("--query", action="append", help="a question to ask (repeatable; default: "
                    "ten psutil questions of mixed intents)")  # fmt: skip
    ap.add_argument("--keep", action="store_true", help="keep the copied tree and its index")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="reader-race-"))
    root = work / "repo"
    shutil.copytree(args.corpus, root, ignore=shutil.ignore_patterns(".maguyva"))
    index_dir = root / ".maguyva"
    env = {**os.environ, "MAGUYVA_EMBEDDING_THREADS": "1"}
    started = subprocess.run([args.maguyva, "index", str(root), "--background", "--json"],
                             capture_output=True, text=True, env=env, check=True)  # fmt: skip
    pid = json.loads(started.stdout)["pid"]
    searches = warned = 0
    generations: set[int] = set()
    lines: list[str] = []
    t0 = time.monotonic()
    try:
        while searches < args.searches or (args.until_done and _alive(pid)):
            queries = args.query or QUERIES
            query = queries[searches % len(queries)]
            proc = subprocess.run([args.maguyva, "search", query, "--json", "--root", str(root),
                                   "--limit", "5"], capture_output=True, text=True, env=env)  # fmt: skip
            searches += 1
            if WARNING in proc.stderr:
                warned += 1
                lines += [x for x in proc.stderr.splitlines() if WARNING in x]
            for line in proc.stdout.splitlines():
                row = json.loads(line) if line.startswith("{") else {}
                if row.get("type") == "summary":
                    generations.add(int(row["data"]["maguyva"].get("generation") or 0))
            if not _alive(pid) and (searches >= 50 or args.until_done):
                break
    finally:
        running = _alive(pid)
        if running:
            os.kill(pid, 15)
        subprocess.run([sys.executable, "-m", "maguyva.interfaces.daemon", "--index-dir",
                        str(index_dir), "--stop"], capture_output=True, env=env)  # fmt: skip
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({
        "searches": searches, "warned": warned,
        "generations_seen": sorted(generations), "build_running_at_end": running,
        "seconds": round(time.monotonic() - t0, 1), "load": os.getloadavg()[0],
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "warnings": lines[:5],
    }))  # fmt: skip
    return 1 if warned else 0


if __name__ == "__main__":
    raise SystemExit(main())
