"""`paused_gc` turns the cyclic collector off for its block and restores the previous state,
also when the block raises."""

from __future__ import annotations

import gc

import pytest

from maguyva.gcpause import paused_gc


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
