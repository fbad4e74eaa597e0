"""The text modality's Rust BM25 beside `bm25s` on the same chunks, per query, in one run
(issue 21).

    .venv/bin/python benches/bm25_side.py ROOT [--runs 20] [--scan]

ROOT is indexed beforehand. For each question: its terms as the text modality splits them
(`split_terms`), then CPU and wall time per query of `TextIndex.bm25(terms, k)` (what
`TextSearcher._bm25` calls; k = 50, the engine's depth for 10 results: from the index-time
postings when the index has them), with `--scan` also of the content scan that answered
before them (`method="scan"`), and of
`bm25s.BM25.retrieve` over the same chunks (path, header and text, as the `maguyva eval`
baseline indexes them), p50 over the runs. The two do not score alike (ours: substring
term frequencies per chunk from the stored content; bm25s: whole tokens), so this is a
speed comparison, not a score test.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from pathlib import Path

QUESTIONS = [
    "how does the lru cache evict entries",
    "where are cookies merged into a request",
    "how is a connection pool closed",
    "how does the json decoder handle escapes",
    "parse command line arguments into a namespace",
    "how are temporary files deleted",
]


def main() -> None:
    import bm25s

    import maguyva
    from maguyva.eval.baselines import tokenize
    from maguyva.modalities.text.modality import split_terms

    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("-k", type=int, default=50)
    ap.add_argument("--scan", action="store_true", help="also time the content scan")
    args = ap.parse_args()
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    engine = maguyva.Index.open(args.root).engine()
    text = engine.searcher("text")._index
    chunks = [c for path in engine.chunks.paths() for c in engine.chunks.by_path(path)]
    model = bm25s.BM25()
    model.index([tokenize(f"{c.path} {c.header} {c.text}") or ["_empty_"] for c in chunks],
                show_progress=False)  # fmt: skip
    print(f"{len(chunks)} chunks, BM25 postings: {text.has_bm25_postings}")
    print(f"{'question':46} {'rust cpu':>9} {'rust wall':>9} {'bm25s cpu':>9} {'bm25s wall':>10}"
          + (f" {'scan cpu':>9} {'scan wall':>9}" if args.scan else ""))  # fmt: skip
    keys = ["rc", "rw", "bc", "bw"] + (["sc", "sw"] if args.scan else [])
    totals: dict[str, list[float]] = {k: [] for k in keys}
    for q in QUESTIONS:
        terms, tokens = split_terms([q]), tokenize(q)
        samples: dict[str, list[float]] = {k: [] for k in keys}
        for _ in range(args.runs):
            c, w = time.process_time(), time.perf_counter()
            text.bm25(terms, args.k)
            samples["rc"].append(time.process_time() - c)
            samples["rw"].append(time.perf_counter() - w)
            if args.scan:
                c, w = time.process_time(), time.perf_counter()
                text.bm25(terms, args.k, method="scan")
                samples["sc"].append(time.process_time() - c)
                samples["sw"].append(time.perf_counter() - w)
            c, w = time.process_time(), time.perf_counter()
            model.retrieve([tokens], k=args.k, show_progress=False)
            samples["bc"].append(time.process_time() - c)
            samples["bw"].append(time.perf_counter() - w)
        med = {k: statistics.median(v) * 1e3 for k, v in samples.items()}
        for k, v in med.items():
            totals[k].append(v)
        print(_row(q[:46], med))
    print(
        _row("median of the questions (ms)", {k: statistics.median(v) for k, v in totals.items()})
    )
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


def _row(label: str, med: dict[str, float]) -> str:
    row = f"{label:46} {med['rc']:9.2f} {med['rw']:9.2f} {med['bc']:9.2f} {med['bw']:10.2f}"
    return row + (f" {med['sc']:9.2f} {med['sw']:9.2f}" if "sc" in med else "")


if __name__ == "__main__":
    main()
