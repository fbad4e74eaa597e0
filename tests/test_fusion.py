"""The Rust fusion against a plain-Python reference of the same formula (SPEC.md, "Weighted
Reciprocal Rank Fusion")."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maguyva import _core

DEMOTED_DIRS = {
    "vendor", "vendors", "third_party", "third-party", "thirdparty", "node_modules", "build",
    "dist", "target", ".git", "site-packages", "__pycache__", "bower_components",
}  # fmt: skip


def reference_fuse(lists, centrality, k, limit):
    """The spec's formula, written as plainly as possible."""
    scores: dict[str, float] = {}
    paths: dict[str, str] = {}
    for weight, items in lists:
        seen = set()
        for rank, (key, path) in enumerate(items):
            if key in seen:
                continue
            seen.add(key)
            scores[key] = scores.get(key, 0.0) + weight / (k + rank + 1)
            paths.setdefault(key, path)
    fused = []
    for key, raw in scores.items():
        path = paths[key]
        c = centrality.get(key, centrality.get(path, 0.0))
        boost = min(1 + 0.3 * math.log(1 + max(c, 0.0)), 1.5)
        demoted = _core.is_demoted_path(path)
        fused.append((raw * boost * (0.5 if demoted else 1.0), path, key))
    fused.sort(key=lambda t: (-t[0], t[1], t[2]))
    best, seen_paths = [], set()
    for score, path, key in fused:
        if path not in seen_paths:
            seen_paths.add(path)
            best.append((key, score))
    return best[:limit]


keys = st.sampled_from([f"k{i}" for i in range(30)])
paths = st.sampled_from(["a.py", "b.py", "src/c.py", "vendor/d.py", "e.min.js", "f.go"])
items = st.lists(st.tuples(keys, paths), max_size=25)
ranked = st.lists(st.tuples(st.floats(0, 1), items), max_size=4)


def consistent(lists):
    """A key belongs to one path (it names a chunk of that file)."""
    path_of: dict[str, str] = {}
    return [
        (w, [(key, path_of.setdefault(key, path)) for key, path in entries]) for w, entries in lists
    ]


@settings(max_examples=300, deadline=None)
@given(
    ranked,
    st.dictionaries(st.one_of(keys, paths), st.floats(0, 100), max_size=10),
    st.integers(0, 100),
    st.integers(1, 50),
)
def test_rust_fusion_equals_reference(lists, centrality, k, limit):
    lists = consistent(lists)
    got = _core.fuse(lists, centrality, float(k), limit)
    want = reference_fuse(lists, centrality, k, limit)
    assert [g[0] for g in got] == [w[0] for w in want]
    for g, w in zip(got, want, strict=True):
        assert g[2] == pytest.approx(w[1], abs=1e-9)


def test_provenance_explains_the_score():
    lists = [(0.6, [("x", "x.py"), ("y", "y.py")]), (0.2, [("y", "y.py")])]
    (key, _path, score, boost, demoted, contributions, folded), *_ = _core.fuse(lists, {}, 40.0, 5)
    assert key == "y" and not demoted and boost == 1.0 and folded == []
    assert contributions == [(0, 1, pytest.approx(0.6 / 42)), (1, 0, pytest.approx(0.2 / 41))]
    assert score == pytest.approx(0.6 / 42 + 0.2 / 41)


@pytest.mark.parametrize(("c", "boost"), [(0, 1.0), (1, 1 + 0.3 * math.log(2)), (1e6, 1.5)])
def test_boost_formula(c, boost):
    assert _core.centrality_boost(c) == pytest.approx(boost)


def test_bad_k_is_a_value_error():
    with pytest.raises(ValueError, match="k must be"):
        _core.fuse([], {}, -1.0, 10)
