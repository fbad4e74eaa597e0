"""Planning a build: which chunks are eligible (secrets excluded for remote providers), their
texts and hashes, the central files embedded first, and the dry run's forecast."""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from maguyva.errors import CorruptIndexError, MaguyvaError
from maguyva.modalities.protocol import BuildContext
from maguyva.modalities.semantic.dedup import KeyMemo, duplicates, keys_by_tokens
from maguyva.modalities.semantic.embed import (
    EmbeddingCache,
    EmbeddingProvider,
    ProviderIdentity,
    file_secret_reason,
    secret_reason,
)
from maguyva.modalities.semantic.priority import central_files
from maguyva.modalities.semantic.queue import ID, PATH, Entry, entry_of, phases_of
from maguyva.modalities.semantic.texts import Planned, embed_text, plan_chunks
from maguyva.model import Chunk

PLAN_BATCH = 512
"""Chunks whose vector keys are computed together (`texts.plan_chunks`)."""

PENDING_CHARS = 1 << 25
"""Most characters of planned texts that `PendingTexts` keeps for the slices that follow a
plan (32 M: every head and most full texts of Django's 53,112 chunks)."""


class PendingTexts:
    """The texts a plan queued, by their key (the sha256 of the text itself, so a text found
    is the one the key names, whatever changed since), kept in this process for the slices
    that embed them: each slice after a first build's first generation is an update that
    planned no file, and found a queued chunk's text by planning its whole file again
    (reading and hashing it: ~5 % of a heads build's CPU on a Django subtree, 57 slices at
    load 15; docs/semantic-heads.md). A text leaves when it is taken (embedded, or about to
    be); the oldest leave first past `PENDING_CHARS` (full texts before heads), and a key
    not kept is planned again."""

    def __init__(self, limit: int = PENDING_CHARS) -> None:
        self.limit, self.size = limit, 0
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, planned: list[Planned], heads: bool) -> None:
        """Keep each planned chunk's texts: the full texts, then (when `heads`) the heads, so
        that past the limit the full texts leave first: a heads-first build embeds them last.
        (Heads added first had left first: Django's 31.6 M characters of full texts pushed
        out most of its 10.1 M of heads, and the slices planned their files again.)"""
        items = [(p.hash, p.text) for p in planned]
        items += [(p.head_hash, p.head) for p in planned if heads and p.head_hash != p.hash]
        with self._lock:
            for key, text in items:
                if key not in self._texts and len(text) <= self.limit:
                    self._texts[key] = text
                    self.size += len(text)
            while self.size > self.limit:
                self.size -= len(self._texts.popitem(last=False)[1])

    def take(self, key: str) -> str | None:
        with self._lock:
            text = self._texts.pop(key, None)
            self.size -= len(text) if text is not None else 0
            return text

    def __len__(self) -> int:
        return len(self._texts)


PENDING = PendingTexts()


def central(ctx: BuildContext) -> frozenset[str] | None:
    """The central files by the graph of the generation being replaced (committed, so never
    being written by a build running beside this one), else, in a first build, by the graph
    this generation built before semantic (`BUILD_ORDER`)."""
    for base in (ctx.previous_dir, None if ctx.previous_dir else ctx.out_dir):
        if base is not None:
            found = central_files(Path(base) / "graph")
            if found is not None:
                return found
    return None


def text_of(
    ctx: BuildContext, texts: dict[str, Planned], item: tuple[str, Entry, bool],
    identity: ProviderIdentity,
) -> str:  # fmt: skip
    """The text to embed for a queued chunk: kept since a plan of this process (`PendingTexts`),
    planned in this build, or (a pending chunk of an unchanged file, in an update, whose text was
    not kept) its file's chunks planned again without the window check: no tokenizing, which had
    cost more CPU than the check saves when each slice planned every file it embedded from. A head
    keyed as its body (it fills the window, `dedup`) is then found by its text's hash: the text is
    what the key names, and the model sees the same ids either way."""
    h, e, head = item
    kept = PENDING.take(h)  # planned by an earlier plan of this process: no file planned again
    if kept is not None:
        return kept
    p = texts.get(e[ID])
    if p is None:
        for q in plan_chunks(ctx.chunks.of_paths([e[PATH]]), identity, None, False):  # type: ignore[attr-defined]
            texts.setdefault(q.id, q)
        p = texts.get(e[ID])
    if p is not None and head and h == p.head_hash:
        return p.head
    if p is not None and h == p.hash:
        return p.text
    raise CorruptIndexError(f"semantic: chunk {e[ID]} of {e[PATH]} is not what was planned")


def file_text(ctx: BuildContext, path: str) -> str | None:
    """The whole file a chunk came from, for the per-file secret decision (None: unreadable
    now, so the name and the chunks decide)."""
    try:
        return ctx.read_text(path)
    except (OSError, MaguyvaError):
        return None


def plan(
    ctx: BuildContext, provider: EmbeddingProvider, chunks: Any = None,
    central: frozenset[str] | None = None, write_memo: bool = True,
) -> dict[str, Any]:  # fmt: skip
    """Which chunks are eligible (with their full and head texts and hashes), which are
    excluded as secrets (remote providers only). `chunks` (default: every chunk of the
    build) narrows it, e.g. to the changed files' chunks of an update. Which heads fill the
    model's window is read from the memo for heads planned before (`dedup.KeyMemo`;
    `write_memo`: add the new ones, and keep the eligible texts for the slices that embed
    them, `PendingTexts`; the dry run does neither)."""
    identity = provider.identity
    heads = ctx.config.get("semantic_phases") != "full"  # else no head is embedded
    memo = (KeyMemo(ctx.cache_dir / "embeddings", identity, write_memo)
            if heads and keys_by_tokens(identity) else None)  # fmt: skip
    # in the views' order (one segment of chunks at a time), then sorted by position
    keyed: list[tuple[tuple[str, int, int, str], Planned, Entry]] = []
    # per file, not per chunk: a file with a secret anywhere sends none of its chunks
    secret_files: dict[str, str | None] = {}
    batch: list[Chunk] = []

    def flush() -> None:
        for chunk, p in zip(batch, plan_chunks(batch, identity, memo, heads), strict=True):
            keyed.append(((chunk.path, chunk.start_line, chunk.end_line, chunk.id), p,
                          entry_of(chunk, p, central)))  # fmt: skip
        batch.clear()

    for chunk in ctx.chunks if chunks is None else chunks:
        if provider.remote:
            if chunk.path not in secret_files:
                secret_files[chunk.path] = file_secret_reason(
                    chunk.path, file_text(ctx, chunk.path)
                )
            if secret_files[chunk.path] is None:  # the file changed since: its chunks too
                secret_files[chunk.path] = secret_reason(embed_text(chunk, identity))
        batch.append(chunk)
        if len(batch) >= PLAN_BATCH:
            flush()
    flush()
    if memo is not None:
        memo.close()
    excluded: dict[str, int] = {}
    for (path, *_), _p, _e in keyed:
        if reason := secret_files.get(path):
            excluded[reason] = excluded.get(reason, 0) + 1
    keyed = [k for k in keyed if not secret_files.get(k[0][0])]
    keyed.sort(key=lambda e: e[0])
    eligible = [p for _, p, _ in keyed]
    if write_memo:
        PENDING.add(eligible, heads)
    files = {path: reason for path, reason in sorted(secret_files.items()) if reason}
    return {"eligible": eligible, "entries": [e for _, _, e in keyed], "excluded": excluded,
            "excluded_files": files}  # fmt: skip


def dry_run(ctx: BuildContext, provider: EmbeddingProvider) -> dict[str, Any]:
    """What a build would send: chunk and token counts, cache hits, secret exclusions.
    Loads no model for a remote provider (tokens are estimated)."""
    planned = plan(ctx, provider, write_memo=False)
    eligible: list[Planned] = planned["eligible"]
    with EmbeddingCache(ctx.cache_dir / "embeddings", provider.identity) as cache:
        wanted = {p.hash for p in eligible} | {p.head_hash for p in eligible}
        cached = cache.get_many(sorted(wanted))
    todo = {p.hash: p.text for p in eligible if p.hash not in cached}
    phases = phases_of(ctx.config, len(todo))
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
        "excluded_files": planned["excluded_files"],
        # texts not embedded: an equal text, or a head the model sees as its body (`dedup`)
        "duplicates": duplicates(
            (p.hash, p.head_hash, len(p.head) < len(p.text)) for p in eligible
        ),
    }
