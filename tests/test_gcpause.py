"""`paused_gc` turns the cyclic collector off for its block and restores the previous state,
also when the block raises."""

from __future__ import annotations

import gc

import pytest

from maguyva.support.gcpause import paused_gc


def test_paused_then_restored_even_on_error() -> None:
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), paused_gc():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_an_already_paused_collector_stays_paused() -> None:
    gc.disable()
    try:
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_what_the_block_allocated_skips_the_young_generations_but_is_still_collected() -> None:
    gc.collect()
    with paused_gc():
        made = [[] for _ in range(5000)]
        a, b = _Node(), _Node()
        a.other, b.other = b, a  # a cycle, garbage once dropped
    # promoted to the oldest generation: a young collection has nothing of theirs to walk
    assert gc.get_count()[0] < 100 and gc.get_freeze_count() == 0
    assert gc.collect(0) == 0
    del made, a, b
    assert gc.collect(1) == 0  # the cycle is in the oldest generation now ...
    assert gc.collect() >= 2  # ... and a full pass frees it: nothing leaks


def test_objects_the_process_froze_stay_frozen() -> None:
    # Watch one object rather than the freeze count: frozen objects other threads drop while
    # the block runs leave the permanent generation, so the count may fall on its own.
    marker: list[int] = []
    gc.freeze()
    try:
        assert not any(o is marker for o in gc.get_objects())
        with paused_gc():
            pass
        assert not any(o is marker for o in gc.get_objects())  # still frozen
    finally:
        gc.unfreeze()
    assert any(o is marker for o in gc.get_objects())
