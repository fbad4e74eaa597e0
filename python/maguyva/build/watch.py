"""`maguyva watch`: keep the index current while files change.

Events come from the OS (inotify, FSEvents, ...) through `watchfiles`, on the directories that
hold indexed files only (each watched non-recursively, so an ignored `node_modules/` or `build/`
costs no watch), and are debounced: a burst such as a `git checkout` of thousands of files
becomes one update. Each update is the indexer's own check, given the event paths as hints:
only they (and their directories) are statted, so a one-file edit costs a few `stat`s, not
one per file of the repository. A full check (every known file and directory) runs after a
quiet period of `reconcile_s`, at least every `reconcile_s` under continuous activity (so an
event lost or coalesced by the OS is made up for within `reconcile_s`), and as soon as the
watches on a new set of directories stand (a burst into a new directory converges when it
ends, not at the next reconciliation). When the directories outnumber the watch budget, or the OS refuses more watches
(inotify's `max_user_watches`), the watcher says so and falls back to periodic checks.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from maguyva.build.indexer import BuildSummary, Indexer
from maguyva.errors import MaguyvaError

log = logging.getLogger("maguyva.build.watch")

DEFAULT_DEBOUNCE_MS = 300
# A burst ends after two quiet steps (watchfiles checks its queue once per step): 10 ms steps
# notice an edit ~20 ms after it instead of ~100 (docs/durability-edit-to-answer.md, "The graph follows");
# `DEFAULT_DEBOUNCE_MS` still caps a long burst.
DEFAULT_STEP_MS = 10
DEFAULT_RECONCILE_S = 30.0
DEFAULT_POLL_S = 2.0
DEFAULT_FULL_WALK_S = 600.0
"""Every so often a check lists the whole tree again: insurance against a file appearing where
no recorded directory changes (under a directory that holds only ignored files)."""


def inotify_budget() -> int | None:
    """Half of the user's inotify watch limit (other programs need watches too)."""
    try:
        return int(Path("/proc/sys/fs/inotify/max_user_watches").read_text()) // 2
    except (OSError, ValueError):
        return None


@dataclass(slots=True)
class WatchStats:
    """What the watcher did: updates that committed a generation, checks that found nothing,
    batches of events, and the mode it runs in ("events" or "polling")."""

    updates: int = 0
    noops: int = 0
    batches: int = 0
    events: int = 0
    errors: int = 0
    full_checks: int = 0  # every known file and directory statted
    hinted_checks: int = 0  # only the event paths statted
    mode: str = "events"
    fallback_reason: str = ""
    last: BuildSummary | None = field(default=None, repr=False)


class Watcher:
    """Runs until `stop_event` is set (or Ctrl-C). Thread-compatible: `run` in one thread,
    `stop()` from another."""

    def __init__(
        self,
        root: Path,
        *,
        config: dict[str, Any] | None = None,
        debounce_ms: int = DEFAULT_DEBOUNCE_MS,
        step_ms: int = DEFAULT_STEP_MS,
        reconcile_s: float = DEFAULT_RECONCILE_S,
        poll_s: float = DEFAULT_POLL_S,
        max_watches: int | None = None,
        force_polling: bool = False,
        full_walk_s: float = DEFAULT_FULL_WALK_S,
        on_update: Callable[[BuildSummary], None] | None = None,
    ) -> None:
        self.indexer = Indexer(root, config=config)
        self.indexer.follows_by_default = True  # readers get an edit before its graph: `follow`
        self.debounce_ms = debounce_ms
        self.step_ms = step_ms
        self.reconcile_s = reconcile_s
        self.poll_s = poll_s
        self.max_watches = max_watches if max_watches is not None else inotify_budget()
        self.force_polling = force_polling
        self.full_walk_s = full_walk_s
        self._last_walk = 0.0
        self._last_full = 0.0
        self._full_next = True
        self.on_update = on_update or (lambda summary: None)
        self.stats = WatchStats()
        self.stop_event = threading.Event()

    def stop(self) -> None:
        self.stop_event.set()

    def update(
        self, hints: Iterable[str] | None = None, prepare: bool = False
    ) -> BuildSummary | None:
        """One check-and-update. A busy index (another writer) or a failed write (disk full)
        is logged and retried, with a full check, at the next event or reconciliation.
        `hints`: paths (relative to the root) named by events; None for a full check.
        `prepare`: the first check (`Indexer.update(prepare=True)`)."""
        now = time.monotonic()
        walk = now - self._last_walk > self.full_walk_s
        if walk or self._full_next or now - self._last_full > self.reconcile_s:
            hints = None
        try:
            summary = self.indexer.update(
                wait_for_lock=True, force_walk=walk, hints=hints, prepare=prepare
            )
        except MaguyvaError as exc:  # busy, disk full, ...: the last generation still serves
            log.warning("%s", exc)
            self.stats.errors += 1
            self._full_next = True  # the events of this batch were not looked at
            return None
        if hints is None:
            self._last_full, self._full_next = now, False
            self.stats.full_checks += 1
        else:
            self.stats.hinted_checks += 1
        if summary.changes.get("walked"):
            self._last_walk = time.monotonic()
        if summary.noop:
            self.stats.noops += 1
        else:
            self.stats.updates += 1
            self.on_update(summary)
        self.stats.last = summary
        return summary

    def _relative(self, batch: Iterable[tuple[Any, str]]) -> set[str]:
        root = str(self.indexer.root)
        out = set()
        for _change, path in batch:
            if path == root:
                out.add("")
            elif path.startswith(root + "/"):
                out.add(path[len(root) + 1 :])
        return out

    def watched_dirs(self) -> list[Path]:
        state = self.indexer.last_state
        root = self.indexer.root
        if state is None:
            return [root]
        return [root / d if d else root for d in sorted(state.dirs)]

    def run(self) -> WatchStats:
        self.update(prepare=True)  # the first edit then needs no one-time work (`prepare`)
        self._full_next = True  # once watched, check again: edits made before the watch stood
        while not self.stop_event.is_set():
            if self.force_polling or self.stats.mode == "polling":
                self._poll_once()
                continue
            dirs = self.watched_dirs()
            if self.max_watches is not None and len(dirs) > self.max_watches:
                self._fall_back(
                    f"{len(dirs)} directories exceed the watch budget of {self.max_watches}"
                )
                continue
            try:
                self._watch(dirs)
            except (OSError, RuntimeError) as exc:  # e.g. inotify's watch limit reached
                self._fall_back(f"the OS refused to watch ({exc})")
        return self.stats

    def _fall_back(self, reason: str) -> None:
        log.warning("%s; checking every %.1fs instead of watching", reason, self.poll_s)
        self.stats.mode = "polling"
        self.stats.fallback_reason = reason

    def _poll_once(self) -> None:
        if self.stop_event.wait(self.poll_s):
            return
        self.update()

    def _watch(self, dirs: list[Path]) -> None:
        """Watch until the set of directories changes (then the caller watches anew).

        The watches stand before the check that covers the time without them: what was written
        before is found by that check, what is written after sends an event. (Checking only at
        the next event left a burst into a new directory unseen until the reconciliation, up
        to `reconcile_s`, when the burst ended before the new directory was watched.)"""
        from watchfiles._rust_notify import RustNotify

        index_dir = str(self.indexer.index.path)
        before = set(dirs)

        def keep(path: str) -> bool:
            name = path.rsplit("/", 1)[-1]
            return not (path.startswith(index_dir) or name == ".git" or "/.git/" in path)

        with RustNotify([str(d) for d in dirs], False, False, 300, False, False) as notify:
            if self._full_next:  # the watches stand: look at what changed before they did
                self.update()
                if set(self.watched_dirs()) != before:
                    self._full_next = True  # it found new directories: watch them, check again
                    return
            while not self.stop_event.is_set():
                raw = notify.watch(
                    self.debounce_ms, self.step_ms, int(self.reconcile_s * 1000), self.stop_event
                )
                if raw == "signal":  # Ctrl-C ends `maguyva watch`
                    raise KeyboardInterrupt
                if raw == "stop" or self.stop_event.is_set():
                    return
                batch = set() if raw == "timeout" else {(c, p) for c, p in raw if keep(p)}
                if raw != "timeout" and not batch:
                    continue  # only the index's own writes
                if batch:
                    self.stats.batches += 1
                    self.stats.events += len(batch)
                self.update(self._relative(batch) if batch else None)  # a timeout: full check
                if set(self.watched_dirs()) != before:
                    self._full_next = True  # a new directory: its files may predate its watch
                    return


def watch(
    root: Path,
    *,
    config: dict[str, Any] | None = None,
    on_update: Callable[[BuildSummary], None] | None = None,
    **options: Any,
) -> WatchStats:
    """Keep the index of `root` current until interrupted; see `Watcher` for the options."""
    watcher = Watcher(root, config=config, on_update=on_update, **options)
    try:
        return watcher.run()
    except KeyboardInterrupt:
        return watcher.stats


__all__ = ["WatchStats", "Watcher", "watch"]
