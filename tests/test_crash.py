"""Crash safety: kill -9 at random points and at every durable step of a reindex, and failed
writes, fsyncs and renames, and a full disk. Afterwards every search equals the golden answers
of the old or the new generation (never a mix, never an error) and fsck is clean."""

from __future__ import annotations

import os
import random
import shutil
import signal
import time
from pathlib import Path

import pytest
from durability_support import answers, build, index_in_child, write_repo
from support import faults

from maguyva.build.fsck import fsck
from maguyva.store.generations import IndexWriteError

SEED = int(os.environ.get("MAGUYVA_TEST_SEED", "0")) or random.randrange(1 << 30)


@pytest.fixture(scope="module")
def goldens(tmp_path_factory) -> dict[int, list]:
    """The answers of a from-scratch index of each of the two states the tests switch between."""
    out = {}
    for variant in (0, 1):
        root = tmp_path_factory.mktemp(f"golden{variant}")
        write_repo(root, variant)
        build(root)
        out[variant] = answers(root)
    assert out[0] != out[1]
    return out


def _check(root: Path, goldens: dict[int, list], note: str) -> int:
    seen = answers(root)
    matches = [v for v, golden in goldens.items() if golden == seen]
    assert matches, f"answers match no generation ({note}, seed {SEED})"
    report = fsck(root / ".maguyva")
    assert report.ok, (report.errors, note, SEED)
    return matches[0]


def _kill_runs(
    tmp_path: Path, goldens: dict[int, list], total_ops: int, runs: int
) -> dict[str, int]:
    rng = random.Random(SEED)
    root = tmp_path / "repo"
    root.mkdir()
    write_repo(root, 0)
    build(root)
    outcome = {"killed": 0, "completed": 0}
    for run in range(runs):
        target = 1 - _check(root, goldens, f"before run {run}")
        write_repo(root, target)
        if run % 2 == 0:  # at an exact durable step: every one is hit over enough runs
            child = index_in_child(root, faults=f"kill@{rng.randint(1, total_ops)}")
        else:  # at a random moment (startup, walk, extraction, modality builds, commit)
            child = index_in_child(root)
            time.sleep(rng.uniform(0.2, 2.0))
            child.send_signal(signal.SIGKILL)
        _out, err = child.communicate(timeout=120)
        assert child.returncode in (0, -signal.SIGKILL), err.decode()[-2000:]
        outcome["killed" if child.returncode else "completed"] += 1
        _check(root, goldens, f"after run {run}")
    # the next writer cleans what the killed ones left and brings the index up to date
    build(root)
    assert not list((root / ".maguyva").glob("*.tmp-*"))
    assert _check(root, goldens, "final") == target
    return outcome


def test_kill9_during_reindex(tmp_path, goldens, op_counts):
    outcome = _kill_runs(tmp_path, goldens, sum(op_counts.values()), runs=2)
    assert sum(outcome.values()) == 2


@pytest.mark.slow
def test_kill9_during_reindex_many(tmp_path, goldens, op_counts):
    outcome = _kill_runs(tmp_path, goldens, sum(op_counts.values()), runs=120)
    print(f"kill -9 runs: {outcome} (seed {SEED})")
    assert outcome["killed"] >= 60


@pytest.fixture(scope="module")
def op_counts(tmp_path_factory) -> dict[str, int]:
    """How many operations of each kind one reindex of the test repository performs."""
    root = tmp_path_factory.mktemp("count")
    write_repo(root, 0)
    build(root)
    write_repo(root, 1)
    with faults.install(faults.FaultyFiles()) as layer:
        build(root)
    return dict(layer.counts)


def _fail_each(tmp_path: Path, goldens: dict[int, list], op: str, numbers: list[int]) -> int:
    root = tmp_path / "repo"
    root.mkdir()
    write_repo(root, 0)
    build(root)
    failures = 0
    for n in numbers:
        write_repo(root, 1)
        layer = faults.FaultyFiles(fail_op=op, fail_at=n)
        with faults.install(layer), pytest.raises(IndexWriteError) as caught:
            build(root)
        failures += 1
        assert not list((root / ".maguyva").glob("gen-*.tmp-*"))
        if "previous generation still serves" in str(caught.value):
            assert _check(root, goldens, f"{op} #{n}") == 0
            continue
        assert "is committed and current" in str(caught.value)  # only the last directory fsync
        assert _check(root, goldens, f"{op} #{n}") == 1
        write_repo(root, 0)
        build(root)
    write_repo(root, 1)
    build(root)
    assert _check(root, goldens, f"{op} after failures") == 1
    return failures


@pytest.mark.parametrize("op", ["write", "fsync", "rename", "mkdir"])
def test_failed_operation_keeps_the_last_generation(tmp_path, goldens, op_counts, op):
    count = op_counts[op]
    assert count >= 1
    sample = sorted({1, 2, count // 2, count} & set(range(1, count + 1)))
    assert _fail_each(tmp_path, goldens, op, sample) == len(sample)


@pytest.mark.slow
@pytest.mark.parametrize("op", ["write", "fsync", "rename", "mkdir"])
def test_failed_operation_every_n(tmp_path, goldens, op_counts, op):
    numbers = list(range(1, op_counts[op] + 1))
    assert _fail_each(tmp_path, goldens, op, numbers) == len(numbers)


def test_disk_full_is_a_clear_error(tmp_path, goldens):
    root = tmp_path / "repo"
    root.mkdir()
    write_repo(root, 0)
    build(root)
    write_repo(root, 1)
    for budget in (0, 100, 5000):
        with (
            faults.install(faults.FaultyFiles(disk_bytes=budget)),
            pytest.raises(IndexWriteError, match="No space left"),
        ):
            build(root)
        assert _check(root, goldens, f"disk full at {budget}") == 0
    build(root)
    assert _check(root, goldens, "after space returned") == 1


def test_crash_before_the_manifest_switch_is_invisible(tmp_path, goldens):
    """A complete, renamed generation without the manifest switch is not current."""
    root = tmp_path / "repo"
    root.mkdir()
    write_repo(root, 0)
    build(root)
    write_repo(root, 1)
    with (
        faults.install(faults.FaultyFiles(fail_op="rename", fail_at=2)),
        pytest.raises(IndexWriteError),
    ):
        build(root)  # rename 1 = the generation directory, rename 2 = the manifest
    assert _check(root, goldens, "generation renamed, manifest not") == 0
    shutil.rmtree(root / ".maguyva" / "cache", ignore_errors=True)
    build(root)
    assert _check(root, goldens, "next build") == 1
