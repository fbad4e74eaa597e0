"""Hamming top-k, side by side with FAISS IndexBinaryFlat and NumPy `bitwise_count`.

1024-bit codes (128 bytes), random, k = 10. Run: `make bench` or
`.venv/bin/python -m pytest benches/bench_hamming.py --benchmark-only`.
Figures and the machine are recorded in docs/semantic.md.
"""

from __future__ import annotations

import numpy as np
import pytest

from maguyva import _core

faiss = pytest.importorskip("faiss")

WIDTH = 128  # bytes: 1024-bit codes, as voyage-code-3 ubinary
K = 10
BATCH = 100


@pytest.fixture(scope="module", params=[100_000, 1_000_000], ids=["100k", "1M"])
def data(request: pytest.FixtureRequest) -> dict:
    n = request.param
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 256, size=(n, WIDTH), dtype=np.uint8)
    queries = rng.integers(0, 256, size=(BATCH, WIDTH), dtype=np.uint8)
    index = faiss.IndexBinaryFlat(WIDTH * 8)
    index.add(codes)
    return {"n": n, "codes": codes, "queries": queries, "faiss": index}


def _faiss_threads(n: int) -> None:
    faiss.omp_set_num_threads(n)


@pytest.mark.parametrize("threads", [1, 2])
def test_single_maguyva(benchmark, data, threads: int) -> None:
    benchmark.group = f"single {data['n']}"
    q = data["queries"][0]
    ids, _ = benchmark(_core.hamming_topk, q, data["codes"], K, threads=threads)
    _, want = data["faiss"].search(q[None], K)
    assert ids.tolist() == want[0].tolist()


@pytest.mark.parametrize("threads", [1, 2])
def test_single_faiss(benchmark, data, threads: int) -> None:
    benchmark.group = f"single {data['n']}"
    _faiss_threads(threads)
    benchmark(data["faiss"].search, data["queries"][:1], K)
    _faiss_threads(2)


def test_single_numpy_bitwise_count(benchmark, data) -> None:
    benchmark.group = f"single {data['n']}"
    q, codes = data["queries"][0], data["codes"]

    def run() -> np.ndarray:
        d = np.bitwise_count(codes ^ q).sum(axis=1, dtype=np.uint32)
        top = np.argpartition(d, K)[:K]
        return top[np.lexsort((top, d[top]))]

    benchmark.pedantic(run, rounds=5 if data["n"] > 200_000 else 20, iterations=1)


@pytest.mark.parametrize("threads", [1, 2])
def test_batch_maguyva(benchmark, data, threads: int) -> None:
    benchmark.group = f"batch {BATCH} x {data['n']}"
    benchmark.extra_info["pairs"] = BATCH * data["n"]
    benchmark.pedantic(
        _core.hamming_topk, (data["queries"], data["codes"], K), {"threads": threads},
        rounds=5, iterations=1,
    )  # fmt: skip


@pytest.mark.parametrize("threads", [1, 2])
def test_batch_faiss(benchmark, data, threads: int) -> None:
    benchmark.group = f"batch {BATCH} x {data['n']}"
    benchmark.extra_info["pairs"] = BATCH * data["n"]
    _faiss_threads(threads)
    benchmark.pedantic(data["faiss"].search, (data["queries"], K), rounds=5, iterations=1)
    _faiss_threads(2)


@pytest.mark.parametrize("kernel", _core.hamming_kernels())
def test_kernels_1m(benchmark, data, kernel: str) -> None:
    if data["n"] != 1_000_000 or kernel == "scalar":
        pytest.skip("kernel comparison on 1M only; scalar is the reference")
    benchmark.group = "kernels 1M single, 1 thread"
    q = data["queries"][0]
    benchmark(_core.hamming_topk, q, data["codes"], K, threads=1, kernel=kernel)
