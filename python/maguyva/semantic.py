"""The semantic modality: code by meaning, as binary embeddings searched by Hamming distance.

Build: embed `chunk.header + "\\n" + chunk.text` for every chunk with the configured provider
(through the content-addressed cache, so unchanged chunks are never re-embedded), pack the sign
bits, and write `semantic/` in the generation: `codes.npy` (uint8, n x dim/8), `floats.npy`
(float16, for rescoring, when the provider gives floats), `ids.json` (chunk ids, row order),
`centre.npy` (for providers whose codes are centred) and `meta.json` (provider identity and the
build report). Chunks left out by the cap, the time budget or a provider failure are listed as
pending and embedded by the next build; text and structural search never wait for them.

Search: embed the query (input_type "query"), take the exact Hamming top candidates from the
memory-mapped codes in Rust, rescore them with float vectors when present. The model is loaded
on the first search, never when the index is opened (an exact-match query never pays for it).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from . import _core
from .chunkstore import ChunkStore
from .config import Setting, load_config, register
from .embed import (
    EmbeddingCache,
    EmbeddingProvider,
    ProviderIdentity,
    binarize,
    content_hash,
    is_secret_path,
    make_provider,
    secret_reason,
)
from .errors import (
    CorruptIndexError,
    MaguyvaError,
    ModalityUnavailable,
    ModelMismatchError,
    ProviderError,
)
from .model import Chunk, Hit
from .retriever import BuildContext, RetrieverQuery

log = logging.getLogger("maguyva.semantic")

FORMAT_VERSION = 1  # 1: codes.npy + floats.npy (float16) + ids.json + meta.json
RESCORE_DEPTH = 100
"""Hamming candidates rescored with float vectors (measured: top-100 rescoring recovers the
float ranking's MRR on the standard-library set; see docs/semantic.md)."""
EMBED_GROUP = 64  # chunks per provider call: progress, cache commits and budget checks

register("semantic_time_budget_s", Setting("float", None, "stop embedding after this long", True))
register("embedding_max_length", Setting("int", None, "local model token window", True, False))
register("embedding_threads", Setting("int", None, "local model intra-op threads", True, False))

ProviderFactory = Callable[[dict[str, Any]], EmbeddingProvider]


def embed_text(chunk: Chunk, identity: ProviderIdentity) -> str:
    """What is embedded for a chunk: header (path, name, signature) first, so a token window
    truncates the tail of the body, not the identity; cut long bodies before tokenising."""
    text = f"{chunk.header}\n{chunk.text}" if chunk.header else chunk.text
    limit = (identity.max_tokens or 8192) * 8
    return text[:limit]


class SemanticModality:
    """Build side and loader of the semantic modality."""

    name: ClassVar[str] = "semantic"

    def __init__(self, provider_factory: ProviderFactory = make_provider) -> None:
        self.provider_factory = provider_factory

    # -- build ---------------------------------------------------------------------------------

    def plan(self, ctx: BuildContext, provider: EmbeddingProvider) -> dict[str, Any]:
        """Which chunks are eligible, which are excluded as secrets (remote providers only)."""
        identity = provider.identity
        chunks = sorted(ctx.chunks, key=lambda c: (c.path, c.start_line, c.end_line, c.id))
        eligible: list[tuple[Chunk, str, str]] = []
        excluded: dict[str, int] = {}
        for chunk in chunks:
            text = embed_text(chunk, identity)
            if provider.remote:
                reason = "secret path" if is_secret_path(chunk.path) else secret_reason(text)
                if reason:
                    excluded[reason] = excluded.get(reason, 0) + 1
                    continue
            eligible.append((chunk, text, content_hash(text)))
        return {"eligible": eligible, "excluded": excluded}

    def dry_run(self, ctx: BuildContext) -> dict[str, Any]:
        """What a build would send: chunk and token counts, cache hits, secret exclusions.
        Loads no model for a remote provider (tokens are estimated)."""
        provider = self.provider_factory(ctx.config)
        planned = self.plan(ctx, provider)
        eligible = planned["eligible"]
        with EmbeddingCache(ctx.cache_dir / "embeddings", provider.identity) as cache:
            cached = cache.get_many(sorted({h for _, _, h in eligible}))
        todo = {h: t for _, t, h in eligible if h not in cached}
        return {
            "provider": provider.identity.to_dict(),
            "remote": provider.remote,
            "chunks": len(ctx.chunks),
            "eligible": len(eligible),
            "cached": len(eligible) - sum(1 for _, _, h in eligible if h in todo),
            "to_embed": len(todo),
            "tokens_to_send": provider.count_tokens(list(todo.values())) if todo else 0,
            "excluded": planned["excluded"],
        }

    def build(self, ctx: BuildContext) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            provider = self.provider_factory(ctx.config)
        except ProviderError as exc:
            raise ModalityUnavailable(str(exc)) from None
        identity = provider.identity
        out = ctx.out_dir / self.name
        out.mkdir(parents=True, exist_ok=True)
        planned = self.plan(ctx, provider)
        eligible: list[tuple[Chunk, str, str]] = planned["eligible"]
        cap = ctx.config.get("semantic_max_chunks")
        budget = ctx.config.get("semantic_time_budget_s")

        with EmbeddingCache(ctx.cache_dir / "embeddings", identity) as cache:
            vectors = cache.get_many(sorted({h for _, _, h in eligible}))
            from_cache = len(vectors)
            todo: dict[str, str] = {}
            # Definitions before line windows: they are what semantic questions are about.
            for _, text, h in sorted(eligible, key=lambda e: e[0].kind == "lines"):
                if h not in vectors:
                    todo.setdefault(h, text)
            queue = list(todo.items())
            if cap is not None:
                queue = queue[: max(0, int(cap))]
            error, embedded_new, tokens = None, 0, 0
            embed_started = time.perf_counter()
            for start in range(0, len(queue), EMBED_GROUP):
                if budget is not None and time.perf_counter() - embed_started > float(budget):
                    break
                group = queue[start : start + EMBED_GROUP]
                try:
                    result = provider.check_result(
                        provider.embed([t for _, t in group], "document"), len(group)
                    )
                except ProviderError as exc:
                    error = str(exc)
                    log.warning("semantic: embedding stopped: %s", exc)
                    break
                hashes = [h for h, _ in group]
                cache.put_many(hashes, result)
                for i, h in enumerate(hashes):
                    floats = None if result.floats is None else result.floats[i]
                    vectors[h] = (result.codes[i], floats)
                embedded_new += len(group)
                tokens += result.tokens
                ctx.progress("embed", embedded_new, len(queue))
            embed_seconds = time.perf_counter() - embed_started

        rows = [(chunk, h) for chunk, _, h in eligible if h in vectors]
        pending = [chunk.id for chunk, _, h in eligible if h not in vectors]
        if not rows and error is not None:
            raise ModalityUnavailable(f"no chunk could be embedded: {error}")
        width = identity.width
        codes = np.zeros((len(rows), width), dtype=np.uint8)
        have_floats = bool(rows) and all(vectors[h][1] is not None for _, h in rows)
        floats = np.zeros((len(rows), identity.dim), np.float32) if have_floats else None
        for i, (_, h) in enumerate(rows):
            code, vec = vectors[h]
            codes[i] = code
            if floats is not None and vec is not None:
                floats[i] = vec
        centre = None
        if identity.centred and floats is not None and len(rows):
            centre = floats.mean(axis=0).astype(np.float32)
            codes = binarize(floats, centre)
            np.save(out / "centre.npy", centre)
        np.save(out / "codes.npy", codes)
        if floats is not None:
            np.save(out / "floats.npy", floats.astype(np.float16))
        (out / "ids.json").write_text(json.dumps([c.id for c, _ in rows]), encoding="utf-8")
        report = {
            "provider": identity.to_dict(),
            "format": FORMAT_VERSION,
            "chunks": len(ctx.chunks),
            "embedded": len(rows),
            "from_cache": min(from_cache, len(rows)),
            "new": embedded_new,
            "pending": len(pending),
            "excluded": planned["excluded"],
            "tokens": tokens,
            "embed_seconds": round(embed_seconds, 3),
            "chunks_per_s": round(embedded_new / embed_seconds, 2) if embedded_new else None,
            "error": error,
            "seconds": round(time.perf_counter() - started, 3),
        }
        meta = dict(report, pending_ids=pending, rescore=floats is not None)
        (out / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
        return report

    # -- open ----------------------------------------------------------------------------------

    def open(
        self,
        gen_dir: Path,
        manifest: dict[str, Any],
        provider: EmbeddingProvider | None = None,
    ) -> SemanticSearcher:
        """Load read-only. The configured provider must match the one that built the index."""
        d = Path(gen_dir) / self.name
        try:
            meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ModalityUnavailable("semantic index not built in this generation") from None
        except ValueError as exc:
            raise CorruptIndexError(f"{d / 'meta.json'}: {exc}") from None
        if meta.get("format") != FORMAT_VERSION:
            raise CorruptIndexError(f"{d}: unknown semantic format {meta.get('format')!r}")
        built_with = ProviderIdentity.from_dict(meta["provider"])
        if provider is None:
            root = manifest.get("root")
            config = load_config(Path(root)) if root else {}
            try:
                provider = self.provider_factory(config)
            except ProviderError as exc:
                raise ModalityUnavailable(str(exc)) from None
        built_with.check_same(provider.identity, "search this index")
        try:
            codes = np.load(d / "codes.npy", mmap_mode="r")
            ids = json.loads((d / "ids.json").read_text(encoding="utf-8"))
            floats = np.load(d / "floats.npy", mmap_mode="r") if meta.get("rescore") else None
            centre = np.load(d / "centre.npy") if (d / "centre.npy").exists() else None
        except (OSError, ValueError) as exc:
            raise CorruptIndexError(f"{d}: {exc}") from None
        if (
            codes.dtype != np.uint8
            or codes.ndim != 2
            or codes.shape != (len(ids), built_with.width)
        ):
            raise CorruptIndexError(f"{d}: codes shape {codes.shape} does not match {len(ids)} ids")
        return SemanticSearcher(Path(gen_dir), provider, codes, ids, floats, centre, meta)


class SemanticSearcher:
    """Answers `search(query, k)` over one generation's codes. Thread-safe."""

    modality: ClassVar[str] = "semantic"

    def __init__(
        self,
        gen_dir: Path,
        provider: EmbeddingProvider,
        codes: np.ndarray,
        ids: list[str],
        floats: np.ndarray | None,
        centre: np.ndarray | None,
        meta: dict[str, Any],
    ) -> None:
        self.gen_dir = gen_dir
        self.provider = provider
        self.codes = codes
        self.ids = ids
        self.floats = floats
        self.centre = centre
        self.meta = meta
        self._chunks: ChunkStore | None = None
        self._lock = threading.Lock()

    @property
    def pending(self) -> int:
        return int(self.meta.get("pending", 0))

    def chunks(self) -> ChunkStore:
        with self._lock:
            if self._chunks is None:
                self._chunks = ChunkStore.open(self.gen_dir)
            return self._chunks

    def search(self, query: RetrieverQuery, k: int) -> list[Hit]:
        text = (query.snippet or query.text or "").strip()
        if not text or k <= 0 or not self.ids:
            return []
        result = self.provider.embed([text], "query")
        qfloat = None if result.floats is None else result.floats[0]
        if self.centre is not None and qfloat is not None:
            qcode = binarize(qfloat, self.centre)
        else:
            qcode = np.ascontiguousarray(result.codes[0])
        rescore = self.floats is not None and qfloat is not None
        depth = max(k, RESCORE_DEPTH) if rescore else k
        rows, dists = _core.hamming_topk(qcode, self.codes, depth)
        order: list[tuple[int, int, float | None]]
        if rescore and len(rows):
            assert self.floats is not None and qfloat is not None
            sims = np.asarray(self.floats[rows], dtype=np.float32) @ qfloat.astype(np.float32)
            ranked = sorted(range(len(rows)), key=lambda i: (-sims[i], dists[i], rows[i]))
            order = [(int(rows[i]), int(dists[i]), float(sims[i])) for i in ranked[:k]]
        else:
            order = [(int(r), int(d), None) for r, d in zip(rows[:k], dists[:k], strict=True)]
        store = self.chunks()
        hits: list[Hit] = []
        for row, dist, sim in order:
            chunk = store.get(self.ids[row])
            if chunk is None:
                continue
            hits.append(
                Hit(
                    path=chunk.path,
                    start_line=chunk.start_line,
                    end_line=chunk.end_line,
                    key=chunk.id,
                    score=round(sim, 6) if sim is not None else float(dist),
                    symbol=chunk.qualified_name or chunk.name,
                    kind=chunk.kind,
                    extra={"hamming": dist, "similarity": sim},
                )
            )
        return hits


MODALITY = SemanticModality()

__all__ = [
    "MODALITY",
    "RESCORE_DEPTH",
    "MaguyvaError",
    "ModelMismatchError",
    "SemanticModality",
    "SemanticSearcher",
    "embed_text",
]
