"""Plain-text tables of an evaluation report (the JSON form is `EvalReport.to_dict()`)."""

from __future__ import annotations

from maguyva.eval.runner import EvalReport

_OVERALL = [
    ("file MRR", "file.mrr@10"),
    ("S@1", "file.success@1"),
    ("R@5", "file.recall@5"),
    ("R@10", "file.recall@10"),
    ("nDCG", "file.ndcg@10"),
    ("line MRR", "line.mrr@10"),
    ("line R@10", "line.recall@10"),
    ("line nDCG", "line.ndcg@10"),
    ("zero%", "zero_result_rate"),
    ("empty-ok%", "empty_answer_zero_rate"),
    ("p50 ms", "latency_p50_ms"),
    ("p95 ms", "latency_p95_ms"),
]
_PER_INTENT = [
    ("n", "queries"),
    ("file MRR", "file.mrr@10"),
    ("S@1", "file.success@1"),
    ("R@10", "file.recall@10"),
    ("nDCG", "file.ndcg@10"),
    ("line MRR", "line.mrr@10"),
    ("line nDCG", "line.ndcg@10"),
    ("zero%", "zero_result_rate"),
    ("p50 ms", "latency_p50_ms"),
]


def _cell(key: str, value: float | int) -> str:
    if key in ("queries",):
        return str(value)
    if key.endswith("_rate"):
        return f"{100 * value:.1f}"
    if key.endswith("_ms"):
        return f"{value:.1f}"
    return f"{value:.3f}"


def _table(title: str, rows: list[tuple[str, dict[str, float | int]]], cols) -> list[str]:
    header = ["system", *(c for c, _ in cols)]
    body = [[name, *(_cell(k, stats.get(k, 0)) for _, k in cols)] for name, stats in rows]
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w)  # noqa: E731
                               for i, (c, w) in enumerate(zip(r, widths, strict=True)))  # fmt: skip
    return [title, line(header), "  ".join("-" * w for w in widths), *map(line, body), ""]


def format_report(report: EvalReport, per_intent: bool = True) -> str:
    """The overall table, then one table per labelled intent, then the classifier."""
    meta = report.meta
    out = [
        f"corpus: {meta.get('root')}  files: {meta.get('files')}  chunks: {meta.get('chunks')}  "
        f"modalities built: {', '.join(meta.get('modalities_built') or []) or '-'}",
        f"queries: {meta.get('queries')}  split: {meta.get('split', 'all')}  "
        f"intent: {'labels (oracle)' if meta.get('oracle_intent') else 'classifier'}",
        "",
    ]
    rows = [(s.name, s.overall) for s in report.systems]
    out += _table("overall (queries with an answer; empty-ok% over queries whose answer is "
                  "empty)", rows, _OVERALL)  # fmt: skip
    if per_intent:
        intents = list(dict.fromkeys(i for s in report.systems for i in s.by_intent))
        for intent in intents:
            rows = [(s.name, s.by_intent[intent]) for s in report.systems if intent in s.by_intent]
            out += _table(f"intent {intent}", rows, _PER_INTENT)
    sources = list(dict.fromkeys(src for s in report.systems for src in s.by_source))
    if len(sources) > 1:
        for source in sources:
            rows = [(s.name, s.by_source[source]) for s in report.systems
                    if source in s.by_source]  # fmt: skip
            out += _table(f"query source {source}", rows, _PER_INTENT)
    clf = report.classifier
    per = ", ".join(
        f"{i} {100 * v['accuracy']:.0f}% (n={v['queries']})" for i, v in clf["by_intent"].items()
    )
    out.append(f"classifier accuracy vs labels: {100 * clf['accuracy']:.1f}%  [{per}]")
    for name, reason in report.unavailable.items():
        out.append(f"unavailable: {name}: {reason}")
    return "\n".join(out)
