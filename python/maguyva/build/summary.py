"""The report of one build (`BuildSummary`): what the CLI, the API and the watcher show."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from maguyva.modalities.registry import BUILD_ORDER
from maguyva.repo.changes import ChangeSet, RepoState
from maguyva.store.generations import Generation


@dataclass(slots=True)
class BuildSummary:
    """What a build did: the generation, per-phase seconds, per-modality status, and what
    changed (`noop` when nothing did and no generation was written)."""

    generation: int
    index_dir: str
    files: int
    chunks: int
    skipped: dict[str, int]
    timings_s: dict[str, float] = field(default_factory=dict)
    modalities: dict[str, dict[str, Any]] = field(default_factory=dict)
    changes: dict[str, Any] = field(default_factory=dict)
    noop: bool = False
    built_for: list[str] = field(default_factory=list)  # the modalities it was built for
    not_started: list[str] = field(default_factory=list)  # asked for by default, never built


def summarize(
    generation: Generation,
    index_dir: str,
    state: RepoState,
    changes: ChangeSet,
    timings: dict[str, float],
    config: dict[str, Any],
    not_started: list[str],
    *,
    noop: bool = False,
    modalities: dict[str, dict[str, Any]] | None = None,
) -> BuildSummary:
    """The summary of a build that ended at `generation` (`modalities`: the statuses to
    report instead of the generation's own)."""
    return BuildSummary(
        generation=generation.number,
        index_dir=index_dir,
        files=len(state.files),
        chunks=int(generation.manifest.get("chunks", 0)),
        skipped=state.skip_counts(),
        timings_s=timings,
        modalities=modalities if modalities is not None
        else generation.manifest.get("modalities", {}),
        changes=changes.summary(),
        noop=noop,
        built_for=list(config.get("modalities") or BUILD_ORDER),
        not_started=list(not_started),
    )  # fmt: skip
