"""Progress of an index build, for people: rich bars on a terminal, log lines otherwise.

The indexer reports `(phase, done, total)`; `reporter()` picks the renderer once. Plain lines
are throttled (at most one per phase every half second, plus each phase's completion) so a log
file stays readable. `-q` passes `quiet=True`: nothing at all.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, TextIO

Progress = Callable[[str, int, int], None]


class PlainProgress(AbstractContextManager):
    """`maguyva: <phase>: done/total` lines on stderr, throttled."""

    def __init__(self, stream: TextIO, interval_s: float = 0.5) -> None:
        self.stream = stream
        self.interval_s = interval_s
        self._last: dict[str, float] = {}
        self._finished: set[str] = set()

    def __call__(self, phase: str, done: int, total: int) -> None:
        now = time.monotonic()
        complete = total > 0 and done >= total
        if complete and phase in self._finished:
            return
        if not complete and now - self._last.get(phase, -1e9) < self.interval_s:
            return
        self._last[phase] = now
        if complete:
            self._finished.add(phase)
        self.stream.write(f"maguyva: {phase}: {done}/{total}\n")
        self.stream.flush()

    def __exit__(self, *exc: Any) -> None:
        return None


class RichProgress(AbstractContextManager):
    """One rich progress bar per phase, with rate and ETA, drawn on stderr."""

    def __init__(self, stream: TextIO) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("[bold]{task.description:<12}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(file=stream),
            transient=False,
        )
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __call__(self, phase: str, done: int, total: int) -> None:
        task = self._tasks.get(phase)
        if task is None:
            task = self._tasks[phase] = self._progress.add_task(phase, total=max(total, 1))
        self._progress.update(task, completed=done, total=max(total, 1))

    def __exit__(self, *exc: Any) -> None:
        self._progress.stop()


class _Silent(AbstractContextManager):
    def __call__(self, phase: str, done: int, total: int) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def reporter(quiet: bool = False, stream: TextIO | None = None) -> AbstractContextManager:
    """A context manager that is also the progress callback; use as
    `with reporter(quiet) as progress: build_index(..., progress=progress)`."""
    stream = stream or sys.stderr
    if quiet:
        return _Silent()
    if stream.isatty():
        try:
            return RichProgress(stream)
        except ImportError:  # rich is a dependency, but a stripped install still works
            pass
    return PlainProgress(stream)
