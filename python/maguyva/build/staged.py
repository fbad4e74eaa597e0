"""The staged first build: a repository's first index commits its text answers first, then
the rest a generation at a time, so that a large repository answers in seconds.

1. generation N: every file read and cut into line windows (no tree-sitter), the text index
   built over them and committed; every other modality `pending` in the manifest. N+1 (a
   follow-up, `static_config`): the static tier's rows of every line window, so a question
   by meaning is answered over the whole repository a few seconds after the first answer.
2. N+2: the files extracted (structural, all cores), the segments written again, text (from
   scratch, over the real chunks), structural and the static rows of the real chunks built;
   graph and semantic still pending.
3. N+3: the graph (`followups.follow_up`); N+4: the semantic plan, nothing embedded, the
   static rows linked; then the embedding in slices (`build.follow`, never gate).

A semantic part of static rows alone is `built` (searchable, its coverage says 0 embedded,
every chunk answered by the static tier) and still `pending` (the plan follows): its status
carries both (`with_pending`). Without the static tier (`embedding_tier = "transformer"`, a
remote provider, `semantic_follows = false`) semantic stays unavailable until its plan.

While a modality is pending, the engine answers without it and says so (`Response.notes`),
and `maguyva status` shows it pending. A writer killed between the commits leaves the last
one searchable; the next update completes the rest: after step 1 a normal build (its
segments were cut by another "extractor", so nothing is reused), after step 2 or 3 the
pending follow-ups alone. The last generation equals a one-shot build's."""

from __future__ import annotations

from typing import Any

from maguyva.modalities.followups import STATIC_ONLY
from maguyva.modalities.registry import BUILD_ORDER

STAGED_MIN_FILES = 100
"""`first_build_stages` unset: a first build stages from this many files (below, a one-shot
build takes about as long as its first stage: the extra commits would only add to it)."""

TEXT_STAGE = "line-windows"
"""The `built_for.extractor` of step 1: its chunks are line windows, which no later build
may link or slice as if they were extracted."""

PENDING = "pending"  # the manifest's list of modalities a later generation of this build adds
FOLLOW_UPS = ("graph", "semantic")  # built by follow-up generations, in this order


def wanted(config: dict[str, Any], files: int, modalities: list[str]) -> bool:
    """Does a first build of `files` files stage its commits (`first_build_stages`)?"""
    if "text" not in modalities or len(modalities) < 2:
        return False
    value = config.get("first_build_stages")
    return files >= STAGED_MIN_FILES if value is None else bool(value)


def pending(manifest: dict[str, Any]) -> list[str]:
    """The modalities a generation's staged build has still to add (none: complete)."""
    found = manifest.get(PENDING)
    return [m for m in BUILD_ORDER if m in found] if isinstance(found, list) else []


def pending_status(name: str) -> dict[str, Any]:
    """The manifest status of a modality that a later generation adds."""
    return {"built": False, PENDING: True,
            "reason": f"pending: the first build adds {name} in a later generation"}  # fmt: skip


def text_stage(manifest: dict[str, Any]) -> bool:
    """Is this generation step 1 (line-window chunks, text only)?"""
    return manifest.get("built_for", {}).get("extractor") == TEXT_STAGE


def pending_entry(later: frozenset[str] | set[str]) -> dict[str, Any]:
    """The manifest's `pending` entry for the modalities `later` adds (none: no entry)."""
    return {PENDING: [m for m in BUILD_ORDER if m in later]} if later else {}


def static_config(config: dict[str, Any]) -> dict[str, Any] | None:
    """The semantic configuration of a staged generation before the plan (static rows of
    every chunk, `static_part.build_only`), or None: semantic is not wanted, the static tier
    is off, or the build gates on its embedding (`semantic_follows = false`)."""
    from maguyva.modalities.semantic.embed.static import static_first

    wanted = config.get("modalities") or BUILD_ORDER
    if "semantic" not in wanted or config.get("semantic_follows") is False:
        return None
    return {**config, STATIC_ONLY: True} if static_first(config) else None


def static_overrides(config: dict[str, Any], later: frozenset[str]) -> dict[str, Any]:
    """The semantic override of step 2 when it builds static rows (`build_modalities`)."""
    static = static_config(config) if "semantic" in later else None
    return {} if static is None else {"semantic": {"config": static}}


def static_only(status: dict[str, Any]) -> bool:
    """Is this semantic status a part of static rows alone (its plan still to follow)?"""
    return bool(status.get("built")) and bool((status.get("report") or {}).get("static_only"))


def with_pending(modalities: dict[str, Any], later: frozenset[str] | set[str]) -> dict[str, Any]:
    """The statuses of a staged generation: each of `later` not built here pending, one of
    static rows alone both built and pending."""
    out = dict(modalities)
    for name in later:
        status = out.get(name)
        if status is not None and static_only(status):
            out[name] = {**status, PENDING: True}
        else:
            out[name] = pending_status(name)
    return out
