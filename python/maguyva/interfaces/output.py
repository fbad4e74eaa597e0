"""Rendering a `Response` for people (ripgrep-like text) and for programs (JSON Lines).

`--json` follows ripgrep's printer (`crates/printer/src/json.rs`): one JSON object per line,
`{"type": "begin"|"match"|"context"|"end"|"summary", "data": {...}}`, strings as
`{"text": ...}` (or `{"bytes": base64}` when not UTF-8), `submatches` with half-open byte
offsets into `lines`, 1-based `line_number` and the line's byte offset in the file. Maguyva's
own fields ride along under a `"maguyva"` key (the result's rank, score, span, symbol and
provenance on `begin`; rank and score on each `match`; intent, routing and timings on
`summary`), so an rg consumer keeps working and a Maguyva-aware one sees why.
"""

from __future__ import annotations

import base64
import codecs
import json
import math
import os
import re
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from maguyva import _core
from maguyva.interfaces.shaping import (
    heading,
    lists_every_match,
    provenance_line,
    response_fields,
    result_fields,
)
from maguyva.model import Response, Result
from maguyva.repo.paths import resolve_root
from maguyva.repo.reader import read_bytes

MAX_MATCH_LINES = 5
"""Match lines shown per result of a natural-language question (the chunk's first line when
nothing matched)."""
MAX_EVERY_MATCH = 10_000
"""Safety cap on the lines listed per file for questions whose every match is shown."""

_PATH, _LINE, _MATCH, _DIM, _RESET = "\x1b[35m", "\x1b[32m", "\x1b[1;31m", "\x1b[2m", "\x1b[0m"


def use_color(choice: str, stream: TextIO) -> bool:
    """ripgrep's rule: `always`, `never`, or for `auto` a tty with TERM set and not dumb and
    NO_COLOR unset."""
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    term = os.environ.get("TERM", "")
    return bool(term) and term != "dumb" and stream.isatty()


def _text(value: bytes) -> dict[str, str]:
    try:
        return {"text": value.decode("utf-8")}
    except UnicodeDecodeError:
        return {"bytes": base64.b64encode(value).decode("ascii")}


def _elapsed(seconds: float) -> dict[str, Any]:
    secs = int(seconds)
    return {"secs": secs, "nanos": int((seconds - secs) * 1e9), "human": f"{seconds:.6f}s"}


@dataclass(slots=True)
class _Line:
    number: int
    offset: int
    raw: bytes
    is_match: bool
    spans: list[tuple[int, int]]


class Highlighter:
    """Finds what to highlight in a line: the regex, or the query's target as a literal."""

    def __init__(self, response: Response, regex: str | None, case: str | None) -> None:
        pattern = regex
        # A literal (or nothing) is what the native printer highlights; a regex stays here.
        self.native = regex is None
        self.literal: bytes | None = None
        if pattern is None:
            target = (response.target or "").strip().strip('"')
            pattern = re.escape(target) if target and len(target) <= 200 else None
            self.literal = target.encode() if pattern is not None else None
        sensitive = case == "sensitive" or (
            case in (None, "smart") and pattern is not None and pattern != pattern.lower()
        )
        flags = 0 if sensitive else re.IGNORECASE
        self.insensitive = not sensitive
        try:
            self.regex = re.compile(pattern.encode(), flags) if pattern else None
        except re.error:
            self.regex = None

    def spans(self, raw: bytes) -> list[tuple[int, int]]:
        if self.regex is None:
            return []
        return [(m.start(), m.end()) for m in self.regex.finditer(raw) if m.end() > m.start()]


class Renderer:
    """Turns responses into output lines, reading the files to show real line content."""

    def __init__(
        self,
        root: Path,
        *,
        color: bool = False,
        context: int = 0,
        max_lines: int = MAX_MATCH_LINES,
        regex: str | None = None,
        case: str | None = None,
        explain: bool = False,
        max_count: int | None = None,
        native: bool = True,
        batched: bool = True,
    ) -> None:
        self.root = root
        self.color = color
        self.context = max(0, context)
        self.max_lines = max_lines
        self.max_count = max_count  # -m/--max-count: matching lines per file, as in ripgrep
        self.regex = regex
        self.case = case
        self.explain = explain
        self.native = native  # print lines in Rust (`_core.print_lines`) where it applies
        self.batched = batched  # and every result's in one call (`_core.print_results`)

    def _file_lines(self, path: str) -> list[tuple[int, bytes]]:
        """(byte offset, line without newline) for every line of the file; [] if unreadable."""
        try:
            data = read_bytes(self.root, path)
        except (OSError, ValueError):
            return []
        out, offset = [], 0
        for raw in data.split(b"\n"):
            out.append((offset, raw))
            offset += len(raw) + 1
        if out and out[-1][1] == b"" and data.endswith(b"\n"):
            out.pop()
        return out

    def lines_of(self, result: Result, light: Highlighter, every: bool = False) -> list[_Line]:
        """The match lines of a result (its recorded lines, else lines with the target, else
        its first line) plus `context` lines around each. With `every` (exact, regex,
        definition and reference questions) every recorded line of the file is listed, as
        ripgrep lists them; otherwise those inside the result's chunk, at most `max_lines`.
        `max_count` caps either, as ripgrep's `-m`."""
        file_lines = self._file_lines(result.path)
        if not file_lines:
            return []
        last = min(result.end_line, len(file_lines))
        if every:
            inside = [n for n in result.lines if 1 <= n <= len(file_lines)]
        else:
            inside = [n for n in result.lines if result.start_line <= n <= last]
        if not inside:
            inside = [
                n for n in range(result.start_line, last + 1) if light.spans(file_lines[n - 1][1])
            ]
        if not inside:
            inside = [min(result.start_line, len(file_lines))]
        matches = sorted(set(inside))[: self._cap(every)]
        wanted: dict[int, bool] = {}
        for n in matches:
            for m in range(max(1, n - self.context), min(len(file_lines), n + self.context) + 1):
                wanted[m] = wanted.get(m, False) or m == n
        out = []
        for n in sorted(wanted):
            offset, raw = file_lines[n - 1]
            out.append(_Line(n, offset, raw, wanted[n], light.spans(raw) if wanted[n] else []))
        return out

    def _cap(self, every: bool) -> int:
        cap = MAX_EVERY_MATCH if every else self.max_lines
        if self.max_count is not None:
            cap = min(cap, self.max_count) if every else self.max_count
        return cap

    def _native_for(self, light: Highlighter, every: bool) -> bool:
        return self.native and light.native and self._cap(every) >= 0

    def printed(
        self,
        result: Result,
        light: Highlighter,
        every: bool,
        json_parts: tuple[str, str] | None = None,
    ) -> tuple[bytes, int, int, int]:
        """`lines_of` printed in Rust, one buffer per result: `(bytes, matched lines, matches,
        bytes of the lines)`. A common literal lists tens of thousands of lines; a Python
        object per line was most of its time (issue 21)."""
        try:
            data = read_bytes(self.root, result.path)
        except (OSError, ValueError):
            return b"", 0, 0, 0
        path_json, on_match = json_parts if json_parts else (None, None)
        return _core.print_lines(
            data, result.start_line, result.end_line, result.lines, every=every,
            cap=self._cap(every), context=self.context, literal=light.literal,
            insensitive=light.insensitive, color=self.color and json_parts is None,
            json_path=path_json, json_match=on_match,
        )  # fmt: skip

    # -- JSON Lines ----------------------------------------------------------------------------

    def json_lines(self, response: Response, elapsed_s: float) -> Iterator[str | bytes]:
        """ripgrep's JSON Lines; a result's match lines come as one `bytes` block (UTF-8,
        newlines included) when printed natively, every other message as a `str` line."""
        light = Highlighter(response, self.regex, self.case)
        every = lists_every_match(response)
        native = self._native_for(light, every)
        matched_lines = matches = 0
        for rank, result in enumerate(response.results, start=1):
            started = time.perf_counter()
            path = {"text": result.path}
            info = {"rank": rank, **result_fields(result)}
            yield _dump({"type": "begin", "data": {"path": path, "maguyva": info}})
            if native:
                parts = (_dump(path), _dump({"rank": rank, "score": result.score}))
                block, n_match, file_matches, searched = self.printed(result, light, every, parts)
                if block:
                    yield block
                matched_lines += n_match
                matches += file_matches
                stats = _stats(time.perf_counter() - started, 1, 1 if n_match else 0, searched,
                               n_match, file_matches)  # fmt: skip
                yield _dump({"type": "end", "data": {"path": path, "binary_offset": None,
                                                     "stats": stats}})  # fmt: skip
                continue
            lines = self.lines_of(result, light, every)
            file_matches = 0
            for line in lines:
                raw = line.raw + b"\n"
                data: dict[str, Any] = {
                    "path": path, "lines": _text(raw), "line_number": line.number,
                    "absolute_offset": line.offset,
                    "submatches": [
                        {"match": _text(line.raw[s:e]), "start": s, "end": e}
                        for s, e in line.spans
                    ],
                }  # fmt: skip
                if line.is_match:
                    data["maguyva"] = {"rank": rank, "score": result.score}
                    file_matches += max(1, len(line.spans))
                yield _dump({"type": "match" if line.is_match else "context", "data": data})
            n_match = sum(1 for line in lines if line.is_match)
            matched_lines += n_match
            matches += file_matches
            stats = _stats(time.perf_counter() - started, 1, 1 if n_match else 0,
                           sum(len(x.raw) + 1 for x in lines), n_match, file_matches)  # fmt: skip
            yield _dump({"type": "end", "data": {"path": path, "binary_offset": None,
                                                 "stats": stats}})  # fmt: skip
        summary = response_fields(response)
        total = _stats(elapsed_s, len(response.results), len(response.results), 0,
                       matched_lines, matches)  # fmt: skip
        yield _dump({"type": "summary", "data": {"elapsed_total": _elapsed(elapsed_s),
                                                 "stats": total, "maguyva": summary}})  # fmt: skip

    # -- people ---------------------------------------------------------------------------------

    def text(self, response: Response) -> Iterator[str | bytes]:
        """ripgrep-like lines; a result's match lines come as one `bytes` block (UTF-8,
        newlines included) when printed natively, every other line as a `str`."""
        light = Highlighter(response, self.regex, self.case)
        every = lists_every_match(response)
        native = self._native_for(light, every)
        if self.explain:
            yield from explain_header(response)
        if native and self.batched:
            block = self.printed_all(response.results, light, every)
            if block is not None:
                if block:
                    yield block
                return
        for rank, result in enumerate(response.results, start=1):
            if rank > 1:
                yield ""
            yield f"{self._paint(shown_name(result.path), _PATH)}{heading(result)}"
            if self.explain:
                yield "   " + self._paint(provenance_line(result), _DIM)
            if native:
                block = self.printed(result, light, every)[0]
                if block:
                    yield block
                continue
            previous = None
            for line in self.lines_of(result, light, every):
                if previous is not None and line.number > previous + 1:
                    yield "--"
                previous = line.number
                sep = ":" if line.is_match else "-"
                body = self._highlight(line) if line.is_match else _decode(line.raw)
                yield f"{self._paint(str(line.number), _LINE)}{sep}{body}"

    def files(self, response: Response) -> Iterator[str]:
        seen: set[str] = set()
        for result in response.results:
            if result.path not in seen:
                seen.add(result.path)
                yield self._paint(shown_name(result.path), _PATH)

    def printed_all(self, results: list[Result], light: Highlighter, every: bool) -> bytes | None:
        """`text`'s output for every result in one Rust call (`_core.print_results`): the
        headings made here, each file read (with the same checks as `read_bytes`) and its
        lines printed in Rust, files in parallel. None when a heading cannot be encoded as
        UTF-8 (the per-result path says so as it always did)."""
        items = []
        for result in results:
            head = f"{self._paint(shown_name(result.path), _PATH)}{heading(result)}"
            if self.explain:
                head += "\n   " + self._paint(provenance_line(result), _DIM)
            try:
                encoded = head.encode("utf-8")
            except UnicodeEncodeError:
                return None
            items.append((encoded, result.path, result.start_line, result.end_line, result.lines))
        return _core.print_results(
            os.fspath(resolve_root(self.root)), items, every=every, cap=self._cap(every),
            context=self.context, literal=light.literal, insensitive=light.insensitive,
            color=self.color,
        )  # fmt: skip

    def _paint(self, text: str, code: str) -> str:
        return f"{code}{text}{_RESET}" if self.color else text

    def _highlight(self, line: _Line) -> str:
        if not self.color or not line.spans:
            return _decode(line.raw)
        out, at = [], 0
        for start, end in line.spans:
            if start < at:
                continue
            out.append(_decode(line.raw[at:start]))
            out.append(self._paint(_decode(line.raw[start:end]), _MATCH))
            at = end
        out.append(_decode(line.raw[at:]))
        return "".join(out)


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").rstrip("\r")


def _dump(message: dict[str, Any]) -> str:
    return dumps_json(message, ensure_ascii=False, separators=(",", ":"))


def dumps_json(value: Any, **options: Any) -> str:
    """`json.dumps` that never writes `Infinity` or `NaN` (not JSON: strict parsers refuse
    them): a non-finite number is written as null."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError:
        return json.dumps(_finite(value), allow_nan=False, **options)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


_UNSAFE = re.compile(
    r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff\\]"
)


def shown_name(name: str) -> str:
    """A file name as human output prints it: control characters (a newline would forge a
    result line) and bidirectional overrides (U+202E reorders what a terminal shows) are
    escaped, as `\\n`, `\\u202e`; a backslash is doubled so the escape is unambiguous.
    JSON output carries the name as it is."""
    if not _UNSAFE.search(name):
        return name
    return _UNSAFE.sub(_escape_char, name)


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    named = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\"}
    if char in named:
        return named[char]
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


def _stats(elapsed: float, searches: int, with_match: int, searched: int, lines: int,
           matches: int) -> dict[str, Any]:  # fmt: skip
    return {"elapsed": _elapsed(elapsed), "searches": searches,
            "searches_with_match": with_match, "bytes_searched": searched,
            "bytes_printed": 0, "matched_lines": lines, "matches": matches}  # fmt: skip


def explain_header(response: Response) -> Iterator[str]:
    """Intent, routing, weights, unavailable modalities, notes and timings."""
    yield (f"intent: {response.intent} (confidence {response.confidence:.2f}, rule "
           f"{response.rule})  target: {response.target!r}")  # fmt: skip
    weights = ", ".join(f"{m}={w:g}" for m, w in response.weights.items())
    yield (f"strategy: {response.fusion_strategy}  preset: {response.preset}  k: {response.k}  "
           f"modalities: {', '.join(response.modalities) or '-'}  weights: {weights}")  # fmt: skip
    for name, reason in response.unavailable.items():
        yield f"unavailable: {name}: {reason}"
    for note in response.notes:
        yield f"note: {note}"
    timing = ", ".join(f"{k} {v:.2f}ms" for k, v in response.timings_ms.items())
    yield f"timings: {timing}; total {response.total_ms:.2f}ms"
    yield ""


def format_response(response: Response, explain: bool) -> str:
    """Compact human-readable results (path:start-end, symbol, snippet head); with `explain`,
    the routing header and each result's provenance. Used by the demo."""
    out: list[str] = list(explain_header(response)) if explain else []
    for number, result in enumerate(response.results, start=1):
        out.append(f"{number}. {shown_name(result.path)}{heading(result)}")
        if result.lines:
            shown = ", ".join(str(n) for n in result.lines[:20])
            more = f" (+{len(result.lines) - 20})" if len(result.lines) > 20 else ""
            out.append(f"   lines: {shown}{more}")
        if explain:
            out.append("   " + provenance_line(result))
        for line in result.snippet.splitlines()[:4]:
            out.append(f"   | {line}")
    if not response.results:
        out.append("no results")
    return "\n".join(out)


def write_lines(lines: Iterable[str | bytes], stream: TextIO | None = None) -> None:
    """Each `str` as a line; each `bytes` block (UTF-8, newlines included) straight to the
    stream's binary buffer when it encodes UTF-8, else decoded and written as text (the same
    characters either way)."""
    stream = stream or sys.stdout  # looked up at call time (tests and redirections swap it)
    raw = _utf8_buffer(stream)
    for line in lines:
        if isinstance(line, bytes):
            if raw is not None:
                stream.flush()
                raw.write(line)
            else:
                stream.write(line.decode("utf-8"))
        else:
            stream.write(line + "\n")
    stream.flush()


def _utf8_buffer(stream: TextIO) -> Any:
    """The binary buffer under a UTF-8 text stream with `\n` line ends, else None."""
    buffer = getattr(stream, "buffer", None)
    try:
        utf8 = codecs.lookup(getattr(stream, "encoding", None) or "").name == "utf-8"
    except LookupError:
        return None
    return buffer if utf8 and os.linesep == "\n" else None
