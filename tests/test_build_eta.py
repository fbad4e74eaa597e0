"""The whole build's ETA (`build.eta`, issue 17): the phases left summed, from rates measured
or estimated, smoothed, never absurd. Deterministic: a fake clock and progress sequences,
one of them recorded from a real staged build of standard-library packages; no timing."""

from __future__ import annotations

import itertools
import json
import shutil
import sysconfig
from pathlib import Path

import pytest

from maguyva.build.eta import FACTOR_RANGE, BuildEta, Step, first_build_steps
from maguyva.build.indexer import build_index
from maguyva.build.progress import PhaseClock, ProgressFile, describe_running

STDLIB = Path(sysconfig.get_paths()["stdlib"])
MODALITIES = ["text", "structural", "graph", "semantic"]


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture(scope="module")
def recorded(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[list[tuple[str, int, int]], int, int]:
    """The progress events of a real staged first build, with its files and bytes."""
    root = tmp_path_factory.mktemp("eta") / "repo"
    packages = ("json", "email", "http", "logging")
    for name in packages:
        shutil.copytree(STDLIB / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    events: list[tuple[str, int, int]] = []
    config = {"first_build_stages": True, "jobs": 1, "semantic_max_chunks": 60}
    build_index(root, config=config, progress=lambda *e: events.append(e))
    # the packages only: the index's collected generations may still be going away under it
    files = [p for name in packages for p in (root / name).rglob("*.py")]
    return events, len(files), sum(p.stat().st_size for p in files)


def replay(eta: BuildEta, clock: Clock, events: list[tuple[str, int, int]], step: float) -> None:
    for phase, done, total in events:
        clock.t += step
        eta.update(phase, done, total)


def test_a_real_staged_build_meets_every_step_it_declares(recorded) -> None:
    events, files, size = recorded
    clock = Clock()
    eta = BuildEta(clock=clock)
    scan = [e for e in events if e[0] == "scan"]
    replay(eta, clock, scan, 0.1)
    eta.expect(first_build_steps(files, size, True, MODALITIES, True))
    replay(eta, clock, events[len(scan) :], 0.1)
    declared = eta.steps[1:]
    names = [(s.name, s.inner) for s in declared]
    assert names.count(("semantic", "static")) == 2 and ("semantic", "embed") in names
    assert all(s.started is not None for s in declared), [
        (s.name, s.inner) for s in declared if s.started is None]  # fmt: skip
    assert eta.current == len(eta.steps) - 1  # the embedding, last
    embedded = [(d, t) for p, d, t in events if p.startswith("embed")]
    assert (eta.steps[-1].done, eta.steps[-1].units) == embedded[-1]
    assert embedded[-1][0] == embedded[-1][1] and eta.remaining() == 0.0


def test_the_estimate_is_the_sum_of_the_phases_left() -> None:
    clock = Clock()
    steps = [Step("extract", 1000, 0.01), Step("text", 1000, 0.02), Step("embed", 5000, 0.1)]
    eta = BuildEta(steps, clock=clock)
    eta.update("extract", 0, 1000)
    assert eta.remaining() == pytest.approx(10 + 20 + 500)  # priors alone, nothing measured
    for done in range(100, 1001, 100):  # twice the prior's time: the machine is slower
        clock.t += 2.0
        eta.update("extract", done, 1000)
    eta.update("text", 0, 1000)
    assert eta.factor() == pytest.approx(2.0)
    raw = eta._raw(clock.t)
    assert raw == pytest.approx(2 * (20 + 500))  # the phases ahead scaled by what was seen


def test_a_first_reading_after_a_slow_start_is_not_wild() -> None:
    """The old phase ETA after 64 of 300,000 chunks in 60 s (the model's loading in it) was
    78 hours; the build's stays near its priors until the rate is measured."""
    clock = Clock()
    eta = BuildEta([Step("embed", 300_000, 0.01)], clock=clock)
    eta.update("embed heads+bodies", 0, 300_000)
    clock.t += 60.0
    eta.update("embed heads+bodies", 64, 300_000)
    old = PhaseClock(clock)
    assert old.eta("x", 0, 1) is None
    old._started["x"] = clock.t - 60.0
    assert old.eta("x", 64, 300_000) > 70 * 3600  # what status showed
    first = eta.remaining()
    assert first is not None and first < 2 * 300_000 * 0.01
    # then 100 chunks a second, read every 2 s: the estimate settles on the measured rate
    # (~2,999 s left at first, minus what passes) and only counts down once it has
    readings = []
    done = 64
    for _ in range(300):
        clock.t += 2.0
        done += 200
        eta.update("embed heads+bodies", done, 300_000)
        readings.append(eta.remaining())
    left = (300_000 - done) / 100.0
    assert readings[-1] == pytest.approx(left, rel=0.05)
    tail = readings[100:]
    assert all(b <= a + 1e-6 for a, b in itertools.pairwise(tail))


def test_never_beyond_the_bounds_whatever_the_machine_does() -> None:
    clock = Clock()
    eta = BuildEta([Step("extract", 10, 1.0), Step("embed", 1000, 1.0)], clock=clock)
    eta.update("extract", 0, 10)
    clock.t += 100_000.0  # a phase that took 10,000x its prior (a suspended laptop)
    eta.update("extract", 10, 10)
    assert eta.factor() == FACTOR_RANGE[1]
    left = eta.remaining()
    assert left is not None and left <= 1000 * FACTOR_RANGE[1]


def test_without_declared_phases_it_is_the_current_phase_smoothed() -> None:
    clock = Clock()
    eta = BuildEta(clock=clock)
    eta.update("extract", 0, 1000)
    assert eta.remaining() is None  # nothing measured, no prior
    clock.t += 1.0
    eta.update("extract", 100, 1000)
    assert eta.remaining() is None  # one reading: no rate yet (the start-up is left out)
    clock.t += 1.0
    eta.update("extract", 200, 1000)
    assert eta.remaining() == pytest.approx(8.0)


def test_the_progress_file_and_status_show_the_builds_eta(tmp_path: Path) -> None:
    clock = Clock()
    progress = ProgressFile(tmp_path, interval_s=0.0, clock=clock)
    progress("scan", 10, 10)
    progress.expect([Step("extract", 10, 1.0), Step("embed", 100, 1.0)])
    progress("extract", 0, 10)
    state = json.loads((tmp_path / "progress.json").read_text())
    assert state["build_eta_s"] == pytest.approx(110.0)
    assert "build ETA 1m50s" in describe_running(state)
    state.pop("build_eta_s")
    state["eta_s"] = 5.0
    assert "ETA 5.0s" in describe_running(state) and "build" not in describe_running(state)


def test_a_build_writes_its_eta_in_the_progress_file(recorded, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(STDLIB / "json", root / "json", ignore=shutil.ignore_patterns("__pycache__"))
    build_index(root, config={"jobs": 1, "modalities": ["text", "structural"]})
    state = json.loads((root / ".maguyva" / "progress.json").read_text())
    assert state["state"] == "done" and state["build_eta_s"] == 0.0
