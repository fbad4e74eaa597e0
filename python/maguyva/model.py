"""Typed data passed between the indexer, the retrievers, the engine and the interfaces.

Every object here has a stable JSON form through `to_dict()`; the CLI's `--json` output and the
MCP server's structured content are built from it, so field names are part of the public API.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

MODALITIES: tuple[str, ...] = ("semantic", "text", "structural", "graph")
"""The four retrievers, in the spec's column order."""

INTENTS: tuple[str, ...] = (
    "find_definition",
    "find_references",
    "understand_code",
    "find_similar",
    "impact_analysis",
    "exact_match",
)


@dataclass(frozen=True, slots=True)
class SourceFile:
    """One file selected for indexing. `path` is relative to the root, with `/` separators."""

    path: str
    size: int
    mtime_ns: int
    language: str | None = None


@dataclass(frozen=True, slots=True)
class Chunk:
    """A contiguous span of a file that is retrieved, embedded and shown as one unit.

    `id` is content-addressed (stable while the chunk's text and path do not change). Lines are
    1-based and inclusive. `header` is what is prepended before embedding (path, qualified name,
    signature) so that truncation by a model's token window cuts the tail, not the identity.
    """

    id: str
    path: str
    start_line: int
    end_line: int
    kind: str = "lines"
    name: str | None = None
    qualified_name: str | None = None
    signature: str | None = None
    header: str = ""
    text: str = ""


@dataclass(slots=True)
class Hit:
    """One entry in a retriever's ranked list.

    `key` identifies the chunk the hit belongs to (the engine fills it from the chunk map when
    a retriever leaves it empty); `lines` lists the individual matching lines inside the span
    (call sites, literal matches); `score` is the retriever's own score, shown but never fused.
    """

    path: str
    start_line: int
    end_line: int
    key: str | None = None
    score: float | None = None
    snippet: str | None = None
    lines: list[int] = field(default_factory=list)
    symbol: str | None = None
    kind: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ModalityContribution:
    """How one modality's ranked list placed a result: 1-based rank (as printed by the CLI
    and sent in JSON and MCP answers) and RRF contribution; for semantic, `tier` names whose
    vector matched (`static`: the static tier's row of a chunk still pending; `transformer`:
    the embedding model's own vector), None for the other modalities."""

    modality: str
    rank: int
    contribution: float
    score: float | None = None
    tier: str | None = None


@dataclass(slots=True)
class Result:
    """One answer: a chunk of a file, with everything needed to explain its position."""

    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    provenance: list[ModalityContribution]
    boost: float = 1.0
    demoted: bool = False
    lines: list[int] = field(default_factory=list)
    symbol: str | None = None
    kind: str | None = None
    stale: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class Response:
    """The full answer to one query, as SPEC.md's "What a response carries" lists it."""

    query: str
    intent: str
    confidence: float
    target: str
    fusion_strategy: str
    preset: str
    modalities: list[str]
    weights: dict[str, float]
    k: int
    results: list[Result]
    timings_ms: dict[str, float]
    total_ms: float
    unavailable: dict[str, str] = field(default_factory=dict)
    rule: str = ""
    generation: int | None = None
    notes: list[str] = field(default_factory=list)
    damaged: dict[str, str] = field(default_factory=dict)
    """Modalities this answer needed whose files failed their checks (reason and fix): the
    answer is degraded; the CLI warns and exits 2, MCP sets `degraded`."""
    coverage: dict[str, Any] = field(default_factory=dict)  # semantic: how much is embedded

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
