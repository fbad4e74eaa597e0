"""Shaping the MCP tools' results: compact JSON replies, tool errors in one sentence, the
token budget (signatures first, bodies while room remains) and the continuation cursors."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import math
import re
from collections.abc import Iterator
from typing import Any

import pydantic_core
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from maguyva.api import Index
from maguyva.errors import BadQueryError, IndexNotFoundError, MaguyvaError
from maguyva.interfaces.mcp_models import (
    CHARS_PER_TOKEN,
    MAX_MATCH_CHARS,
    MAX_MATCHES_SHOWN,
    Contribution,
    HitsOutput,
    MatchLine,
    SearchHit,
    SearchOutput,
    SymbolHit,
)
from maguyva.interfaces.shaping import (
    lines_in_span,
    lists_every_match,
    provenance,
    response_fields,
)
from maguyva.modalities.protocol import ReportsBehind
from maguyva.model import Hit, Response, Result

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


def _search_output(index: Index, response: Response, page: list[Result]) -> SearchOutput:
    every = lists_every_match(response)
    hits = [
        SearchHit(
            path=r.path,
            start_line=r.start_line,
            end_line=r.end_line,
            score=r.score,
            symbol=r.symbol,
            kind=r.kind,
            signature=_signature(index, r.path, r.start_line, r.snippet, r.lines),
            lines=lines_in_span(r)[:50],
            matches=_matches(index, r.path, r.lines) if every else [],
            match_count=len(r.lines) if every else 0,
            boost=r.boost,
            demoted=r.demoted,
            stale=r.stale,
            provenance=[Contribution(**row) for row in provenance(r)],
        )
        for r in page
    ]
    shared = {k: v for k, v in response_fields(response).items() if k in SearchOutput.model_fields}
    return SearchOutput(**shared, results=hits, truncated=False, next_cursor=None,
                        degraded=response.damaged)  # fmt: skip


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
        graph = index.searcher("graph")
        if isinstance(graph, ReportsBehind) and (note := graph.behind_note()):
            output.notes.append(note)
    while output.results and tokens(output) > budget:
        output.results.pop()
        output.truncated = True
    return output
