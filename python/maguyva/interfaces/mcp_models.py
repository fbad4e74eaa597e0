"""The MCP tools' output models (their JSON Schemas are the tools' output schemas) and the
limits their arguments are checked against."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field

CHARS_PER_TOKEN = 4
DEFAULT_BUDGET = 4000
MIN_BUDGET, MAX_BUDGET = 500, 100_000
MAX_READ_LINES = 2000
MAX_MATCHES_SHOWN = 50
MAX_MATCH_CHARS = 300

Modality = Literal["semantic", "text", "structural", "graph"]


def whole_number(value: Any) -> Any:
    """A count argument as pydantic then checks it: `true` is refused (pydantic would take it
    for 1), an integral float (`20.0`, `1e9`) becomes an int so that its range is what the
    error names; a numeric string ("5", as some clients send numbers) passes through."""
    if isinstance(value, bool):
        raise ValueError("expected an integer, got a boolean")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


WHOLE = BeforeValidator(whole_number)
"""Put after an integer argument's `Field` (`Annotated[int, Field(ge=1), WHOLE]`): after it, the
range would leave the JSON Schema's `minimum` and `maximum`."""
Budget = Annotated[
    int,
    Field(ge=MIN_BUDGET, le=MAX_BUDGET,
          description="Upper bound on the size of the result, in tokens (~4 characters each)"),
    WHOLE,
]  # fmt: skip


# -- output models (their JSON Schemas are the tools' output schemas) ---------------------------


class Contribution(BaseModel):
    """How one retriever placed a result: 1-based rank and its weighted RRF contribution."""

    modality: str
    rank: int
    contribution: float
    tier: Literal["static", "transformer"] | None = Field(
        None, exclude_if=lambda tier: tier is None,
        description="semantic only: whose vector matched (static: the fast tier's, for a chunk "
        "the embedding model has not reached yet; transformer: the model's own)",
    )  # fmt: skip


class MatchLine(BaseModel):
    """One matching line of a file: its 1-based number and its text."""

    line: int
    text: str


class SearchHit(BaseModel):
    """One result. `signature` is always present; `body` only when the budget allowed."""

    path: str
    start_line: int
    end_line: int
    score: float
    symbol: str | None = None
    kind: str | None = None
    signature: str
    body: str | None = None
    body_truncated: bool = False
    body_lines: list[int] | None = Field(
        None, description="[first, last] line of the file that `body` holds (where it was cut)"
    )
    lines: list[int] = Field(default_factory=list, description="matching lines in the span")
    matches: list[MatchLine] = Field(
        default_factory=list,
        description="every matching line of the file, as ripgrep lists them (exact, regex, "
        "definition and reference questions); fewer when the budget cut them",
    )
    match_count: int = Field(0, description="matching lines in the file, before any cut")
    boost: float = 1.0
    demoted: bool = False
    stale: bool = Field(False, description="the file changed since it was indexed")
    provenance: list[Contribution] = Field(default_factory=list)


class SearchOutput(BaseModel):
    """The answer with everything needed to see why each result is where it is."""

    query: str
    intent: str
    confidence: float
    target: str
    fusion_strategy: str
    preset: str
    modalities: list[str]
    weights: dict[str, float]
    k: int
    generation: int | None
    timings_ms: dict[str, float]
    total_ms: float
    unavailable: dict[str, str]
    notes: list[str]
    results: list[SearchHit]
    truncated: bool = Field(description="results or bodies were cut to fit the budget")
    next_cursor: str | None = Field(description="pass as `cursor` to get the next results")
    degraded: dict[str, str] = Field(
        default_factory=dict,
        description="retrievers this answer needed whose index files are damaged (reason and "
        "fix): the results are incomplete or missing; tell the user to run the fix",
    )


class SymbolHit(BaseModel):
    """A definition, call site group or dependent, with its signature line."""

    path: str
    start_line: int
    end_line: int
    symbol: str | None = None
    kind: str | None = None
    signature: str = ""
    lines: list[int] = Field(default_factory=list)
    score: float | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class HitsOutput(BaseModel):
    """A list of hits from one explicit look-up."""

    query: str
    source: str = Field(description="the retriever that answered")
    results: list[SymbolHit]
    truncated: bool
    total: int = Field(description="hits found before the budget and limit")
    notes: list[str] = Field(default_factory=list)


class ChunkOutput(BaseModel):
    """Lines `start_line..end_line` of a file (1-based, inclusive)."""

    path: str
    start_line: int
    end_line: int
    total_lines: int
    text: str
    truncated: bool
    next_start_line: int | None


class ModalityStatus(BaseModel):
    built: bool
    reason: str | None = None
    behind: dict[str, Any] | None = Field(
        None, description="graph only: the earlier generation it reflects, paths changed since"
    )
    damaged: str | None = Field(None, description="its files failed their checks, and the fix")
    pending: bool | None = Field(
        None, description="a staged first build adds it in a later generation (building now)"
    )
    coverage: dict[str, Any] | None = Field(
        None, description="semantic only: chunks embedded, by head only, pending; texts left"
    )


class StatusOutput(BaseModel):
    """What is indexed and how fresh it is."""

    root: str
    index_dir: str
    indexed: bool
    generation: int | None = None
    age_s: float | None = None
    commit: str | None = None
    files: int | None = None
    chunks: int | None = None
    stale_files: int = 0
    stale_sample: list[str] = Field(default_factory=list)
    skipped: dict[str, int] = Field(default_factory=dict)
    modalities: dict[str, ModalityStatus] = Field(default_factory=dict)
    embedding: Any = None
    build: dict[str, Any] | None = Field(
        None, description="a build running now: phase, done, total, rate, ETA, pid"
    )


class ReindexOutput(BaseModel):
    """What a rebuild did."""

    generation: int
    files: int
    chunks: int
    seconds: float
    modalities: dict[str, ModalityStatus]
    skipped: dict[str, int]
    note: str | None = None
