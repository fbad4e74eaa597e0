"""The semantic modality: code by meaning, as binary embeddings searched by Hamming distance.

Build (`build.Build`, step by step): embed `chunk.header + "\\n" + chunk.text` for every chunk
with the configured provider (through the content-addressed cache, so unchanged chunks are
never re-embedded), pack the sign bits, and write `semantic/` in the generation as segments
(format 2, `segments.py`): a base (`codes.npy` uint8 n x dim/8, `floats.npy` float16 for
rescoring when the provider gives floats, `ids.json` chunk ids in row order, `hashes.json` the
content hash of each row's embedded text, `paths.json` each file's rows) and, after small
updates of a long-running writer (`state.WriterState`), delta segments
(`delta-NNNNNN.codes.npy`, ...) holding only the changed files' rows, with the rows they
replace tombstoned in `meta.json` (`segments`). Unchanged segments are hard-linked from the
previous generation; past `layout.FOLD_RATIO` the deltas are folded into a new base, past
`layout.MAX_DELTAS` compacted into one. `centre.npy` (providers whose codes are centred:
always one base) and `meta.json` (provider identity, build report, segments). Chunks left
out by the cap, the time budget or a provider failure are listed as pending and embedded by
the next build (`queue.py` orders them); text and structural search never wait for them.

Search (`search.py`): embed the query (input_type "query"), take the exact Hamming top
candidates of every segment from the memory-mapped codes in Rust (tombstoned rows left out),
merge them in a from-scratch build's row order (file, then position: ties break as they
would in one base), rescore them with float vectors when present. The answers equal a
from-scratch build's (tests/test_semantic_segments.py). The model is loaded on the first
search, never when the index is opened (an exact-match query never pays for it), once per
process.

This module holds what lives as long as the process: the provider (the local model loaded
once), the open embedding caches and each repository's writer state.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

from maguyva.config import load_config
from maguyva.errors import CorruptIndexError, ModalityUnavailable, ProviderError
from maguyva.modalities.followups import STATIC_ONLY
from maguyva.modalities.protocol import BuildContext
from maguyva.modalities.semantic import planning, static_part, verify
from maguyva.modalities.semantic.build import Build, Update
from maguyva.modalities.semantic.embed import (
    EmbeddingCache,
    EmbeddingProvider,
    ProviderIdentity,
    make_provider,
)
from maguyva.modalities.semantic.reader import load_segments
from maguyva.modalities.semantic.search import SemanticSearcher
from maguyva.modalities.semantic.segments import check_format, open_sources
from maguyva.modalities.semantic.state import (
    KEEP_STATES,
    PreviousVectors,
    WriterState,
    file_sig,
)
from maguyva.modalities.semantic.static_part import StaticPart, pending_ids

log = logging.getLogger("maguyva.modalities.semantic.modality")

# its configuration keys (`semantic_phases`, `semantic_time_budget_s`, `embedding_*`) are
# declared in `maguyva.config.SCHEMA`

ProviderFactory = Callable[[dict[str, Any]], EmbeddingProvider]
LOCAL_PROVIDER_KEYS = ("embedding_max_length", "embedding_batch_size", "embedding_threads")


class SemanticModality:
    """Build side and loader of the semantic modality."""

    name: ClassVar[str] = "semantic"

    def __init__(self, provider_factory: ProviderFactory = make_provider) -> None:
        self.provider_factory = provider_factory
        self._kept: tuple[str, EmbeddingProvider] | None = None
        self._states: OrderedDict[str, WriterState] = OrderedDict()  # by repository root
        # open embedding caches of the repositories whose state is kept (a long-running writer
        # does not reconnect, and checkpoint on close, on every update)
        self._caches: OrderedDict[tuple[str, str], tuple[EmbeddingCache, int]] = OrderedDict()
        self._lock = threading.Lock()

    # -- build ---------------------------------------------------------------------------------
    def dry_run(self, ctx: BuildContext) -> dict[str, Any]:
        """What a build would send (`planning.dry_run`)."""
        return planning.dry_run(ctx, self.provider_factory(ctx.config))

    @contextlib.contextmanager
    def _cache(
        self, directory: Path, identity: ProviderIdentity, keep: bool
    ) -> Iterator[EmbeddingCache]:
        """The embedding cache of `directory`: kept open between builds of this process when
        `keep` (the last KEEP_STATES repositories), else opened and closed around the build.
        Builds of one modality object run one at a time per repository (the writer lock)."""
        if not keep:
            with EmbeddingCache(directory, identity) as cache:
                yield cache
            return
        key = (str(directory), identity.cache_key)
        with self._lock:
            kept = self._caches.pop(key, None)
        cache = None
        if kept is not None:
            now = file_sig(Path(kept[0].path))
            if now is not None and now[0] == kept[1]:
                cache = kept[0]
            else:  # the file was deleted or replaced: open the one there now
                kept[0].close()
        if cache is None:
            cache = EmbeddingCache(directory, identity)
        ino = (file_sig(Path(cache.path)) or (0,))[0]
        try:
            yield cache
        except BaseException:
            cache.close()
            raise
        with self._lock:
            self._caches[key] = (cache, ino)
            while len(self._caches) > KEEP_STATES:
                self._caches.popitem(last=False)[1][0].close()

    def prepare(self, config: dict[str, Any]) -> bool:
        """Load the writer's model now (a watcher starting: `Indexer.update(prepare=True)`),
        one text and a batch, as the first edit's build would embed them. A remote provider
        is not called; a missing model is left to the build to report. False when nothing
        was loaded."""
        try:
            provider = self._provider(config)
        except ProviderError:
            return False
        if provider.remote:
            return False
        provider.embed(["warm up"], "document")
        provider.embed(["warm", "up"], "document")
        return True

    def _provider(self, config: dict[str, Any]) -> EmbeddingProvider:
        """The configured provider; the default local one is kept between builds of this
        process (a long-running writer loads the model once, not once per update)."""
        if (
            self.provider_factory is not make_provider
            or (config.get("embedding_provider") or "local") != "local"
        ):
            return self.provider_factory(config)
        key = json.dumps([config.get(k) for k in LOCAL_PROVIDER_KEYS], default=str)
        with self._lock:
            if self._kept is None or self._kept[0] != key:
                self._kept = (key, self.provider_factory(config))
            return self._kept[1]

    def _incremental(
        self, ctx: BuildContext, provider: EmbeddingProvider, state: WriterState | None
    ) -> Update | None:
        """What this process wrote last, the changed paths, their planned chunks and the
        previous segments (memory-mapped), from `ctx.changes`; None when a full plan is due."""
        changes = ctx.changes
        if (
            state is None
            or changes is None
            or getattr(changes, "reason", "")
            or ctx.previous_dir is None
            or provider.remote
            or provider.identity.centred
            or state.key != provider.identity.cache_key
            or not callable(getattr(ctx.chunks, "of_paths", None))
        ):
            return None
        d = Path(ctx.previous_dir) / self.name
        if file_sig(d / "meta.json") != state.sig:
            return None
        try:
            sources = open_sources(d, state.segments, provider.identity, state.rescore)
        except (OSError, ValueError) as exc:
            log.info("semantic: previous generation not reused: %s", exc)
            return None
        touched = set(changes.touched_paths())
        changed = set(changes.deleted) | {old for old, _new in changes.renamed} | touched
        chunks = ctx.chunks.of_paths(sorted(touched))
        planned = planning.plan(ctx, provider, chunks, planning.central(ctx))
        return state, changed, planned, PreviousVectors({}, sources)

    def build(self, ctx: BuildContext) -> dict[str, Any]:
        """Build this generation's semantic part (`build.Build`, one step after another)."""
        started = time.perf_counter()
        try:
            provider = self._provider(ctx.config)
        except ProviderError as exc:
            raise ModalityUnavailable(str(exc)) from None
        if ctx.config.get(STATIC_ONLY):  # a staged first build, before its plan
            return static_part.build_only(ctx, provider.identity)
        slot = str(ctx.root)
        with self._lock:  # consumed (updated in place): put back when this build completes
            state = self._states.pop(slot, None)
        job = Build(ctx, provider, self._incremental(ctx, provider, state), started)
        keep = not provider.remote
        with self._cache(ctx.cache_dir / "embeddings", provider.identity, keep=keep) as cache:
            job.lookup(cache)
            job.embed(cache, job.make_queue())
        job.place()
        job.write()
        report = job.report()
        job.write_meta(report)
        state = job.next_state()
        if state is not None:
            with self._lock:
                self._states[slot] = state
                while len(self._states) > KEEP_STATES:
                    self._states.popitem(last=False)
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
        check_format(d, meta)
        built_with = ProviderIdentity.from_dict(meta["provider"])
        if provider is None:
            root = manifest.get("root")
            config = load_config(Path(root)) if root else {}
            try:
                # the default local model is kept by the process (loaded once, not once per
                # generation a long-running reader reopens)
                provider = self._provider(config)
            except ProviderError as exc:
                raise ModalityUnavailable(str(exc)) from None
        built_with.check_same(provider.identity, "search this index")
        segments, centre = load_segments(d, meta, built_with)
        static = None
        if meta.get("static"):
            try:
                static = StaticPart.load(d, pending_ids(meta, d), built_with.width, built_with.dim)
            except (OSError, ValueError) as exc:
                raise CorruptIndexError(f"{d}: static tier: {exc}") from None
        return SemanticSearcher(Path(gen_dir), provider, segments, centre, meta, static)

    def verify(self, directory: Path) -> list[str]:
        """Problems of a generation's semantic part (fsck; `verify.verify`)."""
        return verify.verify(directory)


MODALITY = SemanticModality()

__all__ = ["MODALITY", "SemanticModality"]
