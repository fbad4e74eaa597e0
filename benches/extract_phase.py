"""The indexer's extract phase alone: `extract_files` on all cores, and each file's records
encoded as the build's spill stores them, in CPU seconds (this process and its workers;
the parent's own share apart, since it is the serial part) and wall, for this checkout and
optionally another source tree, alternating in one run.

    .venv/bin/python benches/extract_phase.py ROOT [--before DIR] [--rounds N] [--jobs J]

`--before DIR` names a directory holding `python/maguyva` (e.g. `git archive BASE python |
tar -x -C DIR` with the built `_core*.so` copied in). A tree whose results carry `encoded`
(worker-side encoding) is timed through it; an older tree through `encode_extraction` and
`encode_chunks` of the decoded objects, as its indexer did. The file set is every file of ROOT
the walker keeps (`repo.walk`), as `maguyva index` sees it. No extraction cache is used.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "python"

CHILD = r"""
import json, os, sys, time
from pathlib import Path
from maguyva.extract.driver import extract_files
from maguyva.repo.walk import walk_repository
from maguyva.store.extraction import encode_chunks, encode_extraction
from maguyva.support.sealed import dumps_json

root, jobs = Path(sys.argv[1]), int(sys.argv[2]) or None
files = [f for f in walk_repository(root).files]

def cpu():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system

def own():
    t = os.times()
    return t.user + t.system

c, o, w = cpu(), own(), time.perf_counter()
size = 0
for r in extract_files(root, files, jobs=jobs):
    if hasattr(r, "encoded"):
        chunk_bytes, extraction, _ = r.encoded
    else:
        chunk_bytes = encode_chunks(r.chunks)
        extraction = dumps_json(encode_extraction(r.extraction))
    size += len(chunk_bytes) + len(extraction)
print(json.dumps({"files": len(files), "wall_s": round(time.perf_counter() - w, 2),
                  "cpu_s": round(cpu() - c, 2), "parent_cpu_s": round(own() - o, 2), "encoded_mb": round(size / 1e6, 1)}))
"""


def run_once(root: Path, package: Path, jobs: int) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(package)}
    out = subprocess.run([sys.executable, "-c", CHILD, str(root), str(jobs)], env=env,
                         check=True, capture_output=True, text=True).stdout  # fmt: skip
    return {"package": str(package), **json.loads(out.strip().splitlines()[-1])}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--before", type=Path)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=0, help="worker processes (default: all cores)")
    args = ap.parse_args()
    sides = [HERE] if args.before is None else [args.before / "python", HERE]
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    for _ in range(args.rounds):
        for side in sides:
            print(json.dumps(run_once(args.root, side, args.jobs)), flush=True)
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
