"""Writing the symbol index (`build`: from scratch, or an update that rewrites only the
segments holding a changed file) and checking it (`verify`)."""

from __future__ import annotations

import os
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from maguyva.errors import MaguyvaError
from maguyva.extract.types import FileExtraction
from maguyva.modalities.structural.symbol_search import _legacy_segment
from maguyva.modalities.structural.symbols import (
    FORMAT_VERSION,
    LEGACY_FILE,
    META,
    SEGMENTS,
    Rows,
    _identity,
    _segment_counts,
    _segment_problems,
    builder_fingerprint,
    decode_rows,
    encode_segment,
    file_rows,
    read_meta,
    read_segment,
    segment_name,
    segment_of,
)
from maguyva.model import Chunk
from maguyva.store.chunks import ChunkStore
from maguyva.store.chunks import segment_of as chunk_segment_of
from maguyva.store.identity import may_serve
from maguyva.support import sealed


class _ChunkSource:
    """Chunks by path, without decoding more than needed: through `segment(n)` when the
    indexer hands a segmented view (`indexer.SegmentChunks`), else from the plain list."""

    def __init__(self, chunks: Sequence[Chunk] | Iterable[Chunk]) -> None:
        self.segment_of: Callable[[str], int] = chunk_segment_of
        self._chunks = chunks
        segment = getattr(chunks, "segment", None)
        self._segment = segment if callable(segment) else None
        self._by_segment: dict[int, list[Chunk]] | None = None

    def segment(self, n: int) -> list[Chunk]:
        if self._segment is not None:
            return list(self._segment(n))
        if self._by_segment is None:
            self._by_segment = defaultdict(list)
            for c in self._chunks:
                self._by_segment[self.segment_of(c.path)].append(c)
        return self._by_segment.get(n, [])

    def store_for(self, paths: Iterable[str]) -> ChunkStore:
        """A ChunkStore holding the chunks of `paths` only (decoding only their segments)."""
        wanted = set(paths)
        of_paths = getattr(self._chunks, "of_paths", None)
        if callable(of_paths):  # the indexer's view reads only these files' rows
            return ChunkStore(of_paths(wanted))
        if self._segment is None and self._by_segment is None:
            return ChunkStore([c for c in self._chunks if c.path in wanted])
        chunks = [c for n in sorted({self.segment_of(p) for p in wanted})
                  for c in self.segment(n) if c.path in wanted]  # fmt: skip
        return ChunkStore(chunks)


def _write_segment(out: Path, n: int, files: Mapping[str, Rows]) -> None:
    from maguyva.store.generations import write_sealed

    write_sealed(out / segment_name(n), "symbols", encode_segment(files), FORMAT_VERSION)


def _write_meta(out: Path, meta: dict[str, Any]) -> None:
    from maguyva.store.generations import write_sealed

    write_sealed(out / META, "symbols_meta", sealed.dumps_json(meta), FORMAT_VERSION)


def build(
    out: Path,
    extraction: Mapping[str, FileExtraction],
    chunks: Sequence[Chunk] | Iterable[Chunk],
    *,
    previous: Path | None = None,
    changes: Any = None,
    extractor: str = "",
) -> dict[str, Any]:
    """Write the symbol index under `out`: an update of `previous` (the previous generation's
    `structural/`) when `changes` says what changed since it and it was built by this code from
    the same extractor; from scratch otherwise. Returns a JSON-able report."""
    out.mkdir(parents=True, exist_ok=True)
    source = _ChunkSource(chunks)
    meta = {"format": FORMAT_VERSION, "segments": SEGMENTS, "builder": builder_fingerprint(),
            "extractor": extractor}  # fmt: skip
    reason = _why_not_incremental(previous, changes, meta)
    plan = None
    if reason is None:
        assert previous is not None
        try:
            plan = _reuse(out, previous, changes)
        except (MaguyvaError, OSError, KeyError, TypeError, IndexError, ValueError) as exc:
            reason = f"previous symbol index unusable ({exc})"
            for child in out.iterdir():  # the links made before the failure
                child.unlink()
    if plan is not None:
        counts, written = _update(out, plan, extraction, source)
        mode = "incremental"
    else:
        counts, written = _from_scratch(out, extraction, source)
        mode = "from scratch"
    meta["counts"] = counts
    _write_meta(out, meta)
    kinds: dict[str, int] = defaultdict(int)
    for _symbols, _files, by_kind in counts:
        for kind, count in by_kind.items():
            kinds[kind] += count
    report = {"symbols": sum(c[0] for c in counts), "files": sum(c[1] for c in counts),
              "kinds": dict(sorted(kinds.items())), "mode": mode,
              "segments_written": written}  # fmt: skip
    if reason is not None:
        report["why_from_scratch"] = reason
    return report


def _why_not_incremental(previous: Path | None, changes: Any, meta: dict[str, Any]) -> str | None:
    if previous is None or changes is None:
        return "no previous generation"
    if getattr(changes, "reason", ""):
        return str(changes.reason)
    try:
        old = read_meta(previous)
    except MaguyvaError as exc:
        return f"previous symbol index unusable ({exc})"
    for key in ("format", "segments", "builder", "extractor"):
        if old.get(key) != meta[key]:
            return f"previous symbol index built with another {key}"
    if not isinstance(old.get("counts"), list) or len(old["counts"]) != SEGMENTS:
        return "previous symbol index has no counts"
    return None


def _from_scratch(
    out: Path, extraction: Mapping[str, FileExtraction], source: _ChunkSource
) -> tuple[list[Any], int]:
    """Every segment, one indexer segment's chunks at a time; a segment is written as soon as
    every indexer segment it draws from is done (with 256 = 4 x 64, at once)."""
    by_source: dict[int, list[str]] = defaultdict(list)
    needs: dict[int, set[int]] = defaultdict(set)
    for path in extraction:
        n, m = source.segment_of(path), segment_of(path)
        by_source[n].append(path)
        needs[m].add(n)
    pending: dict[int, dict[str, Rows]] = defaultdict(dict)
    counts: list[Any] = [[0, 0, {}] for _ in range(SEGMENTS)]
    for n in sorted(by_source):
        paths = by_source[n]
        store = ChunkStore(source.segment(n))
        for path in paths:
            pending[segment_of(path)][path] = file_rows(path, extraction[path], store)
        for m in sorted({segment_of(p) for p in paths}):
            needs[m].discard(n)
            if not needs[m]:
                _write_segment(out, m, pending[m])
                counts[m] = _segment_counts(pending.pop(m))
    for m in range(SEGMENTS):
        if m not in needs:  # no file at all in this segment
            _write_segment(out, m, {})
    return counts, SEGMENTS


class _Plan:
    """An update's reading half: the previous counts and the decoded dirty segments (clean
    segments are linked by then). Reading the previous generation may fail (it is damaged):
    the build then starts over from scratch. Writing may fail too (disk full): that aborts
    the generation, as every write failure does."""

    def __init__(self, counts: list[Any], dirty: dict[int, dict[str, Rows]],
                 gone: set[str], touched: set[str]) -> None:  # fmt: skip
        self.counts, self.dirty, self.gone, self.touched = counts, dirty, gone, touched


def _reuse(out: Path, previous: Path, changes: Any) -> _Plan:
    touched = set(changes.touched_paths())
    gone = set(changes.deleted) | {old for old, _new in changes.renamed} | touched
    dirty = {segment_of(p) for p in gone}
    counts = list(read_meta(previous)["counts"])
    decoded = {m: _previous_rows(previous, m) for m in sorted(dirty)}
    old_dir, new_dir = str(previous), str(out)
    for m in range(SEGMENTS):
        if m not in dirty:
            name = segment_name(m)
            os.link(os.path.join(old_dir, name), os.path.join(new_dir, name))
    return _Plan(counts, decoded, gone, touched)


_WRITTEN: OrderedDict[tuple[Any, ...], tuple[Path, dict[str, Rows]]] = OrderedDict()
"""The rows of the last segments this process wrote, by file identity (with the path written:
`may_serve`): a long-running writer updating the same file again finds its segment's rows
here instead of decoding them."""
_WRITTEN_MAX = 8


def _previous_rows(previous: Path, m: int) -> dict[str, Rows]:
    """Segment `m` of the previous generation, as path -> rows (a copy: the caller edits it)."""
    path = previous / segment_name(m)
    key = _identity(path)
    got = _WRITTEN.get(key)
    if got is not None and may_serve(got[0], path, key):
        return dict(got[1])
    return decode_rows(read_segment(previous, m))


def _remember(out: Path, m: int, files: dict[str, Rows]) -> None:
    try:
        key = _identity(out / segment_name(m))
    except OSError:
        return
    _WRITTEN[key] = (out / segment_name(m), files)
    while len(_WRITTEN) > _WRITTEN_MAX:
        _WRITTEN.popitem(last=False)


def _update(
    out: Path, plan: _Plan, extraction: Mapping[str, FileExtraction], source: _ChunkSource
) -> tuple[list[Any], int]:
    """Rewrite the dirty segments: the previous rows minus the changed paths plus their new
    rows (the clean ones are hard-linked already)."""
    store = source.store_for(p for p in plan.touched if p in extraction)
    counts = plan.counts
    for m, files in plan.dirty.items():
        for path in plan.gone:
            if segment_of(path) == m:
                files.pop(path, None)
        for path in plan.touched:
            if segment_of(path) == m and path in extraction:
                files[path] = file_rows(path, extraction[path], store)
        _write_segment(out, m, files)
        _remember(out, m, files)
        counts[m] = _segment_counts(files)
    return counts, len(plan.dirty)


# ---- verifying --------------------------------------------------------------------------------


def verify(directory: Path) -> list[str]:
    """Problems of a symbol index directory, one line each; [] when sound."""
    if (directory / LEGACY_FILE).exists() and not (directory / META).exists():
        try:
            _legacy_segment(directory)
        except MaguyvaError as exc:
            return [str(exc)]
        return []
    try:
        meta = read_meta(directory)
    except MaguyvaError as exc:
        return [str(exc)]
    problems: list[str] = []
    counts = meta.get("counts")
    if meta.get("segments") != SEGMENTS or not isinstance(counts, list) or len(counts) != SEGMENTS:
        return [f"{directory / META}: segment count does not match {SEGMENTS}"]
    expected = {META} | {segment_name(m) for m in range(SEGMENTS)}
    for child in sorted(directory.iterdir()):
        if child.name not in expected:
            problems.append(f"{child}: not part of the symbol index")
    for m in range(SEGMENTS):
        path = directory / segment_name(m)
        try:
            payload = read_segment(directory, m)
            problems.extend(f"{path}: {p}" for p in _segment_problems(payload, m))
            files = decode_rows(payload)
        except MaguyvaError as exc:
            problems.append(str(exc))
            continue
        except (KeyError, TypeError, IndexError, ValueError) as exc:
            problems.append(f"{path}: malformed symbol segment ({type(exc).__name__}: {exc})")
            continue
        if _segment_counts(files) != counts[m]:
            problems.append(f"{path}: counts differ from {META}")
    return problems


__all__ = ["build", "verify"]
