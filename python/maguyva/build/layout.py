"""Where a generation's files go: the names of its own files, and the writing of its chunks,
extraction and file state, either as whole segments (unchanged ones hard-linked from the
previous generation) or, for a small update, as a delta over the previous generation's
segments (`delta/`, `files-delta.json`; see store/chunks.py), folded into the segments once
it grows past `DELTA_MAX_BYTES`."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from maguyva.build.phases import Phases
from maguyva.build.previous import Previous
from maguyva.build.spill import Spill
from maguyva.model import SourceFile
from maguyva.repo.changes import RepoState
from maguyva.store import blocks
from maguyva.store import generations as _store
from maguyva.store.chunks import (
    CHUNKS_DIR,
    DELTA_DIR,
    DELTA_KIND,
    FILES_DELTA,
    FILES_JSON,
    SEGMENTS,
    delta_file,
    segment_of,
    state_delta,
)
from maguyva.store.fileindex import SEGMENT_INDEX_VERSION, chunk_counts
from maguyva.store.generations import Generation, IndexDir, IndexWriteError, write_sealed
from maguyva.store.rows import write_rows, write_segment
from maguyva.store.views import EXTRACT_DIR, RowFiles, segment_name
from maguyva.support import sealed

EXTRACT_JSON = "extract.json"  # format 2 before segments (such an index is extracted again once)
META_JSON = "meta.json"
CHUNKS_FILE = "chunks.jsonl"
COMMIT_KEYS = ("format_version", "generation", "dir", "committed_at")  # set by the commit

DELTA_MAX_BYTES = 8 << 20
"""A small update writes the re-extracted files' rows to a delta file instead of rewriting
their segments; once the live delta files hold more than this, the next update folds them
into the segments (rewrites the segments they touch and `files.json`)."""
DELTA_MAX_FILES = 8
"""More live delta files than this are merged into one (the next update's)."""
DELTA_MAX_PATHS = 4096
"""More overridden paths than this (a large checkout): fold at once."""


@dataclass(slots=True)
class Layout:
    """What `write_layout` wrote: the logical index (path -> entry), chunks per segment, the
    base state and index, the delta over them and its files' sizes."""

    index: dict[str, list[int]]
    counts: list[int]
    base_state: dict[str, Any]
    base_index: dict[str, list[int]]
    delta: dict[str, list[int] | None]
    delta_sizes: dict[int, int]
    rewritten: int
    mode: str  # segments | fold | delta
    base_counts: list[int] = field(default_factory=list)  # chunks per segment of base_index

    def report(self) -> dict[str, Any]:
        return {"mode": self.mode, "segments_rewritten": self.rewritten,
                "delta_paths": len(self.delta), "delta_files": len(self.delta_sizes),
                "delta_bytes": sum(self.delta_sizes.values())}  # fmt: skip

    def previous(self, path: Path, digests: dict[str, str]) -> Previous:
        """What the next build reuses of the generation at `path` written with this layout."""
        return Previous(path, digests, self.index, self.base_state, self.base_index,
                        self.delta, self.delta_sizes, self.base_counts)  # fmt: skip

    @classmethod
    def linked(cls, prev: Previous) -> Layout:
        """The layout of a generation whose files are all linked from `prev`'s."""
        return cls(prev.index, chunk_counts(prev.index), prev.base_state, prev.base_index,
                   prev.delta, prev.delta_sizes, 0, "linked", prev.base_counts)  # fmt: skip


def write_layout(
    tmp: Path,
    number: int,
    state: RepoState,
    files: list[SourceFile],
    digests: dict[str, str],
    redo: list[SourceFile],
    prev: Previous | None,
    spill: Spill,
    phases: Phases,
    extractor: str,
) -> Layout:
    """Write the generation's chunks, extraction and file state. A small update (the
    previous generation reusable, its delta small) hard-links the segments and
    `files.json` and writes only the re-extracted files' rows as a delta; otherwise (or
    once the delta has grown past `DELTA_MAX_*`) the segments holding a change or a delta
    row are rewritten, the others linked, and `files.json` written whole."""
    state_json = state.to_json()
    redone = {f.path for f in redo}
    # segments written before the row blocks: rewritten (not linked) once, as blocks
    rows_format_1 = prev is not None and blocks.older_format(prev.path, segment_name(0, "chunks"))
    if prev is not None and not rows_format_1:
        delta: dict[str, list[int] | None] = {}
        for p, e in prev.delta.items():
            if p in redone:
                continue
            if p in digests:
                delta[p] = e
            elif p in prev.base_index:
                delta[p] = None
        for p in prev.index.keys() - digests.keys():
            if p in prev.base_index:
                delta[p] = None
        live = {e[5] for e in delta.values() if e is not None}
        merge = len(live) + (1 if redo else 0) > DELTA_MAX_FILES
        live_bytes = sum(prev.delta_sizes.get(d, 0) for d in live) + spill.bytes
        fold = live_bytes > DELTA_MAX_BYTES or len(delta) + len(redone) > DELTA_MAX_PATHS
        if not fold:
            layout = write_delta(tmp, number, state_json, redone, prev, delta, live,
                                 merge, spill, extractor)  # fmt: skip
            if layout is not None:
                return layout
    gone = (prev.index.keys() - digests.keys()) if prev is not None else set()
    dirty = {segment_of(p) for p in (*redone, *gone)}
    if prev is not None:
        dirty |= {segment_of(p) for p in prev.delta}
    if rows_format_1:
        dirty = set(range(SEGMENTS))
    index, counts, rewritten = write_segments(tmp, files, prev, dirty, spill, phases, extractor)
    write_sealed(tmp / FILES_JSON, "files", sealed.dumps_json_packed({
        "state": state_json,
        "segments": {"version": SEGMENT_INDEX_VERSION, "files": index},
    }), sealed.PACKED_VERSION)  # fmt: skip
    return Layout(index, counts, state_json, index, {}, {}, rewritten,
                  "segments" if prev is None or not prev.delta else "fold",
                  list(counts))  # fmt: skip


def write_segments(
    tmp: Path,
    files: list[SourceFile],
    prev: Previous | None,
    dirty: set[int],
    spill: Spill,
    phases: Phases,
    extractor: str,
) -> tuple[dict[str, list[int]], list[int], int]:
    """Write the chunk and extraction segments, one at a time: a segment without a changed
    file is hard-linked from the previous generation; the others are assembled from the
    spilled new records and slices of the previous segment. Returns the segment index,
    the chunk count per segment and how many segments were written."""
    groups: dict[int, list[str]] = {n: [] for n in range(SEGMENTS)}
    for f in files:
        groups[segment_of(f.path)].append(f.path)
    _store.FILES.mkdir(tmp / CHUNKS_DIR)
    _store.FILES.mkdir(tmp / EXTRACT_DIR)
    index: dict[str, list[int]] = {}
    counts = [0] * SEGMENTS
    written = 0
    old = RowFiles(prev.path) if prev is not None else None
    for n, paths in groups.items():
        names = (segment_name(n, "chunks"), segment_name(n, "extract"))
        if prev is not None and n not in dirty and all(p in prev.index for p in paths) \
                and link_all(prev.path, tmp, names):  # fmt: skip
            for p in paths:
                index[p] = prev.index[p]
                counts[n] += prev.index[p][2]
            phases("write", n + 1, SEGMENTS)
            continue
        new = spill.take(n)
        rows = []
        for p in paths:  # sorted, as `files` is
            if p in new:
                chunk_bytes, fragment = new.pop(p)
            else:
                assert old is not None
                e = prev.index[p]  # type: ignore[union-attr]
                chunk_bytes = old.sliced(p, e, "chunks")
                fragment = old.sliced(p, e, "extract")
            rows.append((p, chunk_bytes, blocks.count(chunk_bytes), fragment))
        del new
        if old is not None:  # this segment's payloads are done with (deltas are kept)
            old.forget(names)
        counts[n] = write_segment(tmp, n, extractor, rows, index)
        written += 1
        phases("write", n + 1, SEGMENTS)
    if old is not None:
        old.close()
    return index, counts, written


def write_delta(
    tmp: Path,
    number: int,
    state_json: dict[str, Any],
    redone: set[str],
    prev: Previous,
    delta: dict[str, list[int] | None],
    live: set[int],
    merge: bool,
    spill: Spill,
    extractor: str,
) -> Layout | None:
    """The small-update layout (see `write_layout`); None when the previous generation's files
    cannot be linked (nothing is left behind then)."""
    _store.FILES.mkdir(tmp / CHUNKS_DIR)
    _store.FILES.mkdir(tmp / EXTRACT_DIR)
    names = [FILES_JSON] + [segment_name(n, k) for n in range(SEGMENTS)
                           for k in ("chunks", "extract")]  # fmt: skip
    kept = set() if merge else live
    if redone or live:
        _store.FILES.mkdir(tmp / DELTA_DIR)
    names += [delta_file(d, k) for d in sorted(kept) for k in ("chunks", "extract")]
    if not link_all(prev.path, tmp, tuple(names)):
        for sub in (CHUNKS_DIR, EXTRACT_DIR, DELTA_DIR):
            shutil.rmtree(tmp / sub, ignore_errors=True)
        return None
    new: dict[str, tuple[bytes, bytes]] = {}
    for n in range(SEGMENTS):
        new.update(spill.take(n))
    moved = sorted(redone | ({p for p, e in delta.items() if e is not None} if merge
                             else set()))  # fmt: skip
    sizes = {d: prev.delta_sizes.get(d, 0) for d in kept}
    if moved:
        old = RowFiles(prev.path)
        rows = []
        for p in moved:
            if p in new:
                chunk_bytes, fragment = new.pop(p)
            else:
                e = delta[p]
                assert e is not None
                chunk_bytes, fragment = old.sliced(p, e, "chunks"), old.sliced(p, e, "extract")
            rows.append((p, chunk_bytes, blocks.count(chunk_bytes), fragment))
        old.close()
        entries: dict[str, list[int]] = {}
        files = (delta_file(number, "chunks"), delta_file(number, "extract"))
        write_rows(tmp, files, extractor, rows, entries, delta=number)
        delta.update(entries)
        sizes[number] = sum((tmp / f).stat().st_size for f in files)
    index = dict(prev.base_index)
    counts = list(prev.base_counts) if prev.base_counts else chunk_counts(prev.base_index)
    for p, e in delta.items():
        n = segment_of(p)
        if p in prev.base_index:
            counts[n] -= prev.base_index[p][2]
        if e is None:
            index.pop(p, None)
        else:
            index[p] = e
            counts[n] += e[2]
    write_sealed(tmp / FILES_DELTA, DELTA_KIND, sealed.dumps_json({
        "version": 1,
        "state": state_delta(prev.base_state, state_json),
        "index": delta,
        "sizes": {str(d): b for d, b in sizes.items()},
    }))  # fmt: skip
    return Layout(index, counts, prev.base_state, prev.base_index, delta, sizes, 0, "delta",
                  prev.base_counts or chunk_counts(prev.base_index))  # fmt: skip


def link_all(previous: Path | None, tmp: Path, names: tuple[str, ...]) -> bool:
    """Hard-link `names` from the previous generation; False (and nothing linked) if any fails."""
    assert previous is not None
    done = []
    try:
        for name in names:
            os.link(previous / name, tmp / name)
            done.append(tmp / name)
    except OSError:
        for path in done:
            path.unlink(missing_ok=True)
        return False
    return True


@contextlib.contextmanager
def new_generation(
    index: IndexDir, views: list[Any], failed: Callable[[str, str], str]
) -> Iterator[tuple[int, Path]]:
    """A generation to fill: (its number, its temporary directory). On any failure the
    `views` opened on it are closed and it is removed (the last committed generation
    still serves); an OSError (disk full, I/O) becomes an `IndexWriteError` saying
    `failed(step, why)`, step "start" or "write"."""
    try:
        number, tmp = index.begin()
    except OSError as exc:
        why = f"{exc.strerror or exc}: {exc.filename or index.path}"
        raise IndexWriteError(failed("start", why)) from exc
    try:
        yield number, tmp
    except OSError as exc:
        close_views(views)
        index.abort(tmp)
        raise IndexWriteError(
            failed("write", f"{exc.strerror or exc}: {exc.filename or tmp}")
        ) from exc
    except BaseException:
        close_views(views)
        index.abort(tmp)
        raise


def close_views(views: list[Any]) -> None:
    """Close the segment views a build opened (whatever state they are in)."""
    for view in views:
        with contextlib.suppress(Exception):
            view.close()


def commit_generation(
    index: IndexDir,
    number: int,
    tmp: Path,
    manifest: dict[str, Any],
    current: Generation | None,
    timings: dict[str, float],
    phases: Phases,
) -> Generation:
    """Write the generation's `meta.json` and commit it (the `commit` phase)."""
    write_sealed(tmp / META_JSON, "meta", sealed.dumps_json(manifest))
    started = time.perf_counter()
    phases.start("commit", 1)
    generation = index.commit(
        number, tmp, manifest, previous=current.path if current is not None else None
    )
    timings["commit"] = time.perf_counter() - started
    phases.end("commit")
    return generation
