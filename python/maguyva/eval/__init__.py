"""Retrieval evaluation: query sets, metrics, side-by-side runs, baselines, generation, tuning.

Library entry points (the CLI's `maguyva eval` / `maguyva tune` call these):

    from maguyva.eval import load_queries, run_eval, engine_systems, format_report
    engine = Engine.open(root)
    systems, unavailable = engine_systems(engine)
    report = run_eval(engine, load_queries([path]), systems, unavailable=unavailable)
    print(format_report(report))
"""

from __future__ import annotations

from maguyva.eval.metrics import Ranked, aggregate, file_metrics, line_metrics, score_query
from maguyva.eval.queryset import Query, QuerySetError, Span, load_queries, write_queries
from maguyva.eval.report import format_report
from maguyva.eval.runner import EvalReport, SystemReport, classifier_accuracy, run_eval, run_system
from maguyva.eval.systems import EngineSystem, engine_systems

__all__ = [
    "EngineSystem",
    "EvalReport",
    "Query",
    "QuerySetError",
    "Ranked",
    "Span",
    "SystemReport",
    "aggregate",
    "classifier_accuracy",
    "engine_systems",
    "file_metrics",
    "format_report",
    "line_metrics",
    "load_queries",
    "run_eval",
    "run_system",
    "score_query",
    "write_queries",
]
