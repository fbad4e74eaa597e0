"""The query engine: classify, plan, run the modalities concurrently, fuse, explain.

An `Engine` is bound to one committed index generation (it pins it: a concurrent writer's new
generation does not change answers mid-query). Modalities are opened lazily, once, and shared
by threads; each modality's search is thread-safe and releases the GIL in native code, so a
fused query's retrievers really overlap.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from maguyva.errors import (
    BadQueryError,
    CorruptIndexError,
    IndexVersionError,
    ModalityUnavailable,
    ModelMismatchError,
)
from maguyva.modalities.protocol import (
    KeysByChunk,
    ReportsBehind,
    ReportsCoverage,
    RetrieverQuery,
    Warms,
)
from maguyva.modalities.registry import load_modality
from maguyva.modalities.semantic.coverage import share as semantic_share
from maguyva.model import Hit, Response, Result
from maguyva.query.fingerprint import near_copies_first
from maguyva.query.fusion import FusedEntry, carried, fuse_hits
from maguyva.query.impact_tail import impact_with_tail
from maguyva.query.intent import (
    EXACT_MATCH,
    FIND_DEFINITION,
    FIND_SIMILAR,
    IMPACT_ANALYSIS,
    Classification,
    classify,
    salient_terms,
)
from maguyva.query.notes import damage_reason, pending_notes
from maguyva.query.pasted import Pasted, parse_pasted
from maguyva.query.places import Place, demotes_tests, place_of
from maguyva.query.present import first_hits_asked, prefer_place, present
from maguyva.query.routing import (
    NAMED_INTENTS,
    Plan,
    absence_probe,
    is_natural,
    plan_query,
    text_fallback,
)
from maguyva.repo.changes import stale_of
from maguyva.store.chunks import ChunkStore, read_file_states
from maguyva.store.generations import Generation, IndexDir, default_index_dir
from maguyva.support.pools import shared_pool

DEFAULT_LIMIT = 10
MAX_LIMIT = 1000

CHUNK_KEYED = frozenset({"text"})
"""Modalities whose hits carry this generation's chunk ids (or no key): the text index keeps the
chunk ids of the store it was built with (content-addressed: an unchanged file's agree)."""

_OWN = {"text", "intent", "target", "terms", "first_per_file"}  # first: present.first_hits_asked
_QUERY_OPTIONS = {f.name for f in fields(RetrieverQuery)} - _OWN


@dataclass
class Retrieved:
    """What the retrievers of one question found: the ranked lists by modality, the plan they
    are fused by (the routed one, or its fallback), the modalities that could not answer and
    why, the notes the answer carries, and the name that occurs nowhere (`absent`)."""

    used: Plan
    lists: dict[str, list[Hit]]
    unavailable: dict[str, str]
    notes: list[str] = field(default_factory=list)
    absent: str | None = None


class Engine:
    """Answers queries against one generation of one repository's index."""

    def __init__(self, root: Path, generation: Generation) -> None:
        self.root = root
        self.generation = generation
        self.chunks = ChunkStore.lazy(generation.path)
        self._searchers: dict[str, Any] = {}
        self._unavailable: dict[str, str] = {}
        self._damaged: dict[str, str] = {}  # modality -> why its files failed their checks
        self._lock = threading.Lock()
        self._files_meta: dict[str, list[int]] | None = None
        self._capabilities: dict[tuple[str, type], bool] = {}

    @classmethod
    def open(cls, root: Path, index_dir: Path | None = None) -> Engine:
        root = root.resolve()
        index = IndexDir(index_dir or default_index_dir(root))
        return cls(root, index.current())

    # -- modalities --------------------------------------------------------------------------

    def searcher(self, modality: str) -> Any:
        """The opened searcher of a modality; raises ModalityUnavailable with the reason."""
        with self._lock:
            if modality in self._searchers:
                return self._searchers[modality]
            if modality in self._unavailable:
                raise ModalityUnavailable(self._unavailable[modality])
            status = self.generation.manifest.get("modalities", {}).get(modality, {})
            try:
                if not status.get("built"):
                    reason = status.get("reason", "not built in this index")
                    raise ModalityUnavailable(reason)
                searcher = load_modality(modality).open(
                    self.generation.path, self.generation.manifest
                )
            except ModalityUnavailable as exc:
                self._unavailable[modality] = str(exc)
                raise
            except (CorruptIndexError, IndexVersionError, ModelMismatchError) as exc:
                # One damaged or outdated part must not take the other modalities down: it is
                # reported as unavailable, with the fix, on every answer until it is rebuilt.
                reason = damage_reason(exc)
                self._unavailable[modality] = reason
                self._damaged[modality] = reason
                raise ModalityUnavailable(reason) from exc
            self._searchers[modality] = searcher
            return searcher

    def _offering(self, modality: str, capability: type) -> Any:
        """The opened searcher of `modality` when it offers `capability` (an optional
        protocol of modalities/protocol.py), else None. Decided once per searcher: an
        `isinstance` against a runtime-checkable protocol inspects its members every time."""
        searcher = self.searcher(modality)
        key = (modality, capability)
        offers = self._capabilities.get(key)
        if offers is None:
            offers = self._capabilities[key] = isinstance(searcher, capability)
        return searcher if offers else None

    def warm(self) -> dict[str, float]:
        """Open every built modality and index the chunk store's segments now, so that the
        first questions do not pay for it: what a long-running server (`maguyva mcp`) does in
        the background at startup and after each update its watcher commits. Returns the
        seconds each part took (a modality that cannot be opened is skipped: its answers say
        why)."""
        took: dict[str, float] = {}
        for name in ("text", "structural", "graph", "semantic"):
            start = time.perf_counter()
            try:
                searcher = self.searcher(name)
            except ModalityUnavailable:
                continue
            if isinstance(searcher, Warms):  # tables it otherwise builds on its first question
                searcher.warm()
            took[name] = time.perf_counter() - start
        start = time.perf_counter()
        self.chunks.warm()
        took["chunks"] = time.perf_counter() - start
        return took

    def available_modalities(self) -> list[str]:
        found = []
        for name in ("semantic", "text", "structural", "graph"):
            try:
                self.searcher(name)
                found.append(name)
            except ModalityUnavailable:
                pass
        return found

    # -- queries -----------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        preset: str = "default",
        modalities: Sequence[str] | None = None,
        weights: dict[str, float] | None = None,
        k: int | None = None,
        limit: int = DEFAULT_LIMIT,
        snippet: str | None = None,
        intent: str | None = None,
        fixed_strings: bool = False,
        **options: Any,
    ) -> Response:
        """Classify `query`, route it, run the modalities and fuse their ranked lists: the
        steps `_understand`, `_plan`, `_retrieve`, `_weigh`, `_present`, `_respond`.

        A regular expression (`regex=True`) or a fixed string (`fixed_strings`) is searched as
        typed: the classifier's target extraction applies to natural language only."""
        started = time.perf_counter()
        if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise BadQueryError(f"limit must be an integer between 1 and {MAX_LIMIT}")
        if not query.strip() and not snippet:
            raise BadQueryError("empty query")
        verdict, pasted = self._understand(query, snippet, intent, fixed_strings, options)
        timings: dict[str, float] = {"classify": round((time.perf_counter() - started) * 1000, 4)}
        plan, request = self._plan(query, verdict, options, preset, modalities, weights, k)
        found = self._retrieve(plan, verdict, request, pasted, max(limit * 5, 50), timings)
        coverage = self._weigh(found)
        fuse_started = time.perf_counter()
        results = self._present(query, verdict, pasted, found, limit)
        timings["fuse"] = round((time.perf_counter() - fuse_started) * 1000, 4)
        return self._respond(query, verdict, plan, found, results, timings, coverage, started)

    def _understand(
        self,
        query: str,
        snippet: str | None,
        intent: str | None,
        fixed_strings: bool,
        options: dict[str, Any],
    ) -> tuple[Classification, Pasted | None]:
        """What the question asks (intent, target, terms), and the pasted error or traceback
        frame it is, if any."""
        pasted: Pasted | None = None
        if snippet:
            verdict = Classification(FIND_SIMILAR, 1.0, snippet, "explicit-snippet",
                                     snippet=snippet, terms=salient_terms(snippet))  # fmt: skip
        elif options.get("regex") or fixed_strings:
            rule = "explicit-regex" if options.get("regex") else "explicit-fixed-string"
            verdict = Classification(EXACT_MATCH, 1.0, query, rule, terms=salient_terms(query))
        else:  # only natural language is classified (and may load the learned stage)
            verdict = classify(query)
            pasted = parse_pasted(query)
            if pasted is not None:
                verdict = self._pasted_verdict(pasted, verdict, query)
        if intent:
            verdict = replace(verdict, intent=intent, confidence=1.0,
                              rule=verdict.rule if verdict.rule.startswith("explicit") else
                              "explicit-intent")  # fmt: skip
        return verdict, pasted

    @staticmethod
    def _plan(
        query: str,
        verdict: Classification,
        options: dict[str, Any],
        preset: str,
        modalities: Sequence[str] | None,
        weights: dict[str, float] | None,
        k: int | None,
    ) -> tuple[Plan, RetrieverQuery]:
        """The modalities to run with their weights, and the question every one is asked."""
        plan = plan_query(verdict.intent, verdict.confidence, preset=preset,
                          modalities=modalities, weights=weights, k=k)  # fmt: skip
        unknown = set(options) - _QUERY_OPTIONS
        if unknown:
            raise BadQueryError(f"unknown search option(s): {', '.join(sorted(unknown))}")
        request = RetrieverQuery(
            text=query, intent=verdict.intent, target=verdict.target, terms=verdict.terms,
            snippet=verdict.snippet, kind=options.pop("kind", None) or verdict.kind,
            **{key: value for key, value in options.items() if value is not None},
        )  # fmt: skip
        return plan, request

    def _retrieve(
        self,
        plan: Plan,
        verdict: Classification,
        request: RetrieverQuery,
        pasted: Pasted | None,
        depth: int,
        timings: dict[str, float],
    ) -> Retrieved:
        """Run the plan; an empty direct answer is absent, damaged or falls back (to fusion for
        a question in words, else to the text); a pasted error adds its type's definition."""
        unavailable: dict[str, str] = {}
        asked = first_hits_asked(request, plan, pasted)
        lists = self._run(plan.modalities, asked, depth, timings, unavailable)
        found = Retrieved(plan, lists, unavailable)
        direct_empty = plan.strategy in ("direct", "single") and not lists.get(plan.direct or "")
        # A verified literal search that found nothing is an answer, not a miss: falling back
        # would only add weak matches from other modalities for a string that is nowhere.
        literal_absent = (
            verdict.intent == "exact_match" and plan.direct == "text" and "text" not in unavailable
        )
        # Absent means empty: a named identifier or literal that occurs in no indexed file
        # is answered with nothing, not with the nearest chunks by meaning.
        if (
            verdict.intent in NAMED_INTENTS
            and not literal_absent
            and (direct_empty or plan.strategy == "rrf")
        ):
            found.absent = self._absent(verdict, request)
        if literal_absent and direct_empty and plan.direct not in self._damaged:
            found.absent = verdict.target
        if found.absent is not None:
            found.notes.append(f"no symbol or text named {found.absent!r}")
            found.lists = {m: [] for m in lists}  # they ran and are shown; nothing counts
        elif direct_empty and plan.direct in self._damaged and verdict.intent == "exact_match":
            # A damaged text index cannot say where the literal is; other modalities' hits
            # would not contain it. The answer is empty and says why (`damaged`).
            found.notes.append(f"{plan.direct} is damaged; no fallback for an exact match")
        elif direct_empty and plan.fallback is not None:
            why = "unavailable" if plan.direct in unavailable else "returned nothing"
            # Only a question in words is widened to fusion; an identifier, a keyword query
            # or a pasted line that the direct retriever cannot answer is looked up as text.
            # A retriever a staged first build has not added yet: its target is looked up
            # as text (definition lines first), as an identifier would be.
            pending = self.generation.manifest.get("modalities", {}).get(plan.direct, {})
            looked_up = bool(verdict.target) and bool(pending.get("pending"))
            natural = (is_natural(verdict) and not looked_up) or "text" in unavailable
            fallback = plan.fallback if natural else text_fallback(plan)
            if fallback is plan.fallback:
                found.notes.append(f"{plan.direct} {why}; fell back to fusion")
            else:
                found.notes.append(f"{plan.direct} {why}; searched the text for {verdict.target!r}")
            missing = [m for m in fallback.modalities if m not in lists]
            lists.update(self._run(missing, request, depth, timings, unavailable))
            found.used = fallback
        if verdict.intent == IMPACT_ANALYSIS and found.absent is None and lists.get("graph"):
            text = lambda: self.searcher("text")  # noqa: E731 (opened only when it is needed)
            lists["graph"] = impact_with_tail(lists["graph"], text, self.chunks, request, depth)
        if (
            pasted is not None
            and pasted.exc_type
            and found.absent is None
            and any(found.lists.values())
        ):
            found.used = self._with_type_definition(
                pasted.exc_type, found.used, found.lists, depth, timings
            )
        return found

    def _weigh(self, found: Retrieved) -> dict[str, Any]:
        """Notes of a graph behind its files and of a partial embedding, whose weight in a
        fused answer shrinks to what it covers; returns the coverage the answer carries."""
        graph = self._offering("graph", ReportsBehind) if "graph" in found.lists else None
        if graph is not None and (note := graph.behind_note()):
            found.notes.append(note)
        found.notes += pending_notes(self.generation.manifest, found.unavailable)
        coverage: dict[str, Any] = {}
        semantic = (
            self._offering("semantic", ReportsCoverage) if "semantic" in found.lists else None
        )
        if semantic is not None:
            # semantic follows a large build (`maguyva.build.follow`): say what it covered
            cov = coverage["semantic"] = semantic.coverage()
            note = semantic.coverage_note()
            if note:
                found.notes.append(note)
            share = semantic_share(cov)  # a static tier's chunk counts half (`static_part`)
            used = found.used
            if share < 1 and used.strategy == "rrf" and used.weights.get("semantic"):
                # a partial embedding ranks only what it embedded: it weighs as much as it covers
                weights = {**used.weights, "semantic": round(used.weights["semantic"] * share, 4)}
                found.used = replace(used, weights=weights)
        return coverage

    def _present(
        self,
        query: str,
        verdict: Classification,
        pasted: Pasted | None,
        found: Retrieved,
        limit: int,
    ) -> list[Result]:
        """The fused results in the order shown: the place a question names first, tests
        after the implementation, renamed copies of a snippet first; the fused order (and its
        centrality boost) decides only within each group."""
        used, lists = found.used, found.lists
        place = place_of(query, verdict.intent == "understand_code") if is_natural(verdict) else None  # fmt: skip
        if pasted is not None and pasted.path:  # a traceback frame: its own file first
            tail = "/".join(pasted.path.replace("\\", "/").lower().split("/")[-2:])
            place = Place((tail,), (), (pasted.path,))
        demote = verdict.intent == "understand_code" and demotes_tests(query)
        wider = min(MAX_LIMIT, max(limit * 3, 30))
        if place is not None or demote:
            # reordered before the results are made: only `limit` of them are built
            entries = prefer_place(self._fused(used, lists, wider), place, demote)[:limit]
            if place is not None and any(place.matches(e.path) for e in entries):
                found.notes.append(f"preferred files matching {', '.join(place.words)!r}")
            return self._results(entries, used, lists)
        if verdict.intent == FIND_SIMILAR and verdict.snippet:
            # renamed copies of the snippet first, by their fingerprint (query/fingerprint.py)
            keys_by_path: dict[str, set[str]] = {}
            for hits in lists.values():
                for hit in hits:
                    keys_by_path.setdefault(hit.path, set()).add(hit.key or "")
            results = self._fuse(used, lists, wider)
            return near_copies_first(verdict.snippet, results, self.chunks, keys_by_path)[:limit]
        return self._fuse(used, lists, limit)

    def _respond(
        self,
        query: str,
        verdict: Classification,
        plan: Plan,
        found: Retrieved,
        results: list[Result],
        timings: dict[str, float],
        coverage: dict[str, Any],
        started: float,
    ) -> Response:
        """The response, with every modality this answer consulted (the plan, its fallback,
        the graph for the centrality boost of a fused answer) whose files failed their
        checks."""
        used = found.used
        consulted = {*plan.modalities, *used.modalities, *found.unavailable}
        if used.strategy == "rrf":
            consulted.add("graph")
        damaged = {m: self._damaged[m] for m in sorted(consulted) if m in self._damaged}
        return Response(
            query=query, intent=verdict.intent, confidence=verdict.confidence,
            target=verdict.target, fusion_strategy="rrf" if used.strategy == "rrf" else "direct",
            preset=used.preset, modalities=[m for m in used.modalities if m in found.lists],
            weights=dict(used.weights), k=used.k, results=results, timings_ms=timings,
            total_ms=round((time.perf_counter() - started) * 1000, 4),
            unavailable=found.unavailable, rule=verdict.rule, generation=self.generation.number,
            notes=found.notes, damaged=damaged, coverage=coverage,
        )  # fmt: skip

    def damaged(self) -> dict[str, str]:
        """Modalities found damaged so far (on open or mid-search), with the reason and fix."""
        with self._lock:
            return dict(self._damaged)

    def _pasted_verdict(
        self, pasted: Pasted, verdict: Classification, query: str
    ) -> Classification:
        """A pasted error or log line searched by its message (the first candidate that occurs
        in the index), a traceback frame by the definition of its function."""
        terms = salient_terms(query)
        if pasted.kind == "frame":
            if not pasted.func:
                return verdict
            return Classification(FIND_DEFINITION, 0.95, pasted.func, "4:pasted-frame", terms=terms)
        if not pasted.candidates:
            return verdict
        chosen = pasted.candidates[0]
        try:
            text = self.searcher("text")
            for candidate in pasted.candidates:
                if text.grep(candidate, case="sensitive", max_results=1):
                    chosen = candidate
                    break
        except (ModalityUnavailable, BadQueryError, CorruptIndexError, IndexVersionError):
            pass
        return Classification(EXACT_MATCH, 0.95, chosen, f"4:pasted-{pasted.kind}", terms=terms)

    def _with_type_definition(
        self,
        exc_type: str,
        plan: Plan,
        lists: dict[str, list[Hit]],
        depth: int,
        timings: dict[str, float],
    ) -> Plan:
        """Add the definition of a pasted error's exception type after the message's matches
        (fused with a small weight: the `raise` site stays first)."""
        name = exc_type.rsplit(".", 1)[-1]
        request = RetrieverQuery(text=name, intent=FIND_DEFINITION, target=name)
        found = self._run(["structural"], request, depth, timings, {}).get("structural") or []
        definitions = [h for h in found if (h.symbol or "").rsplit(".", 1)[-1] == name]
        if not definitions:
            return plan
        lists["structural"] = definitions
        weights = {**{m: plan.weights.get(m, 1.0) for m in lists if m != "structural"},
                   "structural": 0.1}  # fmt: skip
        return Plan(plan.preset, tuple(weights), weights, plan.k or 60, "rrf")

    def _absent(self, verdict: Classification, request: RetrieverQuery) -> str | None:
        """The name or literal the question is about when it occurs in no indexed file (None
        when it occurs, or when that cannot be known: no text index, no usable target)."""
        probe = absence_probe(verdict)
        if probe is None:
            return None
        try:
            text = self.searcher("text")
        except ModalityUnavailable:
            return None
        name, regex = probe
        try:
            found = text.grep(name, regex=regex, case=request.case if regex else "insensitive",
                              path_glob=request.path_glob, max_results=1)  # fmt: skip
        except (BadQueryError, CorruptIndexError, IndexVersionError):
            return None  # damage is reported by the search itself
        return None if found else verdict.target

    def _run(
        self,
        modalities: Sequence[str],
        request: RetrieverQuery,
        depth: int,
        timings: dict[str, float],
        unavailable: dict[str, str],
    ) -> dict[str, list[Hit]]:
        """Run modalities concurrently; record timings and the unavailable ones."""
        searchers = {}
        for name in modalities:
            try:
                searchers[name] = self.searcher(name)
            except ModalityUnavailable as exc:
                unavailable[name] = str(exc)

        def run_one(name: str) -> tuple[str, list[Hit] | None, float]:
            begun = time.perf_counter()
            try:
                hits: list[Hit] | None = searchers[name].search(request, depth)
            except (CorruptIndexError, IndexVersionError) as exc:
                # Damage found mid-search (a checksum on decompression): drop this modality
                # for the query and say so; a bad query (BadQueryError) still propagates.
                unavailable[name] = damage_reason(exc)
                with self._lock:
                    self._damaged[name] = unavailable[name]
                hits = None
            return name, hits, (time.perf_counter() - begun) * 1000

        if len(searchers) == 1:
            outcomes = [run_one(next(iter(searchers)))]
        else:
            # Four modalities at most run at once.
            outcomes = list(shared_pool("modality", 4).map(run_one, list(searchers)))
        lists: dict[str, list[Hit]] = {}
        for name, hits, elapsed in outcomes:
            timings[name] = round(elapsed, 4)
            if hits is not None:
                lists[name] = self._keyed_list(name, hits)
        return lists

    def _keyed_list(self, name: str, hits: list[Hit]) -> list[Hit]:
        """`hits` with the keys of their enclosing chunks. A searcher whose keys are this
        generation's chunk ids (semantic; text, whose index keeps the chunk spans it was built
        from) needs no look-up, but for a hit outside every chunk (no key): checking 5,000
        hits of a common literal against the chunk store decoded every row of their files."""
        keyed = None if name in CHUNK_KEYED else self._offering(name, KeysByChunk)
        trusted = name in CHUNK_KEYED or (keyed is not None and keyed.chunk_keys is True)
        if not trusted:
            return [self._keyed(hit) for hit in hits]
        return [hit if hit.key else self._keyed(hit) for hit in hits]

    def keyed_list(self, name: str, hits: list[Hit]) -> list[Hit]:
        """Public form of `_keyed_list` (the tuner replays cached lists as the engine keys them)."""
        return self._keyed_list(name, hits)

    def centrality_of(self, lists: dict[str, list[Hit]]) -> dict[str, float]:
        """Scaled centrality for every hit of `lists` (empty when the graph is not built)."""
        return self._centrality(lists)

    def _keyed(self, hit: Hit) -> Hit:
        """Give a hit the key of its enclosing chunk, so that modalities agree on keys."""
        if hit.key and self.chunks.get(hit.key, hit.path) is not None:
            return hit
        chunk = self.chunks.enclosing(hit.path, hit.start_line)
        hit.key = chunk.id if chunk else f"{hit.path}:{hit.start_line}-{hit.end_line}"
        return hit

    def _fuse(self, plan: Plan, lists: dict[str, list[Hit]], limit: int) -> list[Result]:
        """The top `limit` files of `lists` fused by `plan`, as results."""
        return self._results(self._fused(plan, lists, limit), plan, lists)

    def _fused(self, plan: Plan, lists: dict[str, list[Hit]], limit: int) -> list[FusedEntry]:
        """The top `limit` files of `lists` fused by `plan` (weighted RRF, `fuse_hits`)."""
        order = [m for m in plan.modalities if m in lists]
        centrality = self._centrality(carried(self, plan, lists)) if plan.strategy == "rrf" else {}
        # Files over the size cap recognised as generated by content (repo/large.py) are
        # demoted like generated paths.
        generated = set((self.generation.manifest.get("large") or {}).get("generated_paths", ()))
        ranked = [(plan.weights.get(m, 0.0), lists[m]) for m in order]
        return fuse_hits(ranked, centrality, float(plan.k), limit, generated, plan.by_file)

    def _results(
        self, entries: list[FusedEntry], plan: Plan, lists: dict[str, list[Hit]]
    ) -> list[Result]:
        order = [m for m in plan.modalities if m in lists]
        stale = self.stale_of([entry.path for entry in entries])
        return present(entries, order, lists, self.chunks, stale.__getitem__)

    def _centrality(self, lists: dict[str, list[Hit]]) -> dict[str, float]:
        try:
            graph = self.searcher("graph")
        except ModalityUnavailable:
            return {}
        keys = sorted({h.key for hits in lists.values() for h in hits if h.key})
        paths = sorted({h.path for hits in lists.values() for h in hits})
        try:
            return dict(graph.centrality(keys, paths))
        except (CorruptIndexError, IndexVersionError) as exc:  # the answer says so (`damaged`)
            with self._lock:
                self._damaged["graph"] = damage_reason(exc)
            return {}

    def stale_of(self, paths: list[str]) -> dict[str, bool]:
        """Whether each of an answer's files changed or vanished since it was indexed (a
        `touch` alone does not count), stat'ed in one native call (`changes.stale_of`)."""
        if self._files_meta is None:
            self._files_meta = read_file_states(self.generation.path)
        return stale_of(str(self.root), paths, self._files_meta)
