"""A subset of Zoekt's query syntax, shared by the CLI, the Python API and the MCP server.

    "exact phrase"         kept with its quotes, so the classifier sees an exact-match query
    /regex/                regular expression (also `regex:PATTERN`)
    file:GLOB  path:GLOB   restrict to matching paths (f: too); a value without * ? [ matches
                           as a substring (`file:client` = `*client*`)
    lang:NAME language:NAME  restrict to a language (python, rust, ...)
    case:yes|no|auto       case sensitivity (auto = smart case)
    sym:NAME               a symbol definition named NAME
    mode:MODALITY          run only that modality (text, structural, graph, semantic)
    -term -"phrase" -file:GLOB -lang:NAME   negation

Everything else is left as plain words for the intent classifier, so "who calls parse_config"
parses to itself. Deliberate differences from Zoekt: `file:` takes a glob, not a regex
(agents trained on GitHub and ripgrep write globs); `or` and parentheses are plain words.
A multi-line query or a "code similar to:" query is a snippet and is not parsed at all.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field

from maguyva.errors import BadQueryError
from maguyva.model import MODALITIES

_FIELDS = {
    "file": "file", "f": "file", "path": "file",
    "lang": "lang", "language": "lang",
    "case": "case",
    "sym": "sym",
    "regex": "regex",
    "content": "content", "c": "content",
    "mode": "mode",
}  # fmt: skip
_FIELD_TOKEN = re.compile(r"^([A-Za-z]+):(.+)$", re.DOTALL)
_CASE = {"yes": "sensitive", "no": "insensitive", "auto": "smart"}
_SNIPPET_PREFIX = re.compile(r"^\s*(code (similar to|like this)|find code like)\b", re.I)


@dataclass(slots=True)
class ParsedQuery:
    """A query split into the words the classifier sees and the filters applied around it."""

    text: str
    regex: str | None = None
    symbol: str | None = None
    case: str | None = None
    files: list[str] = field(default_factory=list)
    exclude_files: list[str] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)
    exclude_languages: list[str] = field(default_factory=list)
    exclude_terms: list[str] = field(default_factory=list)
    modalities: list[str] | None = None

    @property
    def has_filters(self) -> bool:
        return bool(self.files or self.exclude_files or self.languages
                    or self.exclude_languages or self.exclude_terms)  # fmt: skip


def to_glob(value: str) -> str:
    """`file:` values: a glob as written, or a substring match when it has no glob syntax."""
    return value if any(c in value for c in "*?[") else f"*{value}*"


def path_matches(path: str, glob: str) -> bool:
    """Glob match on the root-relative path, or on its file name for a slash-free glob
    (ripgrep's `-g` rule)."""
    if fnmatch.fnmatchcase(path, glob):
        return True
    return "/" not in glob and fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], glob)


def is_snippet(query: str) -> bool:
    return "\n" in query.strip() or bool(_SNIPPET_PREFIX.match(query))


def _tokens(query: str) -> list[tuple[bool, str, bool]]:
    """(negated, token, quoted) triples; quotes and /regex/ slashes are kept in the token."""
    out: list[tuple[bool, str, bool]] = []
    i, n = 0, len(query)
    while i < n:
        if query[i].isspace():
            i += 1
            continue
        neg = query[i] == "-" and i + 1 < n and not query[i + 1].isspace() and query[i + 1] != "-"
        start = i + 1 if neg else i
        end = _token_end(query, start)
        token = query[start:end]
        out.append((neg, token, token.startswith('"') and token.endswith('"') and len(token) > 1))
        i = end
    return out


def _closing(query: str, start: int, quote: str) -> int:
    """Index of the unescaped `quote` closing the one at `start`, or -1."""
    j = start + 1
    while j < len(query):
        if query[j] == "\\":
            j += 2
            continue
        if query[j] == quote:
            return j
        j += 1
    return -1


def _token_end(query: str, start: int) -> int:
    n = len(query)
    if query[start] in '"/':
        close = _closing(query, start, query[start])
        if close > start + 1 and (close + 1 == n or query[close + 1].isspace()):
            return close + 1
    j = start
    while j < n and not query[j].isspace():
        if query[j] == '"':  # field:"quoted value"
            close = _closing(query, j, '"')
            if close > 0:
                j = close + 1
                continue
        j += 1
    return j


def _unquote(value: str) -> str:
    if len(value) > 1 and value[0] == value[-1] == '"':
        return value[1:-1].replace('\\"', '"')
    return value


def parse(query: str) -> ParsedQuery:
    """Split `query` into plain words and filters. Raises BadQueryError on a bad field value."""
    if not query.strip():
        raise BadQueryError('empty query: give words, a "phrase", /regex/ or sym:NAME')
    if is_snippet(query):
        return ParsedQuery(text=query)
    parsed = ParsedQuery(text="")
    words: list[str] = []
    for neg, token, quoted in _tokens(query):
        match = None if quoted else _FIELD_TOKEN.match(token)
        name = _FIELDS.get(match.group(1).lower()) if match else None
        if name is None or match is None:
            if token.startswith("/") and token.endswith("/") and len(token) > 2 and not neg:
                _set_regex(parsed, token[1:-1])
            elif neg:
                parsed.exclude_terms.append(_unquote(token))
            else:
                words.append(token)
            continue
        value = _unquote(match.group(2))
        if name == "file":
            (parsed.exclude_files if neg else parsed.files).append(to_glob(value))
        elif name == "lang":
            (parsed.exclude_languages if neg else parsed.languages).append(value.lower())
        elif neg:
            raise BadQueryError(f"{match.group(1)}: cannot be negated")
        elif name == "case":
            if value.lower() not in _CASE:
                raise BadQueryError(f"case: expects yes, no or auto, got {value!r}")
            parsed.case = _CASE[value.lower()]
        elif name == "sym":
            parsed.symbol = value
        elif name == "regex":
            _set_regex(parsed, value)
        elif name == "content":
            words.append(f'"{value}"')
        elif name == "mode":
            modes = [m.strip().lower() for m in value.split(",") if m.strip()]
            unknown = [m for m in modes if m not in MODALITIES]
            if unknown or not modes:
                raise BadQueryError(f"mode: expects one of {', '.join(MODALITIES)}, got {value!r}")
            parsed.modalities = modes
    parsed.text = " ".join(words)
    if parsed.symbol is not None and parsed.regex is not None:
        raise BadQueryError("sym: and a regular expression cannot be combined")
    for special, label in ((parsed.symbol, "sym:"), (parsed.regex, "a regular expression")):
        if special is not None:
            if parsed.text:
                hint = (' (a pattern with spaces is quoted: regex:"def f\\(" or /def f\\(/)'
                        if parsed.regex is not None else "")  # fmt: skip
                raise BadQueryError(
                    f"{label} cannot be combined with plain words ({parsed.text!r}); "
                    f"use filters (file:, lang:, -term) around it{hint}"
                )
            parsed.text = special
    if not parsed.text.strip():
        raise BadQueryError("the query has filters but nothing to search for")
    return parsed


def _set_regex(parsed: ParsedQuery, pattern: str) -> None:
    if parsed.regex is not None:
        raise BadQueryError("only one regular expression per query")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise BadQueryError(f"invalid regular expression /{_short(pattern)}/: {exc}") from None
    except (RecursionError, OverflowError):  # Python's parser recurses once per group
        raise BadQueryError(
            f"invalid regular expression /{_short(pattern)}/: nested too deeply"
        ) from None
    parsed.regex = pattern


MAX_LITERAL_BYTES = 16 << 10
"""The longest literal searched: the text index compiles it to an automaton with a 4 MiB cap,
which a literal of about 30 KB already exceeds (measured; case-insensitive ones earlier)."""


def check_literal(literal: str, flag: str = "-F") -> None:
    """Refuse a literal too long to search, in those words (not as a regex error)."""
    size = len(literal.encode("utf-8", "surrogatepass"))
    if size > MAX_LITERAL_BYTES:
        raise BadQueryError(f"{flag}: the literal is {size:,} bytes; the longest searched is "
                            f"{MAX_LITERAL_BYTES:,} bytes")  # fmt: skip


def _short(text: str, limit: int = 80) -> str:
    """A pattern as an error message quotes it: long ones cut in the middle."""
    return text if len(text) <= limit else f"{text[: limit // 2]}...{text[-limit // 2 :]}"


def check_glob(glob: str) -> None:
    """Refuse a glob whose character class is never closed (`[[[`), as ripgrep does;
    fnmatch would take it literally and match nothing, silently."""
    i, n = 0, len(glob)
    while i < n:
        if glob[i] == "[":
            j = i + 1
            if j < n and glob[j] in "!^":
                j += 1
            if j < n and glob[j] == "]":
                j += 1
            while j < n and glob[j] != "]":
                j += 1
            if j >= n:
                raise BadQueryError(f"invalid glob {glob!r}: unclosed character class")
            i = j
        i += 1
