"""Pasted error lines, traceback frames and log lines, read for what the source contains.

`NotImplementedError: Auth hooks must be callable.` is how a traceback ends, but the source has
`raise NotImplementedError("Auth hooks must be callable.")`: the line as typed occurs nowhere,
its message does. A log line carries a timestamp, a level and a logger name the source never
has, and a message whose variable parts were formatted in. This module splits such a line into
what to search for: the message (and shorter fragments of it, for a message with runtime values
in it, best first), the exception type (whose definition is worth showing), or for a traceback
frame the file and the function. It is pure string work; the engine checks which candidate
occurs in the index.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from maguyva.support.lazyre import lazy_compile

# `ValueError: ...`, or a module-qualified type of any name (`requests.exceptions.InvalidURL: ...`)
_ERROR_LINE = lazy_compile(
    r"^\s*(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Fault)"
    r"|(?:[a-z_]\w*\.)+[A-Z]\w*)\s*:\s*(?P<msg>\S.*?)\s*$"
)
_FRAME = lazy_compile(r'^\s*File\s+"(?P<path>[^"]+)",\s+line\s+\d+(?:,\s+in\s+(?P<func>[\w.<>]+))?')
_LOG_LINE = lazy_compile(
    r"^\s*(?:\[?\d{4}-\d\d-\d\d[T ][\d:.,]+(?:Z|[+-]\d\d:?\d\d)?\]?\s*)?"
    r"(?:\[?(?:DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL|FATAL)\]?)\s*[:\-]?\s*"
    r"(?:(?:[\w.\-]+)\s*:\s+)?(?P<msg>\S.*?)\s*$"
)
_QUOTES = "\"'`"
# runtime values formatted into a message: quoted parts, numbers, paths, hex ids
_VARIABLE = lazy_compile(
    r"'[^']*'|\"[^\"]*\"|`[^`]*`|<[^>]*>|\b0x[0-9a-fA-F]+\b|\d+(?:\.\d+)?|\S*/\S*"
)
MIN_FRAGMENT = 10
MIN_WORDS = 3
MAX_CANDIDATES = 16


@dataclass(frozen=True, slots=True)
class Pasted:
    """What a pasted line asks for. `candidates` are literals to search, best first."""

    kind: str  # "error" | "log" | "frame"
    candidates: list[str] = field(default_factory=list)
    exc_type: str | None = None
    path: str | None = None
    func: str | None = None


def parse_pasted(query: str) -> Pasted | None:
    """The parts of a pasted error line, traceback frame or log line; None for anything else
    (a one-line query only: a multi-line paste is a snippet)."""
    text = query.strip()
    if not text or "\n" in text:
        return None
    frame = _FRAME.match(text)
    if frame:
        func = frame.group("func")
        func = None if func is None or func.startswith("<") else func
        return Pasted("frame", [], path=frame.group("path"), func=func)
    error = _ERROR_LINE.match(text)
    if error:
        exc = error.group("type")
        return Pasted("error", message_candidates(error.group("msg")), exc_type=exc)
    log = _LOG_LINE.match(text)
    if log and log.group("msg") != text:
        return Pasted("log", message_candidates(log.group("msg")))
    return None


def message_candidates(message: str) -> list[str]:
    """The message as written (surrounding quotes dropped), then without its final full stop,
    then its longest constant fragments (the runtime values cut out), longest first."""
    message = message.strip()
    if len(message) > 1 and message[0] == message[-1] and message[0] in _QUOTES:
        message = message[1:-1].strip()
    out: list[str] = []

    def add(candidate: str) -> None:
        candidate = candidate.strip().strip(":;,").strip()
        if candidate and candidate not in out:
            out.append(candidate)

    add(message)
    add(message.rstrip(".!"))
    fragments = [f for f in _VARIABLE.split(message) for f in f.split(": ")]
    for fragment in sorted(fragments, key=len, reverse=True):
        if len(fragment.strip()) >= MIN_FRAGMENT:
            add(fragment)
    # word prefixes, longest first: the constant head of an f-string message
    # ("interval is not positive (got -1)" -> "interval is not positive")
    words = message.split()
    for n in range(len(words) - 1, MIN_WORDS - 1, -1):
        prefix = " ".join(words[:n])
        if len(prefix) >= MIN_FRAGMENT:
            add(prefix)
    return out[:MAX_CANDIDATES]
