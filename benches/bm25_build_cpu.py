"""CPU and wall time of one text-segment build, `_core.build_text_index`, over the files of
an indexed ROOT (no chunks), median of `--runs`; with the BM25 postings' own wall time
(`bm25_seconds`) when the build writes them (issue 21).

    .venv/bin/python benches/bm25_build_cpu.py ROOT [--runs 3]

Run it with another checkout's interpreter and `PYTHONPATH=OTHER/python` for the build
without postings (the `_core` module is printed).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def main() -> None:
    from maguyva import _core
    from maguyva.modalities.text.modality import open_index
    from maguyva.store.generations import IndexDir

    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    text_dir = IndexDir(args.root / ".maguyva").current().path / "text"
    paths = open_index(text_dir).paths()
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    cpu, wall, postings = [], [], []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as out:
            c, w = time.process_time(), time.perf_counter()
            report = _core.build_text_index(str(args.root), out, [(p, []) for p in paths])
            cpu.append(time.process_time() - c)
            wall.append(time.perf_counter() - w)
            postings.append(report.get("bm25_seconds"))
    print(f"{_core.__file__}: {len(paths)} files, CPU {statistics.median(cpu):.2f} s, "
          f"wall {statistics.median(wall):.2f} s, postings wall {postings}")  # fmt: skip
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
