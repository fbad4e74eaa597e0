"""The whole build's remaining time, for `maguyva status`: the phases left summed, from the
rates this build has measured, or estimated for the phases it has not reached; smoothed, and
never absurd.

Why: the ETA used to be the current phase's, from its first reading on. A staged first build
runs a dozen phases (`build.staged`) and embedding, the longest by far, comes last: "ETA
9.2s" during the text stage said nothing of the hours ahead, and a phase's first reading (a
batch that paid for loading the model) could read "ETA 37h10m".

How: the indexer declares the phases a first build runs (`first_build_steps`), each with its
work (files, segments, chunks) and a prior cost per unit; each progress event moves the queue
on. The current phase's cost per unit blends the prior with the rate measured since its first
counted event (the start-up before it left out), trusting the measure more the longer it
runs (`SETTLE_S`); the phases ahead take their priors, scaled by how this machine did against
the priors on the phases finished (`factor`, clamped to `FACTOR_RANGE`). The estimate shown
moves toward each new one with a time constant (`SMOOTH_S`) and counts down between readings.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SETTLE_S = 5.0
"""Seconds of a phase's measured rate that weigh as much as its prior (the blend's midpoint)."""
SMOOTH_S = 10.0
"""Time constant of the smoothing of the estimate shown."""
FACTOR_RANGE = (0.25, 40.0)
"""How much faster or slower than the priors this machine may be judged (2 shared cores at
load 20-25 ran ~10x their idle wall times)."""
MAX_S = 7 * 86400.0
"""No estimate beyond a week."""


@dataclass
class Step:
    """One phase the build expects: its name as reported; `inner`, the phase nested in it
    that carries its counts (semantic's `static` or `embed ...`), if any; its units of work
    (the phase's own total replaces them when `counted`); the prior seconds per unit."""

    name: str
    units: float
    cost: float
    counted: bool = True
    inner: str | None = None
    started: float | None = None
    first: tuple[float, int] | None = None  # (time, done) of its first event with done > 0
    done: int = 0
    seconds: float | None = None  # how long it took, once finished

    def matches(self, phase: str) -> bool:
        return _named(phase, self.name)

    def carries(self, phase: str) -> bool:
        """Does `phase` report this step's counts?"""
        return _named(phase, self.inner) if self.inner else self.matches(phase)

    @property
    def prior(self) -> float:
        return self.units * self.cost


def _named(phase: str, name: str | None) -> bool:
    return name is not None and (phase == name or phase.startswith(name + " "))


# Prior seconds on one core of a quiet machine, rounded up from docs/semantic-kernel.md
# (linux-sub, the kernel) and docs/semantic.md (Django on VNNI): per file, per line window or
# chunk, per commit.
PER_FILE = {"scan": 0.00015, "windows": 0.0006, "extract": 0.003, "write": 0.00005,
            "text": 0.0015, "structural": 0.001, "graph": 0.0005, "semantic": 0.0003}  # fmt: skip
PER_CHUNK = {"static": 0.00004, "embed": 0.009}
COMMIT_S = 0.2
SEGMENTS = 64  # the write phase counts segments
BYTES_PER_WINDOW = 1500
"""Line windows of a file, estimated: one per 1,500 bytes (60-line windows), plus one."""
BYTES_PER_CHUNK = 600
"""Extracted chunks (definitions, line windows between them), estimated per byte of source
(the kernel ~800, Python packages of the standard library ~470)."""
TEXTS_PER_CHUNK = 1.5
"""Texts embedded per chunk: heads first, then the bodies of the long ones (Django 1.72,
seven standard-library packages 1.47)."""


def first_build_steps(files: int, size: int, staged: bool, modalities: list[str],
                      static: bool) -> list[Step]:  # fmt: skip
    """The phases of a first build of `files` files of `size` bytes, in the order the indexer
    reports them: a staged build's text stage over line windows and their static rows
    (`static`), then the extraction, the modalities, the graph, semantic's plan and the
    embedding (`build.staged`, `build.follow`)."""
    windows = size / BYTES_PER_WINDOW + files
    chunks = size / BYTES_PER_CHUNK + files

    def per_file(name: str, key: str | None = None, counted: bool = True) -> Step:
        return Step(name, float(files), PER_FILE[key or name], counted)

    def write() -> Step:
        return Step("write", SEGMENTS, files * PER_FILE["write"] / SEGMENTS)

    def commit() -> Step:
        return Step("commit", 1.0, COMMIT_S, counted=False)

    semantic = "semantic" in modalities
    out: list[Step] = []
    if staged:
        out += [per_file("extract", "windows"), write(), per_file("text"), commit()]
        if static and semantic:
            out.append(Step("semantic", windows, PER_CHUNK["static"], inner="static"))
    out += [per_file("extract"), write()]
    out += [per_file(m, counted=m == "text") for m in ("text", "structural") if m in modalities]
    if staged and static and semantic:
        out += [Step("semantic", chunks, PER_CHUNK["static"], inner="static"), commit()]
    if "graph" in modalities:
        out.append(per_file("graph", counted=False))
    if semantic:
        out.append(per_file("semantic", counted=False))  # the plan
        if not staged:
            out.append(commit())
        out.append(Step("semantic", chunks * TEXTS_PER_CHUNK, PER_CHUNK["embed"], inner="embed"))
    return out


def declare(phases: Any, files: dict[str, list[Any]], modalities: list[str],
            config: dict[str, Any], staged: bool, first: bool) -> bool:  # fmt: skip
    """Declare a first build's phases (`first_build_steps`) to `phases` (`build.phases`), for
    the progress file's ETA; an update declares none. Returns `staged`, for the caller's
    branch."""
    if first:
        from maguyva.build.staged import static_config

        size = sum(int(r[0]) for r in files.values())
        static = static_config(config) is not None
        phases.expect(first_build_steps(len(files), size, staged, modalities, static))
    return staged


class BuildEta:
    """Seconds left of the whole build from its progress events (`update`); `remaining()`
    is None until there is an estimate. Without declared steps each phase is a step of its
    own with no prior: the estimate is then the current phase's, smoothed."""

    def __init__(self, steps: list[Step] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.steps = list(steps or [])
        self.clock = clock
        self.current = -1
        self._shown: tuple[float, float] | None = None  # (time, estimate)

    def expect(self, steps: list[Step]) -> None:
        """The phases ahead of the current one (those declared before are replaced)."""
        self.steps = self.steps[: self.current + 1] + list(steps)

    def update(self, phase: str, done: int, total: int) -> None:
        now = self.clock()
        at = self._find(phase, done, total)
        if at is None:
            return
        if at != self.current:
            for s in self.steps[max(self.current, 0) : at]:
                if s.started is not None and s.seconds is None:
                    s.seconds = now - s.started
            self.current = at
        s = self.steps[at]
        if s.started is None:
            s.started = now
        if s.carries(phase):
            if s.counted and total > 0:
                s.units = float(total)
            s.done = max(0, done)
            if s.first is None and done > 0:
                s.first = (now, done)
            # ended; or going on (the embedding's next slice counts on from the last one)
            if total > 0 and done >= total:
                s.seconds = now - s.started if s.seconds is None else s.seconds
            else:
                s.seconds = None
        raw = self._raw(now)
        if raw is not None:
            self._smooth(now, raw)

    def _find(self, phase: str, done: int, total: int) -> int | None:
        """The step `phase` reports on: the current one (while it runs, or repeating its
        end), else the next one of that name, else the next one it carries the counts of;
        None for a phase nested in the current one. An undeclared phase is a step of its
        own when nothing was declared."""
        cur = self.current
        if cur >= 0:
            s = self.steps[cur]
            ending = total > 0 and done >= total
            if s.inner and s.carries(phase):
                return cur
            if s.matches(phase) and (s.seconds is None or ending or s.inner):
                return cur
        for test in (Step.matches, Step.carries):
            for i in range(cur + 1, len(self.steps)):
                if test(self.steps[i], phase):
                    return i
        if not any(s.cost for s in self.steps):
            self.steps.append(Step(phase, 0.0, 0.0))
            return len(self.steps) - 1
        return None

    def factor(self) -> float:
        """This machine's seconds per prior second, from the finished steps (1 before any)."""
        done = [s for s in self.steps if s.seconds is not None and s.prior > 0]
        prior = sum(s.prior for s in done)
        if prior <= 0:
            return 1.0
        low, high = FACTOR_RANGE
        return min(high, max(low, sum(s.seconds or 0.0 for s in done) / prior))

    def _raw(self, now: float) -> float | None:
        if self.current < 0:
            return None
        s = self.steps[self.current]
        factor = self.factor()
        prior = s.cost * factor
        here: float | None
        if s.seconds is not None:
            here = 0.0
        elif not s.counted and not s.inner:  # no counts: its prior, counted down
            here = max(0.0, s.prior * factor - (now - (s.started or now)))
        else:
            left = max(0.0, s.units - s.done)
            measured = None
            if s.first is not None and s.done > s.first[1] and now > s.first[0]:
                measured = (now - s.first[0]) / (s.done - s.first[1])
            if measured is None:
                here = left * prior if prior else None
            else:
                assert s.first is not None
                trust = (now - s.first[0]) / (now - s.first[0] + SETTLE_S) if prior else 1.0
                here = left * (trust * measured + (1 - trust) * prior)
        if here is None:
            return None
        ahead = sum(t.prior for t in self.steps[self.current + 1 :]) * factor
        return min(MAX_S, here + ahead)

    def _smooth(self, now: float, raw: float) -> None:
        if self._shown is None or raw == 0.0:  # the first estimate; nothing left
            self._shown = (now, raw)
            return
        then, shown = self._shown
        dt = max(0.0, now - then)
        counted = max(0.0, shown - dt)  # what the last estimate says is left now
        if counted == 0.0:  # it ran out (or there was nothing left): no anchor
            self._shown = (now, raw)
            return
        weight = 1.0 - math.exp(-dt / SMOOTH_S)
        self._shown = (now, counted + weight * (raw - counted))

    def remaining(self) -> float | None:
        """Seconds left of the whole build, as last estimated (counted down since then)."""
        if self._shown is None:
            return None
        then, shown = self._shown
        return max(0.0, shown - max(0.0, self.clock() - then))
