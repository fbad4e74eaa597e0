"""One result, shaped once for every interface.

The CLI's text and JSON Lines (`output.py`), the demo's compact listing and the MCP tools'
models (`mcp_results.py`) read a result's fields, its heading, its provenance and whether
every matching line is listed through these functions, so a field or a flag means the same
thing wherever it is printed. Nothing here reads files or the index: that is each interface's
own business (the CLI reads the disk, MCP the indexed chunks).
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from maguyva.model import Response, Result

EVERY_MATCH_INTENTS = frozenset(
    {"exact_match", "find_definition", "find_references", "impact_analysis"}
)
"""Intents answered like ripgrep: every matching line of each file is listed (exact strings and
regexes, definitions, references), not only those inside the best chunk."""


def lists_every_match(response: Response) -> bool:
    """Whether each result lists every matching line of its file (`EVERY_MATCH_INTENTS`)."""
    return response.intent in EVERY_MATCH_INTENTS


def heading(result: Result) -> str:
    """What follows the path on a result's first line: `:start-end`, the symbol, and the
    `[stale]` / `[demoted]` flags."""
    symbol = f" {result.symbol}" if result.symbol else ""
    flags = (" [stale]" if result.stale else "") + (" [demoted]" if result.demoted else "")
    return f":{result.start_line}-{result.end_line}{symbol}{flags}"


def lines_in_span(result: Result) -> list[int]:
    """The result's matching lines that fall inside its chunk."""
    return [n for n in result.lines if result.start_line <= n <= result.end_line]


def provenance(result: Result) -> list[dict[str, Any]]:
    """How each retriever placed the result: modality, 1-based rank, RRF contribution, and
    for semantic the tier whose vector matched (`tier`, only where there is one)."""
    return [
        {"modality": p.modality, "rank": p.rank, "contribution": p.contribution,
         **({"tier": p.tier} if p.tier is not None else {})}
        for p in result.provenance
    ]  # fmt: skip


def provenance_line(result: Result) -> str:
    """The fused score written out: each retriever's contribution (semantic's with its tier,
    `semantic/static#2`), the boost, the demotion."""
    parts = [f"{p['modality']}{'/' + p['tier'] if 'tier' in p else ''}#{p['rank']}="
             f"{p['contribution']:.5f}" for p in provenance(result)]  # fmt: skip
    return (f"score {result.score:.5f} = ({' + '.join(parts)}) x boost {result.boost:.3f}"
            + (" x demotion" if result.demoted else ""))  # fmt: skip


def result_fields(result: Result) -> dict[str, Any]:
    """Every field of the result but its path and snippet (which JSON Lines carries apart)."""
    fields = result.to_dict()
    fields.pop("path")
    fields.pop("snippet")
    for row in fields["provenance"]:  # a tier only where semantic placed the result
        if row.get("tier") is None:
            row.pop("tier", None)
    return fields


def response_fields(response: Response) -> dict[str, Any]:
    """Everything the response says about itself (intent, routing, weights, timings, notes,
    unavailable and damaged modalities...) but its results, as JSON-ready values: the CLI's
    JSON Lines summary, and the fields MCP's `SearchOutput` shares with it."""
    fields = asdict(replace(response, results=[]))
    fields.pop("results")
    return fields


def modality_state(status: dict[str, Any]) -> str:
    """`built`, `unavailable: REASON`, or (a staged first build's later stage,
    `maguyva.build.staged`) its pending reason, for one modality of a build summary or a status."""
    if status.get("built"):
        return "built"
    if status.get("pending"):
        return status.get("reason") or "pending"
    return f"unavailable: {status.get('reason')}"
