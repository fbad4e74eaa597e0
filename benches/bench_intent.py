"""The intent classifier on the hot path: microseconds per query, per rule family.

    .venv/bin/python -m pytest benches/bench_intent.py --benchmark-only
    .venv/bin/python benches/bench_intent.py        # per-intent medians, for docs/BENCHMARKS.md

The queries are the shipped evaluation sets' (hand-written and generated) and the phrasing set
(`eval/phrasings/`: both halves and every other file there), so the mix is real.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import pytest

from maguyva.eval.phrasings import PHRASINGS, SPLITS
from maguyva.eval.phrasings import load as load_phrasings
from maguyva.eval.phrasings import load_file as load_phrasing_file
from maguyva.eval.queryset import load_queries
from maguyva.query.intent import classify

EVAL = Path(__file__).parent.parent / "eval"


def queries_by_intent() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    # one file at a time: the similar-code sets reuse ids across corpora
    texts = [q.query for path in sorted(EVAL.glob("*.jsonl")) for q in load_queries([path])]
    texts += [p.query for split in ("dev", "heldout") for p in load_phrasings(split)]
    texts += [p.query for path in sorted(PHRASINGS.glob("*.jsonl")) if path.stem not in SPLITS
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


def main() -> int:
    print(f"{'routed intent':<18} {'n':>4} {'median us':>10} {'p99 us':>8}")
    every: list[float] = []
    for intent, texts in sorted(GROUPS.items()):
        samples = []
        for _ in range(200):
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
    sys.exit(main())
