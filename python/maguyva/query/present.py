"""From fused entries to the results an answer shows: each file's best chunk with its span,
snippet, symbol, the lines that matched in the file and the contributions that explain its
score; and the stable reorders the engine applies after fusion (a named place first, tests
after the implementation)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol, TypeVar

from maguyva.modalities.protocol import RetrieverQuery
from maguyva.model import Hit, ModalityContribution, Result
from maguyva.query.fusion import FusedEntry
from maguyva.query.pasted import Pasted
from maguyva.query.places import Place, is_test_path
from maguyva.query.routing import Plan
from maguyva.store.chunks import ChunkStore, SegmentedChunkStore

SNIPPET_LINES = 12


def first_hits_asked(request: RetrieverQuery, plan: Plan, pasted: Pasted | None) -> RetrieverQuery:
    """`request` with `first_per_file` when one list is answered directly (shown by file:
    only each file's first hit is read in full), not when a pasted error's type definition
    is fused in after (`Engine._with_type_definition`)."""
    lean = plan.strategy == "direct" and tuple(plan.modalities) == ("text",)
    if lean and not (pasted is not None and pasted.exc_type):
        return replace(request, first_per_file=True)
    return request


class _HasPath(Protocol):
    @property
    def path(self) -> str: ...


_Item = TypeVar("_Item", bound=_HasPath)


def prefer_place(items: list[_Item], place: Place | None, demote_tests: bool) -> list[_Item]:
    """Stable reorder of results (or the fused entries they are made from: only the path
    counts): those in the named place first, then (with `demote_tests`) test files after
    the others."""

    def group(item: _Item) -> tuple[bool, bool]:
        outside = place is not None and not place.matches(item.path)
        return outside, demote_tests and is_test_path(item.path)

    return sorted(items, key=group)


def present(
    fused: Sequence[FusedEntry],
    order: Sequence[str],
    lists: dict[str, list[Hit]],
    chunks: ChunkStore | SegmentedChunkStore,
    is_stale: Callable[[str], bool],
) -> list[Result]:
    """The results of `fused` (fused from `lists[m] for m in order`), each from its chunk's
    record and the first hit of its key in the first list that ranked it."""
    hits_by_key: dict[tuple[str, str], Hit] = {}
    # The matching lines of the files shown only: a common literal's hits span ~5x more files
    # than the answer shows, and each brings its file's every matching line.
    lines_by_path: dict[str, _FileLines] = {entry.path: _FileLines() for entry in fused}
    for m in order:
        # each hit once: a retriever may repeat one (`literal._ranked_hits`: a file's first)
        for h in {id(h): h for h in lists[m]}.values():
            hits_by_key.setdefault((m, h.key or ""), h)
            gathered = lines_by_path.get(h.path)
            if gathered is None:
                continue
            gathered.add(h.lines, h.extra.get("file_lines"))
    results = []
    for entry in fused:
        provenance = []
        first_hit: Hit | None = None
        for list_no, rank, contribution in entry.contributions:
            modality = order[list_no]
            hit = hits_by_key.get((modality, entry.key))
            first_hit = first_hit or hit
            tier = _tier(lists[modality], rank, entry.path) if modality == "semantic" else None
            provenance.append(ModalityContribution(  # ranks are 1-based in every output
                modality, rank + 1, round(contribution, 12), hit.score if hit else None,
                tier))  # fmt: skip
        matched = lines_by_path[entry.path].sorted()
        result = result_of(entry, provenance, first_hit, matched, chunks, is_stale)
        results.append(with_tier(result))
    return results


def _tier(hits: list[Hit], rank: int, path: str) -> str | None:
    """The tier of the semantic hit that placed a result (`Hit.extra["tier"]`): the one at
    the contribution's rank, which may be another chunk of the result's file than the one
    shown (fusion by file), so not looked up by the result's key."""
    hit = hits[rank] if 0 <= rank < len(hits) else None
    return hit.extra.get("tier") if hit is not None and hit.path == path else None


def with_tier(result: Result) -> Result:
    """`result` with `extra["tier"]` set to the tier of its semantic contribution (the first
    hit's extra is copied, which is another retriever's when semantic ranked it lower)."""
    tier = next((p.tier for p in result.provenance if p.tier is not None), None)
    if tier is not None:
        result.extra["tier"] = tier
    return result


class _FileLines:
    """The matching lines of one file, gathered from its hits. A text hit's `file_lines` (every
    matching line of its file, sorted and distinct, one list shared by the file's hits) holds
    its own `lines`: a file reached through such a list alone is its copy, not a set of tens of
    thousands of numbers sorted again (all lines of `self` in the stdlib: 46k, issue 21)."""

    __slots__ = ("listed", "others")

    def __init__(self) -> None:
        self.listed: list[int] | None = None  # the first `file_lines` seen
        self.others: set[int] | None = None  # any other lines, when there are some

    def add(self, lines: list[int], file_lines: list[int] | None) -> None:
        if file_lines is not None and (self.listed is None or file_lines is self.listed):
            self.listed = file_lines  # `lines` are some of them (the text modality's rule)
            return
        if self.others is None:
            self.others = set()
        self.others.update(lines)
        if file_lines is not None:
            self.others.update(file_lines)

    def sorted(self) -> list[int]:
        if self.others is None:
            return list(self.listed or ())
        return sorted(self.others.union(self.listed or ()))


def result_of(
    entry: FusedEntry,
    provenance: list[ModalityContribution],
    hit: Hit | None,
    lines: list[int],
    chunks: ChunkStore | SegmentedChunkStore,
    is_stale: Callable[[str], bool],
) -> Result:
    """One result: span, snippet, symbol and kind from its chunk (its record alone is read;
    without its text, which the store keeps between questions, when the hit has a snippet of
    its own), the hit's own snippet, symbol and kind first."""
    path = entry.path
    own_snippet = hit is not None and bool(hit.snippet)
    chunk = chunks.record(entry.key, path, text=not own_snippet)
    if chunk is not None:
        start, end = chunk.start_line, chunk.end_line
        snippet = "" if own_snippet else _chunk_snippet(chunk.text, start, end, lines)
        symbol, kind = chunk.qualified_name, chunk.kind
    else:
        start, end = (hit.start_line, hit.end_line) if hit else (1, 1)
        snippet, symbol, kind = "", None, None
    if hit is not None:
        snippet = hit.snippet or snippet
        symbol = hit.symbol or symbol
        kind = hit.kind or kind
    return Result(
        path=path, start_line=start, end_line=end, score=entry.score, snippet=snippet,
        provenance=provenance, boost=entry.boost, demoted=entry.demoted, lines=lines,
        symbol=symbol, kind=kind, stale=is_stale(path), extra=dict(hit.extra) if hit else {},
    )  # fmt: skip


def _chunk_snippet(text: str, start: int, end: int, lines: list[int]) -> str:
    """The chunk's lines from its first matching line (`SNIPPET_LINES` of them): a module
    chunk's head is its license header or docstring, which says nothing about why it matched.
    Only made when the hit has no snippet of its own (a text hit's line is shown instead, and
    a module chunk's text is its whole file)."""
    first = next((n for n in lines if start <= n <= end), start)
    text_lines = text.splitlines()
    return "\n".join(text_lines[first - start : first - start + SNIPPET_LINES])
