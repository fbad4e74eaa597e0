"""Graph modality benchmarks (pytest-benchmark), side by side with Jedi on the same query.

    .venv/bin/python -m pytest benches/bench_graph.py --benchmark-only \
        --benchmark-columns=min,median,max,ops

Corpus: the json, email and http packages of the CPython standard library (real code, copied
into a temporary directory). Quality against Jedi is measured by benches/graph_vs_jedi.py.
"""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import jedi
import pytest

from maguyva.modalities.graph import MODALITY
from maguyva.modalities.protocol import BuildContext
from maguyva.modalities.structural.modality import extract_repository
from maguyva.repo.walk import walk_repository

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PACKAGES = ("json", "email", "http")
TARGET = ("email/_header_value_parser.py", "get_token")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("stdlib")
    for pkg in PACKAGES:
        shutil.copytree(STDLIB / pkg, root / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    files = walk_repository(root).files
    extraction, chunks, _ = extract_repository(root, files, {})
    return root, files, extraction, chunks


@pytest.fixture(scope="module")
def searcher(corpus, tmp_path_factory):
    root, files, extraction, chunks = corpus
    out = tmp_path_factory.mktemp("gen")
    MODALITY.build(BuildContext(root, out, files, chunks, extraction, {}, out))
    return MODALITY.open(out, {})


def test_graph_build(benchmark, corpus, tmp_path):
    root, files, extraction, chunks = corpus
    ctx = BuildContext(root, tmp_path, files, chunks, extraction, {}, tmp_path)
    report = benchmark.pedantic(MODALITY.build, args=(ctx,), rounds=3)
    assert report["edges"] > 0


def test_graph_open(benchmark, searcher):
    benchmark(MODALITY.open, searcher.gen_dir, {})


def test_graph_references(benchmark, searcher):
    hits = benchmark(searcher.references, TARGET[1])
    assert hits


def test_graph_impact_depth2(benchmark, searcher):
    benchmark(searcher.impact, TARGET[1], 2)


def test_jedi_get_references(benchmark, corpus):
    root = corpus[0]
    project = jedi.Project(root, added_sys_path=[str(root)])
    path = root / TARGET[0]
    lines = path.read_text().splitlines()
    line = next(i for i, t in enumerate(lines, 1) if t.startswith(f"def {TARGET[1]}("))

    def run():
        return jedi.Script(path=path, project=project).get_references(line, 4, scope="project")

    assert benchmark.pedantic(run, rounds=3)
