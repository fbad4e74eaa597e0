"""The static tier's part of a generation: a static vector for every chunk the transformer
has not reached yet, so that a first build is searchable by meaning before MiniLM fills in.

Written by the semantic build when chunks are left pending (`embedding_tier = "static"`, the
default, and the local MiniLM provider whose space the table was fitted to): `static.codes.npy`
(sign bits, MiniLM's width), `static.floats.npy` (float16, for rescoring) and `static.ids.json`
([chunk id, path] per row) in `semantic/`, computed once, for the chunks pending then, by
`embed.static` (thousands of chunks per CPU-second), and hard-linked into every later
generation while something is pending; the generation that embeds the last chunk drops it.

A static row answers only for a chunk that is still pending in the generation searched (a
chunk the transformer reached, even by its head only, is ranked by its transformer vector;
an edited chunk has a new id and no static row). It is never cached, never reused as a
transformer vector. Search ranks the static rows with the static tier's own query vector
(`StaticPart.search`); the engine weighs a static row `coverage.STATIC_WEIGHT` of a transformer row in the
share that scales semantic's fusion weight (`coverage.share`; chosen among 1, 0.5 and 0.25
on the tune halves of requests, click and rustls). Measured on the tune halves
of the shipped sets and reported on the held-out halves: docs/semantic-static.md.

A staged first build (`maguyva.build.staged`) writes a semantic part of static rows alone
(`build_only`, the build's `followups.STATIC_ONLY`) before any plan: an empty base segment
with every chunk pending and a static row for each, so the first generations answer by
meaning over the whole repository while extraction, the graph and the plan run.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

from maguyva import _core
from maguyva.modalities.semantic import static_rows
from maguyva.modalities.semantic.embed import ProviderIdentity
from maguyva.modalities.semantic.embed.base import Embeddings
from maguyva.modalities.semantic.embed.local import DIM, MODEL_ID
from maguyva.modalities.semantic.embed.static import static_embed, static_first
from maguyva.modalities.semantic.rows import PathRows, link, write_segment
from maguyva.modalities.semantic.segments import BASE, FORMAT_VERSION

log = logging.getLogger("maguyva.modalities.semantic.static_part")

FILES = ("static.codes.npy", "static.floats.npy", "static.ids.json")
BATCH = 8192
"""Texts per static call (progress; the texts of one batch are held at once)."""


def wanted(config: dict[str, Any], identity: ProviderIdentity) -> bool:
    """Does this build keep a static part (the local MiniLM, `embedding_tier = "static"`)?"""
    return (
        static_first(config) and identity.provider == "local"
        and identity.model_id.startswith(MODEL_ID) and identity.dim == DIM
    )  # fmt: skip


def write(out: Path, previous: Path | None, pending: list[tuple[str, str]],
          texts: dict[str, str]) -> int:  # fmt: skip
    """The static part of `out` (a generation's `semantic/`) for `pending` ([chunk id, path]),
    linked from `previous` when that one has every one of them, else its rows copied and the
    others embedded from `texts` (chunk id -> embedded text; a pending chunk without one gets
    no static row). Returns how many pending chunks have a static row."""
    if not pending:
        return 0
    kept: list[tuple[str, str]] = []
    rows = [(key, path) for key, path in pending if key in texts]
    if previous is not None and all((previous / f).exists() for f in FILES):
        index = {row[0]: i for i, row in enumerate(json.loads((previous / FILES[2]).read_bytes()))}
        kept = [(key, path) for key, path in pending if key in index]
        rows = [(key, path) for key, path in rows if key not in index]
        if not rows:  # every pending chunk has its row there: linked, not embedded again
            for f in FILES:
                link(previous / f, out / f)
            return len(kept)
        if kept:  # the rows there are copied, the others embedded (chunks cut anew, edits)
            where = [index[key] for key, _ in kept]
            codes = np.load(previous / FILES[0], mmap_mode="r")[where]
            floats = np.load(previous / FILES[1], mmap_mode="r")[where]
            return _save(out, kept + rows, [texts[key] for key, _ in rows], None, (codes, floats))
    if not rows:
        return 0
    return _save(out, rows, [texts[key] for key, _ in rows])


def _save(out: Path, rows: list[tuple[str, str]], texts: list[str], progress: Any = None,
          kept: tuple[np.ndarray, np.ndarray] | None = None) -> int:  # fmt: skip
    """Write the static part of `rows` ([chunk id, path]): the first rows' codes and floats
    from `kept`, the others' embedded from `texts` (one per row left), a batch at a time
    into their places (`static_rows.RowSink`: no float32 copy of every row)."""
    sink = static_rows.RowSink(out / FILES[0], out / FILES[1], len(rows), DIM // 8, DIM)
    try:
        first = 0
        if kept is not None:
            first = len(kept[0])
            for start in range(0, first, BATCH):
                end = min(first, start + BATCH)
                sink.put(list(range(start, end)), Embeddings(np.asarray(kept[0][start:end]),
                                                             np.asarray(kept[1][start:end])))  # fmt: skip
        for start in range(0, len(texts), BATCH):
            got = static_embed(texts[start : start + BATCH])
            sink.put(list(range(first + start, first + start + len(got.codes))), got)
            if progress is not None:
                progress("static", min(len(texts), start + BATCH), len(texts))
    finally:
        sink.close()
    assert sink.filled == len(rows)
    (out / FILES[2]).write_text(json.dumps([list(r) for r in rows]), encoding="utf-8")
    return len(rows)


class StaticPart:
    """A generation's static rows, memory-mapped, restricted to the chunks still pending;
    ValueError when their shapes disagree with each other or with the model's width (`width`
    bytes of codes, `dim` floats per row): a search would fail on them midway."""

    def __init__(self, d: Path, pending: set[str], width: int, dim: int) -> None:
        self.codes = np.load(d / FILES[0], mmap_mode="r")
        self.floats = np.load(d / FILES[1], mmap_mode="r")
        rows = json.loads((d / FILES[2]).read_bytes())
        if self.codes.shape[0] != len(rows) or self.floats.shape[0] != len(rows):
            raise ValueError(f"{len(rows)} ids for {self.codes.shape[0]} codes")
        if self.codes.dtype != np.uint8 or self.codes.shape[1:] != (width,):
            raise ValueError(f"codes {self.codes.dtype} {self.codes.shape}, expected (rows, "
                             f"{width}) uint8")  # fmt: skip
        if self.floats.shape[1:] != (dim,):
            raise ValueError(f"floats {self.floats.shape}, expected (rows, {dim})")
        self.ids = [r[0] for r in rows]
        self.paths = [r[1] for r in rows]
        self.gone = frozenset(i for i, key in enumerate(self.ids) if key not in pending)
        self.live = len(self.ids) - len(self.gone)

    @classmethod
    def load(cls, d: Path, pending: set[str], width: int, dim: int) -> StaticPart | None:
        """The static part of `d` (None: there is none, or no row is pending any more)."""
        if not pending or not all((d / f).exists() for f in FILES):
            return None
        part = cls(d, pending, width, dim)
        return part if part.live else None

    def search(self, qcode: np.ndarray, qfloat: np.ndarray | None, depth: int
               ) -> list[tuple[float, int, int]]:  # fmt: skip
        """(similarity, Hamming distance, row) of the `depth` nearest live rows, rescored with
        the float vectors (as the transformer rows are)."""
        if depth <= 0 or not self.live:
            return []
        found_rows, dists = _core.hamming_topk(
            np.ascontiguousarray(qcode), self.codes, min(len(self.ids), depth + len(self.gone))
        )
        found = [(d, r) for r, d in zip(found_rows.tolist(), dists.tolist(), strict=True)
                 if r not in self.gone][:depth]  # fmt: skip
        if qfloat is None or not found:
            return [(-float(d), d, r) for d, r in found]
        block = np.asarray(self.floats[[r for _, r in found]], dtype=np.float32)
        sims = (block @ qfloat.astype(np.float32)).tolist()
        return [(s, d, r) for s, (d, r) in zip(sims, found, strict=True)]


def pending_ids(meta: dict[str, Any], sem_dir: Path) -> set[str]:
    """The chunk ids of `sem_dir` with no transformer vector (`reader.pending_of`)."""
    if not int(meta.get("pending") or 0):
        return set()
    from maguyva.modalities.semantic.reader import pending_of

    return set(pending_of(sem_dir)[0])


def build_only(ctx: Any, identity: ProviderIdentity) -> dict[str, Any]:
    """The semantic part of static rows alone (a staged first build, before its plan): an
    empty base segment listing every chunk pending (fsck and a later plan read it as any
    other), a static row for each, a batch at a time (`static_rows`: no text outlives its
    batch); returns the build report (`static_only`)."""
    started = time.perf_counter()
    out = ctx.out_dir / "semantic"
    out.mkdir(parents=True, exist_ok=True)
    static = 0
    by_path: list[tuple[str, list[str]]] = []
    planned = time.perf_counter()
    if len(ctx.chunks):
        made = static_rows.build(ctx.chunks, identity, Path(ctx.root), lambda n: static_rows.RowSink(
            out / FILES[0], out / FILES[1], n, identity.width, identity.dim), ctx.progress)  # fmt: skip
        by_path, static = made.by_path, made.static
        rows = [[key, path] for path, keys in by_path for key in keys]
        (out / FILES[2]).write_text(json.dumps(rows), encoding="utf-8")
        del rows
    placed = [(path, PathRows(BASE, 0, [], [], [], keys, [])) for path, keys in by_path]
    embedded = time.perf_counter()
    entries = write_segment(out, BASE, np.zeros((0, identity.width), np.uint8), None, placed)
    segments = [{"name": BASE, "rows": 0, "deleted": [], "entries": entries, "gone": [],
                 "floats": False}]  # fmt: skip
    report = {
        "provider": identity.to_dict(), "format": FORMAT_VERSION, "mode": "static_only",
        "static_only": True, "layout": "base", "segments": 1, "chunks": static,
        "embedded": 0, "new": 0, "pending": static, "partial": 0, "static": static,
        "left": static,  # at least: the plan may queue each chunk's head too
        "backlog_left": False, "excluded": {}, "duplicates": {}, "tokens": 0,
        "embed_seconds": 0.0, "error": None,
        "static_seconds": round(embedded - planned, 3),
        "seconds": round(time.perf_counter() - started, 3),
    }  # fmt: skip
    meta = dict(report, rescore=False, segments=segments, next=1)
    (out / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return report
