"""Peak memory and latency of one long-lived query process over a built index.

Opens the index, runs `kernel_index.QUERIES` (every intent) plus common literals that touch
tens of thousands of files, `--rounds` times, and prints each query's first (cold) and median
later (warm) latency and the process's maximum RSS. Compare commits by running it on each.

    python benches/query_memory.py /work/corpora/linux-source-6.1 --index-dir /tmp/g10/kidx5
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernel_index import QUERIES

from maguyva.api import Index

COMMON = ['"return"', '"include"', "spin_lock_irqsave", "mutex_lock"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--index-dir", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    index = Index.open(args.root, index_dir=args.index_dir)
    queries = [q for qs in QUERIES.values() for q in qs if not q.startswith("code like")]
    queries += COMMON
    times: dict[str, list[float]] = {q: [] for q in queries}
    started = time.perf_counter()
    for _ in range(args.rounds):
        for query in queries:
            t0 = time.perf_counter()
            index.search(query)
            times[query].append((time.perf_counter() - t0) * 1000)
    for query in queries:
        warm = statistics.median(times[query][1:]) if len(times[query]) > 1 else float("nan")
        print(f"{query[:40]!r:44} cold {times[query][0]:9.1f} ms  warm {warm:8.1f} ms")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"total {time.perf_counter() - started:.1f} s, max RSS {peak} MiB, "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
