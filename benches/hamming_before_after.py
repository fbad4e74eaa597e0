"""Hamming top-k before/after in one process: an older build of `_core` against the current one
and FAISS `IndexBinaryFlat`, 1M random 1024-bit codes, k = 10, one thread. Prints the best of a
few runs in wall and process CPU milliseconds (CPU time is robust to other load on a shared
machine). Run: `.venv/bin/python benches/hamming_before_after.py /path/to/old/_core.abi3.so`
(copy `python/maguyva/_core.abi3.so` aside before rebuilding).
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable

import faiss
import numpy as np

from maguyva import _core as new


def best(f: Callable[[], object], reps: int) -> tuple[float, float]:
    runs = []
    for _ in range(reps):
        c, w = time.process_time(), time.perf_counter()
        f()
        runs.append((time.perf_counter() - w, time.process_time() - c))
    return min(r[0] for r in runs), min(r[1] for r in runs)


def main() -> None:
    spec = importlib.util.spec_from_file_location("_core", sys.argv[1])
    assert spec is not None and spec.loader is not None
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 256, size=(1_000_000, 128), dtype=np.uint8)
    qs = rng.integers(0, 256, size=(100, 128), dtype=np.uint8)
    index = faiss.IndexBinaryFlat(1024)
    index.add(codes)
    faiss.omp_set_num_threads(1)
    a, b = new.hamming_topk(qs, codes, 10, threads=1), old.hamming_topk(qs, codes, 10, threads=1)
    assert (a[0] == b[0]).all() and (a[1] == b[1]).all()
    cases: list[tuple[str, Callable[[], object], int]] = [
        ("old batch 100", lambda: old.hamming_topk(qs, codes, 10, threads=1), 3),
        ("new batch 100", lambda: new.hamming_topk(qs, codes, 10, threads=1), 3),
        ("faiss batch 100", lambda: index.search(qs, 10), 3),
        ("old single", lambda: old.hamming_topk(qs[0], codes, 10, threads=1), 15),
        ("new single", lambda: new.hamming_topk(qs[0], codes, 10, threads=1), 15),
        ("faiss single", lambda: index.search(qs[:1], 10), 15),
    ]
    for name, f, reps in cases:
        wall, cpu = best(f, reps)
        pairs = 1e8 if "batch" in name else 1e6
        print(f"{name:16} wall {wall * 1e3:8.2f} ms  cpu {cpu * 1e3:8.2f} ms  "
              f"{pairs / wall:.2e} pairs/s wall  {pairs / cpu:.2e} pairs/cpu-s")  # fmt: skip


if __name__ == "__main__":
    main()
