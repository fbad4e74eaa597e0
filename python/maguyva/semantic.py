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
from dataclasses import dataclass
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
    ConfigError,
    CorruptIndexError,
    MaguyvaError,
    ModalityUnavailable,
    ModelMismatchError,
    ProviderError,
)
from .model import Chunk, Hit
from .retriever import BuildContext, RetrieverQuery

log = logging.getLogger("maguyva.semantic")

FORMAT_VERSION = 1
"""1: codes.npy + floats.npy (float16) + ids.json + meta.json; later additions that older
readers ignore: hashes.json (content hash of each row's embedded text, for reuse by the next
build), meta `partial_ids` (rows holding a head vector, body pending)."""
RESCORE_DEPTH = 100
"""Hamming candidates rescored with float vectors (measured: top-100 rescoring recovers the
float ranking's MRR on the standard-library set; see docs/semantic.md)."""
EMBED_GROUP = 64  # texts per provider call: progress, cache commits and budget checks
PHASES = ("auto", "full", "heads-first", "heads")
HEADS_FIRST_MIN = 2000
"""With more chunks than this to embed, "auto" embeds every chunk's head before any body."""

register("semantic_phases", Setting("str", None, "auto | full | heads-first | heads", True))
register("semantic_time_budget_s", Setting("float", None, "stop embedding after this long", True))
register("embedding_max_length", Setting("int", None, "local model token window", True, False))
register("embedding_threads", Setting("int", None, "local model intra-op threads", True, False))

ProviderFactory = Callable[[dict[str, Any]], EmbeddingProvider]


HEAD_CHARS = 200
"""Phase one embeds a chunk's head: its header and the first lines of its text up to this many
characters (signature, start of the docstring), about 50 tokens: cheaper than a full
window (measured in docs/semantic.md)."""


def head_text(chunk: Chunk) -> str:
    """The head of a chunk (phase one): header, then whole lines of the text while they fit in
    `HEAD_CHARS` (at least the first line, cut)."""
    lines = chunk.text.split("\n")
    taken, size = [], 0
    for line in lines:
        if taken and size + len(line) + 1 > HEAD_CHARS:
            break
        taken.append(line[:HEAD_CHARS])
        size += len(line) + 1
    body = "\n".join(taken)
    return f"{chunk.header}\n{body}" if chunk.header else body


def embed_text(chunk: Chunk, identity: ProviderIdentity) -> str:
    """What is embedded for a chunk: header (path, name, signature) first, so a token window
    truncates the tail of the body, not the identity; cut long bodies before tokenising."""
    text = f"{chunk.header}\n{chunk.text}" if chunk.header else chunk.text
    limit = (identity.max_tokens or 8192) * 8
    return text[:limit]


@dataclass(frozen=True, slots=True)
class Planned:
    """A chunk to embed: the full text and its head (phase one), each with its content hash.
    `head is text` when the whole chunk is short enough to be its own head. Only the chunk's
    id and whether it is a line window are kept, not the chunk (with its text)."""

    id: str
    lines: bool  # a line window (no definition), embedded after definitions
    text: str
    hash: str
    head: str
    head_hash: str


def _phases(config: dict[str, Any], missing: int) -> str:
    """ "full", "heads-first" or "heads" (config `semantic_phases`; "auto" picks heads-first when
    more than `HEADS_FIRST_MIN` chunks lack a full vector)."""
    mode = str(config.get("semantic_phases") or "auto")
    if mode not in PHASES:
        raise ConfigError(f"semantic_phases must be one of {', '.join(PHASES)}, got {mode!r}")
    if mode == "auto":
        return "heads-first" if missing > HEADS_FIRST_MIN else "full"
    return mode


def _order_key(p: Planned, text: str) -> tuple[bool, int]:
    # Definitions before line windows (they are what semantic questions are about), then
    # shortest first: similar lengths share a batch, and a budget covers the most chunks.
    return (p.lines, len(text))


def _queue(eligible: list[Planned], have: set[str], phases: str) -> list[tuple[str, str]]:
    """(hash, text) to embed, in order: heads of chunks with no vector at all (unless "full"),
    then full texts (unless "heads"); each hash once."""
    need = [p for p in eligible if p.hash not in have]
    stages: list[list[tuple[Planned, str, str]]] = []
    if phases != "full":
        stages.append([(p, p.head_hash, p.head) for p in need if p.head_hash not in have])
    if phases != "heads":
        stages.append([(p, p.hash, p.text) for p in need])
    queue: dict[str, str] = {}
    for stage in stages:
        for _, h, text in sorted(stage, key=lambda e: _order_key(e[0], e[2])):
            if h not in have:
                queue.setdefault(h, text)
    return list(queue.items())


class _PreviousVectors:
    """The codes and floats of the generation being replaced, by content hash: an incremental
    build copies their rows instead of reading every vector back from the cache."""

    def __init__(
        self, rows: dict[str, int], codes: np.ndarray | None, floats: np.ndarray | None
    ) -> None:
        self.rows, self.codes, self.floats = rows, codes, floats

    @classmethod
    def load(cls, previous_dir: Path | None, identity: ProviderIdentity) -> _PreviousVectors:
        empty = cls({}, None, None)
        d = Path(previous_dir) / "semantic" if previous_dir else None
        if d is None or identity.centred or not (d / "hashes.json").exists():
            return empty
        try:
            meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
            built = ProviderIdentity.from_dict(meta["provider"])
            if built.cache_key != identity.cache_key or meta.get("format") != FORMAT_VERSION:
                return empty
            hashes = json.loads((d / "hashes.json").read_text(encoding="utf-8"))
            codes = np.load(d / "codes.npy", mmap_mode="r")
            floats = np.load(d / "floats.npy", mmap_mode="r") if meta.get("rescore") else None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.info("semantic: previous generation not reused: %s", exc)
            return empty
        if codes.shape != (len(hashes), identity.width) or (
            floats is not None and floats.shape != (len(hashes), identity.dim)
        ):
            return empty
        return cls({h: i for i, h in enumerate(hashes)}, codes, floats)


def _assemble(
    rows: list[tuple[str, str]],
    identity: ProviderIdentity,
    vectors: dict[str, tuple[np.ndarray, np.ndarray | None]],
    previous: _PreviousVectors,
) -> tuple[np.ndarray, np.ndarray | None]:
    """The code matrix (and float matrix when every row has floats) in row order."""
    n = len(rows)
    codes = np.zeros((n, identity.width), dtype=np.uint8)
    from_prev = [(i, previous.rows[h]) for i, (_, h) in enumerate(rows) if h not in vectors]
    have_floats = n > 0 and all(
        vectors[h][1] is not None if h in vectors else previous.floats is not None for _, h in rows
    )
    floats = np.zeros((n, identity.dim), np.float32) if have_floats else None
    if from_prev:
        dst, src = (np.array(x, dtype=np.int64) for x in zip(*from_prev, strict=True))
        order = np.argsort(src, kind="stable")  # read the memory map in file order
        dst, src = dst[order], src[order]
        assert previous.codes is not None
        codes[dst] = previous.codes[src]
        if floats is not None and previous.floats is not None:
            floats[dst] = previous.floats[src]
    for i, (_, h) in enumerate(rows):
        if h in vectors:
            code, vec = vectors[h]
            codes[i] = code
            if floats is not None and vec is not None:
                floats[i] = vec
    return codes, floats


class SemanticModality:
    """Build side and loader of the semantic modality."""

    name: ClassVar[str] = "semantic"

    def __init__(self, provider_factory: ProviderFactory = make_provider) -> None:
        self.provider_factory = provider_factory

    # -- build ---------------------------------------------------------------------------------

    def plan(self, ctx: BuildContext, provider: EmbeddingProvider) -> dict[str, Any]:
        """Which chunks are eligible (with their full and head texts and hashes), which are
        excluded as secrets (remote providers only)."""
        identity = provider.identity
        # in the views' order (one segment of chunks at a time), then sorted by position
        keyed: list[tuple[tuple[str, int, int, str], Planned]] = []
        excluded: dict[str, int] = {}
        for chunk in ctx.chunks:
            text = embed_text(chunk, identity)
            if provider.remote:
                reason = "secret path" if is_secret_path(chunk.path) else secret_reason(text)
                if reason:
                    excluded[reason] = excluded.get(reason, 0) + 1
                    continue
            head = head_text(chunk)
            head = text if len(head) >= len(text) else head
            planned = Planned(chunk.id, chunk.kind == "lines", text, content_hash(text), head,
                              content_hash(head))  # fmt: skip
            keyed.append(((chunk.path, chunk.start_line, chunk.end_line, chunk.id), planned))
        keyed.sort(key=lambda e: e[0])
        eligible = [p for _, p in keyed]
        return {"eligible": eligible, "excluded": excluded}

    def dry_run(self, ctx: BuildContext) -> dict[str, Any]:
        """What a build would send: chunk and token counts, cache hits, secret exclusions.
        Loads no model for a remote provider (tokens are estimated)."""
        provider = self.provider_factory(ctx.config)
        planned = self.plan(ctx, provider)
        eligible: list[Planned] = planned["eligible"]
        with EmbeddingCache(ctx.cache_dir / "embeddings", provider.identity) as cache:
            wanted = {p.hash for p in eligible} | {p.head_hash for p in eligible}
            cached = cache.get_many(sorted(wanted))
        todo = {p.hash: p.text for p in eligible if p.hash not in cached}
        phases = _phases(ctx.config, len(todo))
        heads = {p.head_hash: p.head for p in eligible
                 if p.hash not in cached and p.head_hash not in cached and p.head_hash != p.hash}  # fmt: skip
        texts = list(todo.values()) if phases != "heads" else []
        if phases != "full":
            texts += list(heads.values())
        return {
            "provider": provider.identity.to_dict(),
            "remote": provider.remote,
            "chunks": len(ctx.chunks),
            "eligible": len(eligible),
            "cached": len(eligible) - sum(1 for p in eligible if p.hash in todo),
            "to_embed": len(todo),
            "phases": phases,
            "heads_to_embed": len(heads) if phases != "full" else 0,
            "tokens_to_send": provider.count_tokens(texts) if texts else 0,
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
        eligible: list[Planned] = planned["eligible"]
        cap = ctx.config.get("semantic_max_chunks")
        budget = ctx.config.get("semantic_time_budget_s")

        with EmbeddingCache(ctx.cache_dir / "embeddings", identity) as cache:
            # Vectors of the generation being replaced first (no cache read), then the cache.
            previous = _PreviousVectors.load(ctx.previous_dir, identity)
            wanted = {p.hash for p in eligible} | {p.head_hash for p in eligible}
            reused = {h for h in wanted if h in previous.rows}
            vectors: dict[str, tuple[np.ndarray, np.ndarray | None]] = cache.get_many(
                sorted(wanted - reused)
            )
            have = reused | set(vectors)
            from_cache = sum(1 for p in eligible if p.hash in have or p.head_hash in have)
            missing = sum(1 for p in eligible if p.hash not in have)
            phases = _phases(ctx.config, missing)
            queue = _queue(eligible, have, phases)
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
                    have.add(h)
                embedded_new += len(group)
                tokens += result.tokens
                ctx.progress("embed", embedded_new, len(queue))
            embed_seconds = time.perf_counter() - embed_started

        # Each chunk takes its full vector, else its head's (body pending), else nothing.
        rows: list[tuple[str, str]] = []  # (chunk id, hash of its vector)
        pending, partial = [], []
        for p in eligible:
            if p.hash in have:
                rows.append((p.id, p.hash))
            elif p.head_hash in have:
                rows.append((p.id, p.head_hash))
                partial.append(p.id)
            else:
                pending.append(p.id)
        if not rows and error is not None:
            raise ModalityUnavailable(f"no chunk could be embedded: {error}")
        codes, floats = _assemble(rows, identity, vectors, previous)
        centre = None
        if identity.centred and floats is not None and len(rows):
            centre = floats.mean(axis=0).astype(np.float32)
            codes = binarize(floats, centre)
            np.save(out / "centre.npy", centre)
        np.save(out / "codes.npy", codes)
        if floats is not None:
            np.save(out / "floats.npy", floats.astype(np.float16))
        (out / "ids.json").write_text(json.dumps([i for i, _ in rows]), encoding="utf-8")
        (out / "hashes.json").write_text(json.dumps([h for _, h in rows]), encoding="utf-8")
        report = {
            "provider": identity.to_dict(),
            "format": FORMAT_VERSION,
            "phases": phases,
            "chunks": len(ctx.chunks),
            "embedded": len(rows),
            "from_cache": min(from_cache, len(rows)),
            "reused_rows": len(reused),
            "new": embedded_new,
            "pending": len(pending),
            "partial": len(partial),
            "excluded": planned["excluded"],
            "tokens": tokens,
            "embed_seconds": round(embed_seconds, 3),
            "chunks_per_s": round(embedded_new / embed_seconds, 2) if embedded_new else None,
            "error": error,
            "seconds": round(time.perf_counter() - started, 3),
        }
        meta = dict(report, pending_ids=pending, partial_ids=partial, rescore=floats is not None)
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
        """Chunks with no vector yet (not searchable by meaning until a later build)."""
        return int(self.meta.get("pending", 0))

    @property
    def partial(self) -> int:
        """Chunks searchable by their head only (header, signature, docstring); body pending."""
        return int(self.meta.get("partial", 0))

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
