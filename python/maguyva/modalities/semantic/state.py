"""What a build reuses: the last generation this process wrote (`WriterState`, for updates
that plan only the changed files) and the previous generation's vectors by content hash."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from maguyva.errors import MaguyvaError
from maguyva.modalities.semantic.embed import ProviderIdentity
from maguyva.modalities.semantic.queue import Candidates, Entry
from maguyva.modalities.semantic.rows import PathRows
from maguyva.modalities.semantic.segments import (
    READ_FORMATS,
    open_sources,
    read_json,
    seg_file,
    segments_of,
)

log = logging.getLogger("maguyva.modalities.semantic.state")


class WriterState:
    """What this process wrote last (a long-running writer: `maguyva watch`, `mcp --watch`):
    every eligible chunk's entry by path, where each path's rows are in that generation
    (segment and first row), which paths hold each vector hash, the generation's segments
    and the sorted candidates (chunks still lacking a vector). The next build, when its
    previous generation is that one (same `meta.json` file) and `ctx.changes` says which files
    changed, plans only those files' chunks and writes only their rows (a delta segment; the
    other segments are hard-linked) instead of planning every chunk. A build consumes the
    state (it updates it in place) and leaves a new one when it ends."""

    def __init__(
        self,
        key: str,
        sig: tuple[int, int, int],
        by_path: dict[str, list[Entry]],
        path_rows: dict[str, PathRows],
        where: dict[str, tuple[str, ...]],
        segments: list[dict[str, Any]],
        rescore: bool,
        candidates: Candidates,
    ) -> None:
        self.key, self.sig, self.by_path, self.path_rows = key, sig, by_path, path_rows
        self.where, self.segments, self.rescore = where, segments, rescore
        self.candidates = candidates
        self.cache_sig: tuple[tuple[str, int, int], ...] = ()
        self.next = 1  # number of the next delta segment

    def row_of(self, h: str) -> tuple[str, int]:
        """A row (segment, row) of the generation holding the vector of hash `h`."""
        pr = self.path_rows[self.where[h][0]]
        return pr.seg, pr.first + pr.hashes.index(h)


def cache_sig(directory: Path) -> tuple[tuple[str, int, int], ...]:
    """The embedding cache's files as they are (name, size, mtime): equal after this
    process's last build means nobody else has added vectors since."""
    try:
        entries = sorted(os.scandir(directory), key=lambda d: d.name)
        return tuple((d.name, d.stat().st_size, d.stat().st_mtime_ns) for d in entries)
    except OSError:
        return ()


def file_sig(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class PreviousVectors:
    """The codes and floats of the generation being replaced (every segment, memory-mapped)
    and, for a full plan, its live rows by content hash: a build copies their rows instead of
    reading every vector back from the cache."""

    def __init__(
        self,
        rows: dict[str, tuple[str, int]],
        sources: dict[str, tuple[np.ndarray, np.ndarray | None]],
    ) -> None:
        self.rows, self.sources = rows, sources

    @classmethod
    def load(cls, previous_dir: Path | None, identity: ProviderIdentity) -> PreviousVectors:
        empty = cls({}, {})
        d = Path(previous_dir) / "semantic" if previous_dir else None
        if d is None or identity.centred or not (d / "hashes.json").exists():
            return empty
        try:
            meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
            built = ProviderIdentity.from_dict(meta["provider"])
            if built.cache_key != identity.cache_key or meta.get("format") not in READ_FORMATS:
                return empty
            rows: dict[str, tuple[str, int]] = {}
            sources = open_sources(d, segments_of(meta), identity, bool(meta.get("rescore")))
            for s in segments_of(meta):
                hashes = read_json(d / seg_file(s["name"], "hashes.json"))
                if len(hashes) != int(s["rows"]):
                    return empty
                deleted = set(s["deleted"])
                for i, h in enumerate(hashes):
                    if i not in deleted:
                        rows[h] = (s["name"], i)
        except (OSError, ValueError, KeyError, TypeError, MaguyvaError) as exc:
            log.info("semantic: previous generation not reused: %s", exc)
            return empty
        return cls(rows, sources)


KEEP_STATES = 4
"""Repositories whose last build a process remembers (one writer per repository; a process
serving several keeps each one's state)."""
