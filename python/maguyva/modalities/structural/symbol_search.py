"""Loading the symbol index (segments parsed once per file identity and shared) and the
searcher that answers exact, case-insensitive, sub-token, prefix and qualified look-ups.

Ranking, best first: how well the name matches (exact > case-insensitive > same sub-tokens >
prefix > contains the sub-tokens), the kind asked for, definitions above declarations and
re-exports, a method above its overrides, implementation above tests, first-party above vendored code, types and functions
above variables, then shorter paths, then path and position (the order of a from-scratch
build, whatever the segments)."""

from __future__ import annotations

import bisect
import heapq
import itertools
import json
import math
import operator
import os
import re
import threading
import weakref
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from maguyva.errors import CorruptIndexError, ModalityUnavailable
from maguyva.modalities.protocol import RetrieverQuery
from maguyva.modalities.structural.names import RENT, AllNames
from maguyva.modalities.structural.stems import forms
from maguyva.modalities.structural.symbols import (
    _KIND_RANK,
    _WORD,
    COLUMNS,
    FLAG_DECL,
    FLAG_TEST,
    FLAG_VENDOR,
    KIND_FAMILIES,
    LEGACY_FILE,
    META,
    SEGMENTS,
    _identity,
    _segment_problems,
    fold,
    normalize_kind,
    read_meta,
    read_segment,
    segment_name,
    subtokens,
)
from maguyva.model import Hit
from maguyva.store.identity import may_serve

FORM_WEIGHT = 0.75
"""What a question word's other form (`stems.forms`: "floats" as `float`) scores, as a share
of the word as written: an inflected match is weaker evidence (chosen on the understand_code
tune halves of docs/eval-rust-ts-2.md among 0, 0.25, 0.5, 0.75 and 1)."""

# ---- loading ----------------------------------------------------------------------------------


class _Segment:
    """One segment's rows and look-up tables (immutable; shared by searchers of several
    generations when the file is the same). The name tables are built at open; the sub-token
    and doc-word tables (natural-language questions, multi-word names) on first use."""

    __slots__ = ("__weakref__", "_doc_terms", "_name_terms", "c", "exact", "folded", "lower",
                 "n", "paths", "sorted_lower", "source")  # fmt: skip

    def __init__(self, paths: list[str], cols: dict[str, list[Any]], source: str = "") -> None:
        self.source = source  # the segment file last found to be this one (`may_serve`)
        # Immutable from here: tuples, which the cyclic collector stops tracking (see below).
        self.paths = tuple(paths)
        self.c = {name: tuple(col) for name, col in cols.items()}
        self.n = len(cols["name"])
        exact: dict[str, list[int]] = defaultdict(list)
        lower: dict[str, list[int]] = defaultdict(list)
        folded: dict[str, list[int]] = defaultdict(list)
        for i, name in enumerate(cols["name"]):
            exact[name].append(i)
        for name, ids in exact.items():
            lower[name.lower()].extend(ids)
            folded[fold(name)].extend(ids)
        for table in (lower, folded):
            for ids in table.values():
                if len(ids) > 1:
                    ids.sort()  # row order, as if filled row by row
        # Row lists as tuples: the collector stops tracking a tuple of atoms (and then the
        # dict holding only such tuples), so a full collection no longer walks millions of
        # them (a reader holding the kernel subset's 722k symbols paid ~0.8 CPU-s per full
        # collection, in whatever ran then).
        self.exact, self.lower, self.folded = _frozen(exact), _frozen(lower), _frozen(folded)
        self.sorted_lower = tuple(sorted(self.lower))
        self._name_terms: dict[str, Ids] | None = None
        self._doc_terms: dict[str, Ids] | None = None

    def terms(self) -> tuple[dict[str, Ids], dict[str, Ids]]:
        """(sub-token -> rows, doc word -> rows), each built once, on first use."""
        return self.name_terms(), self.doc_terms()

    def name_terms(self) -> dict[str, Ids]:
        """Sub-token -> rows: all a look-up by name needs. Built apart from the doc words
        (three quarters of the work), so the first name look-up in a segment an edit
        rewrote does not pay for them."""
        found = self._name_terms
        if found is None:
            with _TERMS_LOCK:
                found = self._name_terms
                if found is None:
                    token: dict[str, list[int]] = defaultdict(list)
                    for name, ids in self.exact.items():
                        for tok in set(subtokens(name)):
                            token[tok].extend(ids)
                    for ids in token.values():
                        if len(ids) > 1:
                            ids.sort()
                    found = self._name_terms = _frozen(token)
        return found

    def doc_terms(self) -> dict[str, Ids]:
        """Doc-comment word (lower case) -> rows."""
        found = self._doc_terms
        if found is None:
            with _TERMS_LOCK:
                found = self._doc_terms
                if found is None:
                    doc_token: dict[str, list[int]] = defaultdict(list)
                    for i, doc in enumerate(self.c["doc"]):
                        if doc:
                            for word in {w.lower() for w in _WORD.findall(doc)}:
                                doc_token[word].append(i)
                    found = self._doc_terms = _frozen(doc_token)
        return found


Ids = tuple[int, ...]


def _frozen(table: Mapping[str, list[int]]) -> dict[str, Ids]:
    return {key: tuple(ids) for key, ids in table.items()}


_TERMS_LOCK = threading.Lock()


_CACHE: weakref.WeakValueDictionary[tuple[Any, ...], _Segment] = weakref.WeakValueDictionary()
_CACHE_LOCK = threading.Lock()
_RECENT: dict[str, list[_Segment]] = {}
"""The segments of the last generation opened per index directory, held strongly: a server
drops its engine on the old generation before opening the new one, and the new one should
still find the unchanged segments parsed. At most `_RECENT_MAX` index directories."""
_RECENT_MAX = 4


def _load_segment(directory: Path, m: int) -> _Segment:
    """Segment `m` of `directory`, parsed, or the one parsed from a link of the same file
    (another generation's: `may_serve`, so a new file on a collected one's inode is parsed)."""
    where = os.path.join(directory, segment_name(m))
    try:
        key = _identity(where)
    except OSError as exc:
        raise CorruptIndexError(
            f"{directory / segment_name(m)}: unreadable symbol segment ({exc})"
        ) from exc
    with _CACHE_LOCK:
        found = _CACHE.get(key)
    if found is not None and may_serve(found.source, where, key):
        found.source = where  # the next generation's link is checked against this one
        return found
    path = directory / segment_name(m)
    payload = read_segment(directory, m)
    problems = _segment_problems(payload, m)
    if problems:
        raise CorruptIndexError(f"{path}: {problems[0]}")
    segment = _Segment(payload["paths"], payload["columns"], where)
    with _CACHE_LOCK:
        _CACHE[key] = segment
    return segment


def _legacy_segment(directory: Path) -> _Segment:
    """A format-1 `symbols.json` (one file, plain JSON) as a single segment."""
    path = directory / LEGACY_FILE
    try:
        payload = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise CorruptIndexError(f"{path}: unreadable symbol index ({exc})") from exc
    if not isinstance(payload, dict) or payload.get("version") != 1:
        raise CorruptIndexError(f"{path}: unknown symbol index version")
    try:
        paths, cols = payload["paths"], payload["columns"]
        if any(len(cols[c]) != len(cols["name"]) for c in COLUMNS):
            raise ValueError("columns of different lengths")
        return _Segment(paths, cols)
    except (KeyError, TypeError, IndexError, ValueError) as exc:
        raise CorruptIndexError(f"{path}: malformed symbol index ({exc})") from exc


def load(directory: Path) -> StructuralSearcher:
    """Open the symbol index under `directory` (segments already parsed for an earlier
    generation are reused)."""
    if not (directory / META).exists():
        if (directory / LEGACY_FILE).exists():
            return StructuralSearcher([_legacy_segment(directory)])
        raise ModalityUnavailable(f"structural index not built ({directory / META} missing)")
    meta = read_meta(directory)
    if meta.get("segments") != SEGMENTS:
        raise CorruptIndexError(f"{directory / META}: {meta.get('segments')} segments, "
                                f"expected {SEGMENTS}")  # fmt: skip
    segments = [_load_segment(directory, m) for m in range(SEGMENTS)]
    key = str(Path(directory).resolve().parent.parent)  # <index>/gen-N/structural -> <index>
    with _CACHE_LOCK:
        _RECENT.pop(key, None)
        _RECENT[key] = segments
        while len(_RECENT) > _RECENT_MAX:
            _RECENT.pop(next(iter(_RECENT)))
    return StructuralSearcher(segments)


# ---- searching --------------------------------------------------------------------------------

Ref = tuple[int, int]  # (segment position, row)
_QUALIFIER_SEP = re.compile(r"::|\.|#|->|\\")
_MAX_CHAR = chr(0x10FFFF)
Ranked = list[tuple[tuple[Any, ...], str, int, int]]  # (key, path, segment position, row)


class StructuralSearcher:
    """Read-only symbol look-ups over one index generation. Thread-safe (immutable)."""

    modality: ClassVar[str] = "structural"

    def __init__(self, segments: list[_Segment]) -> None:
        self._segs = [s for s in segments if s.n]
        self._n = sum(s.n for s in self._segs)
        self._exact = [s.exact for s in self._segs]
        self._lower = [s.lower for s in self._segs]
        self._folded = [s.folded for s in self._segs]
        self._sorted = [s.sorted_lower for s in self._segs]
        self._name_terms: list[dict[str, Ids]] | None = None  # `_name_tables`, on first use
        self._all: AllNames | None = None  # `_all_names`, once the look-ups paid for it
        self._asked = 0

    def warm(self) -> None:
        """Build every segment's sub-token and doc-word tables now (otherwise the first
        question in words builds them: ~2 s on a 10k-file tree). They live on the parsed
        segments, which later generations share, so only changed segments build them again."""
        for seg in self._segs:
            seg.terms()

    def _all_names(self) -> AllNames | None:
        """Every segment's names at once (`names.AllNames`), which says a name is nowhere
        without asking each segment. Built once the look-ups asked of every segment have cost
        about what building it costs (`names.RENT`), so a searcher asked a few questions (a
        one-shot question, a generation soon replaced) never pays for it, and one asked many
        pays at most twice the cheaper of the two ways."""
        found = self._all
        if found is None:
            self._asked += 1
            if self._asked * len(self._segs) >= RENT * self._n:
                found = self._all = AllNames(self._sorted, self._folded, self._name_tables)
        return found

    @classmethod
    def from_columns(cls, paths: list[str], cols: dict[str, list[Any]]) -> StructuralSearcher:
        return cls([_Segment(paths, cols)])

    def __len__(self) -> int:
        return self._n

    # ---- look-ups -----------------------------------------------------------------------

    def find_symbol(self, name: str, kind: str | None = None, limit: int = 20) -> list[Hit]:
        """Definitions named `name` (any spelling rule above), best first."""
        return self._hits(self._rank_name(name, normalize_kind(kind)), limit)

    def search(self, query: RetrieverQuery, k: int) -> list[Hit]:
        """By `query.target` when it looks like a name; for natural-language questions also
        by `query.terms` against symbol names and doc comments."""
        kind = normalize_kind(query.kind)
        target = _with_suffix((query.target or "").strip(), query.text)
        ranked: Ranked = []
        named = bool(target) and _looks_like_name(target)
        bare = named and query.text.strip() == target
        if named:
            definitive = query.intent == "find_definition" or bare
            ranked = self._rank_name(target, kind, best_tier=definitive)
            # A query that is nothing but a name asks where it is defined, whatever the
            # classifier made of it (`bind`, `redirect` read as words).
            if definitive:
                ranked = _definitive(ranked, query.intent == "find_definition")
        # A name asked for and not found is an honest empty answer (the engine then fuses);
        # questions in words also match symbol names and doc comments (for a bare name that
        # would only re-add the weaker matches `_definitive` removed).
        if not named or (query.intent != "find_definition" and not (bare and ranked)):
            seen = {(s, i) for _k, _p, s, i in ranked}
            terms = list(query.terms) or ([] if ranked else _WORD.findall(query.text))
            inflected = query.intent == "understand_code"  # "floats" finds `FloatSerializer`
            extra = [
                e for e in self._rank_terms(terms, kind, inflected) if (e[2], e[3]) not in seen
            ]
            ranked = ranked + extra
        return self._hits(ranked, k)

    # ---- ranking ------------------------------------------------------------------------

    def _entry(self, key: tuple[Any, ...], s: int, i: int, kind: frozenset[str] | None):
        seg = self._segs[s]
        c = seg.c
        flags = c["flags"][i]
        path = seg.paths[c["path"][i]]
        quality = (
            0 if kind is None or c["kind"][i] in kind else 1,
            1 if flags & FLAG_DECL else 0,
            1 if overrides(c["signature"][i], c["name"][i]) else 0,
            1 if flags & FLAG_TEST else 0,
            1 if flags & FLAG_VENDOR else 0,
            _KIND_RANK.get(c["kind"][i], 3),
            len(path),
        )
        return ((*key, *quality), path, s, i)

    def _rank_name(self, target: str, kind_word: str | None, best_tier: bool = False) -> Ranked:
        """Every definition `target` names, ranked; with `best_tier`, for `_definitive` (which
        keeps the best tier alone): the prefix and sub-token tiers are not looked up once an
        exact, case-insensitive or folded spelling is found (a row found there ranks at tier
        <= 5 with a qualifier, a prefix or sub-token row at >= 6)."""
        target = target.strip().rstrip("()").strip()
        parts = [p for p in _QUALIFIER_SEP.split(target) if p]
        if not parts:
            return []
        name, qualifier = parts[-1], parts[:-1]
        kind = KIND_FAMILIES.get(kind_word) if kind_word else None
        tiers: dict[Ref, int] = {}

        def offer(s: int, ids: Iterable[int], tier: int) -> None:
            for i in ids:
                if tiers.get((s, i), 99) > tier:
                    tiers[(s, i)] = tier

        low = name.lower()
        folded = fold(name)
        names = self._all_names()  # None: ask every segment, as for the first look-up
        held = names is None or names.has_lower(low)
        # One C-level pass over the segments per table (`map`, `compress`): Python runs only
        # for the segments that hold the name (a loop over the 256 segments was most of a
        # definition question's cost); a table no segment holds the key in is not asked.
        for tier, (tables, key, asked) in enumerate(
            ((self._exact, name, held), (self._lower, low, held),
             (self._folded, folded, names is None or names.has_folded(folded)))
        ):  # fmt: skip
            if not asked:
                continue
            found = list(map(operator.methodcaller("get", key), tables))
            for s in itertools.compress(itertools.count(), found):
                offer(s, found[s], tier)
        if best_tier and any(
            not qualifier or self._qualifier_match(s, i, qualifier) is not None for s, i in tiers
        ):
            return self._ranked(tiers, qualifier, kind)
        if len(low) >= 3 and (names is None or names.has_prefix(low)):
            taken, last = 0, None
            runs = [_prefixed(self._sorted[s], low, s, at) for s, at in self._prefix_runs(low)]
            for key, s in heapq.merge(*runs):
                if key != last:
                    taken += 1
                    if taken > 200:
                        break
                    last = key
                offer(s, self._segs[s].lower[key], 3)
        if len(tiers) < 50:
            toks = subtokens(name)
            if len(toks) >= 2 and (names is None or names.has_tokens(toks)):
                tables = self._name_tables()
                firsts = list(map(operator.methodcaller("get", toks[0]), tables))
                for s in itertools.compress(itertools.count(), firsts):
                    lists = [firsts[s], *(tables[s].get(t) for t in toks[1:])]
                    if all(lists):
                        lists.sort(key=len)
                        offer(s, set(lists[0]).intersection(*lists[1:]), 4)
        return self._ranked(tiers, qualifier, kind)

    def _ranked(
        self, tiers: dict[Ref, int], qualifier: list[str], kind: frozenset[str] | None
    ) -> Ranked:
        """The rows of `tiers` that the qualifier admits, each with its sort key, sorted."""
        ranked: Ranked = []
        for (s, i), tier in tiers.items():
            if qualifier:
                q_match = self._qualifier_match(s, i, qualifier)
                if q_match is None:
                    continue
                tier = tier * 2 + q_match
            ranked.append(self._entry((tier,), s, i, kind))
        ranked.sort()
        return ranked

    def _prefix_runs(self, low: str) -> list[tuple[int, int]]:
        """(segment, position of its first key starting with `low`) for every segment holding
        such a key: the keys from `low` up to its successor (the last character one higher)
        are exactly those that start with it, so two C-level bisects per segment find them."""
        starts = list(map(bisect.bisect_left, self._sorted, itertools.repeat(low)))
        if low[-1] == _MAX_CHAR:  # no successor: look at the key found
            return [(s, at) for s, (keys, at) in enumerate(zip(self._sorted, starts, strict=True))
                    if at < len(keys) and keys[at].startswith(low)]  # fmt: skip
        above = low[:-1] + chr(ord(low[-1]) + 1)
        ends = map(bisect.bisect_left, self._sorted, itertools.repeat(above))
        held = map(operator.sub, ends, starts)
        return [(s, starts[s]) for s in itertools.compress(itertools.count(), held)]

    def _name_tables(self) -> list[dict[str, Ids]]:
        """Every segment's sub-token table (`_Segment.name_terms`), listed once per searcher:
        asking 256 segments for it on every question cost more than the look-ups."""
        tables = self._name_terms
        if tables is None:
            tables = self._name_terms = [seg.name_terms() for seg in self._segs]
        return tables

    def _qualifier_match(self, s: int, i: int, qualifier: list[str]) -> int | None:
        """0 when the definition's qualified name ends with the qualifier, 1 when its path does
        (module-qualified `json.loads`), None when neither."""
        seg = self._segs[s]
        qual = seg.c["qualified"][i].lower().split(".")[:-1]
        want = [q.lower() for q in qualifier]
        if qual[-len(want) :] == want:
            return 0
        path = seg.paths[seg.c["path"][i]].lower()
        stem = path.rsplit(".", 1)[0].split("/")
        if stem and stem[-1] in ("__init__", "index", "mod", "lib"):
            stem = stem[:-1]
        tail = want[-len(stem) :] if len(want) <= len(stem) else want
        if stem[-len(tail) :] == tail or (want and want[-1] in stem):
            return 1
        if qual and fold(qual[-1]) == fold(want[-1]):
            return 1
        return None

    def _rank_terms(self, terms: list[str], kind_word: str | None,
                    inflected: bool = False) -> Ranked:  # fmt: skip
        """Symbols by the summed IDF of the words of `terms` in their names (x2) and doc
        comments; with `inflected`, a word also by its other forms (`stems.forms`), counted
        once per symbol and table, by its best form."""
        kind = KIND_FAMILIES.get(kind_word) if kind_word else None
        scores: dict[Ref, float] = defaultdict(float)
        n = max(self._n, 1)
        words = set()
        for term in terms:
            words.update(subtokens(term) or [term.lower()])
        for word in words:
            if len(word) < 3:
                continue
            for weight, table in ((2.0, 0), (1.0, 1)):
                best: dict[Ref, float] = {}  # per symbol, the word's best form in this table
                for form in forms(word) if inflected else (word,):
                    found = [(s, ids) for s, seg in enumerate(self._segs)
                             if (ids := seg.terms()[table].get(form))]  # fmt: skip
                    df = sum(len(ids) for _s, ids in found)
                    if df and df < n:
                        idf = math.log(n / df) * (1.0 if form == word else FORM_WEIGHT)
                        for s, ids in found:
                            for i in ids:
                                best[(s, i)] = max(best.get((s, i), 0.0), weight * idf)
                for ref, score in best.items():
                    scores[ref] += score
        ranked = [self._entry((10, -score), s, i, kind) for (s, i), score in scores.items()]
        ranked.sort()
        return ranked

    def _hits(self, ranked: Ranked, k: int) -> list[Hit]:
        hits: list[Hit] = []
        seen_chunks: set[str] = set()
        for key, path, s, i in ranked:
            if len(hits) >= k:
                break
            c = self._segs[s].c
            chunk = c["chunk"][i]
            if chunk is not None and chunk in seen_chunks:
                continue
            if chunk is not None:
                seen_chunks.add(chunk)
            snippet = c["signature"][i]
            if c["doc"][i]:
                snippet = f"{snippet}\n{c['doc'][i]}" if snippet else c["doc"][i]
            hits.append(
                Hit(
                    path=path,
                    start_line=c["start"][i],
                    end_line=c["end"][i],
                    key=chunk,
                    score=round(1.0 / (1 + key[0]) if key[0] < 10 else -key[1], 4),
                    snippet=snippet or None,
                    lines=[c["line"][i]],
                    symbol=c["qualified"][i],
                    kind=c["kind"][i],
                    extra={"declaration": bool(c["flags"][i] & FLAG_DECL)},
                )
            )
        return hits


_OVERRIDE_BEFORE = re.compile(r"(?<![\w$])override\s")  # TypeScript, C#, Kotlin, Swift
_OVERRIDE_AFTER = re.compile(r"\)\s*(?:const\s*)?(?:noexcept\s*)?(?:final\s*)?override\b")  # C++


def overrides(signature: str | None, name: str) -> bool:
    """True when a definition's header marks it as overriding an inherited one (`override
    visitWith(..)` in TypeScript, C#, Kotlin or Swift before the name; `) override` in C++).
    Among definitions of one name the overridden one ranks first: `Binder.visitWith` and
    `Checker.visitWith` redefine `ParseTreeWalker.visitWith`, and used to come first only
    because their paths are shorter (docs/eval-rust-ts-2.md)."""
    if not signature or "override" not in signature:
        return False
    at = re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", signature) if name else None
    before = signature[: at.start()] if at else ""
    return bool(_OVERRIDE_BEFORE.search(before) or _OVERRIDE_AFTER.search(signature))


def _prefixed(keys: list[str], prefix: str, s: int, at: int) -> Iterator[tuple[str, int]]:
    """The (at most 200) keys of a sorted list from `at` on that start with `prefix`, tagged
    with `s`."""
    for key in keys[at : at + 200]:
        if not key.startswith(prefix):
            break
        yield key, s


def _definitive(ranked: Ranked, declarations: bool = True) -> Ranked:
    """For "where is X defined": only the best match tier (an exact name hides prefix and
    other-spelling matches), its definitions first and, when `declarations`, its declarations
    (a prototype, a stub, an interface's method signature) after them. The engine fuses this
    list with text hits and boosts by centrality, so a weaker match left in the list can
    outrank the answer; `find_symbol` keeps the full ranking. A declaration is still a place
    where the name is defined (an editor's "go to definition" through the interface type
    lands on it), so a find_definition answer lists it behind every body; a bare name read as
    a word (fused on file evidence) keeps the bodies alone."""
    if not ranked:
        return ranked
    best = ranked[0][0][0]
    kept = [e for e in ranked if e[0][0] == best]
    bodies = [e for e in kept if e[0][2] == 0]  # key[2]: 1 for declarations
    if not bodies or not declarations:
        return bodies or kept
    return bodies + [e for e in kept if e[0][2] != 0]


_NAME = re.compile(r"^[A-Za-z_$][\w$]*(?:(?:\.|::|#|->)[A-Za-z_$~][\w$]*)*[?!=]?(?:\(\))?$")


def _with_suffix(target: str, text: str) -> str:
    """Ruby and Scala names may end in `?`, `!` or `=` (`valid?`, `save!`, `etag=`); the
    classifier drops it from the target, so take it back from the query text."""
    if target and target[-1] not in "?!=":
        at = text.find(target)
        while at >= 0:
            end = at + len(target)
            if (
                end < len(text)
                and text[end] in "?!="
                and (end + 1 == len(text) or text[end + 1] in " ()")
            ):
                return target + text[end]
            at = text.find(target, end)
    return target


def _looks_like_name(target: str) -> bool:
    return bool(_NAME.match(target.strip()))


__all__ = ["StructuralSearcher", "load"]
