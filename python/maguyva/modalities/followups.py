"""What a writer that commits one update in steps (`maguyva.build.follow`) tells the modalities,
and what a generation's manifest says is still owed: the words both sides share."""

from __future__ import annotations

from typing import Any

GRAPH = "graph"
BEHIND = "behind"
# the semantic build's configuration key that leaves out its backlog (chunks of unchanged
# files still without a vector): set for the first generation, which embeds the edited
# files' chunks only
BACKLOG = "semantic_backlog"
EMBED_GROUP_KEY = "semantic_embed_group"  # ... and the number of texts per model call
# ... and a staged first build's, before its plan: static rows of every chunk, nothing else
STATIC_ONLY = "semantic_static_only"


def backlog(manifest: dict[str, Any]) -> bool:
    """Did the semantic build of this generation leave chunks without a vector that a build
    of its own would embed (`semantic.py`: pending chunks)?"""
    status = manifest.get("modalities", {}).get("semantic", {})
    report = status.get("report", {}) if isinstance(status, dict) else {}
    return bool(status.get("built")) and bool(report.get("backlog_left"))


def behind(manifest: dict[str, Any]) -> dict[str, Any] | None:
    """The graph's `behind` record in a generation's manifest (None: the graph is current)."""
    status = manifest.get("modalities", {}).get(GRAPH, {})
    found = status.get(BEHIND) if isinstance(status, dict) else None
    return found if isinstance(found, dict) else None
