"""The MCP server: Maguyva's tools for coding agents, over stdio, on the official SDK.

    maguyva mcp --root /path/to/repo [--watch]

With `--watch` the server also keeps the index current while it runs: a `watch.Watcher` in a
background thread (the same watcher as `maguyva watch`: OS events, debounced, event paths as
hints, periodic reconciliation, polling fallback), writing through the same writer lock as
`reindex` and any other writer. Searches answer from the newest committed generation.

Tools (all read-only except `reindex`): `search` (the one question interface), `find_symbol`,
`find_references`, `impact`, `read_chunk`, `index_status`, `reindex`. Paths are relative to
the root and confined to it (`maguyva.repo.paths`). Every list-returning tool honours a token budget
(`budget_tokens`, estimated as 4 characters per token of the compact JSON result): signatures first,
bodies while room remains, then `truncated: true` and a `next_cursor` to continue.

stdout is the protocol channel: nothing else is ever printed; logs go to stderr. Errors a
caller can act on (bad query, path outside the root, no index yet, modality unavailable) come
back as tool errors (`is_error`) with one clear sentence, never as protocol failures.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
import math
import re
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import anyio.from_thread
import anyio.to_thread
import pydantic_core
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from maguyva.api import Index
from maguyva.errors import BadQueryError, IndexNotFoundError, MaguyvaError
from maguyva.interfaces.mcp_stdio import run_stdio
from maguyva.interfaces.output import EVERY_MATCH_INTENTS
from maguyva.model import Hit, Response, Result

log = logging.getLogger("maguyva.mcp")

CHARS_PER_TOKEN = 4
DEFAULT_BUDGET = 4000
MIN_BUDGET, MAX_BUDGET = 500, 100_000
MAX_READ_LINES = 2000
MAX_MATCHES_SHOWN = 50
MAX_MATCH_CHARS = 300

Modality = Literal["semantic", "text", "structural", "graph"]
Budget = Annotated[
    int,
    Field(ge=MIN_BUDGET, le=MAX_BUDGET,
          description="Upper bound on the size of the result, in tokens (~4 characters each)"),
]  # fmt: skip
_READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)


# -- output models (their JSON Schemas are the tools' output schemas) ---------------------------


class Contribution(BaseModel):
    """How one retriever placed a result: 1-based rank and its weighted RRF contribution."""

    modality: str
    rank: int
    contribution: float


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


# -- helpers --------------------------------------------------------------------------------------


@contextlib.contextmanager
def tool_errors(no_index_hint: bool = True) -> Iterator[None]:
    """Turn Maguyva's errors into tool errors the model reads (the SDK hides other messages)."""
    try:
        yield
    except IndexNotFoundError as exc:
        hint = " (call the reindex tool to build it)" if no_index_hint else ""
        raise ToolError(f"{exc}{hint}") from exc
    except MaguyvaError as exc:
        raise ToolError(str(exc)) from exc
    except OSError as exc:
        raise ToolError(f"I/O error: {exc.strerror or exc}") from exc


def compact(model: BaseModel) -> str:
    """The JSON text a client receives: compact (`separators=(",", ":")`), so the token budget
    is spent on content; indented JSON spent 20-42 % of it on whitespace."""
    return pydantic_core.to_json(model.model_dump(mode="json"), fallback=str).decode()


def tokens(model: BaseModel) -> int:
    """Estimated tokens of the text the client receives."""
    return math.ceil(len(compact(model)) / CHARS_PER_TOKEN)


def reply(model: BaseModel) -> CallToolResult:
    """A tool result whose text is the compact JSON of `model` (the SDK would indent it) and
    whose structured content is the same value."""
    return CallToolResult(content=[TextContent(type="text", text=compact(model))],
                          structured_content=model.model_dump(mode="json"))  # fmt: skip


def _signature(
    index: Index, path: str, start_line: int, fallback: str | None, lines: list[int] = ()
) -> str:
    try:
        chunk = index.engine().chunks.enclosing(path, start_line)
    except MaguyvaError:
        chunk = None
    if chunk is not None and chunk.signature:
        return chunk.signature
    if chunk is not None:  # a module chunk: its first matching line, not its license header
        first = next((n for n in lines if chunk.start_line <= n <= chunk.end_line), None)
        if first is not None:
            line = _chunk_line(chunk, first)
            if line.strip():
                return line.strip()
    text = fallback if fallback else (chunk.text if chunk is not None else "")
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _chunk_line(chunk: Any, line: int) -> str:
    rows = chunk.text.split("\n")
    at = line - chunk.start_line
    return rows[at] if 0 <= at < len(rows) else ""


def _matches(index: Index, path: str, lines: list[int]) -> list[MatchLine]:
    """The text of each matching line (from the indexed chunks, not the disk)."""
    out = []
    chunks = index.engine().chunks
    for line in lines[:MAX_MATCHES_SHOWN]:
        chunk = chunks.enclosing(path, line)
        if chunk is not None:
            out.append(MatchLine(line=line, text=_chunk_line(chunk, line)[:MAX_MATCH_CHARS]))
    return out


def _body(index: Index, result: Result) -> str:
    chunk = index.engine().chunks.enclosing(result.path, result.start_line)
    if chunk is not None and chunk.start_line == result.start_line:
        return chunk.text
    return result.snippet


def _cursor_key(**query: Any) -> str:
    return hashlib.sha256(json.dumps(query, sort_keys=True).encode()).hexdigest()[:16]


def encode_cursor(key: str, offset: int) -> str:
    raw = json.dumps({"q": key, "o": offset}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, key: str) -> int:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        offset = int(data["o"])
        same = data["q"] == key
    except (ValueError, KeyError, TypeError) as exc:
        raise BadQueryError("invalid cursor") from exc
    if not same:
        raise BadQueryError(
            "this cursor belongs to a different query; repeat that query's arguments"
        )
    if offset < 0:
        raise BadQueryError("invalid cursor")
    return offset


_HEADER_ONLY = re.compile(r'^\s*(?:$|@|#|//|/\*|\*|--|"""|\'\'\'|(?:[rRuUbB]?["\']))')


def _header_only(lines: list[str]) -> bool:
    """True when the lines are decorators, comments, blank or the start of a docstring only:
    shown alone they would answer nothing."""
    return all(_HEADER_ONLY.match(line) for line in lines)


_MATCH_CAPS = (20, 10, 5, 3, 1)


def fit_search(output: SearchOutput, bodies: list[str], budget: int) -> SearchOutput:
    """Signatures first: fewer matching lines per result, then drop tail results until the
    signatures fit; then add bodies in rank order while they fit. The first that does not fit is cut by lines, keeping its first
    matching line (a cut body says which lines it holds, and one left with only decorators,
    comments or a docstring's start is dropped); then bodies stop."""
    full = [list(hit.matches) for hit in output.results]
    for cap in _MATCH_CAPS:  # fewer matching lines per result before fewer results
        if tokens(output) <= budget:
            break
        for hit, matches in zip(output.results, full, strict=True):
            if len(matches) > cap:
                hit.matches = matches[:cap]
                output.truncated = True
    while output.results and tokens(output) > budget:
        output.results.pop()
        output.truncated = True
    for hit, body in zip(output.results, bodies, strict=False):
        rows = body.split("\n")
        hit.body = body
        hit.body_lines = [hit.start_line, hit.start_line + len(rows) - 1]
        if tokens(output) <= budget:
            continue
        first = next((n - hit.start_line for n in hit.lines if n >= hit.start_line), 0)
        anchor = first if 0 <= first < len(rows) else 0
        keep = rows[anchor:]
        while keep:
            keep = keep[: len(keep) // 2] if len(keep) > 8 else keep[:-1]
            hit.body = "\n".join(keep)
            hit.body_lines = [hit.start_line + anchor, hit.start_line + anchor + len(keep) - 1]
            if keep and tokens(output) <= budget:
                break
        if not keep or _header_only(keep):
            hit.body, hit.body_lines = None, None
        hit.body_truncated = True
        output.truncated = True
        break
    return output


# -- the server ----------------------------------------------------------------------------------


class _Server(MCPServer):
    """The SDK's server, with argument errors in one plain sentence: pydantic's own text
    spans lines and ends in a link to its documentation, which a model does not need."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError) and not isinstance(exc, UnexpectedToolError):
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                    for e in cause.errors(include_url=False)
                )
                raise ToolError(
                    f"Error executing tool {name}: invalid arguments: {problems}"
                ) from cause
            raise


def create_server(
    root: Path | str, index_dir: Path | str | None = None, index: Index | None = None
) -> MCPServer:
    """An MCP server answering for the repository at `root` (its index need not exist yet),
    through `index` when given (`serve` shares it with the warming thread)."""
    index = index or Index.open(root, index_dir=index_dir)
    server = _Server(
        name="maguyva",
        title="Maguyva code search",
        instructions=(
            f"Code search over the repository at {index.root}. Ask `search` in plain words "
            "(it classifies the question and fuses text, symbol, call-graph and semantic "
            "retrieval); use find_symbol / find_references / impact when you know the symbol; "
            "read_chunk to read lines. Paths are relative to the repository root."
        ),
        log_level="WARNING",
    )
    build_lock = threading.Lock()

    @server.tool(annotations=_READ_ONLY)
    def search(
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=4000,
                description='Plain words, or "phrase", /regex/, file:, lang:, sym:, -term',
            ),
        ],
        k: Annotated[int, Field(ge=1, le=100, description="number of results")] = 10,
        preset: Literal["quick", "default", "thorough"] = "default",
        modalities: Annotated[
            list[Modality] | None, Field(max_length=4, description="run exactly these retrievers")
        ] = None,
        path_glob: Annotated[str | None, Field(max_length=500)] = None,
        language: Annotated[str | None, Field(max_length=40)] = None,
        budget_tokens: Budget = DEFAULT_BUDGET,
        cursor: Annotated[str | None, Field(max_length=200)] = None,
    ) -> Annotated[CallToolResult, SearchOutput]:
        """Answer a question about the code: where something is defined, who calls it, what
        breaks if it changes, an exact string, or how something works. Returns ranked chunks
        with per-retriever provenance; bodies are included while the token budget allows."""
        with tool_errors():
            key = _cursor_key(q=query, p=preset, m=modalities, g=path_glob, l=language)
            offset = decode_cursor(cursor, key) if cursor else 0
            response = index.search(
                query, preset=preset, modalities=modalities, limit=min(offset + k + 1, 1000),
                globs=[path_glob] if path_glob else (), language=language,
            )  # fmt: skip
            page = response.results[offset : offset + k]
            more = len(response.results) > offset + k
            output = _search_output(index, response, page)
            # reserve room for the longest cursor and the note that may follow the fit
            output.next_cursor = encode_cursor(key, offset + len(page))
            reserve = 20
            output = fit_search(output, [_body(index, r) for r in page], budget_tokens - reserve)
            output.next_cursor = None
            shown = len(output.results)
            if page and not shown:
                output.notes.append("budget_tokens is too small for even one result")
            if shown < len(page) or more:
                output.next_cursor = encode_cursor(key, offset + shown)
            return reply(output)

    @server.tool(annotations=_READ_ONLY)
    def find_symbol(
        name: Annotated[
            str,
            Field(
                min_length=1,
                max_length=300,
                description="symbol name, e.g. parse_config or Session.request",
            ),
        ],
        kind: Annotated[
            str | None, Field(max_length=40, description="class, function, method, ...")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=200)] = 20,
        budget_tokens: Budget = DEFAULT_BUDGET,
    ) -> Annotated[CallToolResult, HitsOutput]:
        """Where a symbol is defined (exact name first, then case and spelling variants)."""
        with tool_errors():
            hits = index.find_symbol(name, kind=kind, limit=limit)
            return reply(_hits_output(index, name, "structural", hits, budget_tokens))

    @server.tool(annotations=_READ_ONLY)
    def find_references(
        symbol: Annotated[str, Field(min_length=1, max_length=300)],
        depth: Annotated[
            int, Field(ge=1, le=5, description="1: direct references; more: transitive callers")
        ] = 1,
        limit: Annotated[int, Field(ge=1, le=500)] = 50,
        budget_tokens: Budget = DEFAULT_BUDGET,
    ) -> Annotated[CallToolResult, HitsOutput]:
        """Who calls, imports or otherwise references a symbol, grouped by file with the
        line numbers of each use."""
        with tool_errors():
            hits = index.find_references(symbol, depth=depth, limit=limit)
            return reply(_hits_output(index, symbol, "graph", hits, budget_tokens))

    @server.tool(annotations=_READ_ONLY)
    def impact(
        symbol: Annotated[str, Field(min_length=1, max_length=300)],
        depth: Annotated[int, Field(ge=1, le=6)] = 2,
        limit: Annotated[int, Field(ge=1, le=500)] = 100,
        budget_tokens: Budget = DEFAULT_BUDGET,
    ) -> Annotated[CallToolResult, HitsOutput]:
        """Blast radius: everything that depends on a symbol up to `depth` hops, nearest and
        most certain first (test files last, flagged)."""
        with tool_errors():
            hits = index.impact(symbol, depth=depth, limit=limit)
            return reply(_hits_output(index, symbol, "graph", hits, budget_tokens))

    @server.tool(annotations=_READ_ONLY)
    def read_chunk(
        path: Annotated[
            str, Field(min_length=1, max_length=1000, description="relative to the repository root")
        ],
        start_line: Annotated[int, Field(ge=1)] = 1,
        end_line: Annotated[int | None, Field(ge=1)] = None,
        budget_tokens: Budget = DEFAULT_BUDGET,
    ) -> Annotated[CallToolResult, ChunkOutput]:
        """Read lines of an indexed file. Paths outside the root are refused."""
        with tool_errors():
            if end_line is not None and end_line < start_line:
                raise BadQueryError("end_line must be >= start_line")
            end = start_line + MAX_READ_LINES - 1 if end_line is None else end_line
            end = min(end, start_line + MAX_READ_LINES - 1)
            chunk = index.read_chunk(path, start_line, end)
            lines = chunk.text.split("\n") if chunk.text else []
            output = ChunkOutput(**chunk.to_dict(), truncated=False, next_start_line=None)
            while lines and tokens(output) > budget_tokens:
                lines = lines[: max(1, len(lines) * 3 // 4)] if len(lines) > 1 else []
                output.text = "\n".join(lines)
                output.end_line = start_line + len(lines) - 1
                output.truncated = True
            if output.end_line < chunk.total_lines and (output.truncated or end_line is None
                                                         or end_line > output.end_line):  # fmt: skip
                output.next_start_line = output.end_line + 1
            return reply(output)

    @server.tool(annotations=_READ_ONLY)
    def index_status() -> Annotated[CallToolResult, StatusOutput]:
        """What is indexed (files, chunks, retrievers built or why not) and how fresh."""
        with tool_errors():
            if not index.exists():
                return reply(StatusOutput(root=str(index.root), index_dir=str(index.index_dir),
                                          indexed=False))  # fmt: skip
            status = index.status()
            return reply(StatusOutput(
                indexed=True, **{k: v for k, v in status.items() if k in StatusOutput.model_fields}
            ))  # fmt: skip

    @server.tool(
        annotations=ToolAnnotations(
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        )
    )
    async def reindex(
        ctx: Context,
        paths: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=1000)]] | None,
            Field(max_length=10_000, description="changed paths (relative)"),
        ] = None,
    ) -> Annotated[CallToolResult, ReindexOutput]:
        """Rebuild the index (a new generation; searches keep answering from the old one
        until it commits). Reports progress when the client asks for it."""
        with tool_errors(no_index_hint=False):
            from maguyva.repo.paths import relative

            checked = [relative(index.root, p) for p in paths or []]
            counter = [0]
            last = [0.0]

            def progress(phase: str, done: int, total: int) -> None:
                now = time.monotonic()
                if now - last[0] < 0.1 and done < total:
                    return
                last[0] = now
                counter[0] += 1
                with contextlib.suppress(Exception):  # a gone client must not stop the build
                    anyio.from_thread.run(
                        ctx.report_progress, float(counter[0]), None, f"{phase}: {done}/{total}"
                    )

            def build():
                with build_lock:
                    return index.build(progress=progress, wait=True, paths=checked or None)

            started = time.perf_counter()
            summary = await anyio.to_thread.run_sync(build)
            return reply(ReindexOutput(
                generation=summary.generation, files=summary.files, chunks=summary.chunks,
                seconds=round(time.perf_counter() - started, 3),
                modalities={n: ModalityStatus(built=bool(s.get("built")), reason=s.get("reason"))
                            for n, s in summary.modalities.items()},
                skipped=summary.skipped,
                note="changes are found by comparing the tree with the index; the paths "
                     "given were checked, not used to narrow the update" if checked else None,
            ))  # fmt: skip

    return server


def _search_output(index: Index, response: Response, page: list[Result]) -> SearchOutput:
    every = response.intent in EVERY_MATCH_INTENTS
    hits = [
        SearchHit(
            path=r.path,
            start_line=r.start_line,
            end_line=r.end_line,
            score=r.score,
            symbol=r.symbol,
            kind=r.kind,
            signature=_signature(index, r.path, r.start_line, r.snippet, r.lines),
            lines=[n for n in r.lines if r.start_line <= n <= r.end_line][:50],
            matches=_matches(index, r.path, r.lines) if every else [],
            match_count=len(r.lines) if every else 0,
            boost=r.boost,
            demoted=r.demoted,
            stale=r.stale,
            provenance=[
                Contribution(modality=p.modality, rank=p.rank, contribution=p.contribution)
                for p in r.provenance
            ],
        )
        for r in page
    ]
    return SearchOutput(
        query=response.query, intent=response.intent, confidence=response.confidence,
        target=response.target, fusion_strategy=response.fusion_strategy,
        preset=response.preset, modalities=response.modalities, weights=response.weights,
        k=response.k, generation=response.generation, timings_ms=response.timings_ms,
        total_ms=response.total_ms, unavailable=response.unavailable, notes=response.notes,
        results=hits, truncated=False, next_cursor=None, degraded=response.damaged,
    )  # fmt: skip


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _hits_output(index: Index, query: str, source: str, hits: list[Hit], budget: int) -> HitsOutput:
    results = [
        SymbolHit(
            path=h.path,
            start_line=h.start_line,
            end_line=h.end_line,
            symbol=h.symbol,
            kind=h.kind,
            signature=_signature(index, h.path, h.start_line, h.snippet, list(h.lines))
            if h.path
            else "",
            lines=list(h.lines)[:100],
            score=h.score,
            extra=_jsonable(h.extra),
        )
        for h in hits
    ]
    output = HitsOutput(query=query, source=source, results=results, truncated=False,
                        total=len(hits))  # fmt: skip
    if source == "graph":
        note = getattr(index.searcher("graph"), "behind_note", lambda: None)()
        if note:
            output.notes.append(note)
    while output.results and tokens(output) > budget:
        output.results.pop()
        output.truncated = True
    return output


@contextlib.contextmanager
def background_watcher(
    root: Path | str, index_dir: Path | str | None = None, **options: Any
) -> Iterator[Any]:
    """Run a `watch.Watcher` for the repository in a daemon thread while the block runs;
    stopped (and joined, up to `stop_timeout_s`) on the way out. A failing update is logged
    and retried: the server keeps answering from the last committed generation."""
    from maguyva.build.watch import Watcher

    stop_timeout = float(options.pop("stop_timeout_s", 30.0))
    index = Index.open(root, index_dir=index_dir)
    watcher = Watcher(index.root, config={"index_dir": str(index.index_dir)}, **options)

    def run() -> None:
        while not watcher.stop_event.is_set():
            try:
                watcher.run()
            except Exception:  # a bug or an I/O error must not end the watching for good
                log.exception("watcher failed; restarting in %.1fs", watcher.poll_s)
                watcher.stop_event.wait(watcher.poll_s)

    thread = threading.Thread(target=run, name="maguyva-watch", daemon=True)
    thread.start()
    log.info("watching %s", index.root)
    try:
        yield watcher
    finally:
        watcher.stop()
        thread.join(timeout=stop_timeout)
        if thread.is_alive():
            log.warning("the watcher did not stop within %.0fs", stop_timeout)


def serve(
    root: Path | str,
    index_dir: Path | str | None = None,
    log_level: str = "WARNING",
    watch: bool = False,
) -> None:
    """Run the server on stdio until the client disconnects. Logs go to stderr only.
    `watch`: keep the index current meanwhile (see `background_watcher`)."""
    logging.basicConfig(
        level=getattr(logging, log_level.upper(), logging.WARNING),
        format="maguyva-mcp: %(levelname)s: %(name)s: %(message)s",
        stream=sys.stderr,
        force=True,
    )
    index = Index.open(root, index_dir=index_dir)
    server = create_server(root, index_dir, index=index)
    log.info("serving %s", root)
    warm_in_background(index)
    watching = (
        background_watcher(root, index_dir, on_update=lambda _summary: warm_in_background(index))
        if watch
        else contextlib.nullcontext()
    )
    with watching:
        anyio.run(run_stdio, server)  # the SDK's stdio, every request answered (mcp_stdio)


def warm_in_background(index: Index) -> threading.Thread:
    """Open the newest generation's engine, every modality and the chunk segments in a
    daemon thread (`Index.warm`), at startup and after each update the watcher commits: the
    agent's next question then finds them loaded instead of paying for it. A failure is
    logged; the question that follows reports it properly."""

    def run() -> None:
        try:
            took = index.warm()
            log.info("warm: %s", {k: round(v, 3) for k, v in took.items()})
        except Exception:  # a damaged index is reported by the questions, with the fix
            log.warning("warming the index failed", exc_info=True)

    thread = threading.Thread(target=run, name="maguyva-warm", daemon=True)
    thread.start()
    return thread
