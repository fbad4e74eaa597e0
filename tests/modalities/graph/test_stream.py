"""The graph build reads each file's extraction once, in path order, and keeps none of it
(what bounds its memory on a large repository); merging the edge rows with numpy gives what
merging them in a dict gave; strings pack to the same bytes either way."""

from __future__ import annotations

import dataclasses
import gc
import json
import shutil
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maguyva.extract import types as extract_types
from maguyva.extract.types import FileExtraction
from maguyva.modalities.graph.adjacency import merge_edges
from maguyva.modalities.graph.build import build_with_log
from maguyva.modalities.graph.resolve.builder import GraphBuilder, iter_edges
from maguyva.modalities.graph.resolve.rows import Columns
from maguyva.modalities.graph.store import pack_strings
from maguyva.modalities.structural.modality import extract_repository
from maguyva.repo.walk import walk_repository

STDLIB = Path(json.__file__).resolve().parent.parent
PACKAGES = ("json", "logging", "http", "email")  # 40 files of real code with imports between them


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, list, dict[str, FileExtraction], list]:
    root = tmp_path_factory.mktemp("stdlib")
    for name in PACKAGES:
        shutil.copytree(STDLIB / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    files = walk_repository(root).files
    extraction, chunks, _ = extract_repository(root, files, {"jobs": 1})
    return root, files, extraction, chunks


def _encode(ex: FileExtraction) -> str:
    return json.dumps(dataclasses.asdict(ex))


def _decode(text: str) -> FileExtraction:
    d = json.loads(text)
    return FileExtraction(
        d["path"], d["language"],
        [extract_types.Definition(**x) for x in d["definitions"]],
        [extract_types.Import(**x) for x in d["imports"]],
        [extract_types.Call(**x) for x in d["calls"]],
        [extract_types.Reference(**x) for x in d["references"]],
        d["error"],
    )  # fmt: skip


class Decoding(Mapping[str, FileExtraction]):
    """Like the indexer's view: every access decodes a new object; counts the accesses.
    Keys iterate in reverse order (the builder must not depend on the mapping's order)."""

    def __init__(self, extraction: dict[str, FileExtraction]) -> None:
        self.rows = {p: _encode(e) for p, e in extraction.items()}
        self.reads: Counter[str] = Counter()

    def __getitem__(self, path: str) -> FileExtraction:
        self.reads[path] += 1
        return _decode(self.rows[path])

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self.rows, reverse=True))

    def __len__(self) -> int:
        return len(self.rows)


def _live_extractions() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is FileExtraction)


def test_each_file_read_once_and_none_kept(corpus):
    root, _files, extraction, _ = corpus
    view = Decoding(extraction)
    before = _live_extractions()
    builder = GraphBuilder(view, lambda p: (root / p).read_text())
    seen = []
    builder.declare(lambda fid, ex: seen.append((fid, ex.path)))
    assert builder.paths == sorted(extraction)
    assert seen == list(enumerate(sorted(extraction)))
    assert _live_extractions() == before  # declarations and compact bodies only
    builder.resolve_all()
    assert view.reads == Counter(dict.fromkeys(extraction, 1))
    assert all(b is None for b in builder.bodies)  # each body dropped once resolved
    assert len(builder.nodes) > len(extraction) and len(builder.edges) > 0


def test_view_builds_the_graph_a_dict_builds(corpus):
    root, files, extraction, chunks = corpus

    def read(p: str) -> str:
        return (root / p).read_text()

    a = build_with_log(extraction, chunks, read_text=read, sources=files)
    b = build_with_log(Decoding(extraction), chunks, read_text=read, sources=files)
    for x, y in ((a[0], b[0]), (a[3][0], b[3][0])):  # graph arrays, edge-log arrays
        assert x.keys() == y.keys()
        for name in x:
            assert x[name].dtype == y[name].dtype and np.array_equal(x[name], y[name]), name
    assert a[1] == b[1] and a[3][1] == b[3][1]
    timings = ("digest_s", "resolve_s", "centrality_s", "log_s")
    assert {k: v for k, v in a[2].items() if k not in timings} == {
        k: v for k, v in b[2].items() if k not in timings
    }
    assert a[2]["edges"] > 1000 and a[2]["edges_by_kind"]["imports"] > 50


def _merge_in_a_dict(rows: list[tuple[int, int, int, float, int]]):
    """The builder's former edge table: (src, dst, kind) -> [best conf, set of lines]."""
    edges: dict[tuple[int, int, int], list] = {}
    for src, dst, kind, conf, line in rows:
        slot = edges.get((src, dst, kind))
        if slot is None:
            edges[(src, dst, kind)] = [conf, {line}]
        else:
            if conf > slot[0]:
                slot[0] = conf
            slot[1].add(line)
    items = list(edges.items())
    line_lists = [sorted(v[1]) for _, v in items]
    lptr = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in line_lists], out=lptr[1:])
    return (
        np.array([k[0] for k, _ in items], dtype=np.int32),
        np.array([k[1] for k, _ in items], dtype=np.int32),
        np.array([k[2] for k, _ in items], dtype=np.uint8),
        np.array([v[0] for _, v in items], dtype=np.float32),
        lptr,
        np.array([x for ls in line_lists for x in ls], dtype=np.int32),
    )


ROWS = st.lists(
    st.tuples(
        st.integers(0, 12), st.integers(0, 12), st.integers(0, 4),
        st.sampled_from([1.0, 0.95, 0.9, 0.85, 0.6, 0.5 / 3**0.5, 0.2, 0.1]),
        st.integers(0, 40),
    ),
    max_size=300,
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(ROWS)
def test_merge_edges_equals_the_dict_merge(rows):
    cols = Columns()
    for row in rows:
        cols.append(row)
    got = merge_edges(cols)
    want = _merge_in_a_dict(rows)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and np.array_equal(g, w)


def test_iter_edges_merges_like_merge_edges(corpus):
    _, _, extraction, _ = corpus
    builder = GraphBuilder(extraction)
    builder.resolve_all()
    src, dst, kind, conf, lptr, lines = merge_edges(builder.edges)
    listed = list(iter_edges(builder))
    assert lptr[-1] == len(lines)
    assert [(s, d, k) for s, d, k, _, _ in listed] == list(
        zip(src.tolist(), dst.tolist(), kind.tolist(), strict=True)
    )
    assert np.array_equal(np.array([c for *_, c, _ in listed], dtype=np.float32), conf)
    assert [x for *_, ls in listed for x in ls] == lines.tolist()


@pytest.mark.parametrize(
    "values",
    [[], [""], ["a", "", "bc"], ["módulo", "x", "日本", ""], ["\udcff", "ok"], ["a" * 1000] * 3],
)
def test_pack_strings_same_bytes_as_encoding_each(values):
    blob, off = pack_strings(values)
    encoded = [v.encode("utf-8", "surrogatepass") for v in values]
    assert blob.tobytes() == b"".join(encoded)
    assert off.tolist() == np.cumsum([0] + [len(e) for e in encoded]).tolist()
    assert off.dtype == np.int64 and blob.dtype == np.uint8


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
