"""The MCP server's stdio transport with a guard: every request gets a reply.

The SDK's `stdio_server` (mcp 2.3.0) hands a line it cannot decode (malformed JSON, a batch
array, a lone surrogate escape, nesting deeper than its parser allows, an object `id`) to the
session as an exception, which drops it: no reply, and the client waits for ever. The guard
reads the wire's lines first and answers those with a JSON-RPC error (-32700 parse error, or
-32600 invalid request with the request's `id` when one can be found) through the SDK's own
write stream, so replies never interleave; the lines the SDK decodes pass through untouched.
A notification gets no reply, as JSON-RPC says (docs/interfaces.md, "Requests the SDK drops").
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import sys
from collections.abc import AsyncIterable, Iterator
from io import TextIOWrapper
from typing import IO, Any, cast

import anyio
import mcp_types as types
from mcp.server import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

log = logging.getLogger("maguyva.interfaces.mcp_stdio")
scanstring = cast(Any, json.decoder).scanstring  # the decoder's own string scanner (untyped)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def _error(request_id: int | str | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
    )


def _valid_id(value: Any) -> int | str | None:
    """JSON-RPC ids are strings or numbers; MCP's are strings or integers."""
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None


def top_level_id(line: str) -> int | str | None:
    """The `id` of a JSON object too deep to parse, found by scanning its top level only (the
    client then gets its answer under the id it waits for)."""
    text = line.strip()
    if not text.startswith("{"):
        return None
    depth, i, decoder = 0, 0, json.JSONDecoder()
    try:
        while i < len(text):
            c = text[i]
            if c == '"':
                key, i = scanstring(text, i + 1)
                j = i
                while j < len(text) and text[j] in " \t\r\n":
                    j += 1
                if depth == 1 and key == "id" and j < len(text) and text[j] == ":":
                    j += 1
                    while j < len(text) and text[j] in " \t\r\n":
                        j += 1
                    return _valid_id(decoder.raw_decode(text, j)[0])
                continue
            depth += c in "{["
            depth -= c in "}]"
            i += 1
    except (ValueError, RecursionError):
        return None
    return None


def error_for(line: str) -> types.JSONRPCError | None:
    """The error reply for a line the SDK cannot decode; None when it can (or when the line
    is a notification, or blank: nothing to answer)."""
    if not line.strip():
        return None
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        errors = exc.errors()
        why = str(errors[0]["msg"] if errors else "not a JSON-RPC message")[:200]
    else:  # a request whose id the SDK rejects decodes as a notification: it would get nothing
        if not isinstance(message, types.JSONRPCNotification) or '"id"' not in line:
            return None
        data = json.loads(line)  # decodable, and a notification is small
        if not isinstance(data, dict) or "id" not in data:
            return None
        return _error(None, INVALID_REQUEST, "Invalid request: id must be a string or an integer")
    try:
        data = json.loads(line)
    except RecursionError:
        return _error(top_level_id(line), INVALID_REQUEST, "Invalid request: nested too deeply")
    except ValueError:
        return _error(None, PARSE_ERROR, "Parse error: the line is not JSON")
    if isinstance(data, list):
        return _error(None, INVALID_REQUEST, "Invalid request: batches are not supported")
    if not isinstance(data, dict):
        return _error(None, INVALID_REQUEST, "Invalid request: not a JSON-RPC object")
    if "id" not in data and isinstance(data.get("method"), str):
        log.warning("dropped a notification the SDK cannot decode: %s", why)
        return None
    request_id = _valid_id(data.get("id"))
    if "id" in data and request_id is None:
        return _error(None, INVALID_REQUEST, "Invalid request: id must be a string or an integer")
    if _has_lone_surrogate(data):
        why = "a string holds a lone surrogate (an unpaired \\ud800-\\udfff escape)"
    return _error(request_id, INVALID_REQUEST, f"Invalid request: {why}")


def _has_lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


class GuardedLines:
    """The wire's lines for the SDK's reader: the decodable ones pass, the others are answered
    through the SDK's write stream (given by `attach` once the transport is up)."""

    def __init__(self, lines: AsyncIterable[str]) -> None:
        self._lines = lines.__aiter__()
        self._ready = anyio.Event()
        self._write: Any = None

    def attach(self, write_stream: Any) -> None:
        self._write = write_stream
        self._ready.set()

    def __aiter__(self) -> GuardedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._lines.__anext__()
            if not line.strip():
                continue
            reply = error_for(line)
            if reply is None:
                return line
            log.warning("answered an undecodable request: %s", reply.error.message)
            await self._ready.wait()
            await self._write.send(SessionMessage(reply))


class _Unowned(TextIOWrapper):
    """Closing the text layer leaves the wire's buffer to its owner."""

    def close(self) -> None:
        with contextlib.suppress(ValueError):
            self.detach()


@contextlib.contextmanager
def claimed_stdin() -> Iterator[IO[bytes]]:
    """Fd 0 for the wire only, as the SDK's own claim: while serving it points at the null
    device, so a child process or handler reads EOF instead of stealing requests."""
    try:
        private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        yield sys.stdin.buffer
        return
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
    except OSError:
        os.close(private)
        yield sys.stdin.buffer
        return
    try:
        yield os.fdopen(private, "rb", closefd=False)
    finally:  # `private` stays open: the reader thread may still block on it
        os.dup2(private, 0)


async def run_stdio(server: MCPServer) -> None:
    """`server.run_stdio_async()` with the guard in front of the SDK's reader."""
    lowlevel = getattr(server, "_lowlevel_server", None)
    if lowlevel is None:  # another SDK layout: serve unguarded rather than not at all
        log.warning("the MCP SDK changed; undecodable requests may get no reply")
        await server.run_stdio_async()
        return
    with claimed_stdin() as buffer:
        text = _Unowned(buffer, encoding="utf-8", errors="replace")
        lines = GuardedLines(cast(AsyncIterable[str], anyio.wrap_file(text)))
        async with stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream):
            lines.attach(write_stream)
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


__all__ = ["GuardedLines", "error_for", "run_stdio", "top_level_id"]
