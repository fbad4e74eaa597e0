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
from maguyva.modalities.protocol import RetrieverQuery
from maguyva.modalities.registry import load_modality
from maguyva.model import Hit, ModalityContribution, Response, Result
from maguyva.query.intent import FIND_SIMILAR, Classification, classify, salient_terms
from maguyva.query.routing import Plan, plan_query
from maguyva.repo.changes import is_stale
from maguyva.store.chunks import ChunkStore
from maguyva.store.generations import Generation, IndexDir, default_index_dir
from maguyva.support.pools import shared_pool

DEFAULT_LIMIT = 10
MAX_LIMIT = 1000
SNIPPET_LINES = 12

_QUERY_OPTIONS = {f.name for f in fields(RetrieverQuery)} - {"text", "intent", "target", "terms"}


class Engine:
    """Answers queries against one generation of one repository's index."""

    def __init__(self, root: Path, generation: Generation) -> None:
        self.root = root
        self.generation = generation
        self.chunks = ChunkStore.lazy(generation.path)
        self._searchers: dict[str, Any] = {}
        self._unavailable: dict[str, str] = {}
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
                reason = f"{exc} (run `maguyva index --repair` or `--rebuild`)"
                self._unavailable[modality] = reason
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
            warm = getattr(searcher, "warm", None)
            if callable(warm):  # tables a searcher otherwise builds on its first question
                warm()
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
        **options: Any,
    ) -> Response:
        """Classify `query`, route it, run the modalities and fuse their ranked lists."""
        started = time.perf_counter()
        if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise BadQueryError(f"limit must be an integer between 1 and {MAX_LIMIT}")
        if not query.strip() and not snippet:
            raise BadQueryError("empty query")
        verdict = classify(query)
        if snippet:
            verdict = Classification(FIND_SIMILAR, 1.0, snippet, "explicit-snippet",
                                     snippet=snippet, terms=salient_terms(snippet))  # fmt: skip
        if intent:
            verdict = replace(verdict, intent=intent, confidence=1.0, rule="explicit-intent")
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
        if literal_absent and direct_empty:
            notes.append("the literal occurs in no indexed file")
        elif direct_empty and plan.fallback is not None:
            why = "unavailable" if plan.direct in unavailable else "returned nothing"
            notes.append(f"{plan.direct} {why}; fell back to fusion")
            missing = [m for m in plan.fallback.modalities if m not in lists]
            lists.update(self._run(missing, request, depth, timings, unavailable))
            used = plan.fallback
        if "graph" in lists:
            note = getattr(self.searcher("graph"), "behind_note", lambda: None)()
            if note:
                notes.append(note)
        coverage: dict[str, Any] = {}
        if "semantic" in lists and hasattr(self.searcher("semantic"), "coverage"):
            # semantic follows a large build (`maguyva.build.follow`): say what it covered
            cov = coverage["semantic"] = self.searcher("semantic").coverage()
            note = self.searcher("semantic").coverage_note()
            if note:
                notes.append(note)
            share = (cov["embedded"] + cov["head_only"]) / cov["chunks"] if cov["chunks"] else 1
            if share < 1 and used.strategy == "rrf" and used.weights.get("semantic"):
                # a partial embedding ranks only what it embedded: it weighs as much as it covers
                weights = {**used.weights, "semantic": round(used.weights["semantic"] * share, 4)}
                used = replace(used, weights=weights)
        fuse_started = time.perf_counter()
        results = self._fuse(used, lists, limit)
        timings["fuse"] = round((time.perf_counter() - fuse_started) * 1000, 4)
        return Response(
            query=query, intent=verdict.intent, confidence=verdict.confidence,
            target=verdict.target, fusion_strategy="rrf" if used.strategy == "rrf" else "direct",
            preset=used.preset, modalities=[m for m in used.modalities if m in lists],
            weights=dict(used.weights), k=used.k, results=results, timings_ms=timings,
            total_ms=round((time.perf_counter() - started) * 1000, 4), unavailable=unavailable,
            rule=verdict.rule, generation=self.generation.number, notes=notes,
            coverage=coverage,
        )  # fmt: skip

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
                unavailable[name] = f"{exc} (run `maguyva index --repair` or `--rebuild`)"
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
                trusted = getattr(self._searchers.get(name), "chunk_keys", False) is True
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
        fused = _core.fuse(ranked, centrality, float(plan.k), limit)
        hits_by_key: dict[tuple[str, str], Hit] = {}
        lines_by_path: dict[str, set[int]] = {}
        for m in order:
            for h in lists[m]:
                hits_by_key.setdefault((m, h.key or ""), h)
                lines_by_path.setdefault(h.path, set()).update(h.lines)
        results = []
        for key, path, score, boost, demoted, contributions, _folded in fused:
            provenance = []
            first_hit: Hit | None = None
            for list_no, rank, contribution in contributions:
                modality = order[list_no]
                hit = hits_by_key.get((modality, key))
                first_hit = first_hit or hit
                provenance.append(ModalityContribution(
                    modality, rank, round(contribution, 12), hit.score if hit else None))  # fmt: skip
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
        return dict(graph.centrality(keys, paths))

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
            snippet = "\n".join(chunk.text.splitlines()[:SNIPPET_LINES])
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
            from maguyva.store.generations import read_file_states

            self._files_meta = read_file_states(self.generation.path)
        return is_stale(self.root, path, self._files_meta.get(path))
