"""The text modality's share of a one-file edit (docs/text.md, "Incremental updates").

    .venv/bin/python benches/text_update.py ROOT [--file kernel/fork.c] [--runs 5]

In one long-running `Indexer` (as `maguyva watch` uses it), with the text modality only:
appends a function to FILE, updates, and records the update's phases, first with the
segmented update (the default) and then with merging forced on every update
(`text_merge_ratio: 0, text_merge_min_docs: 0`: a from-scratch text build each time, what
every update did before segments). Reports medians, CPU seconds and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from maguyva.build.indexer import Indexer


def cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def measure(root: Path, rel: str, runs: int, config: dict) -> dict:
    target = root / rel
    original = target.read_text()
    ix = Indexer(root, config=config)
    ix.update()
    walls, texts, cpus, modes, totals = [], [], [], [], []
    try:
        for n in range(runs + 1):
            target.write_text(original + f"\nint maguyva_bench_{n}_{time.time_ns()}(void) {{}}\n")
            t, c = time.perf_counter(), cpu_s()
            s = ix.update()
            wall, cpu = time.perf_counter() - t, cpu_s() - c
            assert s.changes["modified"] == 1, s.changes
            if n == 0:
                continue  # the first update after opening loads the previous state
            walls.append(wall)
            cpus.append(cpu)
            texts.append(s.timings_s["text"])
            modes.append(s.modalities["text"]["report"].get("mode"))
            totals.append({k: round(v * 1000, 1) for k, v in s.timings_s.items()})
    finally:
        target.write_text(original)
        ix.update()
    return {
        "text_ms": [round(x * 1000, 1) for x in texts],
        "text_ms_p50": round(statistics.median(texts) * 1000, 1),
        "update_ms_p50": round(statistics.median(walls) * 1000, 1),
        "update_cpu_s_mean": round(statistics.mean(cpus), 3),
        "modes": modes,
        "phases_ms": totals,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--file", default="kernel/fork.c")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    root = Path(args.root)
    base = {"modalities": ["text"]}
    out = {"load_before": os.getloadavg()}
    out["segmented"] = measure(root, args.file, args.runs, base)
    out["load_mid"] = os.getloadavg()
    forced = {**base, "text_merge_ratio": 0.0, "text_merge_min_docs": 0}
    out["rebuild_every_update"] = measure(root, args.file, args.runs, forced)
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
