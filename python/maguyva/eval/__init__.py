"""Retrieval evaluation: query sets, metrics, side-by-side runs, baselines, generation, tuning.

Library entry points (the CLI's `maguyva eval` / `maguyva tune` call these):

    from maguyva.eval import load_queries, run_eval, engine_systems, format_report
    engine = Engine.open(root)
    systems, unavailable = engine_systems(engine)
    report = run_eval(engine, load_queries([path]), systems, unavailable=unavailable)
    print(format_report(report))
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from maguyva.eval.metrics import Ranked, aggregate, file_metrics, line_metrics, score_query
    from maguyva.eval.queryset import Query, QuerySetError, Span, load_queries, write_queries
    from maguyva.eval.report import format_report
    from maguyva.eval.runner import (
        EvalReport,
        SystemReport,
        classifier_accuracy,
        run_eval,
        run_system,
    )
    from maguyva.eval.systems import EngineSystem, engine_systems

_LAZY = {
    "Ranked": "maguyva.eval.metrics",
    "aggregate": "maguyva.eval.metrics",
    "file_metrics": "maguyva.eval.metrics",
    "line_metrics": "maguyva.eval.metrics",
    "score_query": "maguyva.eval.metrics",
    "Query": "maguyva.eval.queryset",
    "QuerySetError": "maguyva.eval.queryset",
    "Span": "maguyva.eval.queryset",
    "load_queries": "maguyva.eval.queryset",
    "write_queries": "maguyva.eval.queryset",
    "format_report": "maguyva.eval.report",
    "EvalReport": "maguyva.eval.runner",
    "SystemReport": "maguyva.eval.runner",
    "classifier_accuracy": "maguyva.eval.runner",
    "run_eval": "maguyva.eval.runner",
    "run_system": "maguyva.eval.runner",
    "EngineSystem": "maguyva.eval.systems",
    "engine_systems": "maguyva.eval.systems",
}
"""Public name -> its module, imported on first use (PEP 562): the `maguyva` command registers
eval's flags on every run, which must not import the engine and numpy."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


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
