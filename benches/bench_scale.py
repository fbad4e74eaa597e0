"""Vector stores side by side: the local Hamming index against LanceDB (exact scan with the
`hamming` distance, on a local directory), single query, k = 10, at 100k and 1M codes; plus
the cost of adding codes. 128-byte codes (1024 bits, voyage-code-3 `ubinary`) and 48-byte
codes (384 bits, the local MiniLM model).

    .venv/bin/python -m pytest benches/bench_scale.py --benchmark-only \
        --benchmark-columns=min,median,max

Figures, the machine and what they mean for choosing a store: docs/scale.md.
"""

from __future__ import annotations

import numpy as np
import pytest

from maguyva.scale.vectorstore import LanceDBStore, LocalHammingStore

pytest.importorskip("lancedb")

K = 10


@pytest.fixture(
    scope="module",
    params=[(100_000, 128), (1_000_000, 128), (1_000_000, 48)],
    ids=["100k-1024b", "1M-1024b", "1M-384b"],
)
def stores(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    n, width = request.param
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 256, size=(n, width), dtype=np.uint8)
    ids = np.arange(n, dtype=np.int64)
    local = LocalHammingStore(width)
    local.add(ids, codes)
    lance = LanceDBStore(tmp_path_factory.mktemp("lance"), width)
    for start in range(0, n, 250_000):
        lance.add(ids[start : start + 250_000], codes[start : start + 250_000])
    ivf = None
    if n >= 1_000_000 and width == 128:
        ivf = LanceDBStore(tmp_path_factory.mktemp("ivf"), width, exact=False, nprobes=16)
        for start in range(0, n, 250_000):
            ivf.add(ids[start : start + 250_000], codes[start : start + 250_000])
        ivf.create_index(num_partitions=1024)
    query = rng.integers(0, 256, size=width, dtype=np.uint8)
    assert local.search(query, K)[1].tolist() == lance.search(query, K)[1].tolist()
    return {"n": n, "width": width, "local": local, "lance": lance, "ivf": ivf, "query": query}


@pytest.mark.parametrize("backend", ["local", "lance", "ivf"])
def test_search(benchmark, stores: dict, backend: str) -> None:
    """`ivf`: LanceDB's approximate IVF_FLAT index (1024 partitions, 16 probed), 1M only."""
    benchmark.group = f"search top-{K} {stores['n']} x {stores['width'] * 8} bits"
    store = stores[backend]
    if store is None:
        pytest.skip("the IVF index is measured at 1M x 1024 bits only")
    benchmark(store.search, stores["query"], K)


@pytest.mark.parametrize("backend", ["local", "lance"])
def test_add_10k(benchmark, tmp_path, backend: str) -> None:
    benchmark.group = "add 10k codes of 1024 bits"
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 256, size=(10_000, 128), dtype=np.uint8)
    counter = iter(range(1_000_000))

    def run() -> None:
        n = next(counter)
        store = (
            LocalHammingStore(128) if backend == "local" else LanceDBStore(tmp_path / f"l{n}", 128)
        )
        store.add(np.arange(10_000), codes)

    benchmark.pedantic(run, rounds=5, iterations=1)
