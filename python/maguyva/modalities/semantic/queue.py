"""What to embed next: each chunk's entry, the candidates lacking a vector, in queue order.

A build keeps one entry per eligible chunk (a plain tuple, untracked by the cyclic
collector) and the candidates sorted, so that an update inserts and removes a handful
instead of sorting every chunk again."""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Any

from maguyva.errors import ConfigError
from maguyva.modalities.semantic.dedup import duplicates
from maguyva.modalities.semantic.priority import rank
from maguyva.modalities.semantic.texts import Planned
from maguyva.model import Chunk

PHASES = ("auto", "full", "heads-first", "heads")
HEADS_FIRST_MIN = 2000
"""With more chunks than this to embed, "auto" embeds every chunk's head before any body."""


def phases_of(config: dict[str, Any], missing: int) -> str:
    """ "full", "heads-first" or "heads" (config `semantic_phases`; "auto" picks heads-first when
    more than `HEADS_FIRST_MIN` chunks lack a full vector)."""
    mode = str(config.get("semantic_phases") or "auto")
    if mode not in PHASES:
        raise ConfigError(f"semantic_phases must be one of {', '.join(PHASES)}, got {mode!r}")
    if mode == "auto":
        return "heads-first" if missing > HEADS_FIRST_MIN else "full"
    return mode


Entry = tuple[str, int, int, str, int, str, str, int, int, str, str | None]
"""What the build keeps of an eligible chunk between updates (no text): path, start and end
line, chunk id, its queue rank (`priority.rank`), the hashes of its full and head texts and
their lengths (the queue's order), its kind and (qualified) name (what a hit shows). A plain tuple of atoms, so the cyclic collector stops tracking it
(and the candidates holding it): a writer keeps one per chunk, and a full collection would
otherwise walk them all (a tuple subclass, even a NamedTuple, stays tracked)."""
PATH, START, END, ID, LINES, HASH, HEAD_HASH, TEXT_LEN, HEAD_LEN, KIND, NAME = range(11)


def entry_of(chunk: Chunk, p: Planned, central: frozenset[str] | None = None) -> Entry:
    # the LINES slot holds the queue rank (`priority.rank`): what to embed first
    return (chunk.path, chunk.start_line, chunk.end_line, p.id,
            rank(chunk.path, p.lines, central),
            p.hash, p.head_hash, len(p.text), len(p.head), chunk.kind,
            chunk.qualified_name or chunk.name)  # fmt: skip


def entry_duplicates(entries: Iterable[Entry]) -> dict[str, int]:
    """Full texts and heads of these chunks not embedded because another's has their key."""
    return duplicates((e[HASH], e[HEAD_HASH], e[HEAD_LEN] < e[TEXT_LEN]) for e in entries)


Candidate = tuple[int, int, str, int, int, str, str, Entry]
"""A vector a chunk lacks, in queue order: (rank, length of the text, path, start, end, chunk
id, hash to embed, entry). The rank (`priority.rank`) puts implementation before tests,
vendored and generated code, and within each definitions before line windows (they are what
semantic questions are about); then shortest first (similar lengths share a batch, and a
budget covers the most chunks), then row order: a from-scratch build's stable sort."""


def split_candidates(
    entries: list[Entry], have: set[str]
) -> tuple[list[Candidate], list[Candidate]]:
    """Heads of chunks with no vector at all, and full texts of chunks without theirs."""
    heads = [(e[LINES], e[HEAD_LEN], e[PATH], e[START], e[END], e[ID], e[HEAD_HASH], e)
             for e in entries if e[HASH] not in have and e[HEAD_HASH] not in have]  # fmt: skip
    bodies = [(e[LINES], e[TEXT_LEN], e[PATH], e[START], e[END], e[ID], e[HASH], e)
              for e in entries if e[HASH] not in have]  # fmt: skip
    return heads, bodies


def in_order(candidates: list[Candidate]) -> list[Candidate]:
    return sorted(candidates, key=lambda c: c[:6])


def _merge(ordered: list[Candidate], more: list[Candidate]) -> list[Candidate]:
    """`ordered` (sorted) with `more` inserted in their places."""
    if len(more) > len(ordered) // 8:
        return in_order(ordered + more)
    for c in more:
        ordered.insert(bisect.bisect_left(ordered, c[:6], key=_key), c)
    return ordered


def _key(c: Candidate) -> tuple[bool, int, str, int, int, str]:
    return c[:6]


def _remove(ordered: list[Candidate], e: Entry, head: bool) -> bool:
    """Take `e`'s head (or body) candidate out of `ordered` if it is there."""
    key = (e[LINES], e[HEAD_LEN] if head else e[TEXT_LEN], e[PATH], e[START], e[END], e[ID])
    i = bisect.bisect_left(ordered, key, key=_key)
    while i < len(ordered) and ordered[i][:6] == key:
        if ordered[i][7] is e:
            del ordered[i]
            return True
        i += 1
    return False


def embed_phase(phases: str) -> str:
    """The progress phase of the embedding, named for what its count counts: with heads
    first, a chunk is embedded twice (its head, then its body)."""
    return {"heads-first": "embed heads+bodies", "heads": "embed heads"}.get(phases, "embed")


def left_to_embed(candidates: Candidates, phases: str) -> int:
    """Texts still to embed after this build: bodies (unless "heads") and the heads that are
    not their whole chunk (unless "full"; a short chunk's head is its body)."""
    if phases == "heads":
        return len(candidates.heads)
    if phases == "full":
        return len(candidates.bodies)
    return len(candidates.bodies) + sum(1 for c in candidates.heads if c[6] != c[7][HASH])


def touched_files(changes: Any) -> set[str]:
    """The files an update changed (added, modified, renamed to); none for a first build or
    a build without a change set."""
    if changes is None or getattr(changes, "reason", ""):
        return set()
    return set(changes.touched_paths())


class Have:
    """The hashes that have a vector: those of the previous generation's rows (`previous`:
    a mapping by hash) and those found in the cache or embedded by this build."""

    def __init__(self, previous: Any) -> None:
        self.previous, self.got = previous, set()

    def __contains__(self, h: object) -> bool:
        return h in self.got or h in self.previous


class Candidates:
    """Chunks lacking a vector, sorted in queue order (`heads`: no vector at all; `bodies`:
    no full vector), and those chunks by each of their two hashes, kept up to date one entry
    at a time (an update touches a handful)."""

    def __init__(self, heads: list[Candidate], bodies: list[Candidate]) -> None:
        self.heads, self.bodies = heads, bodies
        self.by_hash: dict[str, tuple[Entry, ...]] = {}  # tuples: untracked by the collector
        for c in bodies:
            self._index(c[7])

    def _index(self, e: Entry) -> None:
        self.by_hash[e[HASH]] = (*self.by_hash.get(e[HASH], ()), e)
        if e[HEAD_HASH] != e[HASH]:
            self.by_hash[e[HEAD_HASH]] = (*self.by_hash.get(e[HEAD_HASH], ()), e)

    def _unindex(self, e: Entry) -> None:
        for h in {e[HASH], e[HEAD_HASH]}:
            got = tuple(x for x in self.by_hash.get(h, ()) if x is not e)
            if got:
                self.by_hash[h] = got
            else:
                self.by_hash.pop(h, None)

    def drop(self, e: Entry) -> None:
        """`e` left the repository (its file changed or went away)."""
        if _remove(self.bodies, e, False):
            _remove(self.heads, e, True)
            self._unindex(e)

    def add(self, entries: list[Entry], have: Have) -> None:
        heads, bodies = split_candidates(entries, have)  # type: ignore[arg-type]
        self.heads = _merge(self.heads, heads)
        self.bodies = _merge(self.bodies, bodies)
        for c in bodies:
            self._index(c[7])

    def settle(self, hashes: set[str], have: Have) -> set[str]:
        """Hashes that just got a vector: take the chunks they complete out of the lists;
        return those chunks' paths (their rows change)."""
        paths: set[str] = set()
        for h in hashes:
            for e in self.by_hash.get(h, ()):
                paths.add(e[PATH])
                if e[HASH] in have:
                    _remove(self.bodies, e, False)
                    _remove(self.heads, e, True)
                    self._unindex(e)
                elif e[HEAD_HASH] in have:
                    _remove(self.heads, e, True)
        return paths


def make_queue(
    heads: list[Candidate],
    bodies: list[Candidate],
    have: set[str],
    phases: str,
    cap: int | None,
    urgent: tuple[list[Candidate], list[Candidate]] = ([], []),
) -> list[tuple[str, Entry, bool]]:
    """(hash, chunk, is its head) to embed, in order: the `urgent` ones (the chunks of the
    files this update changed: what was just edited is searched for first), then heads of
    chunks with no vector at all (unless "full"), then full texts (unless "heads"); each hash
    once; at most `cap`."""
    stages = []
    for h, b in (urgent, (heads, bodies)):
        stages += ([(h, True)] if phases != "full" else []) + (
            [(b, False)] if phases != "heads" else []
        )
    queue: dict[str, tuple[str, Entry, bool]] = {}
    for stage, is_head in stages:
        for c in stage:
            if cap is not None and len(queue) >= cap:
                return list(queue.values())
            h = c[6]
            if h not in have and h not in queue:
                queue[h] = (h, c[7], is_head)
    return list(queue.values())
