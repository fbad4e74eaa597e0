"""Building each modality of a generation: in order, one progress phase each, one
modality's failure recorded in its status instead of losing the others; a small update's
semantic part in a thread beside the rest."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from maguyva.build import follow
from maguyva.build.layout import Layout
from maguyva.build.phases import Phases
from maguyva.errors import MaguyvaError, ModalityUnavailable
from maguyva.modalities.protocol import BuildContext
from maguyva.modalities.registry import BUILD_ORDER, load_modality
from maguyva.model import SourceFile
from maguyva.repo.changes import ChangeSet
from maguyva.store.generations import IndexDir
from maguyva.store.views import SegmentChunks, SegmentExtraction

log = logging.getLogger("maguyva.index")


class BuildTarget(Protocol):
    """What a modality's context needs of the writer (`indexer.Indexer`)."""

    root: Path
    config: dict[str, Any]
    index: IndexDir


OVERLAP_MAX_CHANGES = 32
"""An update that changed at most this many files builds the semantic part in a thread while
the others build (see `build_modalities`); a bigger one builds everything in order."""


def build_modalities(
    ctx: BuildContext,
    config: dict[str, Any],
    timings: dict[str, float],
    phases: Phases | None = None,
    fork: Callable[[], BuildContext] | None = None,
    skip: set[str] | frozenset[str] = frozenset(),
    overrides: dict[str, dict[str, Any]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Build each wanted modality in order; each is a progress phase (`(name, 0, n)` before,
    `(name, n, n)` after, whatever the modality reports in between).

    A small update (`OVERLAP_MAX_CHANGES`) with `fork` (a context with views of its own) builds
    the semantic part in a thread alongside the others: its time is mostly the embedding
    model, which releases the GIL, while the graph's patch is Python; on a 10k-file tree the
    two overlap for ~40 ms of a one-file edit. Progress calls are serialised (`Phases.lock`);
    its result (or error: an OSError still aborts the generation) is taken in the usual order.

    `skip`: modalities left out (the caller fills their status: `follow`); `overrides`: the
    context fields a modality gets of its own (the graph's change set when it must build in
    full, the semantic configuration when its backlog follows)."""
    phases = phases or Phases(ctx.progress)
    wanted = set(config.get("modalities") or BUILD_ORDER) - set(skip)
    overrides = overrides or {}

    def own(name: str, base: BuildContext) -> BuildContext:
        fields = overrides.get(name)
        return dataclasses.replace(base, **fields) if fields else base

    status: dict[str, dict[str, Any]] = {}
    background: dict[str, Background] = {}
    if fork is not None and "semantic" in wanted and small_update(ctx.changes):
        background["semantic"] = Background("semantic", own("semantic", fork()), phases)
    try:
        for name in BUILD_ORDER:
            if name in skip:
                continue
            if name not in wanted:
                status[name] = {"built": False, "reason": "not selected in configuration"}
                continue
            if name in background:
                status[name], timings[name] = background.pop(name).result()
                continue
            started = time.perf_counter()
            phases.start(name, 1)
            status[name] = build_one(name, own(name, ctx))
            timings[name] = time.perf_counter() - started
            phases.end(name)
    except KeyboardInterrupt:
        # Ctrl-C stops now: the thread (a daemon) is not waited for, its generation is never
        # committed and what it leaves in the temporary directory is cleaned on the next open
        background.clear()
        raise
    finally:
        # another error: wait, so that no build of this update still runs into the next one
        for task in background.values():
            task.thread.join()
    return status


def small_update(changes: Any) -> bool:
    if changes is None or getattr(changes, "reason", "") or changes.empty:
        return False
    count = len(changes.added) + len(changes.modified) + len(changes.deleted)
    return count + len(changes.renamed) <= OVERLAP_MAX_CHANGES


def build_one(name: str, ctx: BuildContext) -> dict[str, Any]:
    """One modality's build and its status; OSError (disk full, I/O) propagates."""
    try:
        return {"built": True, "report": load_modality(name).build(ctx)}
    except ModalityUnavailable as exc:
        return {"built": False, "reason": str(exc)}
    except MaguyvaError as exc:
        log.warning("%s: build failed: %s", name, exc)
        return {"built": False, "reason": f"build failed: {exc}"}
    except OSError:
        raise  # disk full or an I/O error: abort the generation, keep the previous one
    except Exception as exc:  # one modality's bug must not lose the others' work
        log.exception("%s: build failed", name)
        return {"built": False, "reason": f"build failed: {type(exc).__name__}: {exc}"}


class Background:
    """One modality built in a daemon thread (a process that exits does not wait for it)."""

    def __init__(self, name: str, ctx: BuildContext, phases: Phases) -> None:
        self.name = name
        self.started = time.perf_counter()
        self.took = 0.0
        self.status: dict[str, Any] | None = None
        self.error: BaseException | None = None

        def run() -> None:
            try:
                phases.start(name, 1)
                self.status = build_one(name, ctx)
                phases.end(name)
            except BaseException as exc:  # handed to the caller by `result`
                self.error = exc
            finally:
                self.took = time.perf_counter() - self.started

        self.thread = threading.Thread(target=run, name=f"maguyva-build-{name}", daemon=True)
        self.thread.start()

    def result(self) -> tuple[dict[str, Any], float]:
        self.thread.join()
        if self.error is not None:
            raise self.error
        assert self.status is not None
        return self.status, self.took


def modality_context(
    writer: BuildTarget,
    tmp: Path,
    layout: Layout,
    files: list[SourceFile],
    phases: Phases,
    views: list[Any],
    previous: Path | None,
    changes: ChangeSet | None = None,
) -> BuildContext:
    """The modalities' context for the generation in `tmp`: lazy views of its segments
    (added to `views`, closed by the caller)."""
    chunks = SegmentChunks(tmp, layout.counts, layout.index, layout.delta)
    extraction = SegmentExtraction(tmp, layout.index)
    views += [chunks, extraction]
    return BuildContext(
        root=writer.root, out_dir=tmp, files=files, chunks=chunks, extraction=extraction,
        config=writer.config, cache_dir=writer.index.cache_dir, progress=phases,
        previous_dir=previous, changes=changes,
    )  # fmt: skip


def context_overrides(
    config: dict[str, Any],
    changes: ChangeSet,
    *,
    text_stage: bool,
    graph_behind: bool,
    defer: bool,
    slices: bool,
    warm: bool,
) -> dict[str, dict[str, Any]]:
    """The context fields a modality gets of its own in a build (`build_modalities`)."""
    overrides: dict[str, dict[str, Any]] = {}
    if text_stage:  # the previous text index holds line windows (`build.staged`): from scratch
        overrides["text"] = {"previous_dir": None}
    if graph_behind:  # built in full: the rows a patch would need are not those behind
        reason = dataclasses.replace(changes, reason="the graph was behind")
        overrides["graph"] = {"changes": reason}
    if defer:  # the edit's own chunks, for a moment: the rest follows (`follow`)
        overrides["semantic"] = {"config": follow.urgent_config(config)}
    elif warm or (slices and small_update(changes)):
        # warm: nothing to embed, a backlog would only delay the start; a small update
        # with a backlog: the edit's chunks now, the backlog in the slices after
        overrides["semantic"] = {"config": {**config, follow.BACKLOG: False}}
    elif slices:  # never gate: searchable now, embedded in the generations after
        overrides["semantic"] = {"config": follow.first_config(config)}
    return overrides
