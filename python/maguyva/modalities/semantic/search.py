"""Searching one generation: the query embedded (cached per process), exact Hamming top
candidates of every segment in Rust, merged in a from-scratch build's row order, rescored
with float vectors when present."""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from maguyva import _core
from maguyva.modalities.protocol import RetrieverQuery
from maguyva.modalities.semantic.coverage import coverage, describe
from maguyva.modalities.semantic.embed import EmbeddingProvider, binarize
from maguyva.model import Hit
from maguyva.store.chunks import ChunkStore

RESCORE_DEPTH = 100
"""Hamming candidates rescored with float vectors (measured: top-100 rescoring recovers the
float ranking's MRR on the standard-library set; see docs/semantic.md)."""


STATIC_TIER, TRANSFORMER_TIER = "static", "transformer"
"""`Hit.extra["tier"]` of every hit: which tier's vector matched (the static rows of the chunks
still pending, `static_part`, or the provider's own vectors), shown in every answer's
provenance (`ModalityContribution.tier`)."""

QUERY_CACHE_SIZE = 256
"""Query embeddings kept per process (an agent repeats questions; ~14 ms CPU each)."""
_QUERY_CACHE: OrderedDict[tuple[Any, str], Any] = OrderedDict()
_query_lock = threading.Lock()


def query_embedding(provider: Any, text: str) -> Any:
    """`provider.embed([text], "query")`, remembered by (provider identity, text) in an LRU
    of QUERY_CACHE_SIZE; the arrays are made read-only, as they are shared."""
    key = (provider.identity, text)
    with _query_lock:
        found = _QUERY_CACHE.get(key)
        if found is not None:
            _QUERY_CACHE.move_to_end(key)
            return found
    result = provider.embed([text], "query")
    for array in (result.codes, result.floats):
        if isinstance(array, np.ndarray):
            array.setflags(write=False)
    with _query_lock:
        _QUERY_CACHE[key] = result
        while len(_QUERY_CACHE) > QUERY_CACHE_SIZE:
            _QUERY_CACHE.popitem(last=False)
    return result


@dataclass(slots=True)
class Segment:
    """One segment as a reader holds it: codes and floats memory-mapped, chunk ids, the
    tombstoned rows, and (with several segments) the path table ordering rows across them."""

    name: str
    codes: np.ndarray
    floats: np.ndarray | None
    ids: list[str]
    deleted: list[int]
    table: list[list[Any]] | None
    info: list[list[Any]] | None = None  # per row: start line, end line, kind, name
    gone: frozenset[int] = frozenset()
    firsts: list[int] | None = None

    def __post_init__(self) -> None:
        self.gone = frozenset(self.deleted)
        if self.table is not None:
            self.table = [t for t in self.table if t[2]]  # files with rows
            self.firsts = [int(t[1]) for t in self.table]

    def order(self, row: int) -> tuple[str, int]:
        """The row's place in the logical order (a from-scratch build's row order): its file
        and its position among that file's rows."""
        assert self.table is not None and self.firsts is not None
        t = self.table[bisect.bisect_right(self.firsts, row) - 1]
        return t[0], row - int(t[1])

    def topk(self, qcode: np.ndarray, depth: int) -> list[tuple[int, int]]:
        """(distance, row) of the `depth` nearest live rows, by distance then row."""
        n = len(self.ids)
        if n == 0 or depth <= 0:
            return []
        rows, dists = _core.hamming_topk(qcode, self.codes, min(n, depth + len(self.gone)))
        gone = self.gone
        found = [(d, r) for r, d in zip(rows.tolist(), dists.tolist(), strict=True)
                 if r not in gone]  # fmt: skip
        return found[:depth]


class SemanticSearcher:
    """Answers `search(query, k)` over one generation's segments (a base and deltas, each
    searched exactly, tombstoned rows left out, merged in a from-scratch build's row order).
    Thread-safe."""

    modality: ClassVar[str] = "semantic"
    chunk_keys: ClassVar[bool] = True
    """Every hit's key is a chunk id of this generation (its rows are built from its chunks):
    the engine need not look each one up in the chunk store (~0.15 s after a reopen on a
    158k-chunk tree: the 50 hits' files spread over a dozen chunk segments)."""

    def __init__(
        self,
        gen_dir: Path,
        provider: EmbeddingProvider,
        segments: list[Segment],
        centre: np.ndarray | None,
        meta: dict[str, Any],
        static: Any = None,
    ) -> None:
        self.gen_dir = gen_dir
        self.static = static  # `static_part.StaticPart`: the pending chunks' static rows
        self.provider = provider
        self.segments = segments
        self.live = sum(len(s.ids) - len(s.gone) for s in segments)
        self.centre = centre
        self.meta = meta
        self._chunks: Any = None
        self._lock = threading.Lock()

    @property
    def pending(self) -> int:
        """Chunks with no vector yet (not searchable by meaning until a later build)."""
        return int(self.meta.get("pending", 0))

    @property
    def partial(self) -> int:
        """Chunks searchable by their head only (header, signature, docstring); body pending."""
        return int(self.meta.get("partial", 0))

    def coverage(self) -> dict[str, Any]:
        """How much of the repository this generation's vectors cover (`coverage.coverage`)."""
        return coverage(self.meta)

    def coverage_note(self) -> str | None:
        """A response note when some chunk is not searchable by its full text (None: all are)."""
        cov = self.coverage()
        return describe(cov) if cov["embedded"] < cov["chunks"] else None

    def chunks(self) -> Any:
        """The generation's chunks: decoded per file as hits name them (format 2 gives each
        row's file), all at once for format 1 (ids only)."""
        with self._lock:
            if self._chunks is None:
                if all(seg.table is not None for seg in self.segments):
                    self._chunks = ChunkStore.lazy(self.gen_dir)
                else:
                    self._chunks = ChunkStore.open(self.gen_dir)
            return self._chunks

    def warm(self) -> None:
        """Load the query model now (`Engine.warm`: a server's idle time), so that the first
        question by meaning does not wait for it (~0.3 s). A remote provider is not called:
        that would cost a request."""
        if not self.provider.remote:
            self.provider.embed(["warm up"], "query")
        if self.static is not None:  # and the static tier's table, while chunks are pending
            from maguyva.modalities.semantic.embed.static import shared_provider

            shared_provider().embed(["warm up"], "query")

    def candidates(self, qcode: np.ndarray, depth: int) -> list[tuple[int, Any, int, int]]:
        """The `depth` nearest live rows over every segment: (distance, order key, segment,
        row), sorted as a from-scratch build's single segment would be (distance, then row
        order: file, then position in the file)."""
        if len(self.segments) == 1:  # row order is the logical order
            return [(d, r, 0, r) for d, r in self.segments[0].topk(qcode, depth)]
        merged = []
        for i, seg in enumerate(self.segments):
            merged += [(d, seg.order(r), i, r) for d, r in seg.topk(qcode, depth)]
        merged.sort(key=lambda c: (c[0], c[1]))
        return merged[:depth]

    def search(self, query: RetrieverQuery, k: int) -> list[Hit]:
        text = (query.snippet or query.text or "").strip()
        if not text or k <= 0 or not (self.live or self.static is not None):
            return []
        if not self.live:  # static rows alone (a staged first build): no model to load
            hits = [self._hit(None, r, d, sim) for sim, d, r in self._static(text, k)]
            return [h for h in hits if h is not None]
        result = query_embedding(self.provider, text)
        qfloat = None if result.floats is None else result.floats[0]
        if self.centre is not None and qfloat is not None:
            qcode = binarize(qfloat, self.centre)
        else:
            qcode = np.ascontiguousarray(result.codes[0])
        rescore = qfloat is not None and all(
            s.floats is not None for s in self.segments if len(s.ids)
        )
        depth = max(k, RESCORE_DEPTH) if rescore else k
        found = self.candidates(qcode, depth)
        order: list[tuple[Segment, int, int, float | None]]
        if rescore and found:
            assert qfloat is not None
            # one matrix of the candidates' floats in candidate order, as a single segment
            # gives it (the same product, bit for bit, whatever the segments)
            if len(self.segments) == 1:
                block = self.segments[0].floats[[c[3] for c in found]]  # type: ignore[index]
            else:
                block = np.stack([self.segments[c[2]].floats[c[3]] for c in found])  # type: ignore[index]
            values = np.asarray(block, dtype=np.float32) @ qfloat.astype(np.float32)
            sims = sorted(zip(values.tolist(), found, strict=True),
                          key=lambda x: (-x[0], x[1][0], x[1][1]))  # fmt: skip
            order = [(self.segments[c[2]], c[3], c[0], s) for s, c in sims[:k]]
        else:
            order = [(self.segments[c[2]], c[3], c[0], None) for c in found[:k]]
        ranked: list[tuple[Segment | None, int, int, float | None]] = order
        if self.static is not None:  # pending chunks answer by the static tier meanwhile
            ranked = self._with_static(order, text, k)
        hits = [self._hit(seg, row, dist, sim) for seg, row, dist, sim in ranked]
        return [h for h in hits if h is not None]

    def _with_static(
        self, order: list[tuple[Segment, int, int, float | None]], text: str, k: int
    ) -> list[tuple[Segment | None, int, int, float | None]]:
        """`order` merged with the static rows of the pending chunks, each tier ranked by its
        own query vector (docs/semantic-static.md: "dual"), by similarity when both have it."""
        static = [(None, r, d, s) for s, d, r in self._static(text, k)]
        if any(sim is None for *_, sim in order):
            merged = sorted([*order, *static], key=lambda x: x[2])  # by distance alone
        else:
            merged = sorted([*order, *static], key=lambda x: -(x[3] or 0.0))
        return merged[:k]

    def _static(self, text: str, k: int) -> list[tuple[float, int, int]]:
        """(similarity, distance, row) of the nearest static rows, by the static query."""
        from maguyva.modalities.semantic.embed.static import shared_provider

        q = query_embedding(shared_provider(), text)
        qfloat = None if q.floats is None else q.floats[0]
        found: list[tuple[float, int, int]] = self.static.search(
            q.codes[0], qfloat, max(k, RESCORE_DEPTH)
        )
        return sorted(found, key=lambda x: -x[0])[:k] if not self.live else found

    def _hit(self, seg: Segment | None, row: int, dist: int, sim: float | None) -> Hit | None:
        """The hit of a row: a transformer row of `seg`, or (None) a static row."""
        score = round(sim, 6) if sim is not None else float(dist)
        tier = STATIC_TIER if seg is None else TRANSFORMER_TIER
        extra: dict[str, Any] = {"hamming": dist, "similarity": sim, "tier": tier}
        if seg is None:
            chunk = self.chunks().get(self.static.ids[row], self.static.paths[row])
        elif seg.info is not None:  # what a hit shows is stored with the row
            start, end, kind, name = seg.info[row]
            return Hit(path=seg.order(row)[0], start_line=start, end_line=end, key=seg.ids[row],
                       symbol=name, kind=kind, score=score, extra=extra)  # fmt: skip
        else:
            path = seg.order(row)[0] if seg.table is not None else None
            chunk = self.chunks().get(seg.ids[row], path)
        if chunk is None:
            return None
        return Hit(path=chunk.path, start_line=chunk.start_line, end_line=chunk.end_line,
                   key=chunk.id, score=score, symbol=chunk.qualified_name or chunk.name,
                   kind=chunk.kind, extra=extra)  # fmt: skip
