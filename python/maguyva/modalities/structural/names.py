"""Every segment's names at once, so that a name which is nowhere is known to be nowhere
without asking each of the 256 segments: a look-up by name asks every segment's exact,
lower-case and folded tables, bisects every segment's sorted names twice for the prefix tier
and asks every sub-token table (~0.3 ms on the stdlib's 237 non-empty segments, for nothing
when the name does not exist)."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

RENT = 0.22
"""Building `AllNames` costs about what this many look-ups by name per symbol cost when each
asks every segment: on the stdlib (25,769 symbols, 237 non-empty segments) ~7 ms to build and
~0.3 ms a miss (1.3 µs per segment, 0.28 µs per symbol to build; load 5, 21:16 UTC), so a
searcher builds it after ~24 look-ups there, after ~620 on the 722k-symbol kernel subset."""


class AllNames:
    """The union of one searcher's segment tables: every lower-case name, sorted (exact and
    prefix look-ups by one bisect), every folded name, and every sub-token (on first need: the
    sub-token tables are themselves built on first use). Immutable once built."""

    __slots__ = ("_folded", "_sorted", "_tables", "_tokens")

    def __init__(
        self,
        sorted_lower: Sequence[tuple[str, ...]],
        folded: Sequence[Mapping[str, Any]],
        tables: Callable[[], Sequence[Mapping[str, Any]]],
    ) -> None:
        # each segment's names are sorted already: the sort merges 237 runs (~3 ms)
        self._sorted = sorted(itertools.chain.from_iterable(sorted_lower))
        self._folded = set().union(*folded)
        self._tables = tables
        self._tokens: frozenset[str] | None = None

    def has_lower(self, low: str) -> bool:
        """Does any segment hold a name whose lower case is `low` (exact or case-insensitive)?"""
        at = bisect.bisect_left(self._sorted, low)
        return at < len(self._sorted) and self._sorted[at] == low

    def has_folded(self, folded: str) -> bool:
        return folded in self._folded

    def has_prefix(self, low: str) -> bool:
        """Does any segment hold a lower-case name that starts with `low`?"""
        at = bisect.bisect_left(self._sorted, low)
        return at < len(self._sorted) and self._sorted[at].startswith(low)

    def has_tokens(self, tokens: Iterable[str]) -> bool:
        """Is every one of `tokens` some name's sub-token? (If one is in no segment, no
        segment holds a name with all of them.)"""
        known = self._tokens
        if known is None:
            known = self._tokens = frozenset().union(*self._tables())
        return all(t in known for t in tokens)
