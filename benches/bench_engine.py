"""End-to-end query latency per intent on a real repository (requests 2.32.3 from PyPI),
Maguyva's default preset side by side with the ripgrep and BM25 baselines.

    .venv/bin/python -m pytest benches/bench_engine.py --benchmark-only
    .venv/bin/python benches/bench_engine.py [--runs 5] [--reindex]   # p50/p99 table

The queries are the shipped evaluation sets of that corpus, grouped by the intent the
classifier routes them to. Uses whatever modalities the cached index has built
(`maguyva eval` builds it); the table header says which.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pytest

from maguyva.build.indexer import build_index
from maguyva.errors import IndexNotFoundError, MaguyvaError
from maguyva.eval.baselines import BM25Baseline, RipgrepBaseline
from maguyva.eval.corpora import fetch_corpus
from maguyva.eval.metrics import percentile
from maguyva.eval.queryset import load_queries
from maguyva.query.engine import Engine
from maguyva.query.intent import classify

EVAL = Path(__file__).parent.parent / "eval"
CORPUS = "requests-2.32.3"


def open_engine(reindex: bool = False) -> Engine:
    root = fetch_corpus(CORPUS)
    if not reindex:
        try:
            return Engine.open(root)
        except (IndexNotFoundError, MaguyvaError):
            pass
    build_index(root)
    return Engine.open(root)


def grouped() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for query in load_queries(sorted(EVAL.glob(f"{CORPUS}.*.jsonl"))):
        out.setdefault(classify(query.query).intent, []).append(query.query)
    return out


GROUPS = grouped()


@pytest.fixture(scope="module")
def systems():
    engine = open_engine()
    engine.available_modalities()
    return {
        "maguyva default": lambda q: engine.search(q, limit=10),
        "ripgrep": lambda q: RipgrepBaseline(engine.root, engine.chunks.paths()).search(q, 10),
        "bm25": BM25Baseline(engine.chunks).search,
    }


@pytest.mark.parametrize("system", ["maguyva default", "ripgrep", "bm25"])
@pytest.mark.parametrize("intent", sorted(GROUPS))
def test_query(benchmark, systems, intent, system):
    search = systems[system]
    texts = GROUPS[intent]
    if system == "bm25":
        call = search
        search = lambda q: call(q, 10)  # noqa: E731
    benchmark.group = f"end-to-end {intent} ({len(texts)} queries)"
    benchmark.pedantic(lambda: [search(t) for t in texts], rounds=3, iterations=1)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--reindex", action="store_true")
    args = parser.parse_args()
    engine = open_engine(args.reindex)
    built = engine.available_modalities()
    rg = RipgrepBaseline(engine.root, engine.chunks.paths())
    bm25 = BM25Baseline(engine.chunks)
    systems = {"maguyva default": lambda q: engine.search(q, limit=10),
               "ripgrep": lambda q: rg.search(q, 10), "bm25": lambda q: bm25.search(q, 10)}  # fmt: skip
    print(f"corpus {CORPUS}; modalities: {', '.join(built)}; {args.runs} runs per query")
    print(
        f"{'routed intent':<16} {'n':>3}  " + "  ".join(f"{s + ' p50/p99 ms':>26}" for s in systems)
    )
    for intent, texts in sorted(GROUPS.items()):
        cells = []
        for search in systems.values():
            samples = []
            for _ in range(args.runs):
                for text in texts:
                    began = time.perf_counter()
                    search(text)
                    samples.append((time.perf_counter() - began) * 1000)
            cells.append(f"{percentile(samples, 50):>12.2f} / {percentile(samples, 99):>9.2f}")
        print(f"{intent:<16} {len(texts):>3}  " + "  ".join(f"{c:>26}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
