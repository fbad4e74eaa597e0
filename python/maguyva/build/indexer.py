"""Build a new index generation, incrementally: detect what changed, re-extract only that,
then each modality builds its part from the whole (reused + new) extraction. This module is
the orchestration; each step lives in a module of its own:

- `build.previous`: the generation a build starts from, and what it reuses of it;
- `build.extract_step` and `build.spill`: the changed files extracted and spilled to disk;
- `build.layout`: the segments (or a small update's delta) written, `store.rows` their bytes;
- `build.modality_builds`: each modality built over lazy views (`store.views`);
- `build.followups`: the generations that follow (`build.follow`: graph, semantic backlog);
- `build.summary`: the report.

`build_index()` is the one-shot entry point (CLI, demo, MCP). Memory is bounded by a segment,
not by the repository: each file's extraction and chunks are encoded as soon as they arrive and
spilled to disk, the 64 segments are then written one at a time (unchanged ones hard-linked
from the previous generation), and modalities read them through lazy views. A long-running
writer (`maguyva watch`) keeps one `Indexer`, which checks the previous generation's segments
once, not per edit.

One modality failing does not lose the others: its failure is recorded in the manifest and
reported as "unavailable" by every query until the next successful build. An I/O error (disk
full, failed fsync) aborts the whole generation instead: the previous one keeps serving.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from maguyva.build import eta, follow, staged
from maguyva.build.extract_step import Extract, extract_changed, line_windows
from maguyva.build.followups import embed_slices, follow_up, graph_follows, semantic_follows
from maguyva.build.layout import (
    Layout,
    close_views,
    commit_generation,
    new_generation,
    write_layout,
)
from maguyva.build.modality_builds import build_modalities, context_overrides, modality_context
from maguyva.build.phases import Phases, Progress
from maguyva.build.previous import (
    SCAN_STATE,
    Previous,
    WriterMemo,
    current_generation,
    save_scan_state,
)
from maguyva.build.progress import ProgressFile
from maguyva.build.spill import SPILL_DIR, Spill
from maguyva.build.summary import BuildSummary, generation_manifest, summarize
from maguyva.config import effective_config
from maguyva.errors import MaguyvaError
from maguyva.extract import grammars
from maguyva.extract.cache import ExtractCache
from maguyva.modalities.protocol import BuildContext
from maguyva.modalities.registry import BUILD_ORDER, load_modality
from maguyva.modalities.semantic.coverage import coverage
from maguyva.model import SourceFile
from maguyva.repo.changes import ChangeSet, RepoState, scan
from maguyva.store.chunks import SEGMENTS
from maguyva.store.extraction import builders_fingerprint, extractor_fingerprint
from maguyva.store.generations import (
    FORMAT_VERSION,
    Generation,
    IndexDir,
    default_index_dir,
)
from maguyva.store.views import SegmentChunks, SegmentExtraction

log = logging.getLogger("maguyva.index")


class Indexer:
    """Keeps one repository's index current. Not thread-safe; one per writer process (the
    writer lock serialises writers across processes).

    Memory stays bounded by a segment, not the repository: extraction results are encoded and
    spilled to per-segment files as they arrive, each segment is then written once, and the
    modalities read chunks and extraction through lazy views (`SegmentChunks`,
    `SegmentExtraction`). A `memory` budget in the configuration picks the number of
    extraction processes (`scale.memory.plan_for_budget`) when `jobs` is not set."""

    def __init__(
        self,
        root: Path,
        *,
        config: dict[str, Any] | None = None,
        progress: Progress | None = None,
        extract: Extract | None = None,
    ) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise MaguyvaError(f"{self.root}: not a directory")
        effective = effective_config(self.root, config)
        self.config = effective.values
        # a configuration that names its modalities builds those; the default keeps what the
        # index was built with (`_keep_modalities`)
        self._modalities_chosen = effective.sources.get("modalities", "default") != "default"
        self._not_started: list[str] = []
        self.index = IndexDir(
            Path(self.config["index_dir"])
            if self.config.get("index_dir")
            else default_index_dir(self.root)
        )
        self.progress: Progress = progress or (lambda phase, done, total: None)
        self.extract = extract
        self._extractor = extractor_fingerprint()
        self._memo = WriterMemo()  # what it knows of the generation it committed last
        self._files_memo: tuple[dict[str, list[Any]], list[SourceFile]] | None = None
        self.last_state: RepoState | None = None
        # `graph_follows` when the configuration leaves it unset: long-running writers set it
        self.follows_by_default = False
        self._update_started = 0.0
        self._progress_file: ProgressFile | None = None
        self.budget_plan = None
        if self.config.get("memory"):
            from maguyva.build.memory import parse_size, plan_for_budget

            self.budget_plan = plan_for_budget(parse_size(self.config["memory"]))
            if not self.config.get("jobs"):
                self.config["jobs"] = self.budget_plan.jobs

    # -- previous state ----------------------------------------------------------------------

    # -- previous state ----------------------------------------------------------------------

    def _current(self) -> Generation | None:
        return current_generation(self.index)

    def _reusable(self, current: Generation) -> Previous | None:
        return self._memo.reusable(current, self._extractor)

    # -- one update --------------------------------------------------------------------------

    def update(
        self, *, wait_for_lock: bool = False, rebuild: bool = False, force_walk: bool = False,
        hints: Iterable[str] | None = None, prepare: bool = False,
    ) -> BuildSummary:  # fmt: skip
        """Bring the index up to date; a no-op (no new generation) when nothing changed.
        `force_walk` lists the tree again even when no directory seems to have changed;
        `hints` (the watcher's event paths) limit the stat pass to them (`changes.scan`).
        `prepare` (a watcher starting): when nothing changed, build anyway (a generation
        with the same answers, no backlog embedded) so that the modalities keep what they
        built in memory, and build the graph's patch tables, so that the first edit is as
        fast as the ones after it."""
        timings: dict[str, float] = {}
        with self.index.writer_lock(wait=wait_for_lock):
            self._progress_file = ProgressFile(self.index.path)
            phases = Phases(self.progress, self._progress_file)
            try:
                summary = self._update(timings, phases, rebuild, force_walk, hints, prepare)
            except BaseException:
                self._progress_file.finish("stopped")
                raise
            self._progress_file.finish("done")
            return summary

    def _update(
        self, timings: dict[str, float], phases: Phases, rebuild: bool, force_walk: bool,
        hints: Iterable[str] | None, prepare: bool,
    ) -> BuildSummary:  # fmt: skip
        started = self._update_started = time.perf_counter()
        phases.start("scan", 0)
        current = None if rebuild else self._current()
        self._keep_modalities(current if not rebuild else self._current())
        previous = self._memo.previous_state(self.index.path, current)
        state, changes = scan(
            self.root, self.config, previous, force_walk=rebuild or force_walk,
            hints=None if rebuild else hints,
        )  # fmt: skip
        if rebuild:
            changes.reason = "rebuild requested"
        timings["scan"] = time.perf_counter() - started
        self.last_state = state
        phases("scan", len(state.files), len(state.files))
        wanted = list(self.config.get("modalities") or BUILD_ORDER)
        noop = current is not None and changes.empty and follow.behind(
            current.manifest) is None and not staged.pending(current.manifest) and (
            current.manifest.get("built_for") == self.built_for(wanted))  # fmt: skip
        if noop:
            assert current is not None
            save_scan_state(self.index.path, current, previous, state)
            self._memo.checked(current, state)
            resumed = None if prepare else self._resume(current, state, timings, phases)
            if resumed is not None:
                return resumed
            if not prepare:
                return self._summary(current, state, changes, timings, noop=True)
        if current is not None and changes.empty and staged.pending(current.manifest):
            resumed = self._complete_pending(current, state, timings, phases)
            if resumed is not None:  # a staged first build stopped before its last commit
                return resumed
        # only a build with nothing to do is a warm one: a modality built for the first
        # time (another configuration, a new model) still embeds everything
        warm = prepare and noop
        first, stages = current is None or rebuild, self._stages(current, rebuild, state, wanted)
        if eta.declare(phases, state.files, wanted, self.config, stages, first):  # for its ETA
            summary = self._staged(state, changes, timings, wanted, phases)
        else:
            summary = self._build(current, state, changes, timings, wanted, phases, warm=warm)
        graph = summary.modalities.get("graph", {}).get("report", {})
        if warm and graph and graph.get("mode") != "patch":
            # once more, now as a patch: it leaves the merge order the next patch starts
            # from (the first edit's graph then costs what the later ones do: ~0.3 s
            # instead of ~0.55 s on a 10k-file tree)
            again = self._current()
            summary = self._build(again, state, changes, timings, wanted, phases, warm=True)
        if prepare:
            started = time.perf_counter()
            for language in sorted({f.language for f in self._source_files(state)
                                    if f.language}):  # fmt: skip
                grammars.load(language)  # the first edit's extraction need not
            summary.timings_s["grammars"] = time.perf_counter() - started
        for name in ("graph", "semantic") if prepare else ():
            if name in wanted:  # the first edit's one-time work, done now
                started = time.perf_counter()
                modality = load_modality(name)
                done = modality.prepare() if name == "graph" else modality.prepare(self.config)
                if done:
                    summary.timings_s[f"{name}_prepare"] = time.perf_counter() - started
        summary.timings_s["total"] = time.perf_counter() - self._update_started
        return summary

    def _keep_modalities(self, current: Generation | None) -> None:
        """Unless the configuration names its modalities, build those the index was built
        with: a plain `maguyva index` after `--modalities text,structural,graph` must not
        start minutes of embedding; the default's others are reported (`not_started`)."""
        if self._modalities_chosen or current is None:
            return
        built = current.manifest.get("built_for", {}).get("modalities")
        if not isinstance(built, list) or not built:
            return
        default = list(self.config.get("modalities") or BUILD_ORDER)
        self._not_started = [m for m in default if m not in built]
        self.config["modalities"] = list(built)

    def _build(
        self,
        current: Generation | None,
        state: RepoState,
        changes: ChangeSet,
        timings: dict[str, float],
        wanted: list[str],
        phases: Phases,
        warm: bool = False,
        later: frozenset[str] = frozenset(),
    ) -> BuildSummary:
        """Build and commit the next generation; `later`: modalities a staged first build
        leaves pending (`build.staged`), each added by a follow-up generation after it."""
        started = time.perf_counter()
        prev = self._reusable(current) if current is not None else None
        timings["load_previous"] = time.perf_counter() - started
        files = self._source_files(state)
        digests = {p: r[2] for p, r in state.files.items()}
        old = prev.digests if prev is not None else {}
        redo = [f for f in files if old.get(f.path) != digests[f.path]]
        views: list[Any] = []

        serving = ("the previous generation still serves" if current is not None
                   else "no index was written (there was none before)")  # fmt: skip

        def failed(step: str, why: str) -> str:
            return f"could not {step} the new index generation ({why}); {serving}"

        with new_generation(self.index, views, failed) as (number, tmp):
            layout, extract_report = self._extract_and_write(
                tmp, number, state, files, digests, redo, prev, timings, phases
            )
            ctx = modality_context(self, tmp, layout, files, phases, views,
                                   current.path if current is not None else None,
                                   changes)  # fmt: skip
            self.index.cache_dir.mkdir(parents=True, exist_ok=True)

            def own_views() -> BuildContext:
                """The same context with its own chunk view (views are not shared between
                threads: see `build_modalities`)."""
                mine = SegmentChunks(tmp, layout.counts, layout.index, layout.delta)
                views.append(mine)
                return dataclasses.replace(ctx, chunks=mine)

            graph_behind = current is not None and follow.behind(current.manifest) is not None
            defer = not later and not graph_behind and graph_follows(self, current, changes)
            slices = not later and not defer and not warm and semantic_follows(
                self, current, changes, wanted)  # fmt: skip
            stage = staged.static_overrides(self.config, later)  # static rows of every chunk
            overrides = {**context_overrides(
                self.config, changes, text_stage=current is not None and staged.text_stage(
                    current.manifest), graph_behind=graph_behind, defer=defer, slices=slices,
                warm=warm,
            ), **stage}  # fmt: skip
            modalities = build_modalities(ctx, self.config, timings, phases, fork=own_views,
                                          skip=({"graph"} if defer else set()) | (later - set(
                                              stage)), overrides=overrides)  # fmt: skip
            modalities = staged.with_pending(modalities, later)
            if defer:
                assert current is not None
                modalities["graph"] = follow.link_behind(
                    current.path, current.manifest, tmp, changes
                )
            close_views(views)
            manifest = generation_manifest(self.root, self.config, self.built_for(wanted), state,
                                           files, len(ctx.chunks), extract_report, changes,
                                           modalities, timings, layout)  # fmt: skip
            manifest.update(staged.pending_entry(later))
            generation = commit_generation(self.index, number, tmp, manifest, current, timings,
                                           phases)  # fmt: skip
        (self.index.path / SCAN_STATE).unlink(missing_ok=True)
        if redo:  # the generation now holds what the cache kept for an interrupt
            self._extract_cache().clear()
        self.remember(generation, state, digests, layout)
        if later or defer or slices:
            args = (generation, state, digests, files, layout, changes, timings, phases)
            generation = self._complete(*args) if later else self._follow(*args, defer, modalities)
            modalities = generation.manifest.get("modalities", modalities)
        return self._summary(generation, state, changes, timings, modalities=modalities)

    def _stages(
        self, current: Generation | None, rebuild: bool, state: RepoState, wanted: list[str]
    ) -> bool:
        """Is this a first build that commits in stages (`build.staged`)? Not a rebuild over
        an index that serves (its answers must not drop to text only), not an `extract` hook."""
        if current is not None or self.extract is not None:
            return False
        return (not rebuild or self._current() is None) and staged.wanted(
            self.config, len(state.files), wanted)  # fmt: skip

    def _staged(
        self, state: RepoState, changes: ChangeSet, timings: dict[str, float],
        wanted: list[str], phases: Phases,
    ) -> BuildSummary:  # fmt: skip
        """A staged first build: text over line windows, committed; then text and structural
        over the extraction, committed; then the rest as follow-ups (`build.staged`)."""
        first = self._text_stage(state, changes, timings, wanted, phases)
        later = frozenset(m for m in wanted if m in staged.FOLLOW_UPS)
        return self._build(first, state, changes, timings, wanted, phases, later=later)

    def _text_stage(
        self, state: RepoState, changes: ChangeSet, timings: dict[str, float],
        wanted: list[str], phases: Phases,
    ) -> Generation:  # fmt: skip
        """Commit the text index over every file's line windows, the rest pending."""
        files = self._source_files(state)
        digests = {p: r[2] for p, r in state.files.items()}
        later = [m for m in wanted if m != "text"]
        views: list[Any] = []

        def failed(step: str, why: str) -> str:
            return f"could not {step} the first index generation ({why}); no index was written"

        with new_generation(self.index, views, failed) as (number, tmp):
            layout, report = self._extract_and_write(tmp, number, state, files, digests, files,
                                                     None, timings, phases, line_windows)  # fmt: skip
            ctx = modality_context(self, tmp, layout, files, phases, views, None, changes)
            modalities = build_modalities(ctx, self.config, timings, phases, skip=set(later))
            modalities.update({m: staged.pending_status(m) for m in later})
            close_views(views)
            manifest = generation_manifest(self.root, self.config, self.built_for(wanted), state,
                                           files, len(ctx.chunks), report, changes, modalities,
                                           timings, layout)  # fmt: skip
            manifest["built_for"] = {**manifest["built_for"], "extractor": staged.TEXT_STAGE}
            manifest[staged.PENDING] = later
            generation = commit_generation(self.index, number, tmp, manifest, None, timings,
                                           phases)  # fmt: skip
        for key in ("extract", "write", "text", "commit"):  # the next stage has its own
            timings[f"text_stage_{key}"] = timings.pop(key, 0.0)
        timings["searchable"] = time.perf_counter() - self._update_started
        self.remember(generation, state, digests, layout)
        if (static := staged.static_config(self.config)) is not None:  # every window by meaning
            generation = self._follow_up(generation, "semantic", changes, files, layout,
                                         timings, phases, static)  # fmt: skip
            self.remember(generation, state, digests, layout)
            timings["by_meaning"] = time.perf_counter() - self._update_started
        return generation

    def _complete(
        self, generation: Generation, state: RepoState, digests: dict[str, str],
        files: list[SourceFile], layout: Layout, changes: ChangeSet, timings: dict[str, float],
        phases: Phases,
    ) -> Generation:  # fmt: skip
        """The modalities `generation` left pending, a follow-up generation each (the graph,
        then the semantic plan), then the embedding in slices (never gate)."""
        gate = self.config.get("semantic_follows") is False  # one generation, embedded
        for name in staged.pending(generation.manifest):
            plan = follow.first_config(self.config) if name == "semantic" and not gate else None
            generation = self._follow_up(generation, name, changes, files, layout, timings,
                                   phases, plan)  # fmt: skip
            self.remember(generation, state, digests, layout)
        semantic = generation.manifest.get("modalities", {}).get("semantic", {})
        if not gate and semantic.get("built") and follow.semantic_left(generation.manifest):
            generation = embed_slices(self, generation, state, digests, files, layout, timings,
                                      phases, semantic.get("report") or {})  # fmt: skip
        return generation

    def _complete_pending(
        self, current: Generation, state: RepoState, timings: dict[str, float], phases: Phases
    ) -> BuildSummary | None:
        """Nothing changed, but a staged first build stopped (killed) before its last commit:
        build what it left pending from the current generation's files. None when it cannot
        (the text stage's line windows are not extracted: a full build then)."""
        if not set(staged.pending(current.manifest)) <= set(staged.FOLLOW_UPS):
            return None
        prev = self._reusable(current)
        if prev is None:
            return None
        files = self._source_files(state)
        digests = {p: r[2] for p, r in state.files.items()}
        timings["searchable"] = time.perf_counter() - self._update_started
        changes = ChangeSet(reason="staged first build resumed")
        generation = self._complete(current, state, digests, files, Layout.linked(prev),
                                    changes, timings, phases)  # fmt: skip
        summary = self._summary(generation, state, changes, timings)
        summary.timings_s["total"] = time.perf_counter() - self._update_started
        return summary

    def _extract_and_write(
        self,
        tmp: Path,
        number: int,
        state: RepoState,
        files: list[SourceFile],
        digests: dict[str, str],
        redo: list[SourceFile],
        prev: Previous | None,
        timings: dict[str, float],
        phases: Phases,
        hook: Extract | None = None,
    ) -> tuple[Layout, dict[str, Any]]:
        """Extract the changed files `redo` into a spill, then write the generation's
        segments (or delta) from it and `prev`; returns the layout and the extraction report."""
        started = time.perf_counter()
        spans = "text" in (self.config.get("modalities") or BUILD_ORDER)  # chunks as spans
        spill = Spill(tmp / SPILL_DIR, root=self.root if spans else None)
        try:
            phases.start("extract", len(redo))
            extract_report = extract_changed(
                self.root, redo, digests, spill, config=self.config, progress=phases,
                hook=hook or self.extract, cache=self._extract_cache,
            )  # fmt: skip
            phases.end("extract")
        finally:
            spill.close()
        timings["extract"] = time.perf_counter() - started
        started = time.perf_counter()
        phases.start("write", SEGMENTS)
        layout = write_layout(tmp, number, state, files, digests, redo, prev, spill, phases,
                              self._extractor)  # fmt: skip
        shutil.rmtree(tmp / SPILL_DIR, ignore_errors=True)
        timings["segments_rewritten"] = float(layout.rewritten)
        timings["write"] = time.perf_counter() - started
        phases.end("write")
        return layout, extract_report

    def _follow(
        self,
        generation: Generation,
        state: RepoState,
        digests: dict[str, str],
        files: list[SourceFile],
        layout: Layout,
        changes: ChangeSet,
        timings: dict[str, float],
        phases: Phases,
        defer: bool,
        modalities: dict[str, dict[str, Any]],
    ) -> Generation:
        """The generations that follow this update's first commit (`follow`): its graph
        (`defer`) and the semantic backlog of the same change set, or the embedding in
        slices (never gate). Returns the last committed generation."""
        # wall seconds from the update's start to the first commit (its phases overlap)
        timings["searchable"] = time.perf_counter() - self._update_started
        if not defer:
            first = modalities.get("semantic", {}).get("report") or {}
            return embed_slices(self, generation, state, digests, files, layout, timings,
                                phases, first)  # fmt: skip
        generation = self._follow_up(generation, "graph", changes, files, layout, timings,
                               phases)  # fmt: skip
        self.remember(generation, state, digests, layout)
        if follow.backlog(generation.manifest):
            # the same change set: the edited files' chunks still without a vector go
            # first; for a slice, so that the watcher stays responsive
            sliced = follow.backlog_config(self.config)
            generation = self._follow_up(generation, "semantic", changes, files, layout,
                                   timings, phases, sliced)  # fmt: skip
            self.remember(generation, state, digests, layout)
        return generation

    def _follow_up(
        self, generation: Generation, name: str, changes: ChangeSet, files: list[SourceFile],
        layout: Layout, timings: dict[str, float], phases: Phases,
        config: dict[str, Any] | None = None,
    ) -> Generation:  # fmt: skip
        """Every follow-up generation goes through here (`followups.follow_up`): one place
        to observe or interrupt them between the commits."""
        return follow_up(self, generation, name, changes, files, layout, timings, phases, config)

    def remember(self, generation: Generation, state: RepoState, digests: dict[str, str],
                 layout: Layout) -> None:  # fmt: skip
        """What the next update needs of the generation just committed."""
        if self._progress_file is not None:
            semantic = generation.manifest.get("modalities", {}).get("semantic", {})
            report = semantic.get("report") if semantic.get("built") else None
            self._progress_file.committed(generation.number,
                                          coverage(report) if report else None)  # fmt: skip
        self._memo.committed(generation, state, layout.previous(generation.path, digests))

    def built_for(self, wanted: list[str]) -> dict[str, Any]:
        """What a generation is built for: an index built for anything else is updated whole."""
        return {"modalities": wanted, "extractor": self._extractor,
                "builders": builders_fingerprint()}  # fmt: skip

    def _resume(self, current: Generation, state: RepoState, timings: dict[str, float],
                phases: Phases) -> BuildSummary | None:  # fmt: skip
        """Nothing changed, but the current generation's embedding is unfinished (killed,
        interrupted, out of budget): embed the rest in slices from it, nothing else built
        again. None when there is nothing to resume."""
        wanted = list(self.config.get("modalities") or BUILD_ORDER)
        if follow.wanted(self.config, self.follows_by_default):
            return None  # a writer whose updates follow embeds its backlog a slice per edit
        if not semantic_follows(self, current, ChangeSet(), wanted) or not follow.semantic_left(
            current.manifest
        ):  # fmt: skip
            return None
        prev = self._reusable(current)
        if prev is None:
            return None
        layout = Layout.linked(prev)
        files = self._source_files(state)
        digests = {p: r[2] for p, r in state.files.items()}
        timings["searchable"] = time.perf_counter() - self._update_started
        generation = embed_slices(self, current, state, digests, files, layout, timings, phases)
        summary = self._summary(generation, state, ChangeSet(reason="embedding resumed"),
                                timings)  # fmt: skip
        summary.timings_s["total"] = time.perf_counter() - self._update_started
        return summary

    def _source_files(self, state: RepoState) -> list[SourceFile]:
        """`state.source_files()`, reusing the previous update's objects for the files whose
        record is the same object (a hinted scan keeps the unchanged records)."""
        memo = self._files_memo
        if memo is None or len(memo[0]) != len(state.files) or memo[0].keys() != state.files.keys():
            files = state.source_files()
        else:
            old_records, old_files = memo
            files = []
            for f in old_files:
                record = state.files[f.path]
                if record is not old_records[f.path]:
                    f = SourceFile(f.path, record[0], record[1], f.language)
                files.append(f)
        self._files_memo = (state.files, files)
        return files

    def _extract_cache(self) -> ExtractCache:
        return ExtractCache.open(self.index.cache_dir, self._extractor)

    def _summary(
        self,
        generation: Generation,
        state: RepoState,
        changes: ChangeSet,
        timings: dict[str, float],
        *,
        noop: bool = False,
        modalities: dict[str, dict[str, Any]] | None = None,
    ) -> BuildSummary:
        return summarize(generation, str(self.index.path), state, changes, timings, self.config,
                         self._not_started, noop=noop, modalities=modalities)  # fmt: skip


def build_index(
    root: Path,
    *,
    config: dict[str, Any] | None = None,
    progress: Progress | None = None,
    wait_for_lock: bool = False,
    rebuild: bool = False,
    extract: Extract | None = None,
) -> BuildSummary:
    """Bring the index of the repository at `root` up to date (incrementally; a no-op when
    nothing changed; from scratch with `rebuild`)."""
    return Indexer(root, config=config, progress=progress, extract=extract).update(
        wait_for_lock=wait_for_lock, rebuild=rebuild
    )


__all__ = [
    "FORMAT_VERSION",
    "BuildSummary",
    "Extract",
    "Indexer",
    "SegmentChunks",
    "SegmentExtraction",
    "build_index",
    "extractor_fingerprint",
]
