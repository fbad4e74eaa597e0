"""Cheap local evidence of a receiver's type in Python code, read from the source text.

`x.m()` with `x` of unknown type would link to every method `m`. Inside the enclosing
function (or, for `self.x.m()`, the enclosing class) these forms name `x`'s class:

    x = Store(...)            x: Store = ...          def f(x: Store | None)
    isinstance(x, Store)      self.x = Store(...)     x: ClassVar[Store]  (class level)
    self.x = x = Store(...)   (a chained assignment types every target)

A type name found here is then resolved like any other name (imports, scopes), so a wrong guess
(a factory function, an unknown name) simply gives no evidence. No inference beyond this.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_NAME = r"((?:self\.)?[A-Za-z_]\w*)"
_TYPE = r"([A-Za-z_][\w.]*)"
ASSIGN = re.compile(r"^[ \t]*" + _NAME + r"[ \t]*(?::[^=\n]+)?=[ \t]*" + _TYPE + r"[ \t]*\(", re.M)
ANNOTATION = re.compile(
    r"(?:^|[(,])[ \t]*" + _NAME + r"[ \t]*:[ \t]*['\"]?"
    r"(?:(?:typing\.)?(?:Optional|ClassVar|Final|Annotated)\[)?['\"]?" + _TYPE,
    re.M,
)
CHAINED = re.compile(r"^[ \t]*((?:" + _NAME + r"[ \t]*=[ \t]*){2,})" + _TYPE + r"[ \t]*\(", re.M)
_TARGET = re.compile(r"(?:self\.)?[A-Za-z_]\w*")
ISINSTANCE = re.compile(r"isinstance\([ \t]*" + _NAME + r"[ \t]*,[ \t]*\(?[ \t]*" + _TYPE)
NOT_TYPES = frozenset({"self", "cls", "super", "None", "object", "Any", "type", "lambda"})


class ReceiverTypes:
    """Type names of the variables of one definition's text, memoised per definition node."""

    def __init__(self, read_text: Callable[[str], str] | None) -> None:
        self.read_text = read_text
        self.enabled = read_text is not None
        self._lines: tuple[str, list[str]] | None = None
        self._memo: dict[int, dict[str, list[str]]] = {}

    def of(self, node: int, path: str, start: int, end: int) -> dict[str, list[str]]:
        """Variable -> type names in the definition's text."""
        got = self._memo.get(node)
        if got is None or _SCANNED not in got:
            entry = got if got is not None else {}
            entry.update(scan("\n".join(self._file_lines(path)[start - 1 : end])))
            entry[_SCANNED] = []
            got = self._memo[node] = entry
        return got

    def params(self, node: int, path: str, start: int, end: int) -> list[str]:
        """The parameter names of the function `node` ([] for a class); kept in the same memo
        entry as its types, so that forgetting a node (an edited file) forgets both."""
        got = self._memo.get(node)
        if got is None or PARAMS not in got:
            entry = got if got is not None else {}
            header = self._file_lines(path)[start - 1 : min(end, start + _HEADER_LINES)]
            entry[PARAMS] = parameters("\n".join(header))
            got = self._memo[node] = entry
        return got[PARAMS]

    def of_module(self, node: int, path: str, skip: list[tuple[int, int]]) -> dict[str, list[str]]:
        """The same for a file's module-level code: its text without the line spans `skip`
        (the top-level functions and classes, whose variables are their own)."""
        got = self._memo.get(node)
        if got is None:
            lines = list(self._file_lines(path))
            for start, end in skip:
                lines[start - 1 : end] = [""] * len(lines[start - 1 : end])
            got = self._memo[node] = scan("\n".join(lines))
        return got

    def _file_lines(self, path: str) -> list[str]:
        if self._lines is None or self._lines[0] != path:
            try:
                text = self.read_text(path) if self.read_text else ""
            except OSError:
                text = ""
            self._lines = (path, text.splitlines())
        return self._lines[1]


PARAMS = "()"  # memo keys that are no variable name: a function's parameter names,
_SCANNED = "(scanned)"  # and "the types of its text are in"
_HEADER_LINES = 30  # decorators and a signature longer than this are not read for parameters
_PUNCT = re.compile(r"[()\[\]{},]")
_PARAM = re.compile(r"\s*\**\s*([A-Za-z_]\w*)\s*(?:[:=]|$)")
_HEADER = re.compile(r"^[ \t]*(?:(?:async[ \t]+)?def[ \t]+\w+[ \t]*(\()|class\b)", re.M)


def parameters(text: str) -> list[str]:
    """The parameter names of the function whose text (decorators first) this is: `def f(a,
    b: int = 1, *args, c, **kw)` -> [a, b, args, c, kw]; [] for a class."""
    m = _HEADER.search(text)
    if m is None or m.group(1) is None:
        return []
    depth, start, pieces = 0, m.end(), []
    for t in _PUNCT.finditer(text, m.end()):
        ch = t.group()
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                pieces.append(text[start : t.start()])
                break
            depth -= 1
        elif depth == 0:  # a comma between parameters
            pieces.append(text[start : t.start()])
            start = t.end()
    out = []
    for p in pieces:
        name = _PARAM.match(p)
        if name is not None:
            out.append(name.group(1))
    return out


def scan(text: str) -> dict[str, list[str]]:
    """Variable (or `self.attr`) -> type names, in order of appearance."""
    out: dict[str, list[str]] = {}
    for regex in (ANNOTATION, ASSIGN, ISINSTANCE):
        for m in regex.finditer(text):
            var, type_name = m.group(1), m.group(2)
            if type_name in NOT_TYPES or type_name.startswith(("self.", "cls.")):
                continue
            names = out.setdefault(var, [])
            if type_name not in names:
                names.append(type_name)
    for m in CHAINED.finditer(text):
        type_name = m.group(3)
        if type_name in NOT_TYPES or type_name.startswith(("self.", "cls.")):
            continue
        for var in _TARGET.findall(m.group(1)):
            names = out.setdefault(var, [])
            if type_name not in names:
                names.append(type_name)
    return out
