"""Notes an answer carries about the index it came from: a damaged modality with its fix, a
modality a staged first build has not added yet."""

from __future__ import annotations

from typing import Any

from maguyva.errors import CorruptIndexError

FIX = "run `maguyva index --rebuild` or `maguyva fsck --repair`"


def damage_reason(exc: Exception) -> str:
    """A damaged (or outdated) modality's reason with the fix, as every answer shows it."""
    head = "damaged: " if isinstance(exc, CorruptIndexError) else ""
    return f"{head}{exc} ({FIX})"


def pending_notes(manifest: dict[str, Any], unavailable: dict[str, str]) -> list[str]:
    """A note for each unavailable modality that a staged first build adds in a later
    generation (`maguyva.build.staged`): the answer came without it, for now."""
    statuses = manifest.get("modalities", {})
    return [f"{name} pending: the first build adds it in a later generation; answered "
            "without it" for name in sorted(unavailable)
            if statuses.get(name, {}).get("pending")]  # fmt: skip
