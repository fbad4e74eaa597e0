"""The Rust fusion against a plain-Python reference of the same formula (SPEC.md, "Weighted
Reciprocal Rank Fusion")."""

from __future__ import annotations

import math
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maguyva import _core
from maguyva.query.fusion import Contribution, RankedLists

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


centralities = st.dictionaries(st.one_of(keys, paths), st.floats(0, 100), max_size=10)


def assert_same_fusion(got, want):
    """Rust's fused entries against a reference's (key, score) pairs: same order, same scores."""
    assert [g[0] for g in got] == [w[0] for w in want]
    for g, w in zip(got, want, strict=True):
        assert g[2] == pytest.approx(w[1], abs=1e-9)


@settings(max_examples=300, deadline=None)
@given(ranked, centralities, st.integers(0, 100), st.integers(1, 50))
def test_rust_fusion_equals_reference(lists, centrality, k, limit):
    lists = consistent(lists)
    got = _core.fuse(lists, centrality, float(k), limit)
    want = reference_fuse(lists, centrality, k, limit)
    assert_same_fusion(got, want)


def reference_fuse_by_file(lists, centrality, k, limit):
    """File evidence, written plainly: each list counts once per file, at its first entry of
    any chunk of that file; the file is shown by its best chunk (the spec's chunk score), whose
    boost and demotion scale the file's sum."""
    file_raw: dict[str, float] = {}
    for weight, items in lists:
        seen = set()
        for rank, (_, path) in enumerate(items):
            if path not in seen:
                seen.add(path)
                file_raw[path] = file_raw.get(path, 0.0) + weight / (k + rank + 1)
    fused = []
    for key, _ in reference_fuse(lists, centrality, k, 10**6):
        path = next(p for _, entries in lists for kk, p in entries if kk == key)
        c = centrality.get(key, centrality.get(path, 0.0))
        boost = min(1 + 0.3 * math.log(1 + max(c, 0.0)), 1.5)
        demoted = _core.is_demoted_path(path)
        fused.append((file_raw[path] * boost * (0.5 if demoted else 1.0), path, key))
    fused.sort(key=lambda t: (-t[0], t[1], t[2]))
    return [(key, score) for score, _, key in fused][:limit]


@settings(max_examples=300, deadline=None)
@given(ranked, centralities, st.integers(0, 100), st.integers(1, 50))
def test_file_evidence_equals_reference(lists, centrality, k, limit):
    lists = consistent(lists)
    got = _core.fuse(lists, centrality, float(k), limit, by_file=True)
    want = reference_fuse_by_file(lists, centrality, k, limit)
    assert_same_fusion(got, want)


def test_file_evidence_counts_two_retrievers_on_two_chunks_of_one_file():
    """Semantic's first chunk and text's first chunk are different chunks of `a.rs`: by chunk
    the one chunk both found lower (`b`) wins, by file `a.rs` does, shown by its best chunk
    and explained by the file's ranks."""
    lists = [(0.5, [("a1", "a.rs"), ("b", "b.rs")]), (0.2, [("a2", "a.rs"), ("b", "b.rs")])]
    assert _core.fuse(lists, {}, 10.0, 5)[0][0] == "b"
    top = _core.fuse(lists, {}, 10.0, 5, by_file=True)[0]
    assert top[:2] == ("a1", "a.rs")
    assert top[2] == pytest.approx(0.5 / 11 + 0.2 / 11)
    assert [(c[0], c[1]) for c in top[5]] == [(0, 0), (1, 0)]
    assert top[6] == ["a2"]


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


def reference_full(lists, centrality, k, limit, demote=frozenset()):
    """The spec's fusion with everything a result explains, as plainly as possible: per key
    its first rank in each list, the boost by key else path, demotion (by path rule or by the
    caller's set), best chunk per file, the other chunks of the file and every entry in it."""
    raw: dict[str, float] = {}
    path_of: dict[str, str] = {}
    contributions: dict[str, list[tuple[int, int, float]]] = {}
    for list_no, (weight, items) in enumerate(lists):
        seen = set()
        for rank, (key, path) in enumerate(items):
            path_of.setdefault(key, path)
            if key in seen:
                continue
            seen.add(key)
            share = weight / (k + rank + 1)
            raw[key] = raw.get(key, 0.0) + share
            contributions.setdefault(key, []).append((list_no, rank, share))
    scored = []
    for key, total in raw.items():
        path = path_of[key]
        c = centrality.get(key, centrality.get(path, 0.0))
        boost = min(1 + 0.3 * math.log1p(max(c, 0.0)), 1.5)
        demoted = _core.is_demoted_path(path) or path in demote
        scored.append((total * boost * (0.5 if demoted else 1.0), path, key, boost, demoted))
    scored.sort(key=lambda t: (-t[0], t[1], t[2]))
    heads = {}
    for entry in scored:
        heads.setdefault(entry[1], entry)
    out = []
    for score, path, key, boost, demoted in sorted(
        heads.values(), key=lambda t: (-t[0], t[1], t[2])
    )[:limit]:
        folded = tuple(e[2] for e in scored if e[1] == path and e[2] != key)
        members = tuple(
            (list_no, rank)
            for list_no, (_, items) in enumerate(lists)
            for rank, (_, p) in enumerate(items)
            if p == path
        )
        out.append((key, path, score, boost, demoted,
                    tuple(Contribution(*c) for c in contributions[key]), folded, members))  # fmt: skip
    return out


def fused_arrays(lists, centrality, k, limit, demote=frozenset()):
    ranked = RankedLists.of(
        [([key for key, _ in items], [p for _, p in items]) for _, items in lists]
    )
    fused = ranked.with_centrality(centrality).fuse([w for w, _ in lists], k, limit, demote)
    return [(f.key, f.path, f.score, f.boost, f.demoted, f.contributions, f.folded, f.members)
            for f in fused]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    ranked,
    st.dictionaries(st.one_of(keys, paths), st.floats(0, 100), max_size=10),
    st.integers(0, 100),
    st.integers(1, 50),
    st.frozensets(paths, max_size=2),
)
def test_array_fusion_equals_reference(lists, centrality, k, limit, demote):
    """Identical, not close: same keys, files, scores, boosts, contributions and members
    (the same float operations in the same order)."""
    assert fused_arrays(lists, centrality, k, limit, demote) == reference_full(
        lists, centrality, k, limit, demote
    )


@settings(max_examples=100, deadline=None)
@given(ranked, centralities)
def test_array_fusion_equals_the_tuple_binding(lists, centrality):
    lists = consistent(lists)
    old = _core.fuse(lists, centrality, 60.0, 20)
    new = fused_arrays(lists, centrality, 60.0, 20)
    assert [(f[0], f[1], f[2], f[3], f[4], f[6]) for f in new] == [
        (o[0], o[1], o[2], o[3], o[4], tuple(o[6])) for o in old
    ]


def test_select_keeps_only_the_named_lists():
    ranked = RankedLists.of([(["a"], ["a.py"]), (["b", "a"], ["b.py", "a.py"]), (["c"], ["c.py"])])
    picked = ranked.select([2, 1])
    assert [(f.key, f.members) for f in picked.fuse([1.0, 0.5], 60, 10)] == [
        ("c", ((0, 0),)), ("b", ((1, 0),)), ("a", ((1, 1),)),
    ]  # fmt: skip
    assert picked.select([]).fuse([], 60, 10) == []


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda r: r.fuse([1.0], 60, 10), "1 lists but 2 weights|2 lists but 1 weights"),
        (lambda r: r.fuse([1.0, 1.0], -1, 10), "k must be"),
        (lambda r: _core.fuse_ids(array("q", [9, 0]), r.files, r.lengths, array("d", [1.0, 1.0]), r.keys, r.paths, 60.0, 5), "item 9 out of range"),
        (lambda r: _core.fuse_ids(r.items, r.files, array("q", [2, 1]), array("d", [1.0, 1.0]), r.keys, r.paths, 60.0, 5), "do not fit"),
        (lambda r: _core.fuse_ids(r.items, r.files, r.lengths, array("d", [1.0, 1.0]), r.keys, r.paths, 60.0, 5, demote=array("B", [1] * 9)), "demote has 9 entries"),
        (lambda r: _core.number_entries(["a"], []), "1 keys but 0 paths"),
        (lambda r: _core.number_entries([1], ["a"]), "keys must be a list of str"),
    ],
)  # fmt: skip
def test_bad_arrays_are_value_errors(call, message):
    ranked = RankedLists.of([(["a"], ["a.py"]), (["b"], ["b.py"])])
    with pytest.raises((ValueError, TypeError), match=message):
        call(ranked)
