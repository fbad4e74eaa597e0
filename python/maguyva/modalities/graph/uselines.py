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


def statement_lines(text: dict[int, str]) -> set[int]:
    """The lines of comments and of import statements (`use a::{\\n X,\\n};` over lines)."""
    out: set[int] = set()
    for n in sorted(text):
        line = text[n]
        if _COMMENT.match(line):
            out.add(n)
            continue
        if not _IMPORT.match(line) or n in out:
            continue
        m = n
        while m in text and m - n < 100:  # to the statement's end
            out.add(m)
            body = text[m].rstrip()
            if body.endswith(";") or " from " in body or (m > n and body.endswith(")")):
                break
            if m == n and not body.endswith(("{", ",", "(", "::")) and "{" not in body:
                break  # `import os`, `from x import y`: one line
            m += 1
    return out


def named_lines(chunks: Iterable[Any], names: frozenset[str], skip: set[int]) -> set[int]:
    """Lines (outside `skip`, comments and import statements) that name one of `names` as a
    word."""
    if not names:
        return set()
    words = re.compile(r"(?<![\w$])(?:" + "|".join(map(re.escape, sorted(names))) + r")(?![\w$])")
    text = file_lines(chunks)
    skip = set(skip)  # the graph's own lines of the file; import statements are found below
    skip |= statement_lines(text)
    return {n for n, line in text.items() if n not in skip and words.search(line)}
