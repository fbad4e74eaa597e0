"""Ranking metrics at file level and line level, per query and aggregated.

Binary relevance throughout. File level: a result is relevant when its path holds an answer.
Line level: a result is relevant when its line span overlaps an answer span not already covered
by a higher-ranked result (so ten chunks of one function do not count ten times). The ideal DCG
assumes every answer span could be covered by its own result, so line-level nDCG of a query
whose spans sit in one chunk is a lower bound (documented in docs/eval.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from maguyva.eval.queryset import Query, Span

CUTOFF = 10
METRIC_NAMES = ("mrr@10", "success@1", "recall@5", "recall@10", "ndcg@10")


@dataclass(frozen=True, slots=True)
class Ranked:
    """One returned result, reduced to what scoring needs."""

    path: str
    start: int
    end: int
    lines: tuple[int, ...] = ()


@dataclass(slots=True)
class QueryScore:
    """Every metric of one query under one system."""

    query_id: str
    intent: str
    expects_empty: bool
    returned: int
    latency_ms: float
    file: dict[str, float] = field(default_factory=dict)
    line: dict[str, float] = field(default_factory=dict)
    first_file_rank: int | None = None
    error: str | None = None


def _dcg(gains: Sequence[float]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def _metrics(gains: list[float], covered_at: list[int], total: int) -> dict[str, float]:
    """gains[i]: 1.0 if result i is (newly) relevant; covered_at[i]: answers covered so far."""
    top = gains[:CUTOFF]
    first = next((i for i, g in enumerate(top) if g > 0), None)
    ideal = _dcg([1.0] * min(total, CUTOFF))

    def recall(k: int) -> float:
        if not covered_at:
            return 0.0
        return covered_at[min(k, len(covered_at)) - 1] / total

    return {
        "mrr@10": 0.0 if first is None else 1.0 / (first + 1),
        "success@1": 1.0 if gains[:1] == [1.0] else 0.0,
        "recall@5": recall(5),
        "recall@10": recall(10),
        "ndcg@10": _dcg(top) / ideal if ideal else 0.0,
    }


def file_metrics(results: Sequence[Ranked], relevant: Sequence[Span]) -> dict[str, float]:
    """File-level metrics: duplicates of a path after its first appearance are ignored."""
    wanted = {span.path for span in relevant}
    seen: set[str] = set()
    gains: list[float] = []
    covered: list[int] = []
    hits = 0
    for result in results:
        if result.path in seen:
            continue
        seen.add(result.path)
        gain = 1.0 if result.path in wanted else 0.0
        hits += int(gain)
        gains.append(gain)
        covered.append(hits)
    return _metrics(gains, covered, len(wanted))


def _hits(result: Ranked, span: Span) -> bool:
    if span.overlaps(result.path, result.start, result.end):
        return True
    return bool(result.lines) and any(span.overlaps(result.path, n, n) for n in result.lines)


def line_metrics(results: Sequence[Ranked], relevant: Sequence[Span]) -> dict[str, float]:
    """Line-level metrics: a result earns a gain when it covers an answer span not yet covered."""
    done = [False] * len(relevant)
    gains: list[float] = []
    covered: list[int] = []
    for result in results:
        new = [j for j, span in enumerate(relevant) if not done[j] and _hits(result, span)]
        for j in new:
            done[j] = True
        gains.append(1.0 if new else 0.0)
        covered.append(sum(done))
    return _metrics(gains, covered, len(relevant))


def score_query(
    query: Query, results: Sequence[Ranked], latency_ms: float, error: str | None = None
) -> QueryScore:
    """Score one system's answer to one query."""
    score = QueryScore(query.id, query.intent, query.expects_empty, len(results), latency_ms)
    score.error = error
    if not query.expects_empty:
        score.file = file_metrics(results, query.relevant)
        score.line = line_metrics(results, query.relevant)
        wanted = set(query.relevant_paths)
        paths = list(dict.fromkeys(r.path for r in results))
        score.first_file_rank = next((i + 1 for i, p in enumerate(paths) if p in wanted), None)
    return score


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[rank - 1]


def aggregate(scores: Iterable[QueryScore]) -> dict[str, float | int]:
    """Means over queries with an answer; zero-result rates; latency percentiles."""
    scores = list(scores)
    answered = [s for s in scores if not s.expects_empty and s.error is None]
    empty = [s for s in scores if s.expects_empty and s.error is None]
    out: dict[str, float | int] = {"queries": len(scores), "with_answer": len(answered),
                                   "empty_answer": len(empty),
                                   "errors": sum(1 for s in scores if s.error)}  # fmt: skip
    for level in ("file", "line"):
        for name in METRIC_NAMES:
            values = [getattr(s, level)[name] for s in answered]
            out[f"{level}.{name}"] = sum(values) / len(values) if values else 0.0
    out["zero_result_rate"] = (
        sum(1 for s in answered if s.returned == 0) / len(answered) if answered else 0.0
    )
    out["empty_answer_zero_rate"] = (
        sum(1 for s in empty if s.returned == 0) / len(empty) if empty else 0.0
    )
    latencies = [s.latency_ms for s in scores if s.error is None]
    out["latency_p50_ms"] = percentile(latencies, 50)
    out["latency_p95_ms"] = percentile(latencies, 95)
    return out
