"""Benchmark-driven tuning: weights and k per intent, chosen on the tuning half only.

Each tuning query's per-modality ranked lists are computed once (the same requests the engine
makes), then every candidate profile is re-fused offline with the engine's own fusion
(`_core.fuse`, same centrality boost), which makes a grid of thousands of profiles affordable.
Candidates are the weight vectors on a 0.1-step simplex over the built modalities (RRF ranking
does not change when all weights are scaled) times a few k values. An intent keeps the shipped
default unless the best candidate beats the *real* default preset on the tuning half.

The held-out half is only ever read at the end, through the real `Engine.search`, for the
default preset and for the tuned profile side by side.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from maguyva import _core
from maguyva.errors import ConfigError, ModalityUnavailable
from maguyva.eval.metrics import Ranked, file_metrics, line_metrics
from maguyva.eval.queryset import Query
from maguyva.eval.runner import SystemReport, run_system
from maguyva.eval.systems import EngineSystem
from maguyva.modalities.protocol import RetrieverQuery
from maguyva.model import INTENTS, Hit
from maguyva.query.engine import Engine
from maguyva.query.intent import classify
from maguyva.query.routing import FILE_EVIDENCE_K, PRESETS, WEIGHTS

K_GRID = (5, 10, 20, 40, 60, 100)
STEP = 10  # weights in tenths
DEPTH = 50
PROFILE_VERSION = 1
MIN_GAIN = 0.005
DEFAULT_K = PRESETS["default"] or 40


@dataclass
class Profile:
    """A tuned profile: per intent, the modalities' weights and the RRF k.

    Intents absent from `intents` keep the shipped default routing (preset `default`)."""

    intents: dict[str, dict[str, Any]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def search_kwargs(self, intent: str) -> dict[str, Any]:
        """Keyword arguments for `Engine.search` that apply this profile to `intent`."""
        entry = self.intents.get(intent)
        if not entry:
            return {}
        weights = {m: w for m, w in entry["weights"].items() if w > 0}
        return {"modalities": list(weights), "weights": weights, "k": int(entry["k"])}

    def system(self, engine: Engine, oracle_intent: bool = False) -> EngineSystem:
        return EngineSystem("tuned", engine, kwargs_for=self.search_kwargs,
                            oracle_intent=oracle_intent)  # fmt: skip

    def save(self, path: Path) -> None:
        payload = {"version": PROFILE_VERSION, "intents": self.intents, "meta": self.meta}
        Path(path).write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")


def load_profile(path: Path) -> Profile:
    """Read a profile written by `maguyva tune --save`."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read tuned profile: {exc}") from None
    if not isinstance(raw, dict) or raw.get("version") != PROFILE_VERSION:
        raise ConfigError(f"{path}: not a version-{PROFILE_VERSION} tuned profile")
    intents = raw.get("intents") or {}
    for intent, entry in intents.items():
        if intent not in INTENTS or not isinstance(entry, dict):
            raise ConfigError(f"{path}: bad entry for intent {intent!r}")
        weights, k = entry.get("weights"), entry.get("k")
        if not isinstance(weights, dict) or not isinstance(k, int) or k < 0:
            raise ConfigError(f"{path}: intent {intent!r} needs 'weights' and an integer 'k'")
        if any(not isinstance(w, int | float) or w < 0 for w in weights.values()):
            raise ConfigError(f"{path}: weights of {intent!r} must be numbers >= 0")
    return Profile(intents, raw.get("meta") or {})


@dataclass
class CachedQuery:
    """One tuning query's per-modality lists, computed once."""

    query: Query
    intent: str
    lists: dict[str, list[Hit]]
    centrality: dict[str, float]
    spans: dict[str, tuple[int, int]]


def collect(engine: Engine, query: Query, modalities: Sequence[str]) -> CachedQuery:
    """Ask each modality what the engine would ask it for this query, at fusion depth."""
    verdict = classify(query.query)
    request = RetrieverQuery(
        text=query.query, intent=verdict.intent, target=verdict.target, terms=verdict.terms,
        snippet=verdict.snippet, kind=verdict.kind,
    )  # fmt: skip
    lists: dict[str, list[Hit]] = {}
    for name in modalities:
        try:
            hits = engine.searcher(name).search(request, DEPTH)
        except ModalityUnavailable:
            continue
        lists[name] = engine.keyed_list(name, hits)
    spans: dict[str, tuple[int, int]] = {}
    for hits in lists.values():
        for hit in hits:
            chunk = engine.chunks.get(hit.key or "")
            span = (chunk.start_line, chunk.end_line) if chunk else (hit.start_line, hit.end_line)
            spans.setdefault(hit.key or "", span)
    return CachedQuery(query, verdict.intent, lists, engine._centrality(lists), spans)


def fuse_cached(cached: CachedQuery, weights: dict[str, float], k: int, limit: int) -> list[Ranked]:
    """Re-fuse a cached query under one candidate profile (the engine's own fusion)."""
    order = [m for m in cached.lists if weights.get(m, 0) > 0]
    ranked = [(weights[m], [(h.key or "", h.path) for h in cached.lists[m]]) for m in order]
    centrality = cached.centrality if len(order) > 1 else {}
    by_file = cached.intent in FILE_EVIDENCE_K  # as the engine fuses that intent
    fused = _core.fuse(ranked, centrality, float(k), limit, by_file=by_file)
    return [Ranked(path, *cached.spans.get(key, (1, 1))) for key, path, *_ in fused]


def objective(metric: str) -> Callable[[list[Ranked], Query], float]:
    level, _, name = metric.partition(".")
    if level not in ("file", "line") or name not in ("mrr@10", "ndcg@10", "recall@10",
                                                     "recall@5", "success@1"):  # fmt: skip
        raise ConfigError(f"unknown metric {metric!r}; e.g. file.mrr@10 or line.ndcg@10")
    scorer = file_metrics if level == "file" else line_metrics
    return lambda results, query: scorer(results, query.relevant)[name]


def weight_grid(modalities: Sequence[str]) -> list[dict[str, float]]:
    """Every weight vector over `modalities` in steps of 0.1 that sums to 1."""
    grid = []
    for parts in itertools.product(range(STEP + 1), repeat=len(modalities)):
        if sum(parts) == STEP:
            grid.append({m: p / STEP for m, p in zip(modalities, parts, strict=True) if p})
    return grid


@dataclass
class IntentTuning:
    intent: str
    tune_queries: int
    default_score: float
    best_score: float
    weights: dict[str, float]
    k: int
    adopted: bool


@dataclass
class TuneResult:
    metric: str
    profile: Profile
    intents: list[IntentTuning]
    heldout_default: SystemReport | None
    heldout_tuned: SystemReport | None
    skipped: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["profile"] = {"version": PROFILE_VERSION, "intents": self.profile.intents,
                          "meta": self.profile.meta}  # fmt: skip
        for key in ("heldout_default", "heldout_tuned"):
            if out[key]:
                out[key].pop("queries", None)
        return out


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def tune(
    engine: Engine,
    queries: Sequence[Query],
    *,
    metric: str = "file.mrr@10",
    min_queries: int = 4,
    limit: int = 10,
    progress: Callable[[str, int, int], None] | None = None,
) -> TuneResult:
    """Tune on the `tune` split; report default vs tuned on the `heldout` split."""
    score = objective(metric)
    tuning = [q for q in queries if q.split == "tune" and not q.expects_empty]
    heldout = [q for q in queries if q.split == "heldout"]
    if not tuning:
        raise ConfigError("no tuning queries (split 'tune' with a non-empty answer)")
    available = engine.available_modalities()
    if not available:
        raise ConfigError("no modality is built in this index")
    default = EngineSystem("default", engine, {"preset": "default"})
    cached = []
    for number, query in enumerate(tuning, start=1):
        cached.append(collect(engine, query, available))
        if progress:
            progress("tune: collect", number, len(tuning))
    by_intent: dict[str, list[CachedQuery]] = {}
    for item in cached:
        by_intent.setdefault(item.intent, []).append(item)

    profile = Profile(meta={"metric": metric, "modalities": available,
                            "root": str(engine.root), "tune_queries": len(tuning)})  # fmt: skip
    report: list[IntentTuning] = []
    skipped: dict[str, str] = {}
    grid = weight_grid(available)
    for intent, items in sorted(by_intent.items()):
        if len(items) < min_queries:
            skipped[intent] = f"{len(items)} tuning queries < --min-queries {min_queries}"
            continue
        baseline = _mean([score(default.search_query(c.query, limit), c.query) for c in items])
        prior = WEIGHTS[intent]
        best: tuple[float, float, dict[str, float], int] | None = None
        for weights in grid:
            # ties go to the candidate nearest the shipped prior (less overfitting)
            distance = sum(abs(weights.get(m, 0) - prior.get(m, 0)) for m in available)
            for k in K_GRID:
                value = _mean([score(fuse_cached(c, weights, k, limit), c.query) for c in items])
                key = (value, -distance, -abs(k - DEFAULT_K))
                if best is None or key > (best[0], best[1], -abs(best[3] - DEFAULT_K)):
                    best = (value, -distance, weights, k)
        assert best is not None
        adopted = best[0] > baseline + MIN_GAIN
        report.append(IntentTuning(intent, len(items), baseline, best[0], best[2], best[3],
                                   adopted))  # fmt: skip
        if adopted:
            profile.intents[intent] = {"weights": best[2], "k": best[3]}
    held_default = held_tuned = None
    if heldout:
        held_default = run_system(EngineSystem("default", engine, {"preset": "default"}),
                                  heldout, limit)  # fmt: skip
        held_tuned = run_system(profile.system(engine), heldout, limit)
    return TuneResult(metric, profile, report, held_default, held_tuned, skipped)


def format_tuning(result: TuneResult) -> str:
    """The per-intent choices, then held-out default vs tuned."""
    out = [f"objective: {result.metric} on the tuning half (routed by the classifier)", ""]
    for t in result.intents:
        weights = ", ".join(f"{m}={w:g}" for m, w in t.weights.items())
        verdict = "adopted" if t.adopted else "kept default (no gain)"
        out.append(f"{t.intent:<16} n={t.tune_queries:<3} default {t.default_score:.3f}  "
                   f"best {t.best_score:.3f} [{weights}; k={t.k}]  {verdict}")  # fmt: skip
    for intent, why in result.skipped.items():
        out.append(f"{intent:<16} not tuned: {why}")
    if result.heldout_default and result.heldout_tuned:
        out += [
            "",
            "held-out half (never seen by tuning):",
            f"{'(labelled intent)':<24} {'file MRR':>9} {'S@1':>6} {'R@10':>6} {'nDCG':>6} {'line nDCG':>9}",
        ]
        rows = [
            ("all", "default", result.heldout_default.overall),
            ("all", "tuned", result.heldout_tuned.overall),
        ]
        for intent, stats in result.heldout_default.by_intent.items():
            rows.append((intent, "default", stats))
            rows.append((intent, "tuned", result.heldout_tuned.by_intent[intent]))
        for scope, label, o in rows:
            out.append(f"{scope + ' ' + label:<24} {o['file.mrr@10']:>9.3f} "
                       f"{o['file.success@1']:>6.3f} {o['file.recall@10']:>6.3f} "
                       f"{o['file.ndcg@10']:>6.3f} {o['line.ndcg@10']:>9.3f}  n={o['queries']}")  # fmt: skip
    return "\n".join(out)
