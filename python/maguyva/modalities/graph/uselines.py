"""The lines of a file, rebuilt from its chunks, and which of them name a symbol in code.

The graph records no edge for some uses of an imported binding (a TypeScript enum member read,
a namespace's member, a type position); the searcher finds those by the names' words in the
file's text. The text comes from the chunk store, where a container's chunk is a skeleton:
each nested item is one line `signature …` whose body is its own chunk. Reading a skeleton's
lines as consecutive file lines would put a nested item's words on the wrong line (rustls's
`lib.rs`: `pub mod client { ... }` shifted a `pub use` by 30 lines), so the skeleton is
walked along its children. Comment lines and `use`/`import` statements are not uses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_WORD = re.compile(r"[A-Za-z_$][\w$]*")
ELIDED = " …"  # what `extract/chunks.py` writes in place of a nested item's body

_COMMENT = re.compile(r"^\s*(?://|/\*|\*(?:\s|/|$)|#(?!\[|!\[|include\b))")
_IMPORT = re.compile(
    r"^\s*(?:(?:pub(?:\([\w:\s]+\))?\s+)?use\s|import\s|from\s+[\w.]+\s+import\s"
    r"|export\s+(?:type\s+)?(?:\*|\{)[^;]*?(?:\bfrom\b|$)|#include\b)"
)


def file_lines(chunks: Iterable[Any]) -> dict[int, str]:
    """Line number -> text of a file, from its chunks (skeletons aligned on their children)."""
    ordered = sorted(chunks, key=lambda c: (c.end_line - c.start_line, c.start_line))
    starts: dict[int, int] = {}  # first line of a chunk -> its last line (the widest such)
    for chunk in ordered:
        starts[chunk.start_line] = max(starts.get(chunk.start_line, 0), chunk.end_line)
    text: dict[int, str] = {}
    for chunk in ordered:  # the smallest first: a line's own chunk beats its container's
        n = chunk.start_line
        for line in chunk.text.splitlines():
            if n > chunk.end_line:
                break
            if line.endswith(ELIDED) and n != chunk.start_line:
                end = _child_end(starts, n, chunk.end_line)
                if end is None:
                    break  # cannot tell where the rest sits: leave it to other chunks
                n = end + 1
                continue
            text.setdefault(n, line)
            n += 1
    return text


def _child_end(starts: dict[int, int], line: int, limit: int) -> int | None:
    """The last line of the nested item elided at `line` (None when no chunk starts there)."""
    end = starts.get(line)
    return end if end is not None and end <= limit else None


def in_statement(text: dict[int, str], line: int) -> bool:
    """True when `line` is a comment or part of an import statement (`use a::{\n X,\n};`
    over lines, `from x import (\n y,\n)`)."""
    if _COMMENT.match(text[line]):
        return True
    m = line
    while m in text and line - m < 100:  # back to the statement's first line
        body = text[m].rstrip()
        if _IMPORT.match(body):
            return _reaches(text, m, line)
        if m < line and (body.endswith((";", "}", "{")) or not body):
            return False  # another statement ended or a block began above
        m -= 1
    return False


def _reaches(text: dict[int, str], first: int, line: int) -> bool:
    """Whether the import statement starting at `first` goes on to `line`."""
    for m in range(first, line):
        body = text.get(m, "").rstrip()
        if body.endswith(";") or " from " in body or (m > first and body.endswith(")")):
            return False
        if m == first and not body.endswith(("{", ",", "(", "::")) and "{" not in body:
            return False  # `import os`, `from x import y`: one line
    return True


def named_lines(chunks: Iterable[Any], names: frozenset[str], skip: set[int]) -> set[int]:
    """Lines (outside `skip`, comments and import statements) that name one of `names` as a
    word."""
    chunks = list(chunks)
    if not names or not any(name in chunk.text for chunk in chunks for name in names):
        return set()
    return named_lines_in(file_lines(chunks), names, skip)


def named_lines_in(text: dict[int, str], names: frozenset[str], skip: set[int]) -> set[int]:
    """`named_lines` over a file's lines (`file_lines`)."""
    found = (
        n
        for n, line in text.items()
        if n not in skip
        and any(name in line for name in names)  # cheap first: most lines name none
        and not names.isdisjoint(_WORD.findall(line))
    )
    return {n for n in found if not in_statement(text, n)}
