"""An impact answer's tail: the files that name the target in code but have no graph edge.

The graph answers only the files it has an edge for. A file that names the target only in a
type position (`impl server::ResolvesServerCert for X`, `-> Box<dyn ResolvesServerCert>`) or
through a module path the resolver does not follow is affected by a change all the same; the
text index's whole-word matches find it. Those files come after every graph hit that has a
real use, and before the graph's import- or re-export-only files (a `pub use` block in
`lib.rs` says where the name is exported, not where it is used). A match in a comment, an
import statement or the definition's own line is not a use.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from maguyva.errors import CorruptIndexError, ModalityUnavailable
from maguyva.modalities.graph.uselines import file_lines, in_statement
from maguyva.modalities.protocol import RetrieverQuery
from maguyva.model import Hit

MAX_TAIL_FILES = 50
MAX_MATCHED_LINES = 5000
_DEFINES = re.compile(
    r"\b(?:struct|enum|trait|type|fn|union|mod|const|static|class|interface|def|function|func)"
    r"\s+([A-Za-z_$][\w$]*)"
)
"""A keyword after which a name is being defined, not used (compiled once: a pattern built
per query took milliseconds to compile)."""


def target_name(target: str) -> str | None:
    """The word a text search looks for: the last part of a dotted or `::` path."""
    name = re.split(r"\.|::|#|->", target.strip().removesuffix("()"))[-1]
    return name if re.fullmatch(r"[A-Za-z_$][\w$]*", name) else None


def impact_with_tail(
    graph: list[Hit], text: Callable[[], Any], chunks: Any, request: RetrieverQuery, depth: int
) -> list[Hit]:
    """The graph's impact list with the files the text index (`text()`, opened on demand)
    finds naming the target in code; the graph's answer alone when the text index is missing
    or damaged (the engine reports its state elsewhere)."""
    name = target_name(request.target)
    if name is None:
        return graph
    try:
        searcher = text()
        if not hasattr(searcher, "grep"):
            return graph
        lines = searcher.grep(
            name, whole_word=True, case="sensitive", max_results=MAX_MATCHED_LINES
        )
    except (ModalityUnavailable, CorruptIndexError):
        return graph
    return with_text_tail(graph, lines, chunks, name, depth)


def with_text_tail(
    graph_hits: list[Hit], matches: Iterable[Any], chunks: Any, name: str, room: int
) -> list[Hit]:
    """`graph_hits` (the graph's impact list, best first) with the files only `matches` (the
    text index's whole-word matching lines of `name`, with `path` and `line`) name the target
    in, ranked below every graph hit with a use and above the graph's import-only hits; one
    hit per file, `room` hits in all (no tail is looked for past it)."""
    seen = {h.path for h in graph_hits}
    matched: dict[str, set[int]] = {}  # path -> every line the text index matched
    for match in matches:
        if match.path and match.path not in seen:
            matched.setdefault(match.path, set()).add(match.line)
    used = [h for h in graph_hits if not h.extra.get("import_only")]
    imports = [h for h in graph_hits if h.extra.get("import_only")]
    floor = min((h.score for h in graph_hits if h.score is not None), default=1.0)
    tail: list[Hit] = []
    for path, found in list(matched.items())[:MAX_TAIL_FILES]:
        if len(used) + len(tail) >= room:
            break
        own = chunks.by_path(path)
        text = file_lines(own)
        lines = sorted(n for n in found if n in text and _is_use(text, n, own, name))
        if not lines:
            continue  # comments, imports or the definition only
        tail.append(_tail_hit(path, lines, chunks, floor * 0.5 / (1 + len(tail))))
    # tests after the others, as the graph lists them; within each, the order above
    return sorted(used + tail + imports, key=lambda h: bool(h.extra.get("is_test")))


def _is_use(text: dict[int, str], line: int, own: list[Any], name: str) -> bool:
    """Whether the matched `line` uses `name`: not a comment, an import, its definition."""
    if in_statement(text, line) or name in _DEFINES.findall(text[line]):
        return False
    return not _inside(own, text, line, name)


def _inside(own: list[Any], text: dict[int, str], line: int, name: str) -> bool:
    """True when `line` is in the body of a definition of `name` (its docstring, a recursive
    call): the smallest chunk around it is named after it and names it in code above `line`.
    Its head line is not: a method of the same name elsewhere (`async showTopLevel(...)`
    implementing an interface's member) changes with the target's signature."""
    around = [c for c in own if c.start_line <= line <= c.end_line]
    if not around:
        return False
    chunk = min(around, key=lambda c: c.end_line - c.start_line)
    if name not in re.split(r"\.|::", chunk.qualified_name or ""):
        return False
    above = range(chunk.start_line, line)
    return any(name in text.get(n, "") and not in_statement(text, n) for n in above)


def _tail_hit(path: str, lines: list[int], chunks: Any, score: float) -> Hit:
    chunk = chunks.enclosing(path, lines[0])
    start, end = (chunk.start_line, chunk.end_line) if chunk is not None else (lines[0], lines[-1])
    return Hit(path=path, start_line=start, end_line=end, key=chunk.id if chunk else None,
               score=score, lines=lines, extra={"text_uses": True, "text_tail": True})  # fmt: skip
