"""The native edge merge and adjacency (`_core.merge_edge_rows`, `csr_by_rank`, `conf_ranks`)
against the numpy code they replace (`build._merge_rows_numpy`, `_csr_numpy`, numpy's
ranking): equal results, bit for bit and dtype for dtype, on random rows."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maguyva import _core
from maguyva.graph import build

pytestmark = pytest.mark.skipif(
    not hasattr(_core, "merge_edge_rows"), reason="native module without the graph merge"
)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def same(a: object, b: object) -> None:
    """Equal nested tuples of arrays: same dtypes, same values (NaN equal to NaN)."""
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            same(x, y)
        return
    assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


@st.composite
def rows(draw: st.DrawFn) -> dict:
    """Edge rows: few distinct edges (so several rows per edge, spread anywhere), exact
    duplicates, node numbers small or near 2**30, lines narrow or across the int32 range
    (wide lines with wide nodes take numpy's lexsort case), and `pos` / `hint` of any kind."""
    n_edges = draw(st.integers(1, 12))
    big = draw(st.integers(0, 80))
    top = draw(st.sampled_from([3, 1000, (1 << 30) - 1]))
    ends = st.integers(0, top)
    edges = draw(st.lists(st.tuples(ends, ends, st.integers(0, 7)), min_size=n_edges,
                          max_size=n_edges))  # fmt: skip
    line_lo, line_hi = draw(st.sampled_from([(0, 3), (-50, 50), (-(2**31), 2**31 - 1)]))
    which = draw(st.lists(st.integers(0, n_edges - 1), min_size=big, max_size=big))
    lines = draw(st.lists(st.integers(line_lo, line_hi), min_size=big, max_size=big))
    confs = draw(st.lists(st.sampled_from([0.1, 0.25, 0.5, 0.7, 1.0, 0.30000001, 0.3]),
                          min_size=big, max_size=big))  # fmt: skip
    e = np.array([edges[i] for i in which], dtype=np.int64).reshape(-1, 3)
    cols = {
        "src": e[:, 0].astype(np.int32),
        "dst": e[:, 1].astype(np.int32),
        "kind": e[:, 2].astype(np.uint8),
        "conf_rows": np.array(confs, dtype=np.float64),
        "line_rows": np.array(lines, dtype=np.int32),
    }
    rnd = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    pos_kind = draw(st.sampled_from(["none", "perm", "sparse", "far"]))
    if pos_kind == "perm":
        cols["pos"] = rnd.permutation(big).astype(np.int64)
    elif pos_kind == "sparse":  # distinct positions with gaps (a patch's layout)
        cols["pos"] = rnd.permutation(3 * big + 1)[:big].astype(np.int64)
    elif pos_kind == "far":  # far beyond the row count (the kernel ranks them by a sort)
        cols["pos"] = (rnd.permutation(big).astype(np.int64) * 1000) + 7
    hint_kind = draw(st.sampled_from(["none", "random", "stale", "sorted"]))
    if hint_kind != "none" and big:
        ref = build._merge_rows_numpy(**cols)[1]
        if hint_kind == "random":
            cols["hint"] = rnd.permutation(big).astype(np.int64)
        elif hint_kind == "sorted":
            cols["hint"] = ref.astype(np.int64)
        else:  # the sorted order with some rows moved to the end (a patch's hint)
            moved = rnd.random(big) < 0.2
            cols["hint"] = np.concatenate([ref[~moved[ref]], np.flatnonzero(moved)])
    elif hint_kind != "none":
        cols["hint"] = np.zeros(0, dtype=np.int64)
    return cols


@SETTINGS
@given(rows())
def test_merge_equals_numpy(cols: dict) -> None:
    native = _core.merge_edge_rows(**_native_args(cols))
    assert native is not None
    same(native, build._merge_rows_numpy(**cols))
    same(build.merge_rows(**cols), build._merge_rows_numpy(**cols))


def _native_args(cols: dict) -> dict:
    out = {k: cols[k] for k in ("src", "dst", "kind")}
    out.update(conf=cols["conf_rows"], line=cols["line_rows"])
    out.update(pos=cols.get("pos"), hint=cols.get("hint"))
    return out


@SETTINGS
@given(rows(), st.sampled_from(["negative node", "kind 8", "nan", "negative zero", "bad hint"]))
def test_outside_the_domain_merge_rows_is_numpys(cols: dict, what: str) -> None:
    big = len(cols["src"])
    if big < 2:
        return  # a single row's only hint is a permutation
    cols = dict(cols)
    if what == "negative node":
        cols["src"] = cols["src"].copy()
        cols["src"][-1] = -1 - cols["src"][-1]
    elif what == "kind 8":
        cols["kind"] = cols["kind"] | np.uint8(8)
    elif what in ("nan", "negative zero"):
        cols["conf_rows"] = cols["conf_rows"].copy()
        cols["conf_rows"][0] = np.nan if what == "nan" else -0.0
    else:
        cols["hint"] = np.zeros(big, dtype=np.int64)
    assert _core.merge_edge_rows(**_native_args(cols)) is None
    if what in ("negative node", "bad hint"):
        return  # numpy's result there is not a merge at all (it may even raise)
    same(build.merge_rows(**cols), build._merge_rows_numpy(**cols))


def test_same_first_position_is_an_error() -> None:
    one = np.zeros(2, dtype=np.int32)
    args = (np.array([0, 1], dtype=np.int32), one, one.astype(np.uint8), np.ones(2), one)
    with pytest.raises(ValueError, match="same first position"):
        _core.merge_edge_rows(*args, pos=np.array([5, 5], dtype=np.int64))
    with pytest.raises(ValueError, match="differ in length"):
        _core.merge_edge_rows(*args[:4], np.zeros(3, dtype=np.int32))


def test_ties_keep_the_hint_order() -> None:
    """Equal rows stand in the hint's order (a patch's next hint depends on it)."""
    z = np.zeros(4, dtype=np.int32)
    args = (z, z, z.astype(np.uint8), np.ones(4), z)
    hint = np.array([2, 0, 3, 1], dtype=np.int64)
    _, order, _ = _core.merge_edge_rows(*args, hint=hint)
    assert order.tolist() == [2, 0, 3, 1]
    assert build._merge_rows_numpy(*args, hint=hint)[1].tolist() == [2, 0, 3, 1]
    assert _core.merge_edge_rows(*args)[1].tolist() == [0, 1, 2, 3]


def test_without_the_native_module_merge_rows_is_numpys(monkeypatch: pytest.MonkeyPatch) -> None:
    rnd = np.random.default_rng(5)
    cols = (rnd.integers(0, 40, 500).astype(np.int32), rnd.integers(0, 40, 500).astype(np.int32),
            rnd.integers(0, 3, 500).astype(np.uint8), rnd.random(500), rnd.integers(0, 9, 500).astype(np.int32))  # fmt: skip
    with_native = build.merge_rows(*cols)
    monkeypatch.delattr(_core, "merge_edge_rows")
    same(build.merge_rows(*cols), with_native)


@st.composite
def adjacency(draw: st.DrawFn) -> tuple:
    n = draw(st.integers(1, 50))
    m = draw(st.integers(0, 120))
    keys = np.array(draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m)), dtype=np.int32)
    values = draw(st.lists(st.floats(0, 1, width=32), min_size=1, max_size=6, unique=True))
    conf = np.array(
        draw(st.lists(st.sampled_from(values), min_size=m, max_size=m)), dtype=np.float32
    )
    near = np.random.default_rng(m).permutation(m) if draw(st.booleans()) else None
    return n, keys, conf, near


@SETTINGS
@given(adjacency())
def test_csr_equals_numpy(args: tuple) -> None:
    n, keys, conf, near = args
    rank, levels = build._conf_rank_unique(conf, None)
    same(
        _core.csr_by_rank(n, keys, rank, levels),
        build._csr_numpy(n, keys, conf, near, rank, levels),
    )
    same(build._csr(n, keys, conf, near), build._csr_numpy(n, keys, conf, near, rank, levels))


@SETTINGS
@given(adjacency(), st.lists(st.floats(0, 1, width=32), max_size=4))
def test_conf_rank_equals_numpy(args: tuple, extra: list) -> None:
    """The remembered values (`cache["conf_values"]`) with or without the confidences."""
    _, _, conf, _ = args
    values = np.unique(np.concatenate([conf, np.array(extra, dtype=np.float32)]))
    got = _core.conf_ranks(conf, values)
    at = np.searchsorted(values, conf)
    if len(values) and np.array_equal(values[np.minimum(at, len(values) - 1)], conf):
        assert got is not None
        same(got, (len(values) - 1 - at).astype(np.int64))
    else:
        assert got is None
    cache = {"conf_values": values}
    r, lv = build._conf_rank(conf, cache)
    r2, lv2 = build._conf_rank_unique(conf, None)
    assert lv == (len(values) if got is not None else lv2)
    if got is None:
        same(r, r2)


def test_csr_rejects_a_node_out_of_range() -> None:
    keys = np.array([0, 3], dtype=np.int32)
    with pytest.raises(ValueError, match="out of range"):
        _core.csr_by_rank(3, keys, np.zeros(2, dtype=np.int64), 1)
