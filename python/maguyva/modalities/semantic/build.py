"""One build of the semantic part, in the steps a reader can follow: plan (every chunk, or
the changed files' after this writer's last build), look up vectors (previous generation,
then the cache), queue and embed (in groups, each committed to the cache), place each file's
rows, write the segment (or a delta), the build report and the writer state for the next
update. `SemanticModality.build` runs them in this order."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from maguyva.errors import ModalityUnavailable, ProviderError
from maguyva.modalities import followups as follow
from maguyva.modalities.protocol import BuildContext
from maguyva.modalities.semantic import static_part
from maguyva.modalities.semantic.embed import EmbeddingCache, EmbeddingProvider, binarize
from maguyva.modalities.semantic.layout import choose_layout
from maguyva.modalities.semantic.planning import central, plan, text_of
from maguyva.modalities.semantic.queue import (
    HASH,
    HEAD_HASH,
    PATH,
    Candidates,
    Entry,
    Have,
    embed_phase,
    entry_duplicates,
    in_order,
    left_to_embed,
    make_queue,
    phases_of,
    split_candidates,
    touched_files,
)
from maguyva.modalities.semantic.rows import (
    PathRows,
    Run,
    add_run,
    assemble,
    link,
    path_rows_of,
    write_segment,
)
from maguyva.modalities.semantic.segments import BASE, FORMAT_VERSION, SEGMENT_FILES, seg_file
from maguyva.modalities.semantic.state import PreviousVectors, WriterState, cache_sig, file_sig

log = logging.getLogger("maguyva.modalities.semantic.build")

Update = tuple[WriterState, set[str], dict[str, Any], PreviousVectors]
"""What an update reuses (`SemanticModality._incremental`): this writer's last state, the
changed paths, their planned chunks and the previous segments."""

META_LIST_MAX = 1000
"""`meta.json` lists the pending and partial chunk ids (format 1 did, always) only when there
are at most this many: a reader never needs them and a large list made every update rewrite
(and every reader parse) megabytes; `pending_of` reads them from the path tables."""


EMBED_GROUP = 64  # texts per provider call: progress, cache commits and budget checks


class _Clock:
    """Records the time since the previous mark under each name (a build's phases)."""

    def __init__(self, started: float, into: dict[str, float]) -> None:
        self.last, self.into = started, into

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.into[name] = now - self.last
        self.last = now


class Build:
    """The working state of one build, step by step (each method is one step of the original
    single function; the attributes are what one step leaves for the next)."""

    def __init__(
        self, ctx: BuildContext, provider: EmbeddingProvider, update: Update | None,
        started: float,
    ) -> None:  # fmt: skip
        self.ctx, self.provider, self.update, self.started = ctx, provider, update, started
        self.identity = provider.identity
        self.out = ctx.out_dir / "semantic"
        self.out.mkdir(parents=True, exist_ok=True)
        self.timings: dict[str, float] = {}
        self.mark = _Clock(started, self.timings)
        self.row_of: Callable[[str], tuple[str, int]]
        self.prev: WriterState | None = None
        if update is not None:
            prev, changed, planned, previous = update
            self.prev, self.mode = prev, "incremental"
            self.by_path = prev.by_path  # consumed: updated in place
            self.candidates, self.old_rows, self.where = prev.candidates, prev.path_rows, prev.where
            for path in changed:
                for e in self.by_path.pop(path, ()):
                    self.candidates.drop(e)
            self.have = Have(self.where)
            self.row_of = prev.row_of
        else:
            self.mode, changed = "full", set()
            planned = plan(ctx, provider, central=central(ctx))
            previous = PreviousVectors.load(ctx.previous_dir, self.identity)
            self.by_path, self.old_rows, self.where = {}, {}, {}
            self.candidates = Candidates([], [])
            self.have = Have(previous.rows)
            self.row_of = previous.rows.__getitem__
        self.changed, self.previous = changed, previous
        self.excluded = planned["excluded"]
        self.texts = {p.id: p for p in planned["eligible"]}
        self.fresh_entries: list[Entry] = planned["entries"]
        for e in self.fresh_entries:
            self.by_path.setdefault(e[PATH], []).append(e)
            changed.add(e[PATH])
        self.paths = sorted(self.by_path)
        self.mark("plan")
        # before opening it (opening may touch its files)
        self.cache_changed = self.prev is not None and (
            cache_sig(ctx.cache_dir / "embeddings") != self.prev.cache_sig
        )

    def lookup(self, cache: EmbeddingCache) -> None:
        """Vectors of the generation being replaced first (no cache read), then the cache.
        An update asks the cache only for the changed files' hashes: the others were asked by
        the build that wrote the previous generation (a hash it did not find is embedded when
        its turn comes)."""
        fresh_entries, have, candidates = self.fresh_entries, self.have, self.candidates
        wanted = {e[HASH] for e in fresh_entries} | {e[HEAD_HASH] for e in fresh_entries}
        self.reused = {h for h in wanted if h in have}
        ask = wanted - self.reused
        if self.cache_changed:
            # someone else wrote to the cache (e.g. distributed embedding workers): ask
            # for every vector-less chunk's hashes, as a full plan does
            ask |= {h for h in candidates.by_hash if h not in have}
        self.vectors: dict[str, tuple[np.ndarray, np.ndarray | None]] = cache.get_many(sorted(ask))
        self.asked = len(ask)
        have.got |= set(self.vectors)
        self.affected = candidates.settle(set(self.vectors), have) | self.changed
        candidates.add(fresh_entries, have)
        from_cache = sum(1 for e in fresh_entries if e[HASH] in have or e[HEAD_HASH] in have)
        from_cache += sum(len(r.ids) for p, r in self.old_rows.items() if p not in self.changed)
        self.from_cache = from_cache
        self.mark("cache")

    def make_queue(self) -> list[tuple[str, Entry, bool]]:
        """The texts to embed in order: the changed files' chunks first, then the backlog
        (unless a build of its own embeds it right after: `maguyva.build.follow`)."""
        ctx, have, candidates = self.ctx, self.have, self.candidates
        cap = ctx.config.get("semantic_max_chunks")
        self.phases = phases_of(ctx.config, len(candidates.bodies))
        touched = touched_files(ctx.changes)
        urgent = split_candidates(
            [e for p in sorted(touched) for e in self.by_path.get(p, ())], have
        )  # type: ignore[arg-type]
        self.backlog = ctx.config.get(follow.BACKLOG) is not False
        heads, bodies = (candidates.heads, candidates.bodies) if self.backlog else ([], [])
        queue = make_queue(heads, bodies, have, self.phases,  # type: ignore[arg-type]
                           None if cap is None else max(0, int(cap)),
                           (in_order(urgent[0]), in_order(urgent[1])))  # fmt: skip
        self.mark("queue")
        return queue

    def embed(self, cache: EmbeddingCache, queue: list[tuple[str, Entry, bool]]) -> None:
        """Embed `queue` in groups, each committed to the cache, within the time budget;
        a provider failure stops the loop (what is left stays pending)."""
        ctx, provider, have = self.ctx, self.provider, self.have
        budget = ctx.config.get("semantic_time_budget_s")
        error, embedded_new, tokens = None, 0, 0
        embed_started = time.perf_counter()
        # smaller groups check the budget more often (`maguyva.build.follow`'s first generation)
        group_size = max(1, int(ctx.config.get(follow.EMBED_GROUP_KEY) or EMBED_GROUP))
        for start in range(0, len(queue), group_size):
            if budget is not None and time.perf_counter() - embed_started > float(budget):
                break
            group = [(item[0], text_of(ctx, self.texts, item, self.identity))
                     for item in queue[start : start + group_size]]  # fmt: skip
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
                self.vectors[h] = (result.codes[i], floats)
                have.got.add(h)
            self.affected |= self.candidates.settle(set(hashes), have)
            embedded_new += len(group)
            tokens += result.tokens
            ctx.progress(embed_phase(self.phases), embedded_new, len(queue))
        self.embed_seconds = time.perf_counter() - embed_started
        self.error, self.embedded_new, self.tokens = error, embedded_new, tokens
        # a backlog left out that a build of its own would embed (`maguyva.build.follow`)
        self.backlog_left = (
            not self.backlog and error is None
            and bool(make_queue(self.candidates.heads, self.candidates.bodies, have, self.phases, 1))  # type: ignore[arg-type]
        )  # fmt: skip
        self.left = left_to_embed(self.candidates, self.phases)
        self.mark("embed")

    def place(self) -> None:
        """A file's rows change when it changed or one of its chunks got a vector now: those
        files' rows are written (a delta segment), the others stay where they are."""
        path_rows: dict[str, PathRows]
        by_path, have = self.by_path, self.have
        if self.prev is not None:  # only the affected files are looked at (not every file)
            path_rows = dict(self.old_rows)
            for path in self.affected:
                if path in by_path:
                    path_rows[path] = path_rows_of(by_path[path], have)
                else:
                    path_rows.pop(path, None)
            fresh_paths = sorted(p for p in self.affected if p in by_path)
        else:
            path_rows = {path: path_rows_of(by_path[path], have) for path in self.paths}
            fresh_paths = self.paths
        self.path_rows, self.fresh_paths = path_rows, fresh_paths
        self.n = sum(len(pr.ids) for pr in path_rows.values())
        if self.n == 0 and self.error is not None:
            raise ModalityUnavailable(f"no chunk could be embedded: {self.error}")
        self.segments, self.layout, self.next_delta, self.moving = choose_layout(
            self.prev if self.prev is not None and not self.identity.centred else None,
            self.old_rows, path_rows, by_path, self.affected, fresh_paths,
        )  # fmt: skip

    def write(self) -> None:
        """The new segment (a base, or the delta of the files whose rows changed), then the
        previous segments a delta keeps, linked."""
        delta = self.layout == "delta"
        written = sorted({*self.fresh_paths, *self.moving}) if delta else self.paths
        if not delta or written:
            name = BASE if not delta else f"delta-{self.next_delta:06d}"
            self.next_delta += delta
            self._write_new(name, written)
        else:
            self.mark("assemble")
        if delta:
            prev_dir = Path(self.ctx.previous_dir or ".") / "semantic"
            for seg in self.segments[:-1] if written else self.segments:
                for file in SEGMENT_FILES:
                    src = prev_dir / seg_file(seg["name"], file)
                    if src.exists():
                        link(src, self.out / seg_file(seg["name"], file))
        self.rescore = self.n > 0 and all(seg["floats"] for seg in self.segments if seg["rows"])
        self.static = self.write_static()
        self.mark("write")

    def write_static(self) -> int:
        """The static tier's rows for the chunks left pending (`static_part`): how many."""
        if not static_part.wanted(self.ctx.config, self.identity):
            return 0
        pending = [(key, path) for path in sorted(self.path_rows)
                   for key in self.path_rows[path].pending]  # fmt: skip
        prev = Path(self.ctx.previous_dir) / "semantic" if self.ctx.previous_dir else None
        texts = {key: p.text for key, p in self.texts.items()}
        return static_part.write(self.out, prev, pending, texts)

    def _write_new(self, name: str, written: list[str]) -> None:
        """Segment `name` with the rows of `written`: unchanged rows copied from the previous
        generation as runs, new vectors from this build."""
        identity, out = self.identity, self.out
        runs: list[Run] = []
        fresh: list[tuple[int, str]] = []
        placed: list[tuple[str, PathRows]] = []
        rows = 0
        for path in written:
            pr = self.path_rows[path]
            if pr.seg:  # rows unchanged, moved (a fold or a compaction)
                add_run(runs, rows, pr.seg, pr.first, len(pr.ids))
            else:
                for i, h in enumerate(pr.hashes):
                    if h in self.vectors:
                        fresh.append((rows + i, h))
                    else:
                        add_run(runs, rows + i, *self.row_of(h), 1)
            placed.append((path, PathRows(name, rows, pr.ids, pr.hashes, pr.partial,
                                          pr.pending, pr.info)))  # fmt: skip
            rows += len(pr.ids)
        codes, floats = assemble(rows, runs, fresh, identity, self.vectors, self.previous.sources,
                                 np.float32 if identity.centred else np.float16)  # fmt: skip
        self.mark("assemble")
        if identity.centred and floats is not None and rows:
            centre = floats.mean(axis=0).astype(np.float32)
            codes = binarize(floats, centre)
            np.save(out / "centre.npy", centre)
        entries = write_segment(out, name, codes, floats, placed)
        self.path_rows.update(placed)
        self.segments.append({"name": name, "rows": rows, "deleted": [], "entries": entries,
                              "gone": [], "floats": floats is not None})  # fmt: skip

    def report(self) -> dict[str, Any]:
        """The build report (returned, and the base of `meta.json`)."""
        segments, n = self.segments, self.n
        if self.mode == "incremental":
            reused_rows = len(self.reused) + sum(len(r.ids) for p, r in self.old_rows.items()
                                                 if p not in self.changed)  # fmt: skip
        else:
            reused_rows = len(self.reused)
        embedded_new, embed_seconds = self.embedded_new, self.embed_seconds
        return {
            "provider": self.identity.to_dict(),
            "format": FORMAT_VERSION,
            "mode": self.mode,
            "layout": self.layout,
            "segments": len(segments),
            "delta_rows": sum(s["rows"] - len(s["deleted"]) for s in segments[1:]),
            "tombstones": sum(len(s["deleted"]) for s in segments),
            "compacted": bool(self.moving),
            "phases": self.phases,
            "chunks": len(self.ctx.chunks),
            "embedded": n,
            "from_cache": min(self.from_cache, n),
            "reused_rows": reused_rows,
            "cache_asked": self.asked,
            "new": embedded_new,
            "pending": sum(len(pr.pending) for pr in self.path_rows.values()),
            "partial": sum(len(pr.partial) for pr in self.path_rows.values()),
            "static": self.static,
            "backlog_left": self.backlog_left,
            "left": self.left,
            "excluded": self.excluded,
            "duplicates": entry_duplicates(chain.from_iterable(self.by_path.values())),
            "tokens": self.tokens,
            "embed_seconds": round(embed_seconds, 3),
            "chunks_per_s": round(embedded_new / embed_seconds, 2) if embedded_new else None,
            "error": self.error,
            "seconds": round(time.perf_counter() - self.started, 3),
            "timings_ms": {k: round(v * 1000, 1) for k, v in self.timings.items()},
        }

    def write_meta(self, report: dict[str, Any]) -> None:
        """`meta.json`: the report, the segments, and the pending and partial ids when few."""
        meta = dict(report, rescore=self.rescore, segments=self.segments, next=self.next_delta)
        if report["pending"] + report["partial"] <= META_LIST_MAX:
            ordered = [self.path_rows[p] for p in self.paths]
            meta.update(pending_ids=list(chain.from_iterable(pr.pending for pr in ordered)),
                        partial_ids=list(chain.from_iterable(pr.partial for pr in ordered)))  # fmt: skip
        (self.out / "meta.json").write_text(json.dumps(meta), encoding="utf-8")

    def next_state(self) -> WriterState | None:
        """What the next update of this writer reuses (None: a remote or centred provider,
        whose builds always plan every chunk)."""
        sig = file_sig(self.out / "meta.json")
        if sig is None or self.provider.remote or self.identity.centred:
            return None
        # which paths hold each hash: updated for the files whose rows changed
        where, affected = self.where, self.affected
        if self.mode == "full":
            where = {}
            affected = set(self.paths)
        for path in affected:
            old = self.old_rows.get(path)
            for h in old.hashes if old is not None else ():
                holders = tuple(x for x in where.get(h, ()) if x != path)
                if holders:
                    where[h] = holders
                else:
                    where.pop(h, None)
            new = self.path_rows.get(path)
            for h in new.hashes if new is not None else ():
                where[h] = (*where.get(h, ()), path)
        state = WriterState(self.identity.cache_key, sig, self.by_path, self.path_rows, where,
                            self.segments, self.rescore, self.candidates)  # fmt: skip
        state.next = self.next_delta
        state.cache_sig = cache_sig(self.ctx.cache_dir / "embeddings")
        return state
