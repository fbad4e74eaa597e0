"""One-file body edits through a long-running writer: the graph's share of each update.

    nice -n 10 .venv/bin/python benches/graph_update.py ROOT [--runs 5] [--modalities ...]
        [--target json/decoder.py] [--anchor 'def _decode_uXXXX(s, pos):\\n'] [--edit declare]

    (the kernel: --target kernel/fork.c --anchor 'void __mmdrop(struct mm_struct *mm)\\n{\\n')

An `Indexer` over ROOT (already indexed) makes one warm-up update, then `--runs` hinted
updates, each after a body-only edit of `--target`: a line with a reference and a call is
inserted after `--anchor` (so every line below it moves; no definition or import changes), with
a call in every other run, so that consecutive updates differ in their edges (`--same-edges`:
the same call every time, PageRank and the cycles are then reused). Prints each update's wall and CPU time, phases and the graph's
report (`mode: patch` when the remembering writer patched it), then the medians; the file is
restored at the end. `--edit declare`: each run appends another function instead (the previous
run's goes: a definition added and one removed, a declaration change: the file is declared
again and the files it reaches resolved again, docs/graph-incremental.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from maguyva.build.indexer import Indexer

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
ap.add_argument("root", type=Path)
ap.add_argument("--runs", type=int, default=5)
ap.add_argument("--modalities", default="text,structural,graph")
ap.add_argument("--target", default="json/decoder.py")
ap.add_argument("--anchor", default="def _decode_uXXXX(s, pos):\n")
ap.add_argument("--same-edges", action="store_true", help="every edit adds the same edges")
ap.add_argument("--edit", choices=["body", "declare"], default="body")
ap.add_argument("--set", action="append", default=[], metavar="KEY=JSON")
args = ap.parse_args()
anchor = args.anchor.encode().decode("unicode_escape")
target = args.root / args.target
original = target.read_text()
if anchor not in original and args.edit == "body":
    sys.exit(f"{args.target}: anchor {anchor!r} not found")
name = anchor.split("(")[0].split()[-1]
config = {"modalities": args.modalities.split(",")}
for item in args.set:
    key, _, value = item.partition("=")
    config[key] = json.loads(value)


def edit(n: int) -> None:
    """Even runs add a call and a reference, odd runs the reference only: consecutive updates
    differ in their edges (PageRank and the cycles are computed again), unless --same-edges."""
    if args.edit == "declare":
        if args.target.endswith(".py"):
            text = original + f"\n\ndef maguyva_declared_{n}():\n    return {name}({n})\n"
        else:
            text = original + f"\nint maguyva_declared_{n}(void) {{ return {n}; }}\n"
        target.write_text(text)
        return
    call = f"{name}({n})" if args.same_edges or n % 2 == 0 else str(n)
    if args.target.endswith(".py"):
        line = f"    {name}.__name__ and {call}\n"
    else:  # C: a statement (`--anchor` a function's opening lines, `name` its name)
        line = f"\t(void){name}; (void)({call});\n"
    target.write_text(original.replace(anchor, anchor + line))


def rss_mb() -> float:
    """The process's resident set now (what a writer that stays up holds between updates)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


KEYS = (
    "mode",
    "reuse",
    "build_s",
    "resolve_s",
    "centrality_s",
    "write_s",
    "names_linked",
    "peak_rss_mb",
)
ix = Indexer(args.root, config=config)
ix.update()
edit(10**6)
ix.update(hints=[args.target])  # a warm-up: the first update of a writer loads its state
rows = []
try:
    for n in range(args.runs):
        edit(n)
        load = os.getloadavg()[0]
        wall, cpu = time.perf_counter(), time.process_time()
        s = ix.update(hints=[args.target])
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        report = (s.modalities.get("graph") or {}).get("report", {})
        row = {"load": round(load, 2), "update_s": round(wall, 4), "cpu_s": round(cpu, 4),
               "phases_ms": {k: round(v * 1000, 1) for k, v in s.timings_s.items()},
               "graph": {k: report.get(k) for k in KEYS}}  # fmt: skip
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
finally:
    target.write_text(original)
    ix.update()
print(json.dumps({
    "runs": len(rows),
    "median_update_s": statistics.median(r["update_s"] for r in rows),
    "median_cpu_s": statistics.median(r["cpu_s"] for r in rows),
    "median_graph_ms": statistics.median(r["phases_ms"].get("graph", 0) for r in rows),
    "modes": sorted({str(r["graph"]["mode"]) for r in rows}),
    "loads": [r["load"] for r in rows],
    "rss_mb_after": rss_mb(),
}))  # fmt: skip
