"""Resident memory of a process tree, sampled from /proc: the peak of a build (the indexer
spawns extraction workers, so the process's own RSS alone would under-count) and a watchdog
that stops a build that outgrows its budget.

Linux only (it reads /proc); elsewhere `tree_rss` returns 0 and the watchdog never fires.
No psutil: three small /proc files are all this needs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from maguyva.errors import MaguyvaError

T = TypeVar("T")

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _children(pid: int) -> list[int]:
    """Direct children of `pid` (every thread's children file; needs Linux >= 3.5)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            text = Path(f"/proc/{pid}/task/{tid}/children").read_text()
        except OSError:
            continue
        out.extend(int(c) for c in text.split())
    return out


def process_rss(pid: int) -> int:
    """Resident bytes of one process (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/statm").read_text().split()
    except OSError:
        return 0
    return int(fields[1]) * PAGE


def process_pss(pid: int) -> int:
    """Proportional set size of one process: shared pages divided among their sharers, so a
    forked child (copy-on-write) is not counted twice. Falls back to RSS without smaps."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
            for line in fh:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return process_rss(pid)


def tree_pids(pid: int) -> list[int]:
    """`pid` and all its descendants."""
    seen, todo = [], [pid]
    while todo:
        current = todo.pop()
        seen.append(current)
        todo.extend(_children(current))
    return seen


CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process and of its children it has reaped."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = text[text.rindex(")") + 2 :].split()  # the command name may contain spaces
    utime, stime, cutime, cstime = (int(fields[i]) for i in (11, 12, 13, 14))
    return (utime + stime + cutime + cstime) / CLOCK_TICKS


def tree_cpu(pid: int | None = None) -> float:
    """CPU seconds of a process tree: live members and the children they reaped (a finished
    extraction worker's time lives on in its parent's counters)."""
    return sum(process_cpu(p) for p in tree_pids(os.getpid() if pid is None else pid))


def tree_rss(pid: int | None = None) -> int:
    """Resident bytes of a process and all its descendants, by proportional set size: a
    `subprocess` forked from a 10 GB process shares its pages until it execs, and summing
    plain RSS would count them twice (measured: a 23 GB "peak" of an 11.7 GB build)."""
    return sum(process_pss(p) for p in tree_pids(os.getpid() if pid is None else pid))


def cgroup_limit() -> int | None:
    """The memory limit of this process's cgroup (v2 `memory.max`, v1 `limit_in_bytes`),
    or None when there is none."""
    candidates = [Path("/sys/fs/cgroup/memory.max"),
                  Path("/sys/fs/cgroup/memory/memory.limit_in_bytes")]  # fmt: skip
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, rel = line.split(":", 2)
            if controllers == "":
                candidates.insert(0, Path("/sys/fs/cgroup") / rel.lstrip("/") / "memory.max")
    except (OSError, ValueError):
        pass
    for path in candidates:
        try:
            value = path.read_text().strip()
        except OSError:
            continue
        if value.isdigit() and int(value) < (1 << 60):
            return int(value)
    return None


@dataclass(slots=True)
class Sample:
    t: float  # seconds since the sampler started
    rss: int  # bytes (PSS of the tree)
    cpu: float = 0.0  # CPU seconds of the tree so far


@dataclass
class RssSampler:
    """Samples the tree RSS of `pid` every `interval_s` on a daemon thread; `on_sample` sees
    each sample (the watchdog uses it). Use as a context manager."""

    pid: int = field(default_factory=os.getpid)
    interval_s: float = 0.1
    on_sample: Callable[[Sample], None] | None = None
    samples: list[Sample] = field(default_factory=list)
    started: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> RssSampler:
        self.started = time.perf_counter()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._take()

    def _take(self) -> None:
        sample = Sample(time.perf_counter() - self.started, tree_rss(self.pid), tree_cpu(self.pid))
        self.samples.append(sample)
        if self.on_sample is not None:
            self.on_sample(sample)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._take()
            self._stop.wait(self.interval_s)

    @property
    def peak(self) -> int:
        return max((s.rss for s in self.samples), default=0)

    def peak_between(self, start: float, end: float) -> int:
        """Peak RSS over [start, end] (seconds since the start): the samples inside it and
        the last one before it (a phase shorter than the interval still gets a value)."""
        before = [s for s in self.samples if s.t < start][-1:]
        inside = [s for s in self.samples if start <= s.t <= end]
        return max((s.rss for s in before + inside), default=0)

    def cpu_between(self, start: float, end: float) -> float:
        """CPU seconds the tree used over [start, end] (between the samples nearest to them)."""
        at = lambda t: max((s.cpu for s in self.samples if s.t <= t), default=0.0)  # noqa: E731
        return max(0.0, at(end) - at(start))


def watchdog(limit_bytes: int, pid: int | None = None) -> Callable[[Sample], None]:
    """An `on_sample` hook that kills the watched tree (SIGKILL to the descendants, SIGTERM
    to the process itself) the first time its RSS exceeds `limit_bytes`."""
    target = os.getpid() if pid is None else pid
    fired = threading.Event()

    def check(sample: Sample) -> None:
        if sample.rss <= limit_bytes or fired.is_set():
            return
        fired.set()
        for child in tree_pids(target)[1:]:
            with contextlib.suppress(OSError):
                os.kill(child, signal.SIGKILL)
        os.kill(target, signal.SIGTERM)

    return check


def phase_windows(timings: dict[str, float], order: list[str]) -> list[tuple[str, float, float]]:
    """Consecutive (phase, start, end) windows from a build report's per-phase seconds, in
    the order the indexer runs them (phases missing from `timings` are skipped)."""
    windows, t = [], 0.0
    for name in order:
        seconds = timings.get(name)
        if seconds is None:
            continue
        windows.append((name, t, t + seconds))
        t += seconds
    return windows


# ---- budgets -------------------------------------------------------------------------------

DRIVER_BYTES = 250 << 20
"""Resident size of the build's main process before it holds any corpus data: Python, the
package, tree-sitter grammars, the Rust text-index builder's buffers (measured on small
corpora: 110-170 MiB; rounded up)."""

WORKER_BYTES = 180 << 20
"""One extraction worker process (forkserver children measured at 110-175 MiB on the kernel)."""

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20,
          "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}  # fmt: skip


def parse_size(text: str | int) -> int:
    """`"6G"`, `"512M"`, `"800MiB"`, `1048576` -> bytes (binary units)."""
    if isinstance(text, int):
        return text
    import re

    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*", text)
    if m is None or m.group(2).lower() not in _UNITS:
        raise MaguyvaError(f"not a memory size: {text!r} (examples: 6G, 512M, 800MiB)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


@dataclass(frozen=True, slots=True)
class BudgetPlan:
    """How a build fits a memory budget: the budget actually used (the smaller of the request
    and the cgroup's limit) and the extraction processes it allows."""

    budget: int
    jobs: int
    cgroup_limit: int | None


def plan_for_budget(budget: int, cores: int | None = None) -> BudgetPlan:
    """Extraction processes that fit `budget` next to the driver (at least one; never more
    than the cores). Raises when not even one worker fits."""
    limit = cgroup_limit()
    if limit is not None:
        budget = min(budget, limit)
    cores = cores or os.cpu_count() or 1
    room = budget - DRIVER_BYTES
    if room < WORKER_BYTES:
        raise MaguyvaError(
            f"a memory budget of {budget >> 20} MiB is too small: a build needs about "
            f"{(DRIVER_BYTES + WORKER_BYTES) >> 20} MiB before it holds any of the repository"
        )
    return BudgetPlan(budget, max(1, min(cores, room // WORKER_BYTES)), limit)


def run_within_budget(
    fn: Callable[[], T], budget: int, interval_s: float = 0.05, grace_s: float = 2.0
) -> T:
    """Run `fn()` (a build) on this thread while a sampler watches this process tree; the
    first sample over `budget` interrupts `fn` as Ctrl-C would (the indexer stops its workers
    and aborts its unfinished generation; the previous one keeps serving); if the tree is
    still over budget `grace_s` later, its child processes are killed. A
    `MemoryBudgetExceeded` then names the budget and what was seen. Main thread only (it uses
    `_thread.interrupt_main`)."""
    import _thread

    if threading.current_thread() is not threading.main_thread():
        raise MaguyvaError("run_within_budget must be called from the main thread")
    fired: list[Sample] = []
    finished: list[bool] = []

    def check(sample: Sample) -> None:
        # the sampler's last sample, taken as it stops, comes after `fn` returned: an
        # interrupt then would land outside this function as a stray KeyboardInterrupt
        if sample.rss <= budget or finished:
            return
        if not fired:
            fired.append(sample)
            _thread.interrupt_main()  # like Ctrl-C: the indexer stops its workers and aborts
        elif sample.t - fired[0].t > grace_s and len(fired) == 1:
            fired.append(sample)  # still over after the grace period: kill the children
            for child in tree_pids(os.getpid())[1:]:
                with contextlib.suppress(OSError):
                    os.kill(child, signal.SIGKILL)

    # interrupt_main does nothing while SIGINT is ignored (a parent may have started us with
    # SIGINT set to SIG_IGN, which survives exec): handle it for the duration of the build.
    previous = signal.getsignal(signal.SIGINT)
    if previous in (signal.SIG_IGN, signal.SIG_DFL, None):
        signal.signal(signal.SIGINT, signal.default_int_handler)
    sampler = RssSampler(interval_s=interval_s, on_sample=check)
    try:
        with sampler:
            result = fn()
            finished.append(True)
        return result
    except KeyboardInterrupt:
        if not fired:
            raise
    except Exception:
        if not fired:
            raise  # a worker killed by the watchdog surfaces as some other error
    finally:
        if previous in (signal.SIG_IGN, signal.SIG_DFL):
            signal.signal(signal.SIGINT, previous)
    seen = fired[0]
    raise MemoryBudgetExceeded(
        f"memory budget of {budget >> 20} MiB exceeded ({seen.rss >> 20} MiB after "
        f"{seen.t:.1f}s); the build was stopped and nothing was committed"
    )


class MemoryBudgetExceeded(MaguyvaError):
    """A build outgrew its memory budget and was stopped."""
