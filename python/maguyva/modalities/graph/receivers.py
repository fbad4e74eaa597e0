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

import bisect
import functools
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
        self._scan: tuple[list[str], FileScan] | None = None

    def of(self, node: int, path: str, start: int, end: int) -> dict[str, list[str]]:
        """Variable -> type names in the definition's text (lines `start`..`end`)."""
        got = self._memo.get(node)
        if got is None or _SCANNED not in got:
            entry = got if got is not None else {}
            if start >= 1:
                entry.update(self._file_scan(path).lines(start - 1, end))
            else:
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
            lines = self._file_lines(path)
            keep = bytearray(b"\x01") * len(lines)
            for start, end in skip:
                keep[start - 1 : end] = bytes(len(keep[start - 1 : end]))
            got = self._memo[node] = self._file_scan(path).kept(keep)
        return got

    def _file_scan(self, path: str) -> FileScan:
        lines = self._file_lines(path)
        if self._scan is None or self._scan[0] is not lines:
            self._scan = (lines, FileScan(lines))
        return self._scan[1]

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


_FORMS = (ANNOTATION, ASSIGN, ISINSTANCE)


class FileScan:
    """`scan` of a whole file once, its matches kept by line, so that each definition's
    evidence is a slice of them instead of a new scan of its text (a class's text holds its
    methods', so each line was read once per enclosing definition). No form matches across a
    line break and `^` is a line start in any span of whole lines, so the matches within a
    span of lines are exactly those of `scan` over the span's text, in the same order."""

    def __init__(self, lines: list[str]) -> None:
        text = "\n".join(lines)
        starts, offset = [], 0
        for line in lines:
            starts.append(offset)
            offset += len(line) + 1
        line_of = functools.partial(bisect.bisect_right, starts)
        self.found: list[tuple[list[int], list[tuple[str, str]]]] = []
        for regex in _FORMS:
            at, rows = [], []
            for m in regex.finditer(text):
                var, type_name = m.group(1), m.group(2)
                if type_name in NOT_TYPES or type_name.startswith(("self.", "cls.")):
                    continue
                at.append(line_of(m.start()) - 1)
                rows.append((var, type_name))
            self.found.append((at, rows))
        at, chained = [], []
        for m in CHAINED.finditer(text):
            type_name = m.group(3)
            if type_name in NOT_TYPES or type_name.startswith(("self.", "cls.")):
                continue
            at.append(line_of(m.start()) - 1)
            chained.append((tuple(_TARGET.findall(m.group(1))), type_name))
        self.chained = (at, chained)

    def lines(self, lo: int, hi: int) -> dict[str, list[str]]:
        """`scan` of lines [lo, hi) (0-based)."""
        out: dict[str, list[str]] = {}
        for at, rows in self.found:
            _add(out, rows[bisect.bisect_left(at, lo) : bisect.bisect_left(at, hi)])
        at, chained = self.chained
        for targets, type_name in chained[bisect.bisect_left(at, lo) : bisect.bisect_left(at, hi)]:
            _add(out, [(var, type_name) for var in targets])
        return out

    def kept(self, keep: bytearray) -> dict[str, list[str]]:
        """`scan` of the lines whose `keep` byte is set (the others read as blank lines)."""
        out: dict[str, list[str]] = {}
        for at, rows in self.found:
            _add(out, [row for line, row in zip(at, rows, strict=True) if keep[line]])
        at, chained = self.chained
        for line, (targets, type_name) in zip(at, chained, strict=True):
            if keep[line]:
                _add(out, [(var, type_name) for var in targets])
        return out


def _add(out: dict[str, list[str]], rows: list[tuple[str, str]]) -> None:
    for var, type_name in rows:
        names = out.setdefault(var, [])
        if type_name not in names:
            names.append(type_name)
