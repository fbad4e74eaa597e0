"""The grammar registry: which tree-sitter grammar parses which language, loaded lazily.

Grammars come from the individual PyPI wheels (`tree-sitter-python`, ...): each works offline,
is small, and is versioned by its own upstream. A language is "available" when its wheel
imports and its query file compiles; anything else is reported, never raised, so that a missing
wheel degrades that language to line-window chunks instead of failing the index.

To add a language: install its wheel, add a `GrammarSpec` below (module, entry point), write
`queries/<language>.scm` (see docs/structural.md for the capture names), map its extensions
in `maguyva.repo.languages`, and add a fixture under tests/fixtures/langs/.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import tree_sitter as ts

QUERY_DIR = Path(__file__).parent / "queries"


@dataclass(frozen=True, slots=True)
class GrammarSpec:
    """Where a language's grammar lives and how its source is documented."""

    module: str
    entry: str = "language"
    doc_style: str = "comments"  # "docstring" (Python) or "comments" (preceding comments)
    comment_types: tuple[str, ...] = ("comment", "line_comment", "block_comment")
    class_kinds: frozenset[str] = field(
        default_factory=lambda: frozenset(
            {"class", "struct", "interface", "trait", "enum", "object", "protocol", "impl",
             "extension", "record", "union"}
        )
    )  # fmt: skip


SPECS: dict[str, GrammarSpec] = {
    "python": GrammarSpec("tree_sitter_python", doc_style="docstring"),
    "javascript": GrammarSpec("tree_sitter_javascript"),
    "typescript": GrammarSpec("tree_sitter_typescript", "language_typescript"),
    "tsx": GrammarSpec("tree_sitter_typescript", "language_tsx"),
    "go": GrammarSpec("tree_sitter_go"),
    "rust": GrammarSpec("tree_sitter_rust"),
    "java": GrammarSpec("tree_sitter_java"),
    "c": GrammarSpec("tree_sitter_c"),
    "cpp": GrammarSpec("tree_sitter_cpp"),
    "csharp": GrammarSpec("tree_sitter_c_sharp"),
    "ruby": GrammarSpec("tree_sitter_ruby"),
    "php": GrammarSpec("tree_sitter_php", "language_php"),
    "kotlin": GrammarSpec("tree_sitter_kotlin", comment_types=("line_comment", "block_comment")),
    "swift": GrammarSpec("tree_sitter_swift", comment_types=("comment", "multiline_comment")),
    "scala": GrammarSpec("tree_sitter_scala"),
    "bash": GrammarSpec("tree_sitter_bash"),
}

# Query files per language when not just `<language>.scm` (dialects share files).
QUERY_FILES: dict[str, tuple[str, ...]] = {
    "javascript": ("javascript", "jsx"),
    "typescript": ("typescript",),
    "tsx": ("typescript", "jsx"),
}


@dataclass(slots=True)
class Grammar:
    """A loaded grammar: the language and its query, compiled once per process in three
    views. `grouped` holds the patterns whose captures must stay together (definitions,
    imports, calls with a receiver) and runs with `matches`; `flat` holds the callee and
    reference patterns, whose captures stand alone, and runs with `captures`, which costs
    about half as much (no per-match dictionaries); `flat_calls` is `flat` without
    references, for very large files."""

    name: str
    spec: GrammarSpec
    language: ts.Language
    grouped: ts.Query
    flat: ts.Query
    flat_calls: ts.Query
    _parser: ts.Parser | None = None

    def parser(self) -> ts.Parser:
        """One parser per grammar and process (extraction is single-threaded per process)."""
        if self._parser is None:
            self._parser = ts.Parser(self.language)
        return self._parser


# Captures that tie a match together: such patterns must run through `matches`.
_GROUPED = ("definition.", "declaration.", "scope", "import", "callee.object", "receiver")
_CAPTURE = re.compile(r"@([\w.]+)")


MAX_QUERY_DEPTH = 1024
"""Query matches start at most this many tree levels deep (`set_max_start_depth`). Without a
bound, tree-sitter's query cursor over 100,000 nested `function f(){` took 61 s of CPU in one
uninterruptible call (8 s at 50,000: it grows faster than the depth), past every budget; with
it, under a millisecond. The deepest hand-written code is a few hundred levels (CPython's
parser refuses 200 nested parentheses)."""


def cursor(query: ts.Query) -> ts.QueryCursor:
    """A query cursor that does not start matches deeper than `MAX_QUERY_DEPTH`."""
    found = ts.QueryCursor(query)
    found.set_max_start_depth(MAX_QUERY_DEPTH)
    return found


def compile_queries(language: ts.Language, source: str) -> tuple[ts.Query, ts.Query, ts.Query]:
    """The grouped, flat and flat-without-references views of one query source."""
    grouped, flat, flat_calls = (ts.Query(language, source) for _ in range(3))
    raw = source.encode("utf-8")
    for index in range(grouped.pattern_count):
        text = raw[grouped.start_byte_for_pattern(index) : grouped.end_byte_for_pattern(index)]
        names = _CAPTURE.findall(text.decode("utf-8"))
        if any(n.startswith(_GROUPED) for n in names):
            flat.disable_pattern(index)
            flat_calls.disable_pattern(index)
        else:
            grouped.disable_pattern(index)
            if "reference" in names:
                flat_calls.disable_pattern(index)
    for query in (flat, flat_calls):
        _disable(query, "call")  # the callee's position is enough; saves a node per call
    return grouped, flat, flat_calls


def _disable(query: ts.Query, name: str) -> None:
    """Drop a capture (its nodes are never built); harmless when the query lacks it."""
    if any(query.capture_name(i) == name for i in range(query.capture_count)):
        query.disable_capture(name)


_lock = threading.Lock()
_loaded: dict[str, Grammar | None] = {}
_errors: dict[str, str] = {}


def query_source(language: str) -> str:
    """The text of a language's query (its files concatenated)."""
    names = QUERY_FILES.get(language, (language,))
    return "\n".join((QUERY_DIR / f"{name}.scm").read_text("utf-8") for name in names)


def load(language: str | None) -> Grammar | None:
    """The grammar of `language`, or None when there is none (unknown, not installed or its
    query does not compile; the reason is kept for `unavailable()`)."""
    if language is None or language not in SPECS:
        return None
    with _lock:
        if language in _loaded:
            return _loaded[language]
        spec = SPECS[language]
        grammar: Grammar | None = None
        try:
            module = importlib.import_module(spec.module)
            lang = ts.Language(getattr(module, spec.entry)())
            grammar = Grammar(language, spec, lang, *compile_queries(lang, query_source(language)))
        except (ImportError, AttributeError, OSError, ValueError, ts.QueryError) as exc:
            _errors[language] = f"{type(exc).__name__}: {exc}"
        _loaded[language] = grammar
        return grammar


def available() -> list[str]:
    """Languages whose grammar loads here."""
    return [name for name in SPECS if load(name) is not None]


def unavailable(languages: Iterable[str] | None = None) -> dict[str, str]:
    """Languages that have a spec but whose grammar failed to load, with the reason: all of
    them, or those of `languages` (loading every grammar to find out costs ~1.4 s, which a
    one-file update that saw one language need not pay)."""
    names = SPECS if languages is None else [n for n in languages if n in SPECS]
    for name in names:
        load(name)
    return {n: _errors[n] for n in names if n in _errors}
