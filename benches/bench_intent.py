"""The intent classifier on the hot path: microseconds per query, per rule family.

    .venv/bin/python -m pytest benches/bench_intent.py --benchmark-only
    .venv/bin/python benches/bench_intent.py        # per-intent medians, for docs/BENCHMARKS.md
    .venv/bin/python benches/bench_intent.py --passes 5    # fewer passes on a loaded machine
    PYTHONPATH=/path/to/other/python .venv/bin/python benches/bench_intent.py   # another tree

The queries are the shipped evaluation sets' (hand-written and generated) and the phrasing set
(`eval/phrasings/`: both halves and every other file there), so the mix is real. They are read
from this checkout's `eval/`, so another tree's classifier (on `PYTHONPATH`) runs the same mix.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import pytest

from maguyva.eval.phrasings import load_file as load_phrasing_file
from maguyva.eval.queryset import load_queries
from maguyva.query.intent import classify

EVAL = Path(__file__).parent.parent / "eval"


def queries_by_intent() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    # one file at a time: the similar-code sets reuse ids across corpora
    texts = [q.query for path in sorted(EVAL.glob("*.jsonl")) for q in load_queries([path])]
    texts += [p.query for path in sorted((EVAL / "phrasings").glob("*.jsonl"))
              for p in load_phrasing_file(path)]  # fmt: skip
    for text in texts:
        out.setdefault(classify(text).intent, []).append(text)
    return out


GROUPS = queries_by_intent()


@pytest.mark.parametrize("intent", sorted(GROUPS))
@pytest.mark.benchmark(group="classify (one call per query of the group)")
def test_classify(benchmark, intent):
    texts = GROUPS[intent]

    def run() -> None:
        for text in texts:
            classify(text)

    benchmark.extra_info["queries"] = len(texts)
    benchmark(run)


def main(argv: list[str]) -> int:
    passes = int(argv[argv.index("--passes") + 1]) if "--passes" in argv else 200
    print(f"{'routed intent':<18} {'n':>4} {'median us':>10} {'p99 us':>8}")
    every: list[float] = []
    for intent, texts in sorted(GROUPS.items()):
        samples = []
        for _ in range(passes):
            for text in texts:
                began = time.perf_counter_ns()
                classify(text)
                samples.append((time.perf_counter_ns() - began) / 1000)
        every += samples
        samples.sort()
        p99 = samples[int(0.99 * (len(samples) - 1))]
        print(f"{intent:<18} {len(texts):>4} {statistics.median(samples):>10.1f} {p99:>8.1f}")
    every.sort()
    p99 = every[int(0.99 * (len(every) - 1))]
    n = sum(len(t) for t in GROUPS.values())
    print(f"{'all':<18} {n:>4} {statistics.median(every):>10.1f} {p99:>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
