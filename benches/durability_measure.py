"""Durability measurements (docs/durability.md). Usage:

    python benches/durability_measure.py ROOT text,structural {full|noop|edit|phases|oneshot}
        [--runs N] [--target PATH]

`full`: a from-scratch build. `noop`: five no-op checks. `edit`: a long-running writer
(`Indexer`, as `maguyva watch` and `maguyva mcp --watch` use it) and a long-running reader in
the same process: each run appends a function to `kernel/fork.c`, updates the index (with the
event path as a hint, as the watcher passes it, then once more without hints for the full stat
pass), reopens the engine on the new generation and searches for the new function (`search_s`,
structural), then asks every modality about it (`ask_<modality>_s`, `rank_<modality>`: the
new function's rank in that modality's top 10, None when absent; `edit_to_all_answers_s`:
update, open and the four questions). The reader is warmed once before the runs
(`Engine.warm`, as `maguyva mcp` does at startup: every modality open, every chunk segment
indexed); each run's reopen is measured as it is. Reports wall and CPU seconds per phase, the semantic
report (layout, segments, timings) and the load average around each run. `phases`: the writer alone
(no reader in the process), wall and CPU milliseconds of each phase and of the commit's parts,
measured by wrapping the functions (no profiler), hinted and full stat pass. `oneshot`: the
same edit through `build_index` in a fresh `Indexer` (what `maguyva index` does). `spread`:
`--runs` different files (of the target's extension) edited one per update, so the delta
grows, merges and folds: each update's time and layout.
"""

import argparse
import functools
import json
import os
import statistics
import time
from pathlib import Path

from maguyva.build.indexer import Indexer, build_index
from maguyva.query.engine import Engine

parser = argparse.ArgumentParser()
parser.add_argument("root", type=Path)
parser.add_argument("modalities")
parser.add_argument("phase", choices=["full", "noop", "edit", "phases", "oneshot", "spread"])
parser.add_argument("--runs", type=int, default=5)
parser.add_argument("--target", default="kernel/fork.c")
parser.add_argument("--delta-max-mb", type=float, help="layout.DELTA_MAX_BYTES (spread)")
parser.add_argument("--set", action="append", default=[], metavar="KEY=JSON",
                    help="a configuration value, e.g. semantic_phases='\"heads\"'")  # fmt: skip
args = parser.parse_args()
root, cfg = args.root, {"modalities": args.modalities.split(",")}
for item in args.set:
    key, _, value = item.partition("=")
    cfg[key] = json.loads(value)


def snippet(name: str, n: int) -> str:
    """A new function named `name`, in the target's language, appended by each edit."""
    if args.target.endswith(".py"):
        return f"\n\ndef {name}():\n    return {n}\n"
    return f"\nint {name}(void) {{ return {n}; }}\n"


out: dict = {"load_before": os.getloadavg()}

QUESTIONS = {
    # modality -> (query, search options) about the function run n appended, named `name`
    "text": lambda name, n: (name, {}),
    "structural": lambda name, n: (name, {}),
    "semantic": lambda name, n: (f"the function {name} that returns {n}", {}),
    "graph": lambda name, n: (f"where is {name} defined", {"intent": "find_definition"}),
}


def ms(timings: dict) -> dict:
    return {k: round(v * 1000, 1) for k, v in timings.items()}


if args.phase == "full":
    t = time.perf_counter()
    s = build_index(root, config=cfg, rebuild=True)
    out["full_s"] = time.perf_counter() - t
    out.update(files=s.files, chunks=s.chunks, timings=s.timings_s, modalities=s.modalities)
elif args.phase == "noop":
    out["settle_changes"] = build_index(root, config=cfg).changes
    runs = []
    for _ in range(5):
        t = time.perf_counter()
        s = build_index(root, config=cfg)
        runs.append(time.perf_counter() - t)
        assert s.noop, s.changes
    out["noop_s"] = runs
elif args.phase == "edit":
    target = root / args.target
    original = target.read_text()
    ix = Indexer(root, config=cfg)
    ix.update()
    target.write_text(original + snippet("maguyva_bench_warm", 0))
    t = time.perf_counter()
    s = ix.update()  # the first edit loads the previous generation's state once
    out["first_edit_s"] = time.perf_counter() - t
    out["first_edit_phases_ms"] = ms(s.timings_s)
    engine = Engine.open(root)
    out["warm_s"] = engine.warm()  # a warm reader, as `maguyva mcp` makes at startup
    engine.search("maguyva_bench_warm", modalities=["structural"])  # ... that has answered
    engine.search("how is the bench warmed up")
    rows = []
    for n in range(args.runs):
        for hinted in (True, False):
            name = f"maguyva_bench_{n}_{int(hinted)}"
            target.write_text(original + snippet(name, n))
            load = os.getloadavg()[0]
            wall, cpu = time.perf_counter(), time.process_time()
            s = ix.update(hints=[args.target] if hinted else None)
            update_wall, update_cpu = time.perf_counter() - wall, time.process_time() - cpu
            assert s.changes["modified"] == 1 and not s.noop, s.changes
            row = {"hinted": hinted, "load": load, "update_s": round(update_wall, 4),
                   "update_cpu_s": round(update_cpu, 4), "phases_ms": ms(s.timings_s)}  # fmt: skip
            wall = time.perf_counter()
            engine = Engine.open(root)  # the previous engine goes: its unchanged parts stay cached
            row["engine_open_s"] = round(time.perf_counter() - wall, 4)
            for modality in cfg["modalities"]:
                wall = time.perf_counter()
                engine.searcher(modality)
                row[f"open_{modality}_s"] = round(time.perf_counter() - wall, 4)
            wall = time.perf_counter()
            found = engine.search(name, modalities=["structural"]).results
            row["search_s"] = round(time.perf_counter() - wall, 4)
            assert found and found[0].symbol == name, found[:1]
            row["edit_to_answer_s"] = round(
                update_wall + row["engine_open_s"] + row["search_s"]
                + sum(row[f"open_{m}_s"] for m in cfg["modalities"]), 4
            )  # fmt: skip
            # every modality asked about the new function: its time and the rank of the
            # new function in its answer (None: not in the top 10)
            asked = 0.0
            for modality in cfg["modalities"]:
                query, options = QUESTIONS[modality](name, n)
                wall = time.perf_counter()
                hits = engine.search(query, modalities=[modality], limit=10, **options).results
                took = time.perf_counter() - wall
                asked += took
                row[f"ask_{modality}_s"] = round(took, 4)
                row[f"rank_{modality}"] = next(
                    (i for i, h in enumerate(hits)
                     if (h.symbol or "").rsplit(".", 1)[-1] == name  # graph: qualified names
                     or (modality == "text" and h.path == args.target)), None)  # fmt: skip
            row["edit_to_all_answers_s"] = round(
                update_wall + row["engine_open_s"] + asked
                + sum(row[f"open_{m}_s"] for m in cfg["modalities"]), 4
            )  # fmt: skip
            sem = s.modalities.get("semantic", {}).get("report", {})
            if sem:
                row["semantic"] = {k: sem.get(k) for k in ("layout", "segments", "delta_rows",
                                   "tombstones", "new", "pending", "partial", "timings_ms")}  # fmt: skip
            rows.append(row)
    target.write_text(original)
    ix.update()
    out["runs"] = rows
    for hinted in (True, False):
        mine = [r for r in rows if r["hinted"] is hinted]
        keys = ["update_s", "update_cpu_s", "engine_open_s", "search_s", "edit_to_answer_s",
                "edit_to_all_answers_s"]  # fmt: skip
        keys += [f"open_{m}_s" for m in cfg["modalities"]]
        keys += [f"ask_{m}_s" for m in cfg["modalities"]]
        summary = {k: statistics.median(r[k] for r in mine) for k in keys}
        phases = {p for r in mine for p in r["phases_ms"]}
        summary["phases_ms"] = {p: statistics.median(r["phases_ms"].get(p, 0) for r in mine)
                                for p in sorted(phases)}  # fmt: skip
        summary["load"] = [r["load"] for r in mine]
        out["median_hinted" if hinted else "median_full_stat"] = summary
elif args.phase == "phases":
    from maguyva.build import indexer
    from maguyva.modalities.structural import modality as structural
    from maguyva.modalities.text import modality as text
    from maguyva.store import generations as store

    acc: dict[str, list[float]] = {}

    def wrap(owner, name: str, label: str) -> None:
        inner = getattr(owner, name)

        @functools.wraps(inner)
        def timed(*a, **k):
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return inner(*a, **k)
            finally:
                d = acc.setdefault(label, [0.0, 0.0])
                d[0] += time.perf_counter() - wall
                d[1] += time.process_time() - cpu

        setattr(owner, name, timed)

    wrap(indexer, "scan", "scan")
    wrap(structural.StructuralModality, "build", "structural")
    wrap(text.TextModality, "build", "text")
    if "semantic" in cfg["modalities"]:
        from maguyva.modalities.semantic import modality as semantic

        wrap(semantic.SemanticModality, "build", "semantic")
    if "graph" in cfg["modalities"]:
        from maguyva.modalities.graph import modality as graph_modality

        wrap(graph_modality.GraphModality, "build", "graph")
    wrap(store.IndexDir, "commit", "commit")
    wrap(store, "checksum_table", "commit: checksums")
    wrap(store.OsFiles, "fsync_file", "commit: fsync files")
    wrap(store.OsFiles, "fsync_dir", "commit: fsync directories")
    wrap(store.IndexDir, "collect", "commit: collect old generations")
    wrap(indexer.Indexer, "update", "update")
    target = root / args.target
    original = target.read_text()
    ix = Indexer(root, config=cfg)
    ix.update()
    import inspect

    modes = (True, False) if "hints" in inspect.signature(Indexer.update).parameters else (False,)
    for hinted in modes:  # code before hints (commit 9894423) has the full stat pass only
        rows = []
        for n in range(args.runs):
            acc.clear()
            target.write_text(original + snippet(f"maguyva_phase_{n}_{int(hinted)}", 1))
            load = os.getloadavg()[0]
            ix.update(hints=[args.target]) if hinted else ix.update()
            rows.append((load, dict(acc)))
        out["hinted" if hinted else "full_stat"] = {
            "median_ms_wall_cpu": {k: [round(statistics.median(r[k][0] for _l, r in rows) * 1000, 1),
                                       round(statistics.median(r[k][1] for _l, r in rows) * 1000, 1)]
                                   for k in rows[0][1]},
            "load": [round(load, 1) for load, _r in rows],
        }  # fmt: skip
    target.write_text(original)
    ix.update()
elif args.phase == "oneshot":
    target = root / args.target
    original = target.read_text()
    build_index(root, config=cfg)
    target.write_text(original + snippet("maguyva_bench_oneshot", 1))
    t = time.perf_counter()
    s = build_index(root, config=cfg)
    out["oneshot_edit_s"] = time.perf_counter() - t
    out["oneshot_phases_ms"] = ms(s.timings_s)
    target.write_text(original)
    build_index(root, config=cfg)
elif args.phase == "spread":
    # one-file edits of `--runs` different files, one update each (hinted), until the delta
    # merges and folds: per update wall/CPU seconds and the layout written
    suffix = Path(args.target).suffix
    candidates = sorted(p for p in root.rglob(f"*{suffix}") if ".maguyva" not in p.parts)
    originals: dict[Path, str] = {}
    if args.delta_max_mb:
        from maguyva.build import layout

        layout.DELTA_MAX_BYTES = int(args.delta_max_mb * (1 << 20))
    ix = Indexer(root, config=cfg)
    ix.update()
    rows = []
    try:
        for n, path in enumerate(candidates[: args.runs]):
            originals[path] = path.read_text(errors="surrogateescape")
            path.write_text(originals[path] + snippet(f"maguyva_spread_{n}", n),
                            errors="surrogateescape")  # fmt: skip
            load = os.getloadavg()[0]
            wall, cpu = time.perf_counter(), time.process_time()
            s = ix.update(hints=[path.relative_to(root).as_posix()])
            from maguyva.store.generations import IndexDir

            layout = IndexDir(root / ".maguyva").current(pin=False).manifest.get("layout", {})
            rows.append({"load": round(load, 1), "update_s": round(time.perf_counter() - wall, 4),
                         "update_cpu_s": round(time.process_time() - cpu, 4), **layout})  # fmt: skip
    finally:
        for path, text in originals.items():
            path.write_text(text, errors="surrogateescape")
        ix.update(wait_for_lock=True)
    out["runs"] = rows
    for mode in ("delta", "fold"):
        mine = [r["update_s"] for r in rows if r.get("mode") == mode]
        if mine:
            out[f"{mode}_update_s"] = {"n": len(mine), "median": statistics.median(mine),
                                      "max": max(mine)}  # fmt: skip
out["load_after"] = os.getloadavg()
print(json.dumps(out, indent=1))
