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
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

from maguyva import _core
from maguyva.modalities.semantic.embed import ProviderIdentity
from maguyva.modalities.semantic.embed.local import DIM, MODEL_ID
from maguyva.modalities.semantic.embed.static import static_embed, static_first
from maguyva.modalities.semantic.rows import link

log = logging.getLogger("maguyva.modalities.semantic.static_part")

FILES = ("static.codes.npy", "static.floats.npy", "static.ids.json")
TIER = "static"
"""`Hit.extra["tier"]` of a hit the static tier answered."""


def wanted(config: dict[str, Any], identity: ProviderIdentity) -> bool:
    """Does this build keep a static part (the local MiniLM, `embedding_tier = "static"`)?"""
    return (
        static_first(config) and identity.provider == "local"
        and identity.model_id.startswith(MODEL_ID) and identity.dim == DIM
    )  # fmt: skip


def write(out: Path, previous: Path | None, pending: list[tuple[str, str]],
          texts: dict[str, str]) -> int:  # fmt: skip
    """The static part of `out` (a generation's `semantic/`) for `pending` ([chunk id, path]),
    linked from `previous` when that one has it, else embedded from `texts` (chunk id ->
    embedded text; a pending chunk without one gets no static row). Returns how many pending
    chunks have a static row."""
    if not pending:
        return 0
    if previous is not None and all((previous / f).exists() for f in FILES):
        for f in FILES:
            link(previous / f, out / f)
        have = {row[0] for row in json.loads((out / FILES[2]).read_bytes())}
        return sum(1 for key, _ in pending if key in have)
    rows = [(key, path) for key, path in pending if key in texts]
    if not rows:
        return 0
    result = static_embed([texts[key] for key, _ in rows])
    np.save(out / FILES[0], np.ascontiguousarray(result.codes, dtype=np.uint8))
    assert result.floats is not None
    np.save(out / FILES[1], result.floats.astype(np.float16))
    (out / FILES[2]).write_text(json.dumps([list(r) for r in rows]), encoding="utf-8")
    return len(rows)


class StaticPart:
    """A generation's static rows, memory-mapped, restricted to the chunks still pending."""

    def __init__(self, d: Path, pending: set[str]) -> None:
        self.codes = np.load(d / FILES[0], mmap_mode="r")
        self.floats = np.load(d / FILES[1], mmap_mode="r")
        rows = json.loads((d / FILES[2]).read_bytes())
        if self.codes.shape[0] != len(rows) or self.floats.shape[0] != len(rows):
            raise ValueError(f"{d}: static part: {len(rows)} ids for {self.codes.shape[0]} codes")
        self.ids = [r[0] for r in rows]
        self.paths = [r[1] for r in rows]
        self.gone = frozenset(i for i, key in enumerate(self.ids) if key not in pending)
        self.live = len(self.ids) - len(self.gone)

    @classmethod
    def load(cls, d: Path, pending: set[str]) -> StaticPart | None:
        """The static part of `d` (None: there is none, or no row is pending any more)."""
        if not pending or not all((d / f).exists() for f in FILES):
            return None
        part = cls(d, pending)
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
