"""Run a query set against every system side by side and collect the scores.

Every system answers every query in the same process, over the same indexed files, so the
numbers are comparable. Modalities are opened (and the BM25 baseline built) before the clock
starts: latency is per query, warm.
"""

from __future__ import annotations

import datetime as _dt
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from maguyva.errors import MaguyvaError
from maguyva.eval.metrics import QueryScore, aggregate, score_query
from maguyva.eval.queryset import Query
from maguyva.eval.systems import EngineSystem, System
from maguyva.model import INTENTS
from maguyva.query.engine import Engine
from maguyva.query.intent import classify

Progress = Callable[[str, int, int], None]


@dataclass
class SystemReport:
    """One system's scores: overall, per labelled intent, and per query."""

    name: str
    overall: dict[str, float | int]
    by_intent: dict[str, dict[str, float | int]]
    by_source: dict[str, dict[str, float | int]]
    queries: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class EvalReport:
    """Everything one `maguyva eval` run measured (its JSON form is `to_dict()`)."""

    meta: dict[str, Any]
    classifier: dict[str, Any]
    systems: list[SystemReport]
    unavailable: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def system(self, name: str) -> SystemReport:
        for report in self.systems:
            if report.name == name:
                return report
        raise KeyError(name)


def classifier_accuracy(queries: Sequence[Query]) -> dict[str, Any]:
    """Accuracy of the rule-based classifier against the labels, per label, with confusions."""
    per: dict[str, list[int]] = {}
    confusion: dict[str, dict[str, int]] = {}
    for query in queries:
        got = classify(query.query).intent
        per.setdefault(query.intent, [0, 0])
        per[query.intent][0] += int(got == query.intent)
        per[query.intent][1] += 1
        row = confusion.setdefault(query.intent, {})
        row[got] = row.get(got, 0) + 1
    right = sum(r for r, _ in per.values())
    return {
        "accuracy": right / len(queries) if queries else 0.0,
        "by_intent": {i: {"accuracy": r / n, "queries": n} for i, (r, n) in sorted(per.items())},
        "confusion": confusion,
    }


def run_system(
    system: System, queries: Sequence[Query], limit: int, progress: Progress | None = None
) -> SystemReport:
    """Ask one system every query; score each answer."""
    scores: list[QueryScore] = []
    details: list[dict[str, Any]] = []
    for number, query in enumerate(queries, start=1):
        error = None
        started = time.perf_counter()
        try:
            if isinstance(system, EngineSystem):
                results = system.search_query(query, limit)
            else:
                results = system.search(query.query, limit)
        except MaguyvaError as exc:
            results, error = [], str(exc)
        elapsed = (time.perf_counter() - started) * 1000
        score = score_query(query, results, elapsed, error)
        scores.append(score)
        detail: dict[str, Any] = {
            "id": query.id, "returned": score.returned, "first_file_rank": score.first_file_rank,
            "latency_ms": round(elapsed, 3), "top": [f"{r.path}:{r.start}-{r.end}"
                                                     for r in results[:3]],
        }  # fmt: skip
        if isinstance(system, EngineSystem) and system.last is not None and error is None:
            detail["routed_intent"] = system.last.intent
            detail["strategy"] = system.last.fusion_strategy
            detail["modalities"] = system.last.modalities
        if error:
            detail["error"] = error
        details.append(detail)
        if progress:
            progress(system.name, number, len(queries))
    by_intent = {
        intent: aggregate(s for s in scores if s.intent == intent)
        for intent in INTENTS
        if any(s.intent == intent for s in scores)
    }
    sources = sorted({q.source for q in queries})
    by_source = {
        src: aggregate(s for s, q in zip(scores, queries, strict=True) if q.source == src)
        for src in sources
    }
    return SystemReport(system.name, aggregate(scores), by_intent, by_source, details)


def run_eval(
    engine: Engine,
    queries: Sequence[Query],
    systems: Sequence[System],
    *,
    unavailable: dict[str, str] | None = None,
    limit: int = 10,
    progress: Progress | None = None,
    meta: dict[str, Any] | None = None,
) -> EvalReport:
    """Evaluate every system on every query; returns the full report."""
    engine.available_modalities()  # open every built modality before timing starts
    reports = [run_system(s, queries, limit, progress) for s in systems]
    manifest = engine.generation.manifest
    info = {
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "python": platform.python_version(),
        "root": str(engine.root),
        "index_generation": engine.generation.number,
        "files": manifest.get("files"),
        "chunks": manifest.get("chunks"),
        "modalities_built": sorted(
            m for m, s in manifest.get("modalities", {}).items() if s.get("built")
        ),
        "embedding": manifest.get("embedding"),
        "queries": len(queries),
        "limit": limit,
        **(meta or {}),
    }
    return EvalReport(info, classifier_accuracy(queries), reports, dict(unavailable or {}))
