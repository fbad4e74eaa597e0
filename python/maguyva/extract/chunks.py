"""Chunking helpers shared by every modality: content-addressed ids and line-window chunks.

Syntax-aware chunking (one chunk per definition) is the structural modality's job; files with
no grammar, or when extraction fails, fall back to the line windows made here.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from maguyva.extract.types import Definition
from maguyva.model import Chunk

WINDOW_LINES = 60
WINDOW_OVERLAP = 10


def chunk_id(path: str, text: str, qualified_name: str | None = None) -> str:
    """A content-addressed id: stable while the chunk's path, name and text do not change,
    even when the chunk moves up or down the file."""
    digest = hashlib.blake2b(digest_size=10)
    digest.update(path.encode("utf-8", "surrogatepass"))
    digest.update(b"\0")
    digest.update((qualified_name or "").encode("utf-8", "surrogatepass"))
    digest.update(b"\0")
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def line_window_chunks(
    path: str, text: str, window: int = WINDOW_LINES, overlap: int = WINDOW_OVERLAP
) -> list[Chunk]:
    """Split a file into overlapping windows of lines (for files without a grammar)."""
    lines = text.splitlines()
    if not lines:
        return []
    step = max(1, window - overlap)
    chunks: list[Chunk] = []
    start = 0
    while True:
        end = min(len(lines), start + window)
        body = "\n".join(lines[start:end])
        chunks.append(
            Chunk(
                id=chunk_id(path, body, f"#{start}"),
                path=path,
                start_line=start + 1,
                end_line=end,
                kind="lines",
                header=f"{path}:{start + 1}-{end}",
                text=body,
            )
        )
        if end >= len(lines):
            return chunks
        start += step


# ---- syntax-aware chunks (structural modality) ----------------------------------------------

MAX_CHUNK_LINES = 120
"""A definition longer than this is split at statement boundaries."""
TARGET_CHUNK_LINES = 80
MIN_PIECE_LINES = 20
SPLIT_OVERLAP = 3
MAX_CHUNK_CHARS = 8000

CONTAINER_KINDS = frozenset(
    {"class", "struct", "interface", "trait", "enum", "object", "protocol", "impl",
     "extension", "record", "module", "namespace", "union"}
)  # fmt: skip
"""Definitions whose members get chunks of their own; the container keeps a skeleton."""
LEAF_KINDS = frozenset({"variable", "field", "constant", "macro"})
"""Definitions that stay inside their surrounding chunk instead of getting one."""


@dataclass(slots=True)
class _Unit:
    kind: str
    name: str
    qualified_name: str
    signature: str
    start: int  # chunk start (doc comments and decorators included), 1-based
    end: int
    children: list[_Unit] = field(default_factory=list)


def source_lines(text: str) -> list[str]:
    """Lines as tree-sitter numbers them: split on `\\n` only (a lone `\\r` or form feed does
    not start a line), with a trailing `\\r` dropped."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def syntax_chunks(
    path: str,
    text: str,
    definitions: Sequence[Definition],
    breaks: Iterable[int] = (),
    doc_starts: Sequence[int] | None = None,
    scopes: Sequence[Definition] = (),
) -> list[Chunk]:
    """One chunk per function/method/class of `definitions`, classes as skeletons (header,
    fields and one line per member), top-level code between definitions grouped, and long
    spans split at `breaks` (lines where a statement starts) with a small overlap. `scopes`
    are blocks that group members without being symbols (Rust `impl`, Swift `extension`):
    they get a skeleton chunk like a class.

    Every line of the file that is not blank belongs to at least one chunk. Ids are
    content-addressed: editing one function changes that function's chunk only.
    """
    lines = source_lines(text)
    if not lines:
        return []
    cut_points = sorted(set(breaks))
    units = _units(definitions, doc_starts, len(lines), scopes)
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}

    def emit(kind: str, unit: _Unit | None, start: int, end: int, body: str) -> None:
        qualified = unit.qualified_name if unit else None
        pieces = _split(start, end, cut_points) if unit is None or not unit.children else None
        spans = pieces or [(start, end)]
        for number, (s, e) in enumerate(spans, start=1):
            piece = body if pieces is None else "\n".join(lines[s - 1 : e])
            if not piece.strip():
                continue
            label = f"{qualified or '#top'}" + (f"#{number}" if len(spans) > 1 else "")
            cid = _unique_id(seen, path, piece, label)
            header = _header(path, unit, number, len(spans))
            chunks.append(
                Chunk(
                    id=cid,
                    path=path,
                    start_line=s,
                    end_line=e,
                    kind=kind,
                    name=unit.name if unit else None,
                    qualified_name=qualified,
                    signature=unit.signature if unit and unit.signature else None,
                    header=header,
                    text=piece,
                )
            )

    def visit(unit: _Unit) -> None:
        if not unit.children:
            emit(unit.kind, unit, unit.start, unit.end, "\n".join(lines[unit.start - 1 : unit.end]))
            return
        emit(unit.kind, unit, unit.start, unit.end, _skeleton(lines, unit)[:MAX_CHUNK_CHARS])
        for child in unit.children:
            visit(child)

    cursor = 1
    for unit in units:
        _emit_gap(emit, lines, cursor, unit.start - 1)
        visit(unit)
        cursor = unit.end + 1
    _emit_gap(emit, lines, cursor, len(lines))
    return chunks


def _unique_id(seen: dict[str, int], path: str, piece: str, label: str) -> str:
    """The chunk's content-addressed id; identical text under the same label gets a stable
    `~n` suffix, so that ids stay unique."""
    cid = chunk_id(path, piece, label)
    if cid in seen:
        seen[cid] += 1
        return chunk_id(path, piece, f"{label}~{seen[cid]}")
    seen[cid] = 0
    return cid


def _header(path: str, unit: _Unit | None, number: int, parts: int) -> str:
    """The line(s) that say where a chunk is: its path, kind and name, part and signature."""
    if unit is None:
        return f"{path}: top-level code"
    header = f"{path}: {unit.kind} {unit.qualified_name}"
    if parts > 1:
        header += f" (part {number}/{parts})"
    if unit.signature:
        header += f"\n{unit.signature}"
    return header


def _skeleton(lines: list[str], unit: _Unit) -> str:
    """A class-like unit's text with each member replaced by one line (its signature)."""
    skeleton: list[str] = []
    cursor = unit.start
    for child in unit.children:
        skeleton.extend(lines[cursor - 1 : child.start - 1])
        first = lines[child.start - 1] if child.start - 1 < len(lines) else ""
        indent = first[: len(first) - len(first.lstrip())]
        skeleton.append(f"{indent}{child.signature or child.name} …")
        cursor = child.end + 1
    skeleton.extend(lines[cursor - 1 : unit.end])
    return "\n".join(skeleton)


def _emit_gap(emit: Callable[..., None], lines: list[str], start: int, end: int) -> None:
    """Top-level code between definitions: trimmed of blank lines, one chunk (or split)."""
    while start <= end and not lines[start - 1].strip():
        start += 1
    while end >= start and not lines[end - 1].strip():
        end -= 1
    if start <= end:
        emit("module", None, start, end, "\n".join(lines[start - 1 : end]))


def _units(
    definitions: Sequence[Definition],
    doc_starts: Sequence[int] | None,
    n_lines: int,
    scopes: Sequence[Definition] = (),
) -> list[_Unit]:
    """The chunkable definitions as a forest: functions (with their nested helpers inside),
    containers with their members as children. Overlaps that do not nest are dropped."""
    candidates = [
        _Unit(d.kind, d.name, d.qualified_name, d.signature, d.start_line, min(d.end_line, n_lines))
        for d in scopes
        if d.start_line <= min(d.end_line, n_lines)
    ]
    for index, d in enumerate(definitions):
        if d.kind in LEAF_KINDS or (d.declaration and d.kind not in CONTAINER_KINDS):
            continue
        start = d.start_line
        if doc_starts is not None and index < len(doc_starts) and 0 < doc_starts[index] < start:
            start = doc_starts[index]
        end = min(d.end_line, n_lines)
        if start > end:
            continue
        candidates.append(_Unit(d.kind, d.name, d.qualified_name, d.signature, start, end))
    candidates.sort(key=lambda u: (u.start, -u.end))
    roots: list[_Unit] = []
    stack: list[_Unit] = []
    for unit in candidates:
        while stack and stack[-1].end < unit.start:
            stack.pop()
        if stack:
            parent = stack[-1]
            if unit.end > parent.end or (unit.start <= parent.start and unit.end >= parent.end):
                continue  # overlapping without nesting, or a duplicate span
            if parent.kind not in CONTAINER_KINDS or any(
                s.kind not in CONTAINER_KINDS for s in stack
            ):
                continue  # nested in a function: stays in the function's chunk
            if parent.children and parent.children[-1].end >= unit.start:
                continue  # shares a line with the previous member (one-line members)
            parent.children.append(unit)
        else:
            if roots and roots[-1].end >= unit.start:
                continue
            roots.append(unit)
        stack.append(unit)
    return roots


def _split(start: int, end: int, cut_points: list[int]) -> list[tuple[int, int]] | None:
    """Pieces of a long span, cut at statement starts when possible; None when short."""
    if end - start + 1 <= MAX_CHUNK_LINES:
        return None
    pieces: list[tuple[int, int]] = []
    s = start
    while end - s + 1 > MAX_CHUNK_LINES:
        lo = bisect.bisect_right(cut_points, s + MIN_PIECE_LINES)
        hi = bisect.bisect_right(cut_points, s + TARGET_CHUNK_LINES)
        cut = cut_points[hi - 1] if hi > lo else s + TARGET_CHUNK_LINES
        pieces.append((s, cut - 1))
        s = max(s + 1, cut - SPLIT_OVERLAP)
    pieces.append((s, end))
    return pieces
