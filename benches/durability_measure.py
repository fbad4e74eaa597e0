"""Durability measurements (docs/durability.md). Usage:
    python benches/durability_measure.py ROOT text,structural {full|noop|edit}

Durability measurements: full build, no-op check, one-file edit (one-shot and in a
long-running Indexer as `maguyva watch` uses it)."""

import json
import sys
import time
from pathlib import Path

from maguyva.indexer import Indexer, build_index

root = Path(sys.argv[1])
mods = sys.argv[2].split(",")
cfg = {"modalities": mods}
phase = sys.argv[3]
out = {}
if phase == "full":
    t = time.perf_counter()
    s = build_index(root, config=cfg)
    out["full_s"] = time.perf_counter() - t
    out["files"] = s.files
    out["chunks"] = s.chunks
    out["timings"] = s.timings_s
elif phase == "noop":
    settle = build_index(root, config=cfg)
    out["settle_changes"] = settle.changes
    runs = []
    for _ in range(5):
        t = time.perf_counter()
        s = build_index(root, config=cfg)
        runs.append(time.perf_counter() - t)
        assert s.noop, s.changes
    out["noop_s"] = runs
elif phase == "edit":
    target = root / "kernel" / "fork.c"
    original = target.read_text()
    runs, timings = [], []
    ix = Indexer(root, config=cfg)
    ix.update()
    target.write_text(original + "\nint maguyva_bench_warm(void) { return 0; }\n")
    t = time.perf_counter()
    s = ix.update()
    out["first_edit_in_process_s"] = time.perf_counter() - t
    out["first_edit_phases_ms"] = {k: round(v * 1000, 1) for k, v in s.timings_s.items()}
    for n in range(3):
        target.write_text(original + f"\nint maguyva_bench_{n}(void) {{ return {n}; }}\n")
        t = time.perf_counter()
        s = ix.update()
        runs.append(time.perf_counter() - t)
        timings.append({k: round(v * 1000, 1) for k, v in s.timings_s.items()})
        assert s.changes["modified"] == 1, s.changes
    target.write_text(original)
    ix.update()
    out["watch_edit_s"] = runs
    out["watch_edit_phases_ms"] = timings
    target.write_text(original + "\nint maguyva_bench_oneshot(void) { return 1; }\n")
    t = time.perf_counter()
    s = build_index(root, config=cfg)
    out["oneshot_edit_s"] = time.perf_counter() - t
    out["oneshot_phases_ms"] = {k: round(v * 1000, 1) for k, v in s.timings_s.items()}
    target.write_text(original)
    build_index(root, config=cfg)
print(json.dumps(out, indent=1))
