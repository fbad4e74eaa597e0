"""Vector stores side by side: the local Hamming index against LanceDB (exact scan with the
`hamming` distance, on a local directory), single query, k = 10, at 100k and 1M codes; plus
the cost of adding codes. 128-byte codes (1024 bits, voyage-code-3 `ubinary`) and 48-byte
codes (384 bits, the local MiniLM model).

    .venv/bin/python -m pytest benches/bench_scale.py --benchmark-only \
        --benchmark-columns=min,median,max

Figures and the machine: docs/scale-measurements.md; what they mean for choosing a store:
docs/scale.md.
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


# ---- the same build, three ways ----------------------------------------------------------


@pytest.fixture(scope="module")
def stdlib_part(tmp_path_factory: pytest.TempPathFactory):
    """Eight real standard-library packages (~160 files), without bytecode."""
    import shutil
    import sysconfig
    from pathlib import Path

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    root = tmp_path_factory.mktemp("stdlib")
    for name in ("asyncio", "email", "http", "json", "logging", "xml", "unittest", "importlib"):
        shutil.copytree(stdlib / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.mark.parametrize("path", ["single", "inline", "ray"])
def test_build_paths(benchmark, stdlib_part, tmp_path, path: str) -> None:
    """text + structural + graph of the same files: `build_index` (2 extraction processes),
    the partitioned build in-process, and on a local Ray with 2 workers (start-up included)."""
    from maguyva.build.indexer import build_index
    from maguyva.scale.distributed import InlineExecutor, RayExecutor, distributed_build

    benchmark.group = "build ~160 stdlib files (text, structural, graph)"
    config = {"modalities": ["text", "structural", "graph"], "jobs": 2}
    counter = iter(range(100))

    def run() -> None:
        cfg = {**config, "index_dir": str(tmp_path / f"i{next(counter)}")}
        if path == "single":
            build_index(stdlib_part, config=cfg)
        elif path == "inline":
            distributed_build(stdlib_part, executor=InlineExecutor(), config=cfg)
        else:
            executor = RayExecutor(num_cpus=2)
            try:
                distributed_build(stdlib_part, executor=executor, config=cfg)
            finally:
                executor.shutdown()

    benchmark.pedantic(run, rounds=2, iterations=1)
