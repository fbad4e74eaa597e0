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

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field, ValidationError

from maguyva.api import Index
from maguyva.errors import BadQueryError
from maguyva.interfaces.mcp_models import (
    DEFAULT_BUDGET,
    MAX_READ_LINES,
    WHOLE,
    Budget,
    ChunkOutput,
    HitsOutput,
    Modality,
    ModalityStatus,
    ReindexOutput,
    SearchOutput,
    StatusOutput,
)
from maguyva.interfaces.mcp_results import (
    _body,
    _cursor_key,
    _hits_output,
    _search_output,
    decode_cursor,
    encode_cursor,
    fit_search,
    reply,
    tokens,
    tool_errors,
)
from maguyva.interfaces.mcp_stdio import run_stdio
from maguyva.query.filters import check_language, check_path_glob

log = logging.getLogger("maguyva.mcp")
_READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)


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
    _add_search(server, index)
    _add_lookups(server, index)
    _add_reading(server, index)
    _add_reindex(server, index)
    return server


def _add_search(server: MCPServer, index: Index) -> None:
    """`search`, the one question interface, with its budget and cursor."""

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
        k: Annotated[int, Field(ge=1, le=100, description="number of results"), WHOLE] = 10,
        preset: Literal["quick", "default", "thorough"] = "default",
        modalities: Annotated[
            list[Modality] | None,
            Field(min_length=1, max_length=4, description="run exactly these retrievers"),
        ] = None,
        path_glob: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=500,
                description="only paths matching this glob (relative to the root; a slash-free "
                "glob matches the file name)",
            ),
        ] = None,
        language: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=40,
                description="only files in this language "
                "(python, rust, go, typescript, ...; py, rs, ts work too)",
            ),
        ] = None,
        budget_tokens: Budget = DEFAULT_BUDGET,
        cursor: Annotated[str | None, Field(max_length=200)] = None,
    ) -> Annotated[CallToolResult, SearchOutput]:
        """Answer a question about the code: where something is defined, who calls it, what
        breaks if it changes, an exact string, or how something works. Returns ranked chunks
        with per-retriever provenance; bodies are included while the token budget allows."""
        with tool_errors():
            if path_glob is not None:  # named as the argument; `Index.search` checks again
                check_path_glob(path_glob, "path_glob")
            if language is not None:
                check_language(language, "language")
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


def _add_lookups(server: MCPServer, index: Index) -> None:
    """The look-ups by symbol: `find_symbol`, `find_references`, `impact`."""

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
            str | None,
            Field(min_length=1, max_length=40, description="class, function, method, ..."),
        ] = None,
        limit: Annotated[int, Field(ge=1, le=200), WHOLE] = 20,
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
            int,
            Field(ge=1, le=5, description="1: direct references; more: transitive callers"),
            WHOLE,
        ] = 1,
        limit: Annotated[int, Field(ge=1, le=500), WHOLE] = 50,
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
        depth: Annotated[int, Field(ge=1, le=6), WHOLE] = 2,
        limit: Annotated[int, Field(ge=1, le=500), WHOLE] = 100,
        budget_tokens: Budget = DEFAULT_BUDGET,
    ) -> Annotated[CallToolResult, HitsOutput]:
        """Blast radius: everything that depends on a symbol up to `depth` hops, nearest and
        most certain first (test files last, flagged)."""
        with tool_errors():
            hits = index.impact(symbol, depth=depth, limit=limit)
            return reply(_hits_output(index, symbol, "graph", hits, budget_tokens))


def _add_reading(server: MCPServer, index: Index) -> None:
    """`read_chunk` (lines of a file, within the budget) and `index_status`."""

    @server.tool(annotations=_READ_ONLY)
    def read_chunk(
        path: Annotated[
            str, Field(min_length=1, max_length=1000, description="relative to the repository root")
        ],
        start_line: Annotated[int, Field(ge=1), WHOLE] = 1,
        end_line: Annotated[int, Field(ge=1), WHOLE] | None = None,
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


def _add_reindex(server: MCPServer, index: Index) -> None:
    """`reindex`, the one writing tool: builds run one at a time, off the event loop."""
    build_lock = threading.Lock()

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
