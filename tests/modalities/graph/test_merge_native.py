"""The native adjacency (`_core.csr_by_rank`, `conf_ranks`) against the numpy code it replaces
(`adjacency._csr_numpy`, numpy's ranking): equal results, bit for bit and dtype for dtype; and the
edge merge (`adjacency.merge_rows`, numpy) on random rows: its merged edges do not depend on the
hint, and equal rows keep the hint's order (a patch's next hint depends on it)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maguyva import _core
from maguyva.modalities.graph import adjacency as csr

pytestmark = pytest.mark.skipif(
    not hasattr(_core, "csr_by_rank"), reason="native module without the graph adjacency"
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
        ref = csr.merge_rows(**cols)[1]
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
def test_merged_edges_do_not_depend_on_the_hint(cols: dict) -> None:
    hinted = csr.merge_rows(**cols)
    plain = csr.merge_rows(**{k: v for k, v in cols.items() if k != "hint"})
    same(hinted[0], plain[0])  # the edges, their confidences and lines
    same(hinted[2], plain[2])  # each group's edge number
    key = [(int(cols["dst"][r]), int(cols["src"][r]), int(cols["kind"][r]),
            int(cols["line_rows"][r])) for r in hinted[1].tolist()]  # fmt: skip
    assert key == sorted(key) and sorted(hinted[1].tolist()) == list(range(len(key)))


def test_ties_keep_the_hint_order() -> None:
    """Equal rows stand in the hint's order, else by row number."""
    z = np.zeros(4, dtype=np.int32)
    args = (z, z, z.astype(np.uint8), np.ones(4), z)
    hint = np.array([2, 0, 3, 1], dtype=np.int64)
    assert csr.merge_rows(*args, hint=hint)[1].tolist() == [2, 0, 3, 1]
    assert csr.merge_rows(*args)[1].tolist() == [0, 1, 2, 3]


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
    rank, levels = csr._conf_rank_unique(conf, None)
    same(
        _core.csr_by_rank(n, keys, rank, levels),
        csr._csr_numpy(n, keys, conf, near, rank, levels),
    )
    same(csr._csr(n, keys, conf, near), csr._csr_numpy(n, keys, conf, near, rank, levels))


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
    r, lv = csr._conf_rank(conf, cache)
    r2, lv2 = csr._conf_rank_unique(conf, None)
    assert lv == (len(values) if got is not None else lv2)
    if got is None:
        same(r, r2)


def test_csr_rejects_a_node_out_of_range() -> None:
    keys = np.array([0, 3], dtype=np.int32)
    with pytest.raises(ValueError, match="out of range"):
        _core.csr_by_rank(3, keys, np.zeros(2, dtype=np.int64), 1)
