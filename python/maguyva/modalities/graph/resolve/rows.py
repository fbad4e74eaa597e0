"""The rows resolution reads and writes: a file's declarations as scopes and nodes, its calls
and references as a compact `Body`, and the edges as flat columns."""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from maguyva.extract.types import FileExtraction
from maguyva.modalities.graph.schema import EdgeKind, NodeKind

CALLS, IMPORTS, INHERITS, REFERENCES, CONTAINS = (int(k) for k in EdgeKind)
STAT_KEYS = ("calls", "resolved", "typed", "candidate", "external", "dropped", "below_floor")

# A binding: ("def", node) | ("unit", unit key) | ("ext", dotted name)
Binding = tuple[str, object]


@dataclass(slots=True)
class Reuse:
    """A previous build's edge log (columns, names) and, per reusable file, (lo, hi, counts)."""

    cols: tuple[list, ...]
    names: list[str]
    files: dict[int, tuple[int, int, list[int]]]


_MISSING = object()


class Columns:
    """Append-only rows `(src, dst or target, kind, conf, line)` stored as five flat arrays
    (about 21 bytes a row instead of a tuple and its objects): the edge log, and the edges as
    emitted (one row per `edge` call, duplicates included; `build.merge_edges` merges them)."""

    __slots__ = ("conf", "dst", "kind", "line", "src")

    def __init__(self) -> None:
        self.src = array("i")
        self.dst = array("i")
        self.kind = array("B")
        self.conf = array("d")
        self.line = array("i")

    def append(self, row: tuple[int, int, int, float, int]) -> None:
        src, dst, kind, conf, line = row
        self.src.append(src)
        self.dst.append(dst)
        self.kind.append(kind)
        self.conf.append(conf)
        self.line.append(line)

    def __len__(self) -> int:
        return len(self.src)


@dataclass(slots=True)
class Body:
    """What resolution reads of a file after its declarations: its calls `(callee, line,
    caller)` and references `(name, line, context)`, as flat tuples of the (shared) strings
    and line numbers of the extraction, not one object per call."""

    calls: tuple = ()
    references: tuple = ()

    @staticmethod
    def of(ex: FileExtraction) -> Body:
        return Body(_flat(ex.calls, "callee", "caller"), _flat(ex.references, "name", "context"))

    def iter_calls(self) -> Iterable[tuple[str, int, str | None]]:
        it = iter(self.calls)
        return zip(it, it, it, strict=True)

    def iter_references(self) -> Iterable[tuple[str, int, str | None]]:
        it = iter(self.references)
        return zip(it, it, it, strict=True)


def _flat(items: list, name: str, context: str) -> tuple:
    if not items:
        return ()
    out: list[Any] = [None] * (3 * len(items))
    out[0::3] = [getattr(i, name) for i in items]
    out[1::3] = [i.line for i in items]
    out[2::3] = [getattr(i, context) for i in items]
    return tuple(out)


@dataclass(slots=True)
class Node:
    kind: NodeKind
    name: str
    qname: str
    file: int = -1
    start: int = 0
    end: int = 0
    def_kind: str = ""


@dataclass(slots=True)
class FileScope:
    fid: int
    unit: str
    family: str
    defs: dict[str, int] = field(default_factory=dict)  # qualified name -> node
    top: dict[str, int] = field(default_factory=dict)  # top-level name -> node
    imports: dict[str, list[tuple[int, object]]] = field(
        default_factory=dict
    )  # name -> [(line, spec)]
    stars: list[tuple[str | None, int]] = field(default_factory=list)  # (unit, line)
