"""Graph build cost on a real corpus: full build, one-file update, memory, boost distribution.

    nice .venv/bin/python benches/graph_build.py ROOT [--exclude PREFIX ...] [--out FILE]

Extraction runs first (timed separately, so the graph phase can be compared with it); then the
graph modality is built from scratch, then once more after one file's body changed (its last
call removed, its mtime bumped) reusing the first generation, and once from scratch on the
changed input: the incremental result must equal the full one array for array. CPU times
(`time.process_time`) are given next to wall times because the machine is shared. Prints JSON.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from maguyva.extract.types import FileExtraction
from maguyva.modalities.graph import MODALITY
from maguyva.modalities.graph import store as gstore
from maguyva.modalities.graph.centrality import boost
from maguyva.modalities.protocol import BuildContext
from maguyva.modalities.structural.modality import extract_repository
from maguyva.repo.walk import walk_repository

COMMON = ("get", "save", "filter", "as_sql", "resolve", "render", "join", "loads", "open", "run")


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, round(time.perf_counter() - w, 2), round(time.process_time() - c, 2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--exclude", action="append", default=[])
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    root = args.root.resolve()
    files = [
        f
        for f in walk_repository(root).files
        if f.language == "python" and not any(f.path.startswith(e) for e in args.exclude)
    ]
    (ex, chunks, _), ex_wall, ex_cpu = timed(lambda: extract_repository(root, files, {"jobs": 1}))
    print(f"extracted {len(files)} files: {ex_wall}s wall, {ex_cpu}s cpu", file=sys.stderr)
    rss0 = rss_mb()
    work = Path(tempfile.mkdtemp(prefix="graph-build-"))

    def build(name: str, extraction, sources, previous=None) -> tuple[dict, float, float]:
        out = work / name
        out.mkdir()
        ctx = BuildContext(root, out, sources, chunks, extraction, {}, out, previous_dir=previous)
        return timed(lambda: MODALITY.build(ctx))

    report, full_wall, full_cpu = build("full", ex, files)
    rss1 = rss_mb()
    victim = max(ex, key=lambda p: len(ex[p].calls))
    e = ex[victim]
    changed = dict(ex)
    changed[victim] = FileExtraction(
        e.path, e.language, e.definitions, e.imports, e.calls[:-1], e.references
    )
    sources = [
        dataclasses.replace(f, mtime_ns=f.mtime_ns + 1) if f.path == victim else f for f in files
    ]
    upd, upd_wall, upd_cpu = build("update", changed, sources, previous=work / "full")
    _, again_wall, again_cpu = build("again", changed, sources)
    a = gstore.read(work / "update" / "graph")[0]
    b = gstore.read(work / "again" / "graph")[0]
    equal = a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)

    s, open_wall, _ = timed(lambda: MODALITY.open(work / "full", {}))
    g = s.graph
    chunk_boost = boost(np.array(list(g.chunk_c.values()), dtype=np.float64))
    path_boost = boost(g.path_c.astype(np.float64))
    qs = [0, 10, 25, 50, 75, 90, 95, 99, 100]
    bins = [1.0, 1.0001, 1.1, 1.2, 1.3, 1.4, 1.4999, 1.5001]
    latencies = []
    for name in COMMON:
        t = time.perf_counter()
        s.references(name)
        s.impact(name, 2)
        latencies.append(time.perf_counter() - t)
    result = {
        "root": str(root),
        "files": len(files),
        "extract_wall_s": ex_wall,
        "extract_cpu_s": ex_cpu,
        "graph_full_wall_s": full_wall,
        "graph_full_cpu_s": full_cpu,
        "graph_phases_wall_s": {
            k: report[k] for k in ("digest_s", "resolve_s", "centrality_s", "log_s")
        },
        "one_file_update_wall_s": upd_wall,
        "one_file_update_cpu_s": upd_cpu,
        "one_file_update_reuse": upd["reuse"],
        "full_build_of_changed_input_wall_s": again_wall,
        "full_build_of_changed_input_cpu_s": again_cpu,
        "incremental_equals_full": equal,
        "rss_after_extraction_mb": round(rss0),
        "rss_after_graph_mb": round(rss1),
        "graph_bytes": report["bytes"],
        "edge_log_bytes": report["log_bytes"],
        "open_s": open_wall,
        "nodes": report["nodes"],
        "edges": report["edges"],
        "edges_by_kind": report["edges_by_kind"],
        "calls": report["calls"],
        "cycles": [report["call_cycles"], report["import_cycles"]],
        "chunk_boost_percentiles": dict(
            zip(map(str, qs), np.round(np.percentile(chunk_boost, qs), 3).tolist(), strict=True)
        ),
        "path_boost_percentiles": dict(
            zip(map(str, qs), np.round(np.percentile(path_boost, qs), 3).tolist(), strict=True)
        ),
        "chunk_boost_histogram": {
            "bins": bins,
            "counts": np.histogram(chunk_boost, bins=bins)[0].tolist(),
        },
        "top_paths": [
            (g.paths[i], round(float(boost(float(g.path_c[i]))), 3))
            for i in np.argsort(-g.path_c)[:8]
        ],
        "references_plus_impact_ms_max": round(1000 * max(latencies), 1),
        "references_plus_impact_ms_median": round(1000 * sorted(latencies)[len(latencies) // 2], 1),
    }
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
