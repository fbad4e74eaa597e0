"""Build a new index generation, incrementally: detect what changed, re-extract only that,
then each modality builds its part from the whole (reused + new) extraction.

`build_index()` is the one-shot entry point (CLI, demo, MCP). `Indexer` keeps the per-file
extraction and chunks in memory between updates, so a long-running writer (`maguyva watch`)
pays the cost of loading the previous generation once, not per edit.

One modality failing does not lose the others: its failure is recorded in the manifest and
reported as "unavailable" by every query until the next successful build. An I/O error (disk
full, failed fsync) aborts the whole generation instead: the previous one keeps serving.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import subprocess
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import extract_types, faults, sealed
from . import store as _store
from .changes import RACY_NS, ChangeSet, RepoState, scan
from .chunks import line_window_chunks
from .config import load_config
from .errors import CorruptIndexError, IndexVersionError, MaguyvaError, ModalityUnavailable
from .extract_cache import ExtractCache
from .extract_types import FileExtraction
from .model import Chunk, SourceFile
from .registry import BUILD_ORDER, load_modality
from .retriever import BuildContext
from .store import (
    FORMAT_VERSION,
    Generation,
    IndexDir,
    IndexWriteError,
    default_index_dir,
    write_sealed,
    write_sealed_atomic,
)

log = logging.getLogger("maguyva.index")

Progress = Callable[[str, int, int], None]

FILES_JSON = "files.json"
EXTRACT_JSON = "extract.json"  # format 2 before segments: one file (still read)
EXTRACT_DIR = "extract"
CHUNKS_DIR = "chunks"
SEGMENTS = 64
"""Chunks and extraction are split into segments by a hash of the path: an update rewrites
the segments holding changed files and hard-links the others from the previous generation
(generations are immutable, so sharing inodes is safe)."""
META_JSON = "meta.json"
CHUNKS_FILE = "chunks.jsonl"
SCAN_STATE = "scan.json"  # the last no-op check's state, so the next check starts from it


@dataclass(slots=True)
class BuildSummary:
    """What a build did: the generation, per-phase seconds, per-modality status, and what
    changed (`noop` when nothing did and no generation was written)."""

    generation: int
    index_dir: str
    files: int
    chunks: int
    skipped: dict[str, int]
    timings_s: dict[str, float] = field(default_factory=dict)
    modalities: dict[str, dict[str, Any]] = field(default_factory=dict)
    changes: dict[str, Any] = field(default_factory=dict)
    noop: bool = False


@dataclass(slots=True)
class FileRecord:
    """One file's share of a generation: content digest, extraction, chunks (and their JSON
    lines, kept so that writing unchanged files costs a copy, not a re-encoding)."""

    digest: str
    extraction: FileExtraction
    chunks: list[Chunk]
    encoded_chunks: bytes
    encoded_extraction: Any


# ---- encoding ------------------------------------------------------------------------------


def _field_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


EXTRACTION_SCHEMA = {
    name: _field_names(getattr(extract_types, name))
    for name in ("FileExtraction", "Definition", "Import", "Call", "Reference")
}


def _encode_extraction(ex: FileExtraction) -> list[Any]:
    def rows(items: list[Any]) -> list[list[Any]]:
        return [[getattr(i, n) for n in i.__slots__] for i in items]

    return [ex.language, rows(ex.definitions), rows(ex.imports), rows(ex.calls),
            rows(ex.references), ex.error]  # fmt: skip


def _decode_extraction(path: str, row: list[Any]) -> FileExtraction:
    language, defs, imports, calls, refs, error = row
    return FileExtraction(
        path, language,
        [extract_types.Definition(*r) for r in defs], [extract_types.Import(*r) for r in imports],
        [extract_types.Call(*r) for r in calls], [extract_types.Reference(*r) for r in refs],
        error,
    )  # fmt: skip


def _encode_chunks(chunks: list[Chunk]) -> bytes:
    """Chunk lines exactly as chunkstore writes them (sorted by line, then id)."""
    ordered = sorted(chunks, key=lambda c: (c.path, c.start_line, c.end_line, c.id))
    return b"".join(
        json.dumps(dataclasses.asdict(c), ensure_ascii=False).encode() + b"\n" for c in ordered
    )


def extractor_fingerprint() -> str:
    """Changes when the extraction code or its queries change: cached extractions are then
    recomputed instead of trusted."""
    here = Path(__file__).parent
    digest = hashlib.blake2b(digest_size=12)
    digest.update(json.dumps(EXTRACTION_SCHEMA, sort_keys=True).encode())
    sources = [here / "chunks.py", here / "structural.py"]
    extract_dir = here / "extract"
    if extract_dir.is_dir():
        sources += sorted(p for p in extract_dir.rglob("*") if p.is_file() and "__pycache__"
                          not in p.parts)  # fmt: skip
    for path in sources:
        with contextlib.suppress(OSError):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _same_state(old: RepoState, new: RepoState) -> bool:
    """Equal apart from the scan time, and no file recent enough to be re-hashed next time."""
    if (old.files, old.skipped, old.dirs, old.ignores) != (
        new.files, new.skipped, new.dirs, new.ignores):  # fmt: skip
        return False
    racy = old.scanned_at_ns - RACY_NS
    return all(r[1] < racy for r in old.files.values())


def segment_of(path: str) -> int:
    return zlib.crc32(path.encode("utf-8", "surrogateescape")) % SEGMENTS


def _segment_files(gen_dir: Path) -> tuple[list[Path], list[Path]]:
    """(chunk files, extraction files) of a generation, segmented or not."""
    if (gen_dir / CHUNKS_DIR).is_dir():
        return (sorted((gen_dir / CHUNKS_DIR).glob("*.jsonl")),
                sorted((gen_dir / EXTRACT_DIR).glob("*.json")))  # fmt: skip
    return [gen_dir / CHUNKS_FILE], [gen_dir / EXTRACT_JSON]


def _git_commit(root: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True, text=True, check=True, timeout=10,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


# ---- the indexer ---------------------------------------------------------------------------


class Indexer:
    """Keeps one repository's index current. Not thread-safe; one per writer process (the
    writer lock serialises writers across processes)."""

    def __init__(
        self, root: Path, *, config: dict[str, Any] | None = None, progress: Progress | None = None
    ) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise MaguyvaError(f"{self.root}: not a directory")
        self.config = load_config(self.root, config)
        self.index = IndexDir(
            Path(self.config["index_dir"])
            if self.config.get("index_dir")
            else default_index_dir(self.root)
        )
        self.progress: Progress = progress or (lambda phase, done, total: None)
        self._records: dict[str, FileRecord] | None = None
        self._records_generation: int | None = None
        self._extractor = extractor_fingerprint()
        self.last_state: RepoState | None = None

    # -- previous state ----------------------------------------------------------------------

    def _current(self) -> Generation | None:
        """The current generation, or None when there is none we may build on (missing, older
        format, damaged: the next build is then a full one). A newer format is refused."""
        try:
            return self.index.current(pin=False)
        except IndexVersionError as exc:
            if "newer" in str(exc):
                raise
            log.warning("%s; rebuilding", exc)
        except CorruptIndexError as exc:
            log.warning("%s; rebuilding from scratch", exc)
        except MaguyvaError:
            pass
        return None

    def _previous_state(self, current: Generation | None) -> RepoState | None:
        if current is None:
            return None
        try:
            saved = sealed.read_sealed_json(self.index.path / SCAN_STATE, "scan")
            if saved.get("generation") == current.number:
                return RepoState.from_json(saved["state"])
        except (MaguyvaError, KeyError, TypeError):
            pass
        try:
            data = sealed.read_sealed_json(current.path / FILES_JSON, "files")
            return RepoState.from_json(data["state"])
        except (MaguyvaError, KeyError, TypeError) as exc:
            log.warning("%s: unusable file state (%s); walking again", current.path, exc)
            return None

    def _load_records(self, current: Generation) -> dict[str, FileRecord]:
        """Per-file extraction and chunks of `current` (kept in memory afterwards)."""
        if self._records is not None and self._records_generation == current.number:
            return self._records
        records: dict[str, FileRecord] = {}
        chunk_files, extract_files = _segment_files(current.path)
        by_path: dict[str, tuple[list[Chunk], list[bytes]]] = {}
        extracted: dict[str, Any] = {}
        try:
            for path in extract_files:
                data = sealed.read_sealed_json(path, "extract")
                if (
                    data.get("schema") != EXTRACTION_SCHEMA
                    or data.get("extractor") != self._extractor
                ):
                    return {}
                extracted.update(data["files"])
            for path in chunk_files:
                for line in sealed.read_sealed(path, "chunks").split(b"\n"):
                    if line:
                        chunk = Chunk(**json.loads(line))
                        mine = by_path.setdefault(chunk.path, ([], []))
                        mine[0].append(chunk)
                        mine[1].append(line)
        except (MaguyvaError, ValueError, TypeError, KeyError) as exc:
            log.warning("%s: previous extraction unusable (%s); extracting again", current.path,
                        exc)  # fmt: skip
            return {}
        for path, (digest, encoded) in extracted.items():
            chunks, lines = by_path.get(path, ([], []))
            records[path] = FileRecord(
                digest, _decode_extraction(path, encoded), chunks,
                b"".join(line + b"\n" for line in lines), encoded,
            )  # fmt: skip
        return records

    # -- one update --------------------------------------------------------------------------

    def update(
        self, *, wait_for_lock: bool = False, rebuild: bool = False, force_walk: bool = False,
        hints: Iterable[str] | None = None,
    ) -> BuildSummary:  # fmt: skip
        """Bring the index up to date; a no-op (no new generation) when nothing changed.
        `force_walk` lists the tree again even when no directory seems to have changed;
        `hints` (the watcher's event paths) limit the stat pass to them (`changes.scan`)."""
        faults.install_from_env()
        timings: dict[str, float] = {}
        with self.index.writer_lock(wait=wait_for_lock):
            started = time.perf_counter()
            current = None if rebuild else self._current()
            previous = self._previous_state(current)
            state, changes = scan(
                self.root, self.config, previous, force_walk=rebuild or force_walk,
                hints=None if rebuild else hints,
            )  # fmt: skip
            if rebuild:
                changes.reason = "rebuild requested"
            timings["scan"] = time.perf_counter() - started
            self.last_state = state
            self.progress("scan", len(state.files), len(state.files))
            wanted = list(self.config.get("modalities") or BUILD_ORDER)
            if current is not None and changes.empty and current.manifest.get("built_for") == {
                "modalities": wanted, "extractor": self._extractor}:  # fmt: skip
                self._save_scan_state(current, previous, state)
                return self._summary(current, state, changes, timings, noop=True)
            return self._build(current, state, changes, timings, wanted)

    def _save_scan_state(
        self, current: Generation, previous: RepoState | None, state: RepoState
    ) -> None:
        """Remember a no-op check's directory mtimes and touched files, so the next check
        need not walk or hash again."""
        if previous is not None and _same_state(previous, state):
            return
        payload = sealed.dumps_json({"generation": current.number, "state": state.to_json()})
        try:
            write_sealed_atomic(self.index.path / SCAN_STATE, "scan", payload)
        except OSError as exc:
            log.warning("could not save the scan state: %s", exc)

    def _build(
        self,
        current: Generation | None,
        state: RepoState,
        changes: ChangeSet,
        timings: dict[str, float],
        wanted: list[str],
    ) -> BuildSummary:
        started = time.perf_counter()
        records = self._load_records(current) if current is not None else {}
        timings["load_previous"] = time.perf_counter() - started
        files = state.source_files()
        redo = [
            f for f in files
            if f.path not in records or records[f.path].digest != state.files[f.path][2]
        ]  # fmt: skip
        started = time.perf_counter()
        new_records, extract_report = self._extract(redo, state)
        timings["extract"] = time.perf_counter() - started
        merged = {f.path: new_records.get(f.path) or records[f.path] for f in files}
        chunks = [c for path in sorted(merged) for c in merged[path].chunks]
        extraction = {path: r.extraction for path, r in merged.items()}

        try:
            number, tmp = self.index.begin()
        except OSError as exc:
            raise IndexWriteError(
                f"could not start a new index generation ({exc.strerror or exc}: "
                f"{exc.filename or self.index.path}); the previous generation still serves"
            ) from exc
        try:
            started = time.perf_counter()
            dirty = {segment_of(p) for p in (set(new_records) | (records.keys() - merged.keys()))}
            reuse = current.path if current is not None and records else None
            timings["segments_rewritten"] = float(
                self._write_own_files(tmp, merged, state, reuse, dirty)
            )
            timings["write"] = time.perf_counter() - started
            ctx = BuildContext(
                root=self.root, out_dir=tmp, files=files, chunks=chunks, extraction=extraction,
                config=self.config, cache_dir=self.index.cache_dir, progress=self.progress,
                previous_dir=current.path if current is not None else None,
            )  # fmt: skip
            if "changes" in BuildContext.__dataclass_fields__:
                ctx.changes = changes  # type: ignore[attr-defined]
            self.index.cache_dir.mkdir(parents=True, exist_ok=True)
            modalities = _build_modalities(ctx, self.config, timings)
            manifest = {
                "root": str(self.root),
                "commit": _git_commit(self.root),
                "files": len(files),
                "chunks": len(chunks),
                "skipped": state.skip_counts(),
                "extract": extract_report,
                "changes": changes.summary(),
                "modalities": modalities,
                "built_for": {"modalities": wanted, "extractor": self._extractor},
                "timings_s": {k: round(v, 4) for k, v in timings.items()},
                "embedding": modalities.get("semantic", {}).get("report", {}).get("provider"),
            }
            write_sealed(tmp / META_JSON, "meta", sealed.dumps_json(manifest))
            started = time.perf_counter()
            generation = self.index.commit(
                number, tmp, manifest, previous=current.path if current is not None else None
            )
            timings["commit"] = time.perf_counter() - started
        except OSError as exc:
            self.index.abort(tmp)
            raise IndexWriteError(
                f"could not write the new index generation ({exc.strerror or exc}: "
                f"{exc.filename or tmp}); the previous generation still serves"
            ) from exc
        except BaseException:
            self.index.abort(tmp)
            raise
        (self.index.path / SCAN_STATE).unlink(missing_ok=True)
        if new_records:  # the generation now holds what the cache kept for an interrupt
            self._extract_cache().clear()
        self._records, self._records_generation = merged, generation.number
        return self._summary(generation, state, changes, timings, modalities=modalities)

    def _extract_cache(self) -> ExtractCache:
        return ExtractCache.open(self.index.cache_dir, self._extractor)

    def _extract(
        self, files: list[SourceFile], state: RepoState
    ) -> tuple[dict[str, FileRecord], dict[str, Any]]:
        """Extract `files` (only the changed ones): structural extraction when available,
        line-window chunks otherwise."""
        if not files:
            return {}, {"files": 0}
        try:
            from .structural import extract_repository
        except ImportError:
            extract_repository = None
        if extract_repository is not None:
            # Finished files go to the extraction cache as they complete, so a Ctrl-C or a
            # crash before the commit does not lose them; the next run takes them from there.
            from .extract.driver import caching

            with caching(self._extract_cache()) as counts:
                extraction, chunks, report = extract_repository(
                    self.root, files, self.config, self.progress
                )
            report["extract_cached"] = counts["cached"]
        else:
            extraction, chunks, report = {}, [], {"structural": "unavailable; line windows"}
            for source in files:
                try:
                    text = (self.root / source.path).read_bytes().decode("utf-8", "replace")
                except OSError:
                    continue
                chunks.extend(line_window_chunks(source.path, text))
        by_path: dict[str, list[Chunk]] = {}
        for c in chunks:
            by_path.setdefault(c.path, []).append(c)
        out = {}
        for f in files:
            ex = extraction.get(f.path) or FileExtraction(f.path, f.language)
            mine = by_path.get(f.path, [])
            out[f.path] = FileRecord(state.files[f.path][2], ex, mine, _encode_chunks(mine),
                                     _encode_extraction(ex))  # fmt: skip
        return out, report

    def _write_own_files(
        self,
        tmp: Path,
        merged: dict[str, FileRecord],
        state: RepoState,
        previous: Path | None,
        dirty: set[int],
    ) -> int:
        """Write the file state and the chunk and extraction segments; segments without a
        changed file are hard-linked from `previous`. Returns how many were written."""
        write_sealed(tmp / FILES_JSON, "files", sealed.dumps_json({"state": state.to_json()}))
        groups: dict[int, list[str]] = {n: [] for n in range(SEGMENTS)}
        for path in sorted(merged):
            groups[segment_of(path)].append(path)
        _store.FILES.mkdir(tmp / CHUNKS_DIR)
        _store.FILES.mkdir(tmp / EXTRACT_DIR)
        linkable = previous is not None and (previous / CHUNKS_DIR).is_dir()
        written = 0
        for n, paths in groups.items():
            names = (f"{CHUNKS_DIR}/{n:02d}.jsonl", f"{EXTRACT_DIR}/{n:02d}.json")
            if linkable and n not in dirty and _link_all(previous, tmp, names):
                continue
            written += 1
            write_sealed(tmp / names[0], "chunks",
                         b"".join(merged[p].encoded_chunks for p in paths))  # fmt: skip
            extract = {
                "schema": EXTRACTION_SCHEMA,
                "extractor": self._extractor,
                "files": {p: [merged[p].digest, merged[p].encoded_extraction] for p in paths},
            }
            write_sealed(tmp / names[1], "extract", sealed.dumps_json(extract))
        return written

    def _summary(
        self,
        generation: Generation,
        state: RepoState,
        changes: ChangeSet,
        timings: dict[str, float],
        *,
        noop: bool = False,
        modalities: dict[str, dict[str, Any]] | None = None,
    ) -> BuildSummary:
        return BuildSummary(
            generation=generation.number,
            index_dir=str(self.index.path),
            files=len(state.files),
            chunks=int(generation.manifest.get("chunks", 0)),
            skipped=state.skip_counts(),
            timings_s=timings,
            modalities=modalities if modalities is not None
            else generation.manifest.get("modalities", {}),
            changes=changes.summary(),
            noop=noop,
        )  # fmt: skip


def build_index(
    root: Path,
    *,
    config: dict[str, Any] | None = None,
    progress: Progress | None = None,
    wait_for_lock: bool = False,
    rebuild: bool = False,
) -> BuildSummary:
    """Bring the index of the repository at `root` up to date (incrementally; a no-op when
    nothing changed; from scratch with `rebuild`)."""
    return Indexer(root, config=config, progress=progress).update(
        wait_for_lock=wait_for_lock, rebuild=rebuild
    )


def _link_all(previous: Path | None, tmp: Path, names: tuple[str, ...]) -> bool:
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


def _build_modalities(
    ctx: BuildContext, config: dict[str, Any], timings: dict[str, float]
) -> dict[str, dict[str, Any]]:
    wanted = set(config.get("modalities") or BUILD_ORDER)
    status: dict[str, dict[str, Any]] = {}
    for name in BUILD_ORDER:
        if name not in wanted:
            status[name] = {"built": False, "reason": "not selected in configuration"}
            continue
        started = time.perf_counter()
        try:
            modality = load_modality(name)
            result = modality.build(ctx)
            status[name] = {"built": True, "report": result}
        except ModalityUnavailable as exc:
            status[name] = {"built": False, "reason": str(exc)}
        except MaguyvaError as exc:
            log.warning("%s: build failed: %s", name, exc)
            status[name] = {"built": False, "reason": f"build failed: {exc}"}
        except OSError:
            raise  # disk full or an I/O error: abort the generation, keep the previous one
        except Exception as exc:  # one modality's bug must not lose the others' work
            log.exception("%s: build failed", name)
            status[name] = {"built": False, "reason": f"build failed: {type(exc).__name__}: {exc}"}
        timings[name] = time.perf_counter() - started
    return status


__all__ = ["FORMAT_VERSION", "BuildSummary", "Indexer", "build_index"]
