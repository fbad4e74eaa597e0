"""Fusion side by side: the old tuple binding (`_core.fuse`, when the build has it), the array
binding (`maguyva.query.fusion`, `_core.fuse_ids`) and a textbook weighted RRF in Python.

4 ranked lists x 1,000 hits (keys overlap across lists, 400 files), centrality for a third of
the keys, some vendored paths, limit 10. Every contender starts where the engine starts, from
the retrievers' `Hit` lists, and ends with the top files; all three return the same (checked
here). The kernel-only rows start from inputs already converted (tuples or arrays).

    .venv/bin/python benches/bench_fusion.py     # plain timing, for docs/BENCHMARKS.md
    .venv/bin/python -m pytest benches/bench_fusion.py --benchmark-only
"""

from __future__ import annotations

import math
import random
import sys
import timeit
from collections.abc import Callable

import pytest

from maguyva import _core
from maguyva.model import Hit
from maguyva.query.fusion import RankedLists

LISTS, DEPTH, K, LIMIT = 4, 1000, 60.0, 10
WEIGHTS = (0.5, 0.2, 0.2, 0.1)
HAS_TUPLES = hasattr(_core, "fuse")  # the tuple binding, before the array one replaced it

Hits = list[list[Hit]]


def make_inputs(seed: int = 7) -> tuple[Hits, dict[str, float]]:
    rng = random.Random(seed)
    keys = [f"k{i:05d}" for i in range(3000)]
    path_of = {k: (f"vendor/p{i % 400}.py" if i % 97 == 0 else f"src/p{i % 400}.py")
               for i, k in enumerate(keys)}  # fmt: skip
    lists = [[Hit(path_of[k], 1, 2, key=k) for k in rng.sample(keys, DEPTH)] for _ in WEIGHTS]
    centrality = {k: rng.random() * 4 for k in rng.sample(keys, 1000)}
    return lists, centrality


def _boost(c: float) -> float:
    c = c if c > 0 and math.isfinite(c) else 0.0
    return min(1.0 + 0.3 * math.log1p(c), 1.5)


def python_rrf(lists: Hits, centrality: dict[str, float]) -> list[tuple[str, str]]:
    """The textbook weighted RRF in Python, with the same boost, demotion and per-file dedupe."""
    scores: dict[str, float] = {}
    paths: dict[str, str] = {}
    for weight, hits in zip(WEIGHTS, lists, strict=True):
        for rank, hit in enumerate(hits):
            scores[hit.key or ""] = scores.get(hit.key or "", 0.0) + weight / (K + rank + 1)
            paths[hit.key or ""] = hit.path
    best: dict[str, tuple[float, str]] = {}
    for key, score in scores.items():
        path = paths[key]
        final = score * _boost(centrality.get(key, centrality.get(path, 0.0)))
        if _core.is_demoted_path(path):
            final *= _core.DEMOTION_FACTOR
        if path not in best or (-final, key) < (-best[path][0], best[path][1]):
            best[path] = (final, key)
    ranked = sorted(((s, p, key) for p, (s, key) in best.items()), key=lambda t: (-t[0], t[1]))
    return [(key, path) for _, path, key in ranked[:LIMIT]]


def tuple_rrf(lists: Hits, centrality: dict[str, float]) -> list[tuple[str, str]]:
    """The engine's old path: `(key, path)` tuples per hit into `_core.fuse`."""
    ranked = [
        (w, [(h.key or "", h.path) for h in hits]) for w, hits in zip(WEIGHTS, lists, strict=True)
    ]
    return [(key, path) for key, path, *_ in _core.fuse(ranked, centrality, K, LIMIT)]


def array_rrf(lists: Hits, centrality: dict[str, float]) -> list[tuple[str, str]]:
    """The engine's path: numbered keys and files as arrays into `_core.fuse_ids`."""
    ranked = RankedLists.of_hits(lists).with_centrality(centrality)
    return [(f.key, f.path) for f in ranked.fuse(WEIGHTS, K, LIMIT)]


def contenders() -> dict[str, Callable[[Hits, dict[str, float]], list[tuple[str, str]]]]:
    found = {"arrays (fuse_ids)": array_rrf, "python rrf": python_rrf}
    if HAS_TUPLES:
        found["tuples (old fuse)"] = tuple_rrf
    return found


def kernels(lists: Hits, centrality: dict[str, float]) -> dict[str, Callable[[], object]]:
    """The bindings alone, from inputs converted beforehand."""
    ranked = RankedLists.of_hits(lists).with_centrality(centrality)
    found: dict[str, Callable[[], object]] = {
        "kernel fuse_ids": lambda: ranked.fuse(WEIGHTS, K, LIMIT)
    }
    if HAS_TUPLES:
        pairs = [
            (w, [(h.key or "", h.path) for h in hits])
            for w, hits in zip(WEIGHTS, lists, strict=True)
        ]
        found["kernel old fuse"] = lambda: _core.fuse(pairs, centrality, K, LIMIT)
    return found


def test_all_agree():
    lists, centrality = make_inputs()
    answers = {name: fn(lists, centrality) for name, fn in contenders().items()}
    assert len(set(map(tuple, answers.values()))) == 1, answers


@pytest.mark.benchmark(group="fusion 4x1000 from hits")
@pytest.mark.parametrize("name", list(contenders()))
def test_fuse(benchmark, name):
    lists, centrality = make_inputs()
    benchmark(contenders()[name], lists, centrality)


def main() -> int:
    lists, centrality = make_inputs()
    rows = {name: (lambda fn=fn: fn(lists, centrality)) for name, fn in contenders().items()}
    rows.update(kernels(lists, centrality))
    out = {}
    for name, run in rows.items():
        runs = timeit.repeat(run, number=50, repeat=9)
        out[name] = sorted(runs)[len(runs) // 2] / 50 * 1e6
        print(f"{name:<20} median {out[name]:9.1f} us per fusion ({LISTS} lists x {DEPTH})")
    base = out["arrays (fuse_ids)"]
    for name, us in out.items():
        print(f"{name:<20} x{us / base:.2f} of arrays")
    return 0


if __name__ == "__main__":
    sys.exit(main())
