"""From an intent to a plan: which modalities run, with which weights, fused how.

The weight profiles and presets are SPEC.md's tables. The direct path skips fusion when the
classifier is confident (>= 0.85) and one modality dominates (highest weight, at least 0.5);
it applies to the `default` preset only, since `thorough` and an explicit modality list are
requests to fuse. Weights are hand-picked priors: overriding them is possible, but tune them
against a held-out query set (`maguyva tune`), not by feel.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from maguyva.errors import BadQueryError
from maguyva.model import MODALITIES

if TYPE_CHECKING:
    from maguyva.query.intent import Classification

WEIGHTS: dict[str, dict[str, float]] = {
    "find_definition": {"semantic": 0.2, "text": 0.1, "structural": 0.6, "graph": 0.1},
    "find_references": {"semantic": 0.1, "text": 0.2, "structural": 0.2, "graph": 0.5},
    "understand_code": {"semantic": 0.5, "text": 0.2, "structural": 0.2, "graph": 0.1},
    "find_similar": {"semantic": 0.4, "text": 0.3, "structural": 0.2, "graph": 0.1},
    "impact_analysis": {"semantic": 0.1, "text": 0.1, "structural": 0.1, "graph": 0.7},
    "exact_match": {"semantic": 0.0, "text": 0.9, "structural": 0.1, "graph": 0.0},
}
"""Default weight profile per intent (modality -> weight)."""

COST_ORDER: tuple[str, ...] = ("text", "structural", "graph", "semantic")
"""Cheapest first; breaks ties between equal weights in the `default` preset."""

PRESETS: dict[str, int | None] = {"quick": None, "default": 40, "thorough": 60}
"""Preset -> RRF k (None: no fusion)."""

FILE_EVIDENCE_K: dict[str, int] = {"understand_code": 10}
"""Intents fused on file evidence (`fuse_hits(by_file=True)`: each list counts once per file,
at its best-ranked chunk), with the `default` preset's k for them. A question in words is
answered by a file that several retrievers reach through different chunks, and at k=40 three
weak lists at ranks 15-35 outscored the strongest one's top ranks (docs/eval.md, "file-level
agreement"); k=10 lets a list's first ranks count 3-4 times its 30th."""

DIRECT_CONFIDENCE = 0.85
DOMINANT_WEIGHT = 0.5
DEFAULT_K = 60


@dataclass(frozen=True, slots=True)
class Plan:
    """What the engine will run. `direct` names the single modality of the direct path;
    `fallback` is the fused plan to use when the direct retriever returns nothing."""

    preset: str
    modalities: tuple[str, ...]
    weights: dict[str, float]
    k: int
    strategy: str  # "direct" | "rrf" | "single"
    direct: str | None = None
    fallback: Plan | None = None
    by_file: bool = False  # fused on file evidence (FILE_EVIDENCE_K)


def dominant_modality(weights: Mapping[str, float]) -> str | None:
    """The modality with the highest weight when that weight is >= 0.5 (and unique)."""
    ranked = sorted(weights.items(), key=lambda kv: (-kv[1], COST_ORDER.index(kv[0])))
    if not ranked or ranked[0][1] < DOMINANT_WEIGHT:
        return None
    if len(ranked) > 1 and ranked[1][1] == ranked[0][1]:
        return None
    return ranked[0][0]


def top_modalities(weights: Mapping[str, float], n: int) -> tuple[str, ...]:
    """The `n` highest-weighted non-zero modalities; ties go to the cheaper one."""
    ranked = sorted(
        (m for m, w in weights.items() if w > 0),
        key=lambda m: (-weights[m], COST_ORDER.index(m)),
    )
    return tuple(ranked[:n])


def _check_modalities(names: Sequence[str]) -> tuple[str, ...]:
    unknown = [m for m in names if m not in MODALITIES]
    if unknown:
        raise BadQueryError(f"unknown modality {unknown[0]!r}; choose from {', '.join(MODALITIES)}")
    if not names:
        raise BadQueryError("at least one modality must be selected")
    return tuple(dict.fromkeys(names))


def plan_query(
    intent: str,
    confidence: float,
    *,
    preset: str = "default",
    modalities: Sequence[str] | None = None,
    weights: Mapping[str, float] | None = None,
    k: int | None = None,
) -> Plan:
    """Choose modalities, weights, k and strategy for one query.

    Explicit `modalities`, `weights` and `k` override the preset. Weights given for some
    modalities only replace those; modalities not in the profile get weight 0 unless given.
    """
    if preset not in PRESETS:
        raise BadQueryError(f"unknown preset {preset!r}; choose from {', '.join(PRESETS)}")
    if k is not None and (not isinstance(k, int) or k < 0):
        raise BadQueryError(f"k must be an integer >= 0, got {k!r}")
    profile = dict(WEIGHTS[intent])
    if weights:
        _check_modalities(list(weights))
        for name, value in weights.items():
            if not (value >= 0.0) or value != value:  # rejects negatives and NaN
                raise BadQueryError(f"weight of {name} must be >= 0, got {value!r}")
            profile[name] = float(value)

    if modalities:
        chosen = _check_modalities(modalities)
        used = {m: (profile[m] if profile[m] > 0 else _explicit_floor(m, weights)) for m in chosen}
        rrf_k = k if k is not None else PRESETS.get(preset) or DEFAULT_K
        if len(chosen) == 1:
            return Plan(preset, chosen, used, rrf_k, "single", direct=chosen[0])
        return Plan(preset, chosen, used, rrf_k, "rrf")

    if preset == "quick":
        fallback = _fused(intent, profile, "default", k)
        return Plan("quick", ("semantic",), {"semantic": 1.0}, k or 0, "single",
                    direct="semantic", fallback=fallback)  # fmt: skip

    fused = _fused(intent, profile, preset, k)
    if preset == "default" and confidence >= DIRECT_CONFIDENCE:
        dominant = dominant_modality(profile)
        if dominant is not None:
            return Plan(preset, (dominant,), {dominant: profile[dominant]}, fused.k, "direct",
                        direct=dominant, fallback=fused)  # fmt: skip
    return fused


def _explicit_floor(modality: str, weights: Mapping[str, float] | None) -> float:
    """A modality named explicitly but weighted 0 by the profile still runs, with a small
    weight, unless the caller gave it an explicit weight."""
    if weights and modality in weights:
        return float(weights[modality])
    return 0.1


def _fused(intent: str, profile: dict[str, float], preset: str, k: int | None) -> Plan:
    rrf_k = k if k is not None else (PRESETS.get(preset) or PRESETS["default"] or DEFAULT_K)
    by_file = intent in FILE_EVIDENCE_K
    if by_file and k is None and preset != "thorough":
        rrf_k = FILE_EVIDENCE_K[intent]
    if preset == "thorough":
        chosen = top_modalities(profile, len(MODALITIES))
    else:
        chosen = top_modalities(profile, 3)
    return Plan(preset, chosen, {m: profile[m] for m in chosen}, rrf_k, "rrf", by_file=by_file)


NAMED_INTENTS = frozenset({"exact_match", "find_definition", "find_references", "impact_analysis"})
"""Intents whose question names something (an identifier, a literal, a pattern): when it occurs
in no indexed file, the answer is empty."""

_NATURAL_RULES = ("1:phrase", "2:", "3:", "6:", "7:")
_NAME = re.compile(r"[A-Za-z_$][\w$]*")


def is_natural(verdict: Classification) -> bool:
    """True for a question in words ("where is X defined", "who calls X", "how does ...");
    False for an identifier, a keyword query (`def x`), a literal, a regex or a pasted line."""
    return verdict.rule.startswith(_NATURAL_RULES)


def absence_probe(verdict: Classification) -> tuple[str, bool] | None:
    """What to look for in the text index to know whether the question's target exists:
    `(pattern, is_regex)`; a dotted name is looked up by its last part (`Session.request` ->
    `request`). None when the target is not something a text search can refute."""
    target = verdict.target.strip()
    if not target:
        return None
    if verdict.rule == "explicit-regex":
        return verdict.target, True
    if verdict.intent == "exact_match":
        return target, False
    name = re.split(r"\.|::|#|->", target.removesuffix("()"))[-1]
    return (name, False) if _NAME.fullmatch(name) else None


def text_fallback(plan: Plan) -> Plan:
    """The plan for a non-natural question its direct retriever could not answer: the text
    index's literal search for the target (the fused plan when text was the direct one)."""
    if plan.direct == "text" or plan.fallback is None:
        return plan.fallback or plan
    return Plan(plan.preset, ("text",), {"text": 1.0}, plan.k, "direct", direct="text")
