"""The result shaping every interface shares (`maguyva.interfaces.shaping`): what the CLI's
text, its JSON Lines, the demo and the MCP tools say about one result and one response."""

from __future__ import annotations

from maguyva.interfaces.mcp_models import SearchOutput
from maguyva.interfaces.output import format_response
from maguyva.interfaces.shaping import (
    heading,
    lines_in_span,
    lists_every_match,
    modality_state,
    provenance,
    provenance_line,
    response_fields,
    result_fields,
)
from maguyva.model import ModalityContribution, Response, Result


def _result(**overrides: object) -> Result:
    fields: dict = dict(
        path="pkg/a.py", start_line=3, end_line=9, score=0.5, snippet="def f():\n    pass",
        provenance=[ModalityContribution("text", 1, 0.25, 7.0),
                    ModalityContribution("graph", 2, 0.125)],
        boost=1.2, lines=[1, 4, 9, 12], symbol="f",
    )  # fmt: skip
    fields.update(overrides)
    return Result(**fields)


def _response(results: list[Result], intent: str = "understand_code") -> Response:
    return Response(
        query="q", intent=intent, confidence=0.9, target="f", fusion_strategy="rrf",
        preset="default", modalities=["text", "graph"], weights={"text": 1.0}, k=40,
        results=results, timings_ms={"text": 1.0}, total_ms=2.0, damaged={"graph": "torn"},
    )  # fmt: skip


def test_heading_names_the_span_the_symbol_and_the_flags() -> None:
    assert heading(_result()) == ":3-9 f"
    assert heading(_result(symbol=None, stale=True, demoted=True)) == ":3-9 [stale] [demoted]"
    assert format_response(_response([_result(stale=True)]), explain=False).splitlines()[0] == (
        "1. pkg/a.py:3-9 f [stale]"
    )


def test_provenance_is_the_same_rows_in_text_and_in_models() -> None:
    result = _result(demoted=True)
    assert provenance(result) == [
        {"modality": "text", "rank": 1, "contribution": 0.25},
        {"modality": "graph", "rank": 2, "contribution": 0.125},
    ]
    assert provenance_line(result) == (
        "score 0.50000 = (text#1=0.25000 + graph#2=0.12500) x boost 1.200 x demotion"
    )


def test_lines_and_fields() -> None:
    result = _result()
    assert lines_in_span(result) == [4, 9]
    fields = result_fields(result)
    assert "path" not in fields and "snippet" not in fields
    assert fields["provenance"][0] == {"modality": "text", "rank": 1, "contribution": 0.25,
                                       "score": 7.0}  # fmt: skip


def test_response_fields_leave_the_results_out_and_cover_the_mcp_header() -> None:
    response = _response([_result()], intent="exact_match")
    fields = response_fields(response)
    assert "results" not in fields and fields["damaged"] == {"graph": "torn"}
    assert response.results, "the response itself keeps its results"
    header = set(SearchOutput.model_fields) - {"results", "truncated", "next_cursor", "degraded"}
    assert header <= set(fields), "SearchOutput names a field the response does not have"
    assert lists_every_match(response) and not lists_every_match(_response([]))


def test_modality_state() -> None:
    assert modality_state({"built": True}) == "built"
    assert modality_state({"built": False, "reason": "not built"}) == "unavailable: not built"
