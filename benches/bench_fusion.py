"""Fusion: the Rust weighted RRF (`_core.fuse`) against a pure-Python RRF, same inputs.

4 ranked lists x 1,000 results (keys overlap across lists, 400 files), centrality for a third
of the keys, some demoted paths. Both implementations compute the same thing (checked here):
weighted contributions, the capped centrality boost, demotion, best chunk per file.

    make bench                                   # with every other bench
    .venv/bin/python -m pytest benches/bench_fusion.py --benchmark-only
    .venv/bin/python benches/bench_fusion.py     # plain timing, for docs/BENCHMARKS.md
"""

from __future__ import annotations

import math
import random
import sys
import timeit

import pytest

from maguyva import _core

LISTS, DEPTH, K, LIMIT = 4, 1000, 60.0, 10
WEIGHTS = (0.5, 0.2, 0.2, 0.1)


def make_inputs(seed: int = 7) -> tuple[list, dict[str, float]]:
    rng = random.Random(seed)
    keys = [f"k{i:05d}" for i in range(3000)]
    path_of = {k: (f"vendor/p{i % 400}.py" if i % 97 == 0 else f"src/p{i % 400}.py")
               for i, k in enumerate(keys)}  # fmt: skip
    lists = []
    for weight in WEIGHTS:
        chosen = rng.sample(keys, DEPTH)
        lists.append((weight, [(k, path_of[k]) for k in chosen]))
    centrality = {k: rng.random() * 4 for k in rng.sample(keys, 1000)}
    return lists, centrality


def _boost(c: float) -> float:
    c = c if c > 0 and math.isfinite(c) else 0.0
    return min(1.0 + 0.3 * math.log1p(c), 1.5)


def python_rrf(lists, centrality, k, limit):
    """The textbook weighted RRF in Python, with the same boost, demotion and per-file dedupe."""
    scores: dict[str, float] = {}
    paths: dict[str, str] = {}
    for weight, items in lists:
        for rank, (key, path) in enumerate(items):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank + 1)
            paths[key] = path
    best: dict[str, tuple[float, str]] = {}
    for key, score in scores.items():
        path = paths[key]
        final = score * _boost(centrality.get(key, centrality.get(path, 0.0)))
        if _core.is_demoted_path(path):
            final *= _core.DEMOTION_FACTOR
        if path not in best or (final, key) > (best[path][0], best[path][1]):
            best[path] = (final, key)
    ranked = sorted(((s, p, key) for p, (s, key) in best.items()), key=lambda t: (-t[0], t[1]))
    return [(key, path, score) for score, path, key in ranked[:limit]]


def test_both_agree():
    lists, centrality = make_inputs()
    rust = [(key, path) for key, path, *_ in _core.fuse(lists, centrality, K, LIMIT)]
    python = [(key, path) for key, path, _ in python_rrf(lists, centrality, K, LIMIT)]
    assert [p for _, p in rust] == [p for _, p in python]


@pytest.mark.benchmark(group="fusion 4x1000")
def test_fuse_rust(benchmark):
    lists, centrality = make_inputs()
    benchmark(_core.fuse, lists, centrality, K, LIMIT)


@pytest.mark.benchmark(group="fusion 4x1000")
def test_fuse_python(benchmark):
    lists, centrality = make_inputs()
    benchmark(python_rrf, lists, centrality, K, LIMIT)


def main() -> int:
    lists, centrality = make_inputs()
    out = {}
    for name, fn in (("rust _core.fuse", _core.fuse), ("python rrf", python_rrf)):
        runs = timeit.repeat(lambda fn=fn: fn(lists, centrality, K, LIMIT), number=50, repeat=7)
        out[name] = sorted(runs)[len(runs) // 2] / 50 * 1e6
        print(f"{name:<16} median {out[name]:9.1f} us per fusion (4 lists x {DEPTH})")
    print(f"python / rust: x{out['python rrf'] / out['rust _core.fuse']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
