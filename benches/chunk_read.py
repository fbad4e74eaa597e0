"""Read latency of the chunk path (issue 21): what a query pays to get chunks from the store.

    python benches/chunk_read.py INDEX_DIR [INDEX_DIR ...] [--rounds 5] [--files 300]

For each index (its current generation), in rounds that alternate the indexes: opening every
chunk segment (verify the checksum, build the path table: `SegmentedChunkStore.warm`), one
file's chunks decoded (`_SegmentRows.rows`, no cache), one chunk by id (`record`, what a
result needs) and the same for 32 of the files again, over the same sample of files. CPU time per operation (`process_time`), median
of the rounds; run it with another checkout's package on `PYTHONPATH` to compare code too.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

from maguyva.store.chunks import SegmentedChunkStore, segment_of
from maguyva.store.generations import IndexDir


def one_round(gen: Path, sample: list[str], ids: dict[str, str]) -> dict[str, float]:
    t = time.process_time()
    store = SegmentedChunkStore(gen, inherit=False)
    store.warm()
    warm = time.process_time() - t
    t = time.process_time()
    for p in sample:
        store._segment(segment_of(p)).rows(p)
    rows = (time.process_time() - t) / len(sample)
    fresh = SegmentedChunkStore(gen, inherit=False)
    fresh.warm()
    t = time.process_time()
    for p in sample:
        fresh.record(ids[p], p)
    record = (time.process_time() - t) / len(sample)
    t = time.process_time()
    for p in sample[-32:]:  # asked again (a repeated question's results)
        fresh.record(ids[p], p)
    again = (time.process_time() - t) / len(sample[-32:])
    return {"warm_ms": warm * 1e3, "rows_us": rows * 1e6, "record_us": record * 1e6,
            "again_us": again * 1e6}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("indexes", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--files", type=int, default=300)
    args = parser.parse_args(argv)
    setups = []
    for index in args.indexes:
        gen = IndexDir(index).current(pin=False).path
        store = SegmentedChunkStore(gen, inherit=False)
        paths = [p for p in store.paths() if store.by_path(p)]
        sample = random.Random(7).sample(paths, min(args.files, len(paths)))
        ids = {p: store.by_path(p)[len(store.by_path(p)) // 2].id for p in sample}
        setups.append((index, gen, sample, ids))
    results: dict[Path, list[dict[str, float]]] = {s[0]: [] for s in setups}
    for _ in range(args.rounds):
        for index, gen, sample, ids in setups:
            results[index].append(one_round(gen, sample, ids))
    for index, rounds in results.items():
        medians = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
        print(f"{index}: open all segments {medians['warm_ms']:.1f} ms, one file's chunks "
              f"{medians['rows_us']:.0f} us, one chunk by id {medians['record_us']:.0f} us, "
              f"again {medians['again_us']:.0f} us "
              f"(CPU, median of {len(rounds)} rounds)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
