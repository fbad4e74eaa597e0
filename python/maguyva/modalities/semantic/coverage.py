"""How much of the repository the semantic part of a generation covers, in one vocabulary for
answers (`--explain`, `--json`, MCP) and `maguyva status`.

Semantic follows the other modalities (`maguyva.build.follow`): a search during a large build
answers from a generation whose embedding is partial, and must say so, or a missing result
by meaning looks like a wrong one. Read from the semantic build report (the generation's
manifest or `semantic/meta.json`), never from the vectors.
"""

from __future__ import annotations

from typing import Any


def coverage(report: dict[str, Any]) -> dict[str, Any]:
    """`chunks`: the chunks that may be embedded (secrets a remote provider is never sent are
    left out); `embedded`: those with their full vector; `head_only`: searchable by their
    head (header, signature, docstring) until their body follows; `pending`: no vector yet;
    `left`: texts still to embed; `complete`: nothing left; `duplicates`: texts (full or
    head) not embedded because another chunk's text has the same vector key
    (`semantic.dedup`); `static`: pending chunks the static tier answers for meanwhile."""
    rows = int(report.get("embedded") or 0)
    partial = int(report.get("partial") or 0)
    pending = int(report.get("pending") or 0)
    if "left" in report:
        left = int(report.get("left") or 0)
    else:  # a report written before `left`
        left = pending + (partial if report.get("phases") != "heads" else 0)
    return {
        "chunks": rows + pending,
        "embedded": rows - partial,
        "head_only": partial,
        "pending": pending,
        "left": left,
        "complete": left == 0,
        "duplicates": sum(int(v) for v in (report.get("duplicates") or {}).values()),
        "static": min(int(report.get("static") or 0), pending),
    }


STATIC_WEIGHT = 0.5
"""A chunk answered by the static tier counts this much in `share` (`static_part`)."""


def share(cov: dict[str, Any]) -> float:
    """How much of semantic's fusion weight a partial embedding keeps: the share of chunks with
    a transformer vector (full or head), a static tier's chunk counting STATIC_WEIGHT."""
    if not cov["chunks"]:
        return 1.0
    covered = cov["embedded"] + cov["head_only"] + STATIC_WEIGHT * cov.get("static", 0)
    return min(1.0, covered / cov["chunks"])


def describe(cov: dict[str, Any]) -> str:
    """`semantic: 20,224 of 91,558 chunks embedded (3,100 by their head only; 2,000 texts
    left to embed)`."""
    text = f"semantic: {cov['embedded']:,} of {cov['chunks']:,} chunks embedded"
    extra = []
    if cov["head_only"]:
        extra.append(f"{cov['head_only']:,} by their head only")
    if cov["left"]:
        extra.append(f"{cov['left']:,} texts left to embed")
    if cov.get("static"):
        extra.append(f"{cov['static']:,} pending answered by the static tier")
    if cov.get("duplicates"):
        extra.append(f"{cov['duplicates']:,} duplicate texts share a vector")
    return text + (f" ({'; '.join(extra)})" if extra else "")
