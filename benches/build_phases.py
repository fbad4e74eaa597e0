"""Wall and CPU of a from-scratch build, per phase, for this checkout and (optionally) another
source tree of the package, alternating in one run so both see the same machine load.

    .venv/bin/python benches/build_phases.py ROOT [--before DIR] [--rounds N]
        [--modalities text,structural,graph]

Each run is `python -m maguyva index ROOT --modalities M --rebuild --json` into a fresh index
directory, in a child process; CPU is that child's and its workers' user+system time
(`RUSAGE_CHILDREN`). `--before DIR` names a directory holding a `maguyva` package (for example
`git archive BASE python | tar -x -C DIR` plus the built `_core*.so` copied into it), run with
`PYTHONPATH=DIR/python`. Prints one JSON line per run, then the best of each side per phase.
`uptime` is printed before and after, since the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "python"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(root: Path, package: Path, modalities: str) -> dict[str, object]:
    """One from-scratch build with the package under `package`."""
    env = {**os.environ, "PYTHONPATH": str(package)}
    with tempfile.TemporaryDirectory(prefix="maguyva-phases-") as index_dir:
        cmd = [sys.executable, "-m", "maguyva", "index", str(root), "--index-dir", index_dir,
               "--modalities", modalities, "--rebuild", "--json", "-q"]  # fmt: skip
        cpu, start = _children_cpu(), time.perf_counter()
        out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
        wall, cpu = time.perf_counter() - start, _children_cpu() - cpu
    summary = json.loads(out[out.index("{") :])
    timings = {k: round(v, 2) for k, v in summary["timings_s"].items() if isinstance(v, float)}
    graph = summary["modalities"].get("graph", {}).get("report", {})
    return {
        "package": str(package),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "chunks": summary["chunks"],
        "phases_s": timings,
        "graph_s": {k: graph[k] for k in ("digest_s", "resolve_s", "build_s") if k in graph},
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--before", type=Path, help="a directory with python/maguyva to compare")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--modalities", default="text,structural,graph")
    args = ap.parse_args()
    sides = [HERE] if args.before is None else [args.before / "python", HERE]
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    runs: dict[str, list[dict[str, object]]] = {str(s): [] for s in sides}
    for _ in range(args.rounds):
        for side in sides:
            result = run_once(args.root, side, args.modalities)
            runs[str(side)].append(result)
            print(json.dumps(result), flush=True)
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    for side, results in runs.items():
        best = min(results, key=lambda r: r["cpu_s"])  # type: ignore[arg-type,return-value]
        print(f"best (by CPU) of {side}: {json.dumps(best)}")


if __name__ == "__main__":
    main()
