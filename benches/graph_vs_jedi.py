"""Graph modality vs Jedi's `Script.get_references` on a real Python corpus.

    .venv/bin/python benches/graph_vs_jedi.py ROOT [--samples 100] [--impact-samples 30]

For a random sample of functions and methods that Jedi finds referenced from 2-30 files, it
reports find_references caller-file recall and precision (overall and per confidence threshold),
impact (depth 2) file recall against Jedi applied transitively (references of the definitions
that enclose each reference), graph build time and peak memory, one-file update time, and the
per-query time of both tools. Results are printed as JSON and recorded in docs/graph.md.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import jedi

from maguyva.extract_types import FileExtraction
from maguyva.graph import MODALITY
from maguyva.graph.query import GraphIndex
from maguyva.graph.schema import NodeKind
from maguyva.retriever import BuildContext
from maguyva.structural import extract_repository
from maguyva.walk import walk_repository

THRESHOLDS = (0.0, 0.3, 0.45, 0.6, 0.85)


def load_corpus(root: Path, exclude: list[str]):
    files = [
        f
        for f in walk_repository(root).files
        if f.language == "python" and not any(f.path.startswith(e) for e in exclude)
    ]
    t = time.perf_counter()
    extraction, chunks, _ = extract_repository(root, files, {})
    return files, extraction, chunks, time.perf_counter() - t


def build(root: Path, files, extraction, chunks, out: Path) -> tuple[dict, float, float]:
    ctx = BuildContext(root, out, files, chunks, extraction, {}, out)
    tracemalloc.start()
    t = time.perf_counter()
    report = MODALITY.build(ctx)
    elapsed = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return report, elapsed, peak


def name_column(root: Path, path: str, line: int, name: str) -> int | None:
    try:
        text = (root / path).read_text(encoding="utf-8", errors="replace").splitlines()[line - 1]
    except (OSError, IndexError):
        return None
    m = re.search(r"\b(?:def|class)\s+(" + re.escape(name) + r")\b", text)
    return m.start(1) if m else None


class JediOracle:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.project = jedi.Project(self.root, added_sys_path=[str(self.root)])
        self.cache: dict[tuple[str, int, int], set[tuple[str, int]] | None] = {}
        self.seconds: list[float] = []

    def references(self, path: str, line: int, col: int) -> set[tuple[str, int]] | None:
        key = (path, line, col)
        if key not in self.cache:
            t = time.perf_counter()
            try:
                script = jedi.Script(path=self.root / path, project=self.project)
                refs = script.get_references(line, col, scope="project")
            except Exception:  # Jedi's own failures are not ours to judge
                self.cache[key] = None
                return None
            self.seconds.append(time.perf_counter() - t)
            out = set()
            for r in refs:
                if r.module_path is None or r.is_definition():
                    continue
                try:
                    rel = Path(r.module_path).resolve().relative_to(self.root).as_posix()
                except ValueError:
                    continue
                out.add((rel, r.line))
            self.cache[key] = out
        return self.cache[key]


def enclosing_def(ex: FileExtraction, line: int):
    best = None
    for d in ex.definitions:
        inside = d.kind in ("function", "method", "class") and d.start_line <= line <= d.end_line
        if inside and (best is None or d.end_line - d.start_line < best.end_line - best.start_line):
            best = d
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--impact-samples", type=int, default=30)
    ap.add_argument("--exclude", action="append", default=[])
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    root = args.root.resolve()
    files, extraction, chunks, t_extract = load_corpus(root, args.exclude)
    print(f"extracted {len(files)} files in {t_extract:.1f}s", file=sys.stderr)
    out = Path(tempfile.mkdtemp(prefix="graph-vs-jedi-"))
    report, t_build, peak = build(root, files, extraction, chunks, out)
    print(f"graph built in {t_build:.1f}s: {report}", file=sys.stderr)
    t_open = time.perf_counter()
    searcher = MODALITY.open(out, {})
    t_open = time.perf_counter() - t_open
    g: GraphIndex = searcher.graph

    # one-file update: change one file's extraction and rebuild
    victim = max(extraction, key=lambda p: len(extraction[p].calls))
    changed = dict(extraction)
    ex = extraction[victim]
    changed[victim] = FileExtraction(ex.path, ex.language, ex.definitions, ex.imports,
                                     ex.calls[:-1], ex.references)  # fmt: skip
    out2 = Path(tempfile.mkdtemp(prefix="graph-vs-jedi-upd-"))
    t = time.perf_counter()
    MODALITY.build(BuildContext(root, out2, files, chunks, changed, {}, out2, previous_dir=out))
    t_update = time.perf_counter() - t

    # word -> files containing it, to pre-filter candidates cheaply
    word_files: dict[str, set[str]] = {}
    for f in files:
        text = (root / f.path).read_text(encoding="utf-8", errors="replace")
        for w in set(re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", text)):
            word_files.setdefault(w, set()).add(f.path)
    node_of = {}
    for node in range(len(g)):
        if g.kind[node] == NodeKind.DEFINITION and g.def_kind(node) in ("function", "method"):
            node_of[(g.path_of(node), int(g.start[node]))] = node
    candidates = []
    for path, ex in extraction.items():
        for d in ex.definitions:
            if d.kind not in ("function", "method") or d.name.startswith("__"):
                continue
            if 2 <= len(word_files.get(d.name, ())) <= 40 and (path, d.start_line) in node_of:
                candidates.append((path, d))
    rng = random.Random(args.seed)
    rng.shuffle(candidates)
    oracle = JediOracle(root)
    rows = []
    ours_s = []
    for path, d in candidates:
        if len(rows) >= args.samples:
            break
        line = getattr(d, "name_line", d.start_line) or d.start_line
        col = name_column(root, path, line, d.name)
        if col is None:
            continue
        refs = oracle.references(path, line, col)
        if refs is None:
            continue
        jedi_files = {p for p, _ in refs}
        if not 2 <= len(jedi_files) <= 30:
            continue
        node = node_of[(path, d.start_line)]
        t = time.perf_counter()
        sites, _ = g.walk_dependents([node], 1)
        ours_s.append(time.perf_counter() - t)
        ours = {}
        for s in sites.values():
            p = g.path_of(s.node)
            if p:
                ours[p] = max(ours.get(p, 0.0), s.confidence)
        rows.append({"path": path, "name": d.qualified_name, "line": line, "jedi": sorted(jedi_files),
                     "ours": ours, "node": node})  # fmt: skip
        print(f"[{len(rows)}] {path}:{d.qualified_name} jedi={len(jedi_files)} ours={len(ours)}",
              file=sys.stderr)  # fmt: skip

    def pr(threshold: float) -> dict:
        tp = fp = fn = 0
        for r in rows:
            ours = {p for p, c in r["ours"].items() if c >= threshold}
            jedi_set = set(r["jedi"])
            tp += len(ours & jedi_set)
            fp += len(ours - jedi_set)
            fn += len(jedi_set - ours)
        return {"recall": round(tp / max(tp + fn, 1), 3),
                "precision": round(tp / max(tp + fp, 1), 3), "tp": tp, "fp": fp, "fn": fn}  # fmt: skip

    refs_pr = {str(t): pr(t) for t in THRESHOLDS}
    misses = []
    for r in rows:
        for p in sorted(set(r["jedi"]) - set(r["ours"])):
            misses.append(f"{r['path']}:{r['name']} -> {p}")

    # impact: Jedi applied transitively (depth 2)
    imp_tp = imp_fn = imp_ours = 0
    impact_rows = 0
    for r in rows[: args.impact_samples]:
        first = oracle.references(r["path"], r["line"], name_column(root, r["path"], r["line"], r["name"].rsplit(".", 1)[-1]))  # fmt: skip
        jedi_files = {p for p, _ in first or ()}
        for p, line in first or ():
            enc = enclosing_def(extraction[p], line) if p in extraction else None
            if enc is None:
                continue
            el = getattr(enc, "name_line", enc.start_line) or enc.start_line
            col = name_column(root, p, el, enc.name)
            if col is None:
                continue
            second = oracle.references(p, el, col)
            jedi_files |= {q for q, _ in second or ()}
        sites, _ = g.walk_dependents([r["node"]], 2)
        ours = {g.path_of(s.node) for s in sites.values()} - {""}
        imp_tp += len(jedi_files & ours)
        imp_fn += len(jedi_files - ours)
        imp_ours += len(ours)
        impact_rows += 1

    result = {
        "root": str(root),
        "files": len(files),
        "samples": len(rows),
        "extract_s": round(t_extract, 2),
        "graph_build_s": round(t_build, 2),
        "graph_build_peak_traced_mb": round(peak, 1),
        "process_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "graph_open_s": round(t_open, 3),
        "one_file_update_s": round(t_update, 2),
        "graph_report": report,
        "references": refs_pr,
        "impact_depth2": {
            "samples": impact_rows,
            "recall": round(imp_tp / max(imp_tp + imp_fn, 1), 3),
            "tp": imp_tp,
            "fn": imp_fn,
            "ours_files": imp_ours,
        },
        "query_ms_ours_median": round(1000 * sorted(ours_s)[len(ours_s) // 2], 3)
        if ours_s
        else None,
        "query_ms_jedi_median": round(1000 * sorted(oracle.seconds)[len(oracle.seconds) // 2], 1)
        if oracle.seconds
        else None,
        "misses_sample": misses[:60],
        "false_positive_sample": [
            f"{r['path']}:{r['name']} -> {p} ({c:.2f})"
            for r in rows
            for p, c in sorted(r["ours"].items())
            if p not in set(r["jedi"])
        ][:60],
    }
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
