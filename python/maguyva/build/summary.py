"""What a build says about itself: the new generation's manifest (`meta.json`) and the report
of the build (`BuildSummary`) that the CLI, the API and the watcher show."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from maguyva.build.layout import Layout
from maguyva.config import SCHEMA
from maguyva.modalities.registry import BUILD_ORDER
from maguyva.model import SourceFile
from maguyva.repo import large as large_files
from maguyva.repo.changes import ChangeSet, RepoState
from maguyva.repo.git import git_commit
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


def generation_manifest(
    root: Path,
    config: dict[str, Any],
    built_for: dict[str, Any],
    state: RepoState,
    files: list[SourceFile],
    chunks: int,
    extract_report: dict[str, Any],
    changes: ChangeSet,
    modalities: dict[str, dict[str, Any]],
    timings: dict[str, float],
    layout: Layout,
) -> dict[str, Any]:
    """A new generation's `meta.json` (the commit adds its number, directory and time)."""
    return {
        "root": str(root),
        "commit": git_commit(root),
        "files": len(files),
        "chunks": chunks,
        "skipped": state.skip_counts(),
        "large": large_files.report(root, state.files, config),
        "extract": extract_report,
        "changes": changes.summary(),
        "modalities": modalities,
        "built_for": built_for,
        "settings": settings(config),
        "timings_s": {k: round(v, 4) for k, v in timings.items()},
        "layout": layout.report(),
        "embedding": modalities.get("semantic", {}).get("report", {}).get("provider"),
    }


def settings(config: dict[str, Any]) -> dict[str, Any]:
    """The configuration keys a build ran with that differ from their defaults (flags,
    environment, files alike: what the index was built with)."""
    return {key: config.get(key) for key, setting in SCHEMA.items()
            if key in config and config.get(key) != setting.default}  # fmt: skip
