"""Follow-up generations of one update (`build.follow`): the graph committed one generation
after the rest, the semantic backlog embedded a slice at a time, each slice a generation of
its own. The predicates say when an update follows; the builders commit the follow-ups."""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Protocol

from maguyva.build import follow, staged
from maguyva.build.layout import COMMIT_KEYS, META_JSON, Layout, close_views, new_generation
from maguyva.build.modality_builds import BuildTarget, build_one, modality_context, small_update
from maguyva.build.phases import Phases, Slices
from maguyva.modalities.registry import BUILD_ORDER
from maguyva.model import SourceFile
from maguyva.repo.changes import ChangeSet, RepoState
from maguyva.store.generations import CHECKSUMS, Generation, write_sealed
from maguyva.support import sealed


class Writer(BuildTarget, Protocol):
    """What a follow-up needs of the writer (`indexer.Indexer`)."""

    follows_by_default: bool

    def built_for(self, wanted: list[str]) -> dict[str, Any]: ...

    def remember(
        self, generation: Generation, state: RepoState, digests: dict[str, str], layout: Layout
    ) -> None: ...

    def _follow_up(
        self,
        generation: Generation,
        name: str,
        changes: ChangeSet,
        files: list[SourceFile],
        layout: Layout,
        timings: dict[str, float],
        phases: Phases,
        config: dict[str, Any] | None = None,
    ) -> Generation: ...


def graph_follows(writer: Writer, current: Generation | None, changes: ChangeSet) -> bool:
    """Is this update one whose graph follows in a second generation (`follow`)? Not when
    the index was built for other modalities or builders: a modality new to it is built
    whole, at once."""
    if current is None or not follow.wanted(writer.config, writer.follows_by_default):
        return False
    wanted = list(writer.config.get("modalities") or BUILD_ORDER)
    graph = current.manifest.get("modalities", {}).get("graph", {})
    return (
        "graph" in wanted
        and bool(graph.get("built"))
        and small_update(changes)
        and current.manifest.get("built_for") == writer.built_for(wanted)
    )


def semantic_follows(
    writer: Writer, current: Generation | None, changes: ChangeSet, wanted: list[str]
) -> bool:
    """Does this update commit before its embedding (`follow`, never gate)? A first
    build, a rebuild or a large update; a small update after a staged first build that
    stopped before its semantic plan; or a one-shot writer's small update that finds the
    current generation's embedding unfinished; not another small update, whose few
    chunks embed in the time a second commit would take."""
    if "semantic" not in wanted or writer.config.get("semantic_follows") is False:
        return False
    if not small_update(changes):
        return True  # a long-running writer's first build too: it answers, then embeds
    if current is not None and "semantic" in staged.pending(current.manifest):
        return True  # a staged first build stopped before its semantic plan: all of it
    if follow.wanted(writer.config, writer.follows_by_default):
        return False  # its small updates: `graph_follows` slices the backlog per edit
    return current is not None and follow.semantic_left(current.manifest) > 0


def embed_slices(
    writer: Writer,
    generation: Generation,
    state: RepoState,
    digests: dict[str, str],
    files: list[SourceFile],
    layout: Layout,
    timings: dict[str, float],
    phases: Phases,
    first: dict[str, Any] | None = None,
) -> Generation:
    """Semantic follows (`follow`): embed what `generation` left, a slice at a time, each
    slice committed as the next generation, until nothing is left, the budget or the cap
    is spent, a slice fails or embeds nothing. `first`: the semantic report of this
    update's first generation (what it embedded counts against the budget and the cap).
    Returns the last committed generation."""
    first = first or {}
    if first.get("error"):
        return generation  # the provider failed: the next update tries again
    spent_s = float(first.get("embed_seconds") or 0.0)
    embedded = int(first.get("new") or 0)
    sliced = Slices(phases)
    while follow.semantic_left(generation.manifest):
        config = follow.slice_config(writer.config, spent_s, embedded)
        if config is None:
            break
        generation = writer._follow_up(generation, "semantic", ChangeSet(), files, layout,
                                     timings, sliced, config)  # fmt: skip
        writer.remember(generation, state, digests, layout)
        sliced.next_slice()
        status = generation.manifest["modalities"]["semantic"]
        report = status.get("report") or {}
        if not status.get("built") or report.get("error") or not report.get("new"):
            break
        spent_s += float(report.get("embed_seconds") or 0.0)
        embedded += int(report["new"])
    return generation


def follow_up(
    writer: Writer,
    generation: Generation,
    name: str,
    changes: ChangeSet,
    files: list[SourceFile],
    layout: Layout,
    timings: dict[str, float],
    phases: Phases,
    config: dict[str, Any] | None = None,
) -> Generation:
    """Commit the generation after `generation`: its files hard-linked but those of the
    modality `name`, built again for `changes` (`follow`: the graph of an update committed
    with its graph behind, then the semantic backlog it left) under `config` (default:
    the writer's)."""
    label = follow.LABELS[name]
    started = time.perf_counter()
    views: list[Any] = []

    def failed(step: str, why: str) -> str:
        return (f"generation {generation.number} is committed, but the next one, for its "
                f"{label}, could not {step} ({why}): the next update does it")  # fmt: skip

    with new_generation(writer.index, views, failed) as (number, tmp):
        follow.link_generation(generation.path, tmp, {name, META_JSON, CHECKSUMS})
        ctx = modality_context(writer, tmp, layout, files, phases, views, generation.path,
                               changes)  # fmt: skip
        if config is not None:
            ctx = dataclasses.replace(ctx, config=config)
        static = bool((config or {}).get(staged.STATIC_ONLY))  # before a staged build's plan
        key = "static" if static else follow.TIMINGS[name]
        timings[f"{key}_link"] = time.perf_counter() - started
        started = time.perf_counter()
        phases.start(name, 1)
        status = build_one(name, ctx)
        phases.end(name)
        timings[key] = time.perf_counter() - started
        close_views(views)
        manifest = {k: v for k, v in generation.manifest.items() if k not in COMMIT_KEYS}
        if static:  # searchable by the static tier (when it built), its plan to follow
            status = staged.with_pending({name: status}, {name})[name]
        elif staged.PENDING in manifest:  # a staged first build: one fewer to add
            manifest[staged.PENDING] = [m for m in manifest[staged.PENDING] if m != name]
        manifest["modalities"] = {**manifest["modalities"], name: status}
        manifest[f"{key}_of"] = generation.number
        manifest["timings_s"] = {k: round(v, 4) for k, v in timings.items()}
        write_sealed(tmp / META_JSON, "meta", sealed.dumps_json(manifest))
        started = time.perf_counter()
        done = writer.index.commit(number, tmp, manifest, previous=generation.path)
        timings[f"{key}_commit"] = time.perf_counter() - started
    return done
