"""Hamming top-k bindings: every kernel against `np.unpackbits`, top-k against a full sort."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maguyva import _core

KERNELS = _core.hamming_kernels()


def oracle_distances(query: np.ndarray, codes: np.ndarray) -> np.ndarray:
    return np.unpackbits(codes ^ query, axis=1).sum(axis=1).astype(np.int64)


def oracle_topk(queries: np.ndarray, codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    ids, dists = [], []
    for q in queries:
        d = oracle_distances(q, codes)
        order = np.lexsort((np.arange(len(d)), d))[:k]  # by distance, then id
        ids.append(order)
        dists.append(d[order])
    return np.array(ids, dtype=np.int64).reshape(len(queries), -1), np.array(dists).reshape(
        len(queries), -1
    )


@st.composite
def code_sets(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    width = draw(st.integers(1, 300))
    n = draw(st.integers(0, 120))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    # A small alphabet makes many rows tie; random bytes exercise every bit.
    alphabet = rng.integers(0, 256, size=draw(st.integers(1, 4)), dtype=np.uint8)
    codes = rng.choice(alphabet, size=(n, width)) if draw(st.booleans()) else None
    if codes is None:
        codes = rng.integers(0, 256, size=(n, width), dtype=np.uint8)
    queries = rng.integers(0, 256, size=(draw(st.integers(1, 4)), width), dtype=np.uint8)
    return np.ascontiguousarray(codes, dtype=np.uint8), queries


def test_kernels_detected() -> None:
    assert KERNELS[-2:] == ["words", "scalar"]
    assert set(KERNELS) <= {"avx512", "avx2", "neon", "words", "scalar"}


@settings(max_examples=60, deadline=None)
@given(code_sets())
def test_every_kernel_equals_unpackbits(data: tuple[np.ndarray, np.ndarray]) -> None:
    codes, queries = data
    expected = oracle_distances(queries[0], codes)
    for kernel in KERNELS:
        got = _core.hamming_distances(queries[0], codes, kernel=kernel)
        assert got.dtype == np.uint32
        np.testing.assert_array_equal(got, expected, err_msg=kernel)


@settings(max_examples=60, deadline=None)
@given(code_sets(), st.integers(0, 130), st.sampled_from(["auto", "counting", "heap"]))
def test_topk_equals_full_sort(data: tuple[np.ndarray, np.ndarray], k: int, selector: str) -> None:
    codes, queries = data
    ids, dists = _core.hamming_topk(queries, codes, k, selector=selector)
    want_ids, want_d = oracle_topk(queries, codes, k)
    assert ids.shape == (len(queries), min(k, len(codes)))
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_array_equal(dists, want_d)


def test_single_query_returns_1d_and_threads_agree() -> None:
    rng = np.random.default_rng(7)
    codes = (rng.integers(0, 4, size=(60_000, 128)) == 0).astype(np.uint8)  # many ties
    q = codes[123].copy()
    one = _core.hamming_topk(q, codes, 25, threads=1)
    two = _core.hamming_topk(q, codes, 25, threads=2)
    assert one[0].shape == (25,)
    np.testing.assert_array_equal(one[0], two[0])
    np.testing.assert_array_equal(one[1], two[1])
    want_ids, _ = oracle_topk(q[None], codes, 25)
    np.testing.assert_array_equal(one[0], want_ids[0])
    assert one[0][0] == 123 and one[1][0] == 0


def test_empty_index_and_k_larger_than_n() -> None:
    empty = np.zeros((0, 16), np.uint8)
    ids, dists = _core.hamming_topk(np.zeros((3, 16), np.uint8), empty, 10)
    assert ids.shape == (3, 0) and dists.shape == (3, 0)
    codes = np.arange(5 * 16, dtype=np.uint8).reshape(5, 16)
    ids, _ = _core.hamming_topk(codes[0], codes, 100)
    assert sorted(ids.tolist()) == [0, 1, 2, 3, 4]


def test_memory_mapped_codes(tmp_path) -> None:
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 256, size=(500, 48), dtype=np.uint8)
    np.save(tmp_path / "codes.npy", codes)
    mapped = np.load(tmp_path / "codes.npy", mmap_mode="r")
    got = _core.hamming_topk(codes[:2], mapped, 5)
    want = oracle_topk(codes[:2], codes, 5)
    np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.parametrize(
    ("queries", "codes", "needle"),
    [
        (np.zeros(16, np.float32), np.zeros((4, 16), np.uint8), "queries must be"),
        (np.zeros(16, np.uint8), np.zeros((4, 16), np.int8), "codes must be"),
        (np.zeros(8, np.uint8), np.zeros((4, 16), np.uint8), "shape (n, 16)"),
        (np.zeros(16, np.uint8), np.zeros((2, 4, 16), np.uint8), "shape (n, dim/8)"),
        (np.zeros(16, np.uint8), np.zeros((4, 32), np.uint8)[:, ::2], "C-contiguous"),
        ([0] * 16, np.zeros((4, 16), np.uint8), "uint8"),
    ],
)
def test_bad_arrays_raise_clear_value_error(queries, codes, needle: str) -> None:
    with pytest.raises(ValueError) as info:
        _core.hamming_topk(queries, codes, 3)
    assert needle in str(info.value)


def test_bad_options() -> None:
    codes = np.zeros((4, 16), np.uint8)
    with pytest.raises(ValueError, match="unknown kernel"):
        _core.hamming_topk(codes[0], codes, 3, kernel="sse9")
    with pytest.raises(ValueError, match="selector"):
        _core.hamming_topk(codes[0], codes, 3, selector="quick")
    with pytest.raises(ValueError, match="single code"):
        _core.hamming_distances(codes, codes)


def test_index_appends_and_tombstones() -> None:
    rng = np.random.default_rng(3)
    first = rng.integers(0, 256, size=(300, 32), dtype=np.uint8)
    second = rng.integers(0, 256, size=(200, 32), dtype=np.uint8)
    index = _core.HammingIndex(32)
    assert index.add(first) == 0
    assert index.add(second) == 300
    assert len(index) == 500
    dead = list(range(0, 500, 3))
    assert index.delete(dead) == len(dead)
    assert index.delete([0]) == 0
    assert index.live == 500 - len(dead)
    assert index.is_deleted(3) and not index.is_deleted(4)
    queries = rng.integers(0, 256, size=(3, 32), dtype=np.uint8)
    ids, dists = index.search(queries, 20)
    allc = np.concatenate([first, second])
    live = np.array([i for i in range(500) if i % 3])
    want_ids, want_d = oracle_topk(queries, allc[live], 20)
    np.testing.assert_array_equal(ids, live[want_ids])
    np.testing.assert_array_equal(dists, want_d)
    np.testing.assert_array_equal(index.codes(), allc)
    with pytest.raises(ValueError, match="out of range"):
        index.delete([10_000])
    with pytest.raises(ValueError, match=r"shape \(n, 32\)"):
        index.add(np.zeros((2, 16), np.uint8))
