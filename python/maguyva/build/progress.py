"""Progress of an index build, for people: rich bars on a terminal, log lines otherwise.

The indexer reports `(phase, done, total)`: `(phase, 0, total)` when a phase starts and
`(phase, total, total)` when it ends, for every phase (scan, extract, write, each modality,
commit), with counts in between where the phase has them. `reporter()` picks the renderer once.
Both show each phase's rate and an ETA while it runs, and its duration when it ends. Plain
lines are throttled (at most one per phase every half second, plus each phase's start and
completion) so a log file stays readable. `-q` passes `quiet=True`: nothing at all.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TextIO

Progress = Callable[[str, int, int], None]


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class PhaseClock:
    """Start time, rate and ETA of each phase from its `(done, total)` reports."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._started: dict[str, float] = {}

    def update(self, phase: str, done: int) -> None:
        self._started.setdefault(phase, self.clock())

    def elapsed(self, phase: str) -> float:
        return self.clock() - self._started.get(phase, self.clock())

    def rate(self, phase: str, done: int) -> float | None:
        """Items per second since the phase started (None before there is a measure)."""
        elapsed = self.elapsed(phase)
        if done <= 0 or elapsed <= 0.05:
            return None
        return done / elapsed

    def eta(self, phase: str, done: int, total: int) -> float | None:
        rate = self.rate(phase, done)
        if rate is None or total <= 0 or done >= total:
            return None
        return (total - done) / rate

    def describe(self, phase: str, done: int, total: int) -> str:
        """`1,234/5,000 (410/s, ETA 9.2s)` while running; `5,000 in 12.2s (410/s)` at the end."""
        rate = self.rate(phase, done)
        speed = f"{rate:,.0f}/s" if rate is not None and rate >= 1 else (
            f"{rate:.2f}/s" if rate is not None else None)  # fmt: skip
        if total > 0 and done >= total:
            tail = f" ({speed})" if speed and total > 1 else ""
            return f"{total:,} in {_duration(self.elapsed(phase))}{tail}"
        eta = self.eta(phase, done, total)
        parts = [p for p in (speed, f"ETA {_duration(eta)}" if eta is not None else None) if p]
        head = f"{done:,}/{total:,}" if total > 0 else f"{done:,}"
        return head + (f" ({', '.join(parts)})" if parts else "")


class PlainProgress(AbstractContextManager):
    """`maguyva: <phase>: done/total (rate, ETA)` lines on stderr, throttled."""

    def __init__(self, stream: TextIO, interval_s: float = 0.5) -> None:
        self.stream = stream
        self.interval_s = interval_s
        self.clock = PhaseClock()
        self._last: dict[str, float] = {}
        self._finished: set[str] = set()

    def __call__(self, phase: str, done: int, total: int) -> None:
        self.clock.update(phase, done)
        now = time.monotonic()
        complete = total > 0 and done >= total
        if complete and phase in self._finished:
            return
        starting = phase not in self._last
        if not complete and not starting and now - self._last[phase] < self.interval_s:
            return
        self._last[phase] = now
        if complete:
            self._finished.add(phase)
        self.stream.write(f"maguyva: {phase}: {self.clock.describe(phase, done, total)}\n")
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
            ProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.text import Text

        class RateColumn(ProgressColumn):
            """Items per second of the phase."""

            def render(self, task: Any) -> Text:
                speed = task.finished_speed or task.speed
                if speed is None:
                    return Text("", style="progress.data.speed")
                return Text(f"{speed:,.0f}/s" if speed >= 1 else f"{speed:.2f}/s",
                            style="progress.data.speed")  # fmt: skip

        self._progress = Progress(
            TextColumn("[bold]{task.description:<12}"),
            BarColumn(),
            MofNCompleteColumn(),
            RateColumn(),
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


PROGRESS_FILE = "progress.json"


class ProgressFile:
    """The build's progress where another process reads it (`maguyva status`, the parent of
    `maguyva index --background`): `progress.json` in the index directory, replaced whole
    (write aside, rename) at most every `interval_s` and at each commit. A reader tells a
    running build from a dead one by its `pid`; a kill -9 leaves the file saying "running"."""

    def __init__(self, index_dir: Path, interval_s: float = 0.5,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        from maguyva.build.eta import BuildEta

        self.path = Path(index_dir) / PROGRESS_FILE
        self.interval_s = interval_s
        self.clock = PhaseClock(clock)
        self.eta = BuildEta(clock=clock)  # the whole build's, for `maguyva status`
        self._last = 0.0
        self.state: dict[str, Any] = {"pid": os.getpid(), "started_at": time.time(),
                                      "state": "running", "phase": None, "generation": None}  # fmt: skip

    def __call__(self, phase: str, done: int, total: int) -> None:
        self.clock.update(phase, done)
        rate = self.clock.rate(phase, done)
        eta = self.clock.eta(phase, done, total)
        self.eta.update(phase, done, total)
        left = self.eta.remaining()
        self.state.update(phase=phase, done=done, total=total,
                          rate=None if rate is None else round(rate, 2),
                          eta_s=None if eta is None else round(eta, 1),
                          build_eta_s=None if left is None else round(left, 1))  # fmt: skip
        now = time.monotonic()
        if now - self._last >= self.interval_s:
            self._write()

    def expect(self, steps: list[Any]) -> None:
        """The phases the build runs from here (`eta.first_build_steps`): its ETA sums them."""
        self.eta.expect(steps)

    def committed(self, generation: int, semantic: dict[str, Any] | None) -> None:
        """A generation was committed: searchable now, with this semantic coverage."""
        self.state.update(generation=generation, semantic=semantic)
        self._write()

    def finish(self, state: str) -> None:
        """The update ended: "done", or "stopped" (an error or Ctrl-C)."""
        self.state.update(state=state, finished_at=time.time())
        if state == "done":
            self.state["build_eta_s"] = 0.0
        self._write()

    def _write(self) -> None:
        self._last = time.monotonic()
        self.state["updated_at"] = time.time()
        tmp = self.path.with_name(f"{PROGRESS_FILE}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(self.state), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:  # progress is for people: a full disk must not stop the build
            tmp.unlink(missing_ok=True)


def read_progress(index_dir: Path) -> dict[str, Any] | None:
    """The last build's progress (None: none recorded, or unreadable), with `alive`: is its
    process still running (a "running" build whose process died was killed)."""
    try:
        state = json.loads((Path(index_dir) / PROGRESS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict):
        return None
    state["alive"] = state.get("state") == "running" and _alive(state.get("pid"))
    return state


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _not_zombie(pid)


def _not_zombie(pid: int) -> bool:
    """A killed child its parent has not reaped yet still answers signals: read its state."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def describe_running(state: dict[str, Any]) -> str:
    """`embed heads+bodies 1,234/5,000 (31.0/s, build ETA 2m05s), pid 4242`: the ETA is the
    whole build's (`eta.BuildEta`) when the build wrote one, else the phase's."""
    done, total = int(state.get("done") or 0), int(state.get("total") or 0)
    build = state.get("build_eta_s")
    eta = (f"build ETA {_duration(build)}" if isinstance(build, (int, float)) else
           f"ETA {_duration(state['eta_s'])}" if state.get("eta_s") else None)  # fmt: skip
    parts = [p for p in (f"{state['rate']:,.1f}/s" if state.get("rate") else None, eta) if p]
    count = f"{done:,}/{total:,}" if total else f"{done:,}"
    return (f"{state.get('phase')} {count}" + (f" ({', '.join(parts)})" if parts else "")
            + f", pid {state.get('pid')}")  # fmt: skip
