"""Graph modality vs Jedi's `Script.get_references` on a real Python corpus.

    nice .venv/bin/python benches/jedi_oracle.py ROOT --cache jedi.json     # slow, cached
    .venv/bin/python benches/graph_vs_jedi.py ROOT --jedi jedi.json [--out result.json]

Reads Jedi's answers from the oracle's cache (see jedi_oracle.py: functions and methods with
2-30 referencing files), builds the graph, and reports for each confidence threshold:
- find_references caller-file recall and precision (ours: the files of the depth-1 dependents
  of the target; Jedi: the files of its non-definition references), over all samples and over
  two halves: "tune" (even sample indices, used to choose a default threshold) and "held_out"
  (odd indices, reported as is);
- impact (depth 2) file recall against Jedi applied transitively (the references of the target
  plus the references of every definition that encloses one of them), and how many files we list;
- the misses and false positives, classified by cause (property read, getattr, a use that is
  not a call, unknown receiver, decorator) with counts and examples.
"""

from __future__ import annotations

import argparse
import json
import pickle
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from maguyva.modalities.graph import MODALITY
from maguyva.modalities.graph.query import GraphIndex
from maguyva.modalities.graph.schema import CONF_TYPED, NodeKind
from maguyva.modalities.protocol import BuildContext
from maguyva.modalities.structural.modality import extract_repository
from maguyva.repo.walk import walk_repository

THRESHOLDS = (0.0, 0.1, 0.2, 0.3, 0.45, 0.6, 0.85)
# Confidence tiers of a caller file (its best edge to the target), see docs/graph-measurements.md:
# name-resolved / self / typed receiver; candidates with evidence; lone or weak candidates;
# below the default query threshold (kept for recall-oriented queries, not shown by default).
TIERS = (("exact >= 0.85", 0.85, 2.0), ("evidence 0.3-0.85", 0.3, 0.85),
         ("weak 0.2-0.3", 0.2, 0.3), ("below default < 0.2", 0.0, 0.2))  # fmt: skip
PROPERTY = re.compile(r"@(?:\w+\.)*(?:cached_)?property\b|@\w+\.setter\b")


UNIVERSE: set[str] = set()  # the files both sides index (Jedi also walks excluded folders)


def files_of(refs) -> set[str]:
    return {p for p, _ in refs or () if not UNIVERSE or p in UNIVERSE}


def tiers(rows: list[dict]) -> dict:
    """Per tier: the files whose best confidence falls in it, how many Jedi confirms
    (precision within the tier) and the share of Jedi's files the tier adds (recall)."""
    total = sum(len(r["jedi"]) for r in rows)
    out = {}
    for name, lo, hi in TIERS:
        tp = fp = 0
        for r in rows:
            ours = {p for p, c in r["ours"].items() if lo <= c < hi}
            tp += len(ours & r["jedi"])
            fp += len(ours - r["jedi"])
        out[name] = {"files": tp + fp, "tp": tp, "fp": fp,
                     "precision": round(tp / max(tp + fp, 1), 3),
                     "recall_added": round(tp / max(total, 1), 3)}  # fmt: skip
    return out


def scores(rows: list[dict], threshold: float) -> dict:
    tp = fp = fn = 0
    for r in rows:
        ours = {p for p, c in r["ours"].items() if c >= threshold}
        tp += len(ours & r["jedi"])
        fp += len(ours - r["jedi"])
        fn += len(r["jedi"] - ours)
    return {"recall": round(tp / max(tp + fn, 1), 3), "precision": round(tp / max(tp + fp, 1), 3),
            "tp": tp, "fp": fp, "fn": fn}  # fmt: skip


class Lines:
    def __init__(self, root: Path) -> None:
        self.root, self.cache = root, {}

    def get(self, path: str) -> list[str]:
        if path not in self.cache:
            text = (self.root / path).read_text(encoding="utf-8", errors="replace")
            self.cache[path] = text.splitlines()
        return self.cache[path]


def classify_miss(lines: Lines, name: str, is_prop: bool, decorated: bool, refs: list) -> str:
    """Why the graph has no edge from this file: judged from Jedi's reference lines there."""
    texts = [lines.get(p)[ln - 1] if ln <= len(lines.get(p)) else "" for p, ln in refs]
    called = re.compile(r"\b" + re.escape(name) + r"\s*\(")
    if any("getattr(" in t or "hasattr(" in t for t in texts):
        return "getattr/hasattr (string dispatch)"
    if is_prop:
        return "property read (attribute, not a call)"
    if not any(called.search(t) for t in texts):
        return "use that is not a call (callback, attribute, override)"
    if any(re.search(r"[\w)\]]\." + re.escape(name) + r"\s*\(", t) for t in texts):
        return "method call on a receiver not resolved"
    if decorated:
        return "decorated target"
    return "other"


def goto_check(root: Path, lines: Lines, detail: list[dict]) -> dict:
    """Jedi's own `goto` at our false positives' lines and at Jedi's missed lines: where
    `get_references` and `goto` disagree (Jedi's `goto` lands on the target from a file its
    `get_references` left out, or lands elsewhere from a file it listed). Each entry gets
    `goto_target`: True when some occurrence of the name on those lines goes to the target."""
    import jedi

    project = jedi.Project(root, added_sys_path=[str(root)])
    detail = [d for d in detail if "at" in d]  # misses and false positives
    for d in detail:
        word = re.compile(r"\b" + re.escape(d["name"]) + r"\b")
        hit = False
        for ln in d["at"]:
            src = lines.get(d["file"])
            if not 0 < ln <= len(src):
                continue
            for m in word.finditer(src[ln - 1]):
                try:
                    found = jedi.Script(path=root / d["file"], project=project).goto(
                        ln, m.start(), follow_imports=True
                    )
                except Exception:  # Jedi's own failures count as "not the target"
                    continue
                for g in found:
                    if g.module_path is None or g.line != d["def"]:
                        continue
                    try:
                        rel = Path(g.module_path).resolve().relative_to(root).as_posix()
                    except ValueError:
                        continue
                    hit = hit or rel == d["def_path"]
                if hit:
                    break
            if hit:
                break
        d["goto_target"] = hit
    out: dict[str, dict[str, int]] = {}
    for d in detail:
        kind = "false_positive" if "false_positive" in d else "miss"
        half = "held_out" if d["i"] % 2 else "tune"
        slot = out.setdefault(f"{kind}.{half}", {"files": 0, "goto_target": 0})
        slot["files"] += 1
        slot["goto_target"] += d["goto_target"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--jedi", type=Path, required=True)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--report-threshold", type=float, default=0.0)
    ap.add_argument("--extraction-cache", type=Path, help="pickle of the extraction, for reruns")
    ap.add_argument("--detail", type=Path, help="every miss and false positive with its lines")
    ap.add_argument("--goto-check", action="store_true",
                    help="ask Jedi's goto at the lines of each miss and false positive")  # fmt: skip
    args = ap.parse_args()
    root = args.root.resolve()
    cache = json.loads(args.jedi.read_text())
    answers, samples, exclude = cache["answers"], cache["samples"], cache["exclude"]
    only = [d.rstrip("/") + "/" for d in cache.get("only") or []]  # a sample of modules
    files = [f for f in walk_repository(root).files if f.language == "python"
             and not any(f.path.startswith(e) or f"/{e}" in f"/{f.path}" for e in exclude)
             and (not only or f.path.startswith(tuple(only)))]  # fmt: skip
    t = time.perf_counter()
    if args.extraction_cache and args.extraction_cache.exists():
        files, extraction, chunks = pickle.loads(args.extraction_cache.read_bytes())
    else:
        extraction, chunks, _ = extract_repository(root, files, {})
        if args.extraction_cache:
            args.extraction_cache.write_bytes(pickle.dumps((files, extraction, chunks)))
    print(f"extracted {len(files)} files in {time.perf_counter() - t:.1f}s", file=sys.stderr)
    UNIVERSE.update(f.path for f in files)
    out = Path(tempfile.mkdtemp(prefix="graph-vs-jedi-"))
    report = MODALITY.build(BuildContext(root, out, files, chunks, extraction, {}, out))
    g: GraphIndex = MODALITY.open(out, {}).graph
    node_of: dict[tuple[str, str], list[int]] = {}
    for node in range(len(g)):
        if g.kind[node] == NodeKind.DEFINITION:
            node_of.setdefault((g.path_of(node), g.qnames[node]), []).append(node)
    lines = Lines(root)
    rows, skipped = [], []
    for i, s in enumerate(samples):
        # the definition at the sample's line (a name may be defined twice in one file)
        nodes = node_of.get((s["path"], s["qname"]), [])
        node = min(nodes, key=lambda n: abs(int(g.start[n]) - s["line"]), default=None)
        if node is None:
            skipped.append(f"{s['path']}:{s['qname']}")
            continue
        sites, _ = g.walk_dependents([node], 1)
        ours: dict[str, float] = {}
        our_lines: dict[str, set[int]] = {}
        for site in sites.values():
            p = g.path_of(site.node)
            if p:
                ours[p] = max(ours.get(p, 0.0), site.confidence)
                our_lines.setdefault(p, set()).update(site.lines)
        src = lines.get(s["path"])
        above = "\n".join(src[max(0, s["line"] - 4) : s["line"] - 1])
        row = {"i": i, "sample": s, "node": node, "jedi": files_of(answers[s["key"]]),
               "ours": ours, "our_lines": our_lines, "prop": bool(PROPERTY.search(above)),
               "decorated": src[s["line"] - 2].lstrip().startswith("@") if s["line"] > 1 else False}  # fmt: skip
        if "second" in s:
            jedi2 = set(row["jedi"])
            for k in s["second"]:
                jedi2 |= files_of(answers.get(k))
            row["jedi2"] = jedi2
        rows.append(row)
    tune = [r for r in rows if r["i"] % 2 == 0]
    held = [r for r in rows if r["i"] % 2 == 1]
    refs = {
        str(t): {"all": scores(rows, t), "tune": scores(tune, t), "held_out": scores(held, t)}
        for t in THRESHOLDS
    }
    tier_table = {"all": tiers(rows), "tune": tiers(tune), "held_out": tiers(held)}
    impact = {}
    imp_rows = [r for r in rows if "jedi2" in r]
    for t in THRESHOLDS:
        tp = fn = listed = 0
        for r in imp_rows:
            sites, _ = g.walk_dependents([r["node"]], 2, min_confidence=t)
            ours2 = {g.path_of(x.node) for x in sites.values()} - {""}
            tp += len(ours2 & r["jedi2"])
            fn += len(r["jedi2"] - ours2)
            listed += len(ours2)
        impact[str(t)] = {"recall": round(tp / max(tp + fn, 1), 3), "tp": tp, "fn": fn,
                          "precision": round(tp / max(listed, 1), 3), "listed": listed}  # fmt: skip

    th = args.report_threshold
    detail: list[dict] = []
    impact_misses: Counter = Counter()  # impact misses at the report threshold, by sample
    for r in imp_rows:
        sites, _ = g.walk_dependents([r["node"]], 2, min_confidence=th)
        missed = r["jedi2"] - ({g.path_of(x.node) for x in sites.values()} - {""})
        if missed:
            key = f"{r['sample']['path']}:{r['sample']['qname']}"
            impact_misses[key] = len(missed)
            if args.detail:
                detail.append({"impact_miss": key, "i": r["i"], "files": sorted(missed)})
    miss_causes: Counter = Counter()
    miss_examples: dict[str, list[str]] = {}
    fp_causes: Counter = Counter()
    fp_examples: dict[str, list[str]] = {}
    for r in rows:
        s, name = r["sample"], r["sample"]["qname"].rsplit(".", 1)[-1]
        ours = {p for p, c in r["ours"].items() if c >= th}
        for p in sorted(r["jedi"] - ours):
            at = [(q, ln) for q, ln in answers[s["key"]] if q == p]
            cause = classify_miss(lines, name, r["prop"], r["decorated"], at)
            miss_causes[cause] += 1
            miss_examples.setdefault(cause, []).append(f"{s['path']}:{s['qname']} <- {p}")
            detail.append({"miss": cause, "i": r["i"], "target": f"{s['path']}:{s['qname']}",
                           "file": p, "lines": [f"{ln}: {lines.get(q)[ln - 1].strip()}"
                                                for q, ln in at if ln <= len(lines.get(q))],
                           "name": name, "at": [ln for _, ln in at], "def": s["line"],
                           "def_path": s["path"]})  # fmt: skip
        for p in sorted(ours - r["jedi"]):
            c = r["ours"][p]
            cause = ("typed receiver" if abs(c - CONF_TYPED) < 1e-6 else
                     "candidate (unknown receiver)" if c < CONF_TYPED else "resolved by name")  # fmt: skip
            fp_causes[cause] += 1
            fp_examples.setdefault(cause, []).append(f"{s['path']}:{s['qname']} <- {p} ({c:.2f})")
            src = lines.get(p)
            detail.append({"false_positive": cause, "i": r["i"], "confidence": round(c, 3),
                           "target": f"{s['path']}:{s['qname']}", "file": p,
                           "lines": [f"{ln}: {src[ln - 1].strip()}" for ln in
                                     sorted(r["our_lines"].get(p, ())) if 0 < ln <= len(src)],
                           "name": name, "at": sorted(r["our_lines"].get(p, ())), "def": s["line"],
                           "def_path": s["path"]})  # fmt: skip
    result = {
        "root": str(root),
        "files": len(files),
        "samples": len(rows),
        "skipped_not_in_graph": skipped,
        "graph_report": report,
        "references": refs,
        "tiers": tier_table,
        "impact_depth2": {
            "samples": len(imp_rows),
            "by_threshold": impact,
            "misses_by_sample": dict(impact_misses.most_common()),
        },
        "miss_causes_at": th,
        "miss_causes": dict(miss_causes.most_common()),
        "miss_examples": {k: v[:8] for k, v in miss_examples.items()},
        "false_positive_causes": dict(fp_causes.most_common()),
        "false_positive_examples": {k: v[:8] for k, v in fp_examples.items()},
        "jedi_seconds_median": sorted(cache["seconds"])[len(cache["seconds"]) // 2],
        "jedi_answers": len(answers),
    }
    if args.goto_check:
        result["jedi_goto"] = goto_check(root, lines, detail)
    if args.detail:
        args.detail.write_text(json.dumps(detail, indent=1))
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
