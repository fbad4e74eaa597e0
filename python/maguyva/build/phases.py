"""Progress phases of a build: the callback that remembers each phase's total (so the
indexer can close a phase a modality reported itself), and the semantic slices counted as
one phase."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

Progress = Callable[[str, int, int], None]


class Phases:
    """The progress callback, remembering each phase's last total so the indexer can close a
    phase a modality reported itself (`(phase, total, total)`)."""

    def __init__(self, progress: Progress, also: Progress | None = None) -> None:
        self.progress = progress
        self.also = also  # the progress file, for other processes
        self.totals: dict[str, int] = {}
        self.lock = threading.RLock()  # a modality built in a thread reports under it

    def __call__(self, phase: str, done: int, total: int) -> None:
        with self.lock:
            self.totals[phase] = total
            self.progress(phase, done, total)
            if self.also is not None:
                self.also(phase, done, total)

    def expect(self, steps: list[Any]) -> None:
        """The phases the build runs from here (`eta.first_build_steps`), for the progress
        file's whole-build ETA."""
        expect = getattr(self.also, "expect", None)
        if expect is not None:
            expect(steps)
        elif isinstance(self.progress, Phases):
            self.progress.expect(steps)

    def start(self, phase: str, total: int) -> None:
        self(phase, 0, total)

    def end(self, phase: str) -> None:
        total = self.totals.get(phase, 1) or 1
        self(phase, total, total)


class Slices(Phases):
    """The embedding of consecutive semantic slices (`follow`) as one phase: one name, the
    earlier slices' count carried over (its rate and ETA are the whole embedding's)."""

    def __init__(self, phases: Phases) -> None:
        super().__init__(phases)
        self.name: str | None = None
        self.before = self.last = 0

    def __call__(self, phase: str, done: int, total: int) -> None:
        if phase.startswith("embed"):
            self.name = self.name or phase
            self.last = done
            phase, done, total = self.name, self.before + done, self.before + total
        super().__call__(phase, done, total)

    def next_slice(self) -> None:
        self.before += self.last
        self.last = 0
