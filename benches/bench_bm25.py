"""BM25 for natural-language questions: the index-time postings, the content scan they
replace, and `bm25s` over the same files, per query (issue 21).

    .venv/bin/python -m pytest benches/bench_bm25.py --benchmark-only

A text index of a slice of the standard library (`email`, `http`, `json`, `logging`,
`asyncio`, `concurrent`) is built once per session with `_core.build_text_index` (no
chunks: 60-line windows); `bm25s` indexes the same windows, tokenized as the `maguyva eval`
baseline does. One question per benchmark round, k = 50.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path
from typing import Any

import pytest

from maguyva import _core
from maguyva.modalities.text.modality import split_terms

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PACKAGES = ["email", "http", "json", "logging", "asyncio", "concurrent"]
QUESTION = "how does the json decoder handle escapes"
K = 50


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, list[str]]:
    out = tmp_path_factory.mktemp("bm25-index")
    files = sorted(
        str(p.relative_to(STDLIB)) for pkg in PACKAGES for p in (STDLIB / pkg).rglob("*.py")
    )
    _core.build_text_index(str(STDLIB), str(out), [(f, []) for f in files])
    index = _core.TextIndex(str(out))
    windows = []
    for f in files:
        lines = (STDLIB / f).read_text(encoding="utf-8", errors="replace").splitlines()
        windows += ["\n".join(lines[i : i + 60]) for i in range(0, max(1, len(lines)), 60)]
    return index, windows


@pytest.mark.benchmark(group="bm25 one question, k=50")
@pytest.mark.parametrize("method", ["postings", "scan", "scan_all"])
def test_maguyva(benchmark: Any, corpus: tuple[Any, list[str]], method: str) -> None:
    index, _ = corpus
    terms = split_terms([QUESTION])
    got = benchmark(index.bm25, terms, K, method=method)
    assert got and got[0][0].startswith("json/")


@pytest.mark.benchmark(group="bm25 one question, k=50")
def test_bm25s(benchmark: Any, corpus: tuple[Any, list[str]]) -> None:
    bm25s = pytest.importorskip("bm25s")
    from maguyva.eval.baselines import tokenize

    _, windows = corpus
    model = bm25s.BM25()
    model.index([tokenize(w) or ["_empty_"] for w in windows], show_progress=False)
    benchmark(model.retrieve, [tokenize(QUESTION)], k=K, show_progress=False)
