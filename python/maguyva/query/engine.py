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
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from maguyva import _core
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
from maguyva.model import Hit, ModalityContribution, Response, Result
from maguyva.query.fingerprint import near_copies_first
from maguyva.query.impact_tail import MAX_MATCHED_LINES, target_name, with_text_tail
from maguyva.query.intent import (
    EXACT_MATCH,
    FIND_DEFINITION,
    FIND_SIMILAR,
    IMPACT_ANALYSIS,
    Classification,
    classify,
    salient_terms,
)
from maguyva.query.pasted import Pasted, parse_pasted
from maguyva.query.places import Place, demotes_tests, is_test_path, place_of
from maguyva.query.routing import (
    NAMED_INTENTS,
    Plan,
    absence_probe,
    is_natural,
    plan_query,
    text_fallback,
)
from maguyva.repo.changes import is_stale
from maguyva.store.chunks import ChunkStore
from maguyva.store.generations import Generation, IndexDir, default_index_dir
from maguyva.support.pools import shared_pool

DEFAULT_LIMIT = 10
MAX_LIMIT = 1000
SNIPPET_LINES = 12

_QUERY_OPTIONS = {f.name for f in fields(RetrieverQuery)} - {"text", "intent", "target", "terms"}


FIX = "run `maguyva index --rebuild` or `maguyva fsck --repair`"


def damage_reason(exc: Exception) -> str:
    """A damaged (or outdated) modality's reason with the fix, as every answer shows it."""
    head = "damaged: " if isinstance(exc, CorruptIndexError) else ""
    return f"{head}{exc} ({FIX})"


def prefer_place(results: list[Result], place: Place | None, demote_tests: bool) -> list[Result]:
    """Stable reorder: results in the named place first, then (with `demote_tests`) test
    files after the others."""

    def group(result: Result) -> tuple[bool, bool]:
        outside = place is not None and not place.matches(result.path)
        return outside, demote_tests and is_test_path(result.path)

    return sorted(results, key=group)


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
        """Classify `query`, route it, run the modalities and fuse their ranked lists.

        A regular expression (`regex=True`) or a fixed string (`fixed_strings`) is searched as
        typed: the classifier's target extraction applies to natural language only."""
        started = time.perf_counter()
        if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise BadQueryError(f"limit must be an integer between 1 and {MAX_LIMIT}")
        if not query.strip() and not snippet:
            raise BadQueryError("empty query")
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
        classify_ms = (time.perf_counter() - started) * 1000
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
        depth = max(limit * 5, 50)
        timings: dict[str, float] = {"classify": round(classify_ms, 4)}
        unavailable: dict[str, str] = {}
        notes: list[str] = []
        lists = self._run(plan.modalities, request, depth, timings, unavailable)

        used = plan
        direct_empty = plan.strategy in ("direct", "single") and not lists.get(plan.direct or "")
        # A verified literal search that found nothing is an answer, not a miss: falling back
        # would only add weak matches from other modalities for a string that is nowhere.
        literal_absent = (
            verdict.intent == "exact_match"
            and plan.direct == "text"
            and ("text" not in unavailable)
        )
        # Absent means empty: a named identifier or literal that occurs in no indexed file
        # is answered with nothing, not with the nearest chunks by meaning.
        absent = None
        if (
            verdict.intent in NAMED_INTENTS
            and not literal_absent
            and (direct_empty or plan.strategy == "rrf")
        ):
            absent = self._absent(verdict, request)
        if literal_absent and direct_empty and plan.direct not in self._damaged:
            absent = verdict.target
        if absent is not None:
            notes.append(f"no symbol or text named {absent!r}")
            lists = {m: [] for m in lists}  # they ran and are shown; nothing counts as a result
        elif direct_empty and plan.direct in self._damaged and verdict.intent == "exact_match":
            # A damaged text index cannot say where the literal is; other modalities' hits
            # would not contain it. The answer is empty and says why (`damaged`).
            notes.append(f"{plan.direct} is damaged; no fallback for an exact match")
        elif direct_empty and plan.fallback is not None:
            why = "unavailable" if plan.direct in unavailable else "returned nothing"
            # Only a question in words is widened to fusion; an identifier, a keyword query
            # or a pasted line that the direct retriever cannot answer is looked up as text.
            natural = is_natural(verdict) or "text" in unavailable
            fallback = plan.fallback if natural else text_fallback(plan)
            if fallback is plan.fallback:
                notes.append(f"{plan.direct} {why}; fell back to fusion")
            else:
                notes.append(f"{plan.direct} {why}; searched the text for {verdict.target!r}")
            missing = [m for m in fallback.modalities if m not in lists]
            lists.update(self._run(missing, request, depth, timings, unavailable))
            used = fallback
        if verdict.intent == IMPACT_ANALYSIS and absent is None and lists.get("graph"):
            lists["graph"] = self._impact_tail(lists["graph"], request, depth)
        if pasted is not None and pasted.exc_type and absent is None and any(lists.values()):
            used = self._with_type_definition(pasted.exc_type, used, lists, depth, timings)
        graph = self.searcher("graph") if "graph" in lists else None
        if isinstance(graph, ReportsBehind) and (note := graph.behind_note()):
            notes.append(note)
        coverage: dict[str, Any] = {}
        semantic = self.searcher("semantic") if "semantic" in lists else None
        if isinstance(semantic, ReportsCoverage):
            # semantic follows a large build (`maguyva.build.follow`): say what it covered
            cov = coverage["semantic"] = semantic.coverage()
            note = semantic.coverage_note()
            if note:
                notes.append(note)
            share = (cov["embedded"] + cov["head_only"]) / cov["chunks"] if cov["chunks"] else 1
            if share < 1 and used.strategy == "rrf" and used.weights.get("semantic"):
                # a partial embedding ranks only what it embedded: it weighs as much as it covers
                weights = {**used.weights, "semantic": round(used.weights["semantic"] * share, 4)}
                used = replace(used, weights=weights)
        fuse_started = time.perf_counter()
        place = place_of(query) if is_natural(verdict) else None
        if pasted is not None and pasted.path:  # a traceback frame: its own file first
            tail = "/".join(pasted.path.replace("\\", "/").lower().split("/")[-2:])
            place = Place((tail,), (), (pasted.path,))
        demote = verdict.intent == "understand_code" and demotes_tests(query)
        if place is not None or demote:
            # the place a question names first, tests after the implementation; the fused order
            # (and its centrality boost) decides only within each group
            results = self._fuse(used, lists, min(MAX_LIMIT, max(limit * 3, 30)))
            results = prefer_place(results, place, demote)[:limit]
            if place is not None:
                notes.append(f"preferred files matching {', '.join(place.words)!r}")
        elif verdict.intent == FIND_SIMILAR and verdict.snippet:
            # renamed copies of the snippet first, by their fingerprint (query/fingerprint.py)
            results = self._fuse(used, lists, min(MAX_LIMIT, max(limit * 3, 30)))
            found: dict[str, set[str]] = {}
            for hits in lists.values():
                for hit in hits:
                    found.setdefault(hit.path, set()).add(hit.key or "")
            results = near_copies_first(verdict.snippet, results, self.chunks, found)[:limit]
        else:
            results = self._fuse(used, lists, limit)
        timings["fuse"] = round((time.perf_counter() - fuse_started) * 1000, 4)
        # Every modality this answer consulted (the plan, its fallback, the graph for the
        # centrality boost of a fused answer) whose files failed their checks.
        consulted = {*plan.modalities, *used.modalities, *unavailable}
        if used.strategy == "rrf":
            consulted.add("graph")
        damaged = {m: self._damaged[m] for m in sorted(consulted) if m in self._damaged}
        return Response(
            query=query, intent=verdict.intent, confidence=verdict.confidence,
            target=verdict.target, fusion_strategy="rrf" if used.strategy == "rrf" else "direct",
            preset=used.preset, modalities=[m for m in used.modalities if m in lists],
            weights=dict(used.weights), k=used.k, results=results, timings_ms=timings,
            total_ms=round((time.perf_counter() - started) * 1000, 4), unavailable=unavailable,
            rule=verdict.rule, generation=self.generation.number, notes=notes,
            damaged=damaged,
            coverage=coverage,
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

    def _impact_tail(self, graph: list[Hit], request: RetrieverQuery, depth: int) -> list[Hit]:
        """The graph's impact list with the files the text index finds naming the target in
        code, after the graph's uses (query/impact_tail.py)."""
        name = target_name(request.target)
        try:
            text = self.searcher("text") if name else None
            if name is None or not hasattr(text, "grep"):
                return graph
            lines = text.grep(name, whole_word=True, case="sensitive",
                              max_results=MAX_MATCHED_LINES)  # fmt: skip
        except (ModalityUnavailable, CorruptIndexError):
            return graph  # the graph's answer stands; the text's state is reported elsewhere
        return with_text_tail(graph, lines, self.chunks, name, depth)

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
                # a searcher whose keys are this generation's chunk ids (semantic) needs no look-up
                searcher = self._searchers.get(name)
                trusted = isinstance(searcher, KeysByChunk) and searcher.chunk_keys is True
                lists[name] = hits if trusted else [self._keyed(hit) for hit in hits]
        return lists

    def keyed(self, hit: Hit) -> Hit:
        """Public form of `_keyed` (used by the tuner to replay cached lists)."""
        return self._keyed(hit)

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
        order = [m for m in plan.modalities if m in lists]
        ranked = [
            (plan.weights.get(m, 0.0), [(h.key or "", h.path) for h in lists[m]]) for m in order
        ]
        centrality: dict[str, float] = {}
        if plan.strategy == "rrf":
            centrality = self._centrality(lists)
        # Files over the size cap recognised as generated by content (repo/large.py) are
        # demoted like generated paths: fuse a few more, halve their scores, re-rank.
        generated = set((self.generation.manifest.get("large") or {}).get("generated_paths", ()))
        extra = (
            len(generated & {h.path for hits in lists.values() for h in hits}) if generated else 0
        )
        fused = _core.fuse(ranked, centrality, float(plan.k), limit + extra)
        if extra:
            fused = sorted(
                ((k_, p, s * (0.5 if p in generated and not d else 1.0), b, d or p in generated, c, f)
                 for k_, p, s, b, d, c, f in fused),
                key=lambda item: (-item[2], item[1], item[0]),
            )[:limit]  # fmt: skip
        hits_by_key: dict[tuple[str, str], Hit] = {}
        lines_by_path: dict[str, set[int]] = {}
        for m in order:
            for h in lists[m]:
                hits_by_key.setdefault((m, h.key or ""), h)
                lines_by_path.setdefault(h.path, set()).update(h.lines)
                lines_by_path[h.path].update(h.extra.get("file_lines", ()))
        results = []
        for key, path, score, boost, demoted, contributions, _folded in fused:
            provenance = []
            first_hit: Hit | None = None
            for list_no, rank, contribution in contributions:
                modality = order[list_no]
                hit = hits_by_key.get((modality, key))
                first_hit = first_hit or hit
                provenance.append(ModalityContribution(  # ranks are 1-based in every output
                    modality, rank + 1, round(contribution, 12), hit.score if hit else None))  # fmt: skip
            results.append(self._result(key, path, score, boost, demoted, provenance,
                                        first_hit, sorted(lines_by_path.get(path, ()))))  # fmt: skip
        return results

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

    def _result(
        self,
        key: str,
        path: str,
        score: float,
        boost: float,
        demoted: bool,
        provenance: list[ModalityContribution],
        hit: Hit | None,
        lines: list[int],
    ) -> Result:
        chunk = self.chunks.get(key, path)
        if chunk is not None:
            start, end = chunk.start_line, chunk.end_line
            # from the first matching line of the chunk: a module chunk's head is its license
            # header or docstring, which says nothing about why it matched
            first = next((n for n in lines if start <= n <= end), start)
            text_lines = chunk.text.splitlines()
            snippet = "\n".join(text_lines[first - start : first - start + SNIPPET_LINES])
            symbol, kind = chunk.qualified_name, chunk.kind
        else:
            start, end = (hit.start_line, hit.end_line) if hit else (1, 1)
            snippet, symbol, kind = "", None, None
        if hit is not None:
            snippet = hit.snippet or snippet
            symbol = hit.symbol or symbol
            kind = hit.kind or kind
        return Result(
            path=path, start_line=start, end_line=end, score=score, snippet=snippet,
            provenance=provenance, boost=boost, demoted=demoted, lines=lines, symbol=symbol,
            kind=kind, stale=self.is_stale(path), extra=dict(hit.extra) if hit else {},
        )  # fmt: skip

    def is_stale(self, path: str) -> bool:
        """True when the file's content changed or it vanished since it was indexed (a `touch`
        alone does not count: see `changes.is_stale`)."""
        if self._files_meta is None:
            from maguyva.store.chunks import read_file_states

            self._files_meta = read_file_states(self.generation.path)
        return is_stale(self.root, path, self._files_meta.get(path))
