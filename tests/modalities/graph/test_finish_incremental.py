"""The whole-graph work after a patch, made proportional to the change: edge rows merged in
any layout with a first-appearance position and a sorting hint (`build.merge_rows`), chunk
spans spliced per changed file (`build.Spans`), and, through a long-running `Indexer` over
segment-backed views, every patched generation equal to a from-scratch index of the tree."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from graph_support import assert_same_graph
from hypothesis import given, settings
from hypothesis import strategies as st

from maguyva.modalities import graph
from maguyva.modalities.graph import adjacency, build
from maguyva.modalities.graph.adjacency import merge_edges, merge_rows
from maguyva.modalities.graph.build import Spans
from maguyva.modalities.graph.modality import GraphModality
from maguyva.modalities.graph.resolve.rows import Columns
from maguyva.store.chunks import segment_of
from maguyva.store.generations import IndexDir

ROW = st.tuples(
    st.integers(0, 5),
    st.integers(0, 5),
    st.integers(0, 4),
    st.sampled_from([0.3, 0.5, 0.9, 1.0]),
    st.integers(-2, 9),
)


def _columns(rows) -> Columns:
    cols = Columns()
    for row in rows:
        cols.append(row)
    return cols


def _check_same(got, want) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)


@given(st.lists(ROW, min_size=1, max_size=60), st.randoms(use_true_random=False),
       st.booleans())  # fmt: skip
@settings(max_examples=200, deadline=None)
def test_merge_rows_in_any_layout_with_any_hint_equals_merge_edges(rows, rnd, wide):
    """Rows given in another order with their positions (`pos`), and sorted from any guess
    (`hint`: a wrong one too), merge exactly as the rows in order do; an edge's rows may lie
    anywhere (two files' rows, the tail of module CONTAINS rows). `wide` node numbers do not
    fit the one-int64 (key, line) sort: its fallback must agree as well."""
    if wide:
        rows = [(s << 27, d << 27, k, c, ln) for s, d, k, c, ln in rows]
    want = merge_edges(_columns(rows))
    layout = list(range(len(rows)))
    rnd.shuffle(layout)
    cols = [np.array([rows[i][j] for i in layout], dtype=dt) for j, dt in
            enumerate((np.int32, np.int32, np.uint8, np.float64, np.int32))]  # fmt: skip
    gaps = np.cumsum([rnd.randint(1, 3) for _ in rows])  # positions need not be contiguous
    pos = gaps[np.array(layout)]
    hint = list(range(len(rows)))
    rnd.shuffle(hint)
    for h in (None, np.array(hint, dtype=np.int64), np.arange(len(rows), dtype=np.int64)):
        got, order, by_dst = merge_rows(*cols, pos=pos, hint=h)
        _check_same(got, want)
        assert sorted(order.tolist()) == list(range(len(rows)))
        src, dst, kind = (x.tolist() for x in got[:3])
        assert by_dst.tolist() == sorted(range(len(src)), key=lambda e: (dst[e], src[e], kind[e]))


def test_merge_rows_of_nothing():
    got, order, by_dst = merge_rows(*(np.zeros(0, dtype=dt) for dt in
                                      (np.int32, np.int32, np.uint8, np.float64, np.int32)))  # fmt: skip
    _check_same(got, merge_edges(Columns()))
    assert len(order) == 0 == len(by_dst)
    ptr, idx = adjacency._csr(3, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32))
    assert ptr.tolist() == [0, 0, 0, 0] and len(idx) == 0


@given(st.lists(st.tuples(st.integers(0, 6), st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])),
                min_size=1, max_size=80), st.randoms(use_true_random=False),
       st.sampled_from([None, "same", "stale"]))  # fmt: skip
@settings(max_examples=200, deadline=None)
def test_csr_with_any_near_order_and_kept_confidences_equals_lexsort(edges, rnd, kept):
    """A node's edges by confidence (highest first), ties in edge order: whatever order the
    edges are given in (`near`), and whether the kept distinct confidences are the same or
    miss one (then found again, and kept)."""
    keys = np.array([k for k, _ in edges], dtype=np.int32)
    conf = np.array([c for _, c in edges], dtype=np.float32)
    want = np.lexsort((-conf, keys)).astype(np.int32)
    cache = None
    if kept == "same":
        cache = {"conf_values": np.unique(conf)}
    elif kept == "stale":
        cache = {"conf_values": np.unique(conf)[1:]}
    near = list(range(len(edges)))
    rnd.shuffle(near)
    for nr in (None, np.array(near, dtype=np.int64)):
        ptr, idx = adjacency._csr(7, keys, conf, nr, cache)
        assert idx.dtype == np.int32 and idx.tolist() == want.tolist()
        assert ptr.tolist() == np.r_[0, np.cumsum(np.bincount(keys, minlength=7))].tolist()
    if cache is not None:
        assert np.array_equal(cache["conf_values"], np.unique(conf))


def _spans(runs: dict[str, list[tuple[int, int]]]) -> list[tuple[str, int, int, str]]:
    """Spans of `runs` in a segment view's order: (segment, path), then the file's lines."""
    out = []
    for path in sorted(runs, key=lambda p: (segment_of(p), p)):
        out.extend((path, a, b, f"{path}#{a}-{b}") for a, b in runs[path])
    return out


def _same_spans(got: Spans, want: Spans) -> None:
    assert got.paths == want.paths
    for name in ("ptr", "start", "end"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    assert np.array_equal(got.ids.blob, want.ids.blob)
    assert np.array_equal(got.ids.offsets, want.ids.offsets)


@pytest.mark.parametrize(
    "change",
    [
        ("b.py", [(1, 4), (5, 9), (10, 30), (31, 32)]),  # more chunks
        ("b.py", [(1, 2)]),  # fewer
        ("b.py", []),  # none left: an empty run stays where it was
        ("new_é.py", [(1, 3), (4, 8)]),  # a file that had no chunks (non-ASCII ids)
        ("a.py", [(2, 3)]),
    ],
)
def test_spans_splice_a_file_like_a_fresh_read(change):
    runs = {"a.py": [(1, 5), (6, 9)], "b.py": [(1, 3), (4, 20)], "c/d.py": [(1, 1)], "e.py": []}
    runs = {p: r for p, r in runs.items() if r}
    kept = Spans.read(_spans(runs), packed=True)
    path, now = change
    got = kept.spliced(path, [(path, a, b, f"{path}#{a}-{b}") for a, b in now])
    assert got is not None
    want_runs = {**runs, path: now}
    want = Spans.read(_spans(want_runs), packed=True)
    if not now:  # the emptied run is kept (zero chunks); a fresh read has none
        keep = [i for i, p in enumerate(got.paths) if p != path]
        assert got.ptr[got.paths.index(path)] == got.ptr[got.paths.index(path) + 1]
        got = Spans([got.paths[i] for i in keep], np.r_[got.ptr[keep], got.ptr[-1]],
                    got.start, got.end, got.ids)  # fmt: skip
    _same_spans(got, want)
    assert len(kept) == sum(len(r) for r in runs.values())  # the kept spans are not changed


def test_spans_not_in_segment_order_are_not_spliced():
    spans = _spans({"a.py": [(1, 2)], "b.py": [(1, 2)]})
    assert Spans.read(spans[::-1], packed=True).spliced("a.py", []) is None
    assert Spans.read(spans).spliced("a.py", []) is None  # ids not packed


def _current(index: Path) -> Path:
    return IndexDir(index).current(pin=False).path


def test_a_long_running_indexer_patches_equal_from_scratch_indexes(tmp_path, monkeypatch):
    """Edits through one `Indexer` (segment-backed chunk views, spans spliced, edges merged
    from the previous update's order): a body edit, a file gaining a definition (its chunk
    count changes), a file that had no chunk gaining one, a file losing all its edges, and
    the edits undone; every generation equals a from-scratch index of the same tree, and
    the merge was given a hint (the previous order) from the second patch on."""
    from maguyva.build.indexer import Indexer

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    root = tmp_path / "repo"
    shutil.copytree(stdlib / "json", root / "json", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "json" / "empty_mod.py").write_text("")
    config = {"index_dir": str(tmp_path / "idx"), "modalities": ["text", "structural", "graph"]}
    hints: list[bool] = []
    inner = build.merge_rows

    def spy(*a, **kw):
        got = inner(*a, **kw)
        hint = kw.get("hint")
        hints.append(hint is not None)
        if hint is not None:  # a good guess: nearly sorted already (few descents)
            rank = np.empty(len(hint), dtype=np.int64)
            rank[got[1]] = np.arange(len(hint))
            guess = rank[hint]
            assert (guess[1:] < guess[:-1]).sum() <= len(hint) // 5  # random: about half
        return got

    monkeypatch.setattr(build, "merge_rows", spy)
    writer_graph = graph.MODALITY
    writer = Indexer(root, config=config)
    writer.update()
    decoder, encoder = root / "json" / "decoder.py", root / "json" / "encoder.py"
    empty, tool = root / "json" / "empty_mod.py", root / "json" / "tool.py"
    originals = {p: p.read_text() for p in (decoder, encoder, empty, tool)}
    tool.write_text(originals[tool] + "\n")  # an update: the writer remembers from here on
    writer.update(hints=["json/tool.py"])
    edits = [
        (decoder, originals[decoder].replace("def _decode_uXXXX(s, pos):\n",
                                             "def _decode_uXXXX(s, pos):\n    len(s)\n", 1)),
        (decoder, originals[decoder] + "\n\ndef added_here(s):\n    return py_scanstring(s, 0)\n"),
        (empty, "def now_here():\n    return len([])\n"),
        (tool, "# nothing left\n"),
        (encoder, originals[encoder].replace("    def default(self, o):",
                                             "    def default(self, o):\n        len(o)", 1)),
        (decoder, originals[decoder]),
        (tool, originals[tool]),
        (empty, ""),
    ]  # fmt: skip
    for step, (path, text) in enumerate(edits):
        path.write_text(text)
        summary = writer.update(hints=[str(path.relative_to(root))])
        report = summary.modalities["graph"]["report"]
        assert report.get("mode") == "patch", (step, report.get("reuse"))
        scratch = tmp_path / f"scratch{step}"
        # the modality object is the process's: the writer's must not see this build
        monkeypatch.setattr(graph, "MODALITY", GraphModality())
        Indexer(root, config={**config, "index_dir": str(scratch)}).update()
        monkeypatch.setattr(graph, "MODALITY", writer_graph)
        assert_same_graph(_current(tmp_path / "idx"), _current(scratch))
    assert any(hints[2:]), hints


@given(st.lists(st.sampled_from([0.0, 1e-6, 2e-6, 0.5, 1.0]), min_size=1, max_size=30),
       st.randoms(use_true_random=False))  # fmt: skip
@settings(max_examples=100, deadline=None)
def test_percentile_of_a_subset_equals_the_whole_at_it(raw, rnd):
    from maguyva.modalities.graph.centrality import percentile_scale

    raw = np.array(raw)
    pop = np.array(sorted(rnd.sample(range(len(raw)), rnd.randint(0, len(raw)))), dtype=np.int64)
    at = np.array(sorted(rnd.sample(range(len(raw)), rnd.randint(0, len(raw)))), dtype=np.int64)
    whole = percentile_scale(raw, pop)
    part = percentile_scale(raw, pop, at)
    assert (
        np.array_equal(part[at], whole[at])
        and not part[np.setdiff1d(np.arange(len(raw)), at)].any()
    )
