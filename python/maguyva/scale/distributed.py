"""Index building beyond one process: partitions extracted (and embedded) as independent
tasks, on Ray or in-process, assembled by the driver and committed through the normal indexer.

    from maguyva.scale.distributed import RayExecutor, distributed_build
    summary = distributed_build(root, executor=RayExecutor())        # ray.init() locally
    summary = distributed_build(root, executor=RayExecutor(address="auto"))   # a cluster

Each task runs the real extractor (`extract.driver.extract_source`) on its partition and
returns an immutable `Segment`; with `embed=True` it also embeds its chunks with the
configured provider. The driver stores each segment in the segment cache as soon as it
arrives (so a killed build resumes where it stopped), then hands the assembled extraction to
`Indexer` and the embeddings to the embedding cache, where the semantic modality finds them:
the commit, the modalities and the index format are those of a single-process build.

The hook into the indexer is its public `extract` parameter (`Indexer(root, extract=...)`):
`DistributedIndexer` passes its partitioned extraction step there.
"""

from __future__ import annotations

import os
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from maguyva.build.indexer import BuildSummary, Indexer, extractor_fingerprint
from maguyva.errors import MaguyvaError
from maguyva.extract.driver import DEFAULT_BUDGET_S, FileResult, extract_source, pack, unpack
from maguyva.extract.types import FileExtraction
from maguyva.model import Chunk, SourceFile
from maguyva.repo.reader import read_bytes
from maguyva.store.segments import Partition, Segment, SegmentCache, default_partitions, partition

SEGMENTS_DIR = "segments"


# ---- the task ------------------------------------------------------------------------------


@dataclass(slots=True)
class PartitionJob:
    """One task's input. `payloads` carries the files' bytes when workers do not share the
    repository's filesystem (a cluster); otherwise workers read `root` themselves."""

    key: str
    root: str
    files: tuple[SourceFile, ...]
    payloads: tuple[bytes, ...] | None
    budget_s: float
    embed_config: dict[str, Any] | None


_PROVIDERS: dict[str, Any] = {}


def _provider(config: dict[str, Any]) -> Any:
    """One provider per worker process and configuration (the model loads once per worker)."""
    from maguyva.modalities.semantic.embed import make_provider

    key = repr(sorted(config.items()))
    if key not in _PROVIDERS:
        _PROVIDERS[key] = make_provider(config)
    return _PROVIDERS[key]


def run_partition(job: PartitionJob) -> Segment:
    """Extract (and embed) one partition. Runs in a worker: Ray task or this process."""
    started = time.perf_counter()
    results: list[FileResult] = []
    for i, f in enumerate(job.files):
        if job.payloads is not None:
            data = job.payloads[i]
        else:
            try:
                data = read_bytes(job.root, f.path)
            except OSError as exc:
                detail = f"{type(exc).__name__}: {exc.strerror or exc}"
                ex = FileExtraction(f.path, f.language, error=detail)
                results.append(FileResult(ex, [], 0.0, 0, "unreadable", detail))
                continue
        results.append(extract_source(f.path, f.language, data, job.budget_s))
    segment = Segment(job.key, [pack(r) for r in results])
    if job.embed_config is not None:
        _embed_into(segment, results, job.embed_config)
    segment.seconds = time.perf_counter() - started
    segment.worker = f"{socket.gethostname()}:{os.getpid()}"
    return segment


def _embed_into(segment: Segment, results: list[FileResult], config: dict[str, Any]) -> None:
    """Embed the full text of every chunk, exactly as the semantic modality would (same text,
    same content hash), so the semantic build finds all of them cached."""
    from maguyva.modalities.semantic.embed import content_hash
    from maguyva.modalities.semantic.texts import embed_text

    provider = _provider(config)
    identity = provider.identity
    todo: dict[str, str] = {}
    for r in results:
        for chunk in r.chunks:
            text = embed_text(chunk, identity)
            todo.setdefault(content_hash(text), text)
    segment.model = identity.cache_key
    if not todo:
        segment.codes = np.zeros((0, identity.width), dtype=np.uint8)
        return
    out = provider.check_result(provider.embed(list(todo.values()), "document"), len(todo))
    segment.hashes = list(todo)
    segment.codes = out.codes
    segment.floats = None if out.floats is None else out.floats.astype(np.float16)


# ---- executors -----------------------------------------------------------------------------


class Executor(Protocol):
    """Runs `run_partition` over jobs; yields segments in completion order."""

    workers: int
    shared_fs: bool

    def run(self, jobs: Iterable[PartitionJob]) -> Iterator[Segment]: ...


class InlineExecutor:
    """Every partition in this process, one after the other (tests, tiny repositories)."""

    workers = 1
    shared_fs = True

    def run(self, jobs: Iterable[PartitionJob]) -> Iterator[Segment]:
        for job in jobs:
            yield run_partition(job)


class RayExecutor:
    """Partitions as Ray tasks. `address=None` starts a local Ray with `num_cpus` worker
    processes (`ray.init()`); `address="auto"` or `"ray://host:10001"` joins a cluster. At
    most `2 x workers` tasks are in flight, so the driver never holds more than that many
    partitions' inputs and unconsumed results (bounded memory whatever the repository size).

    `shared_fs` (default: True for a local Ray, False for a cluster) decides whether workers
    read the files themselves or receive their bytes through the object store."""

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: int | None = None,
        shared_fs: bool | None = None,
        object_store_memory: int | None = 256 << 20,
        init_kwargs: dict[str, Any] | None = None,
    ) -> None:
        try:
            import ray
        except ImportError as exc:
            raise MaguyvaError(
                "distributed builds need Ray: pip install 'maguyva[scale]' (or `pip install ray`)"
            ) from exc
        self._ray = ray
        self.shared_fs = address is None if shared_fs is None else shared_fs
        self._started = False
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                      "configure_logging": False}  # fmt: skip
            if address is None:
                kwargs["num_cpus"] = num_cpus or os.cpu_count() or 1
                if object_store_memory:
                    kwargs["object_store_memory"] = object_store_memory
            else:
                kwargs["address"] = address
            kwargs.update(init_kwargs or {})
            ray.init(**kwargs)
            self._started = True
        self.workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._task = ray.remote(num_cpus=1, max_retries=2)(run_partition)

    def run(self, jobs: Iterable[PartitionJob]) -> Iterator[Segment]:
        ray = self._ray
        pending = iter(jobs)
        in_flight: list[Any] = []
        limit = 2 * self.workers
        while True:
            while len(in_flight) < limit:
                job = next(pending, None)
                if job is None:
                    break
                in_flight.append(self._task.remote(job))
            if not in_flight:
                return
            done, in_flight = ray.wait(in_flight, num_returns=1)
            for ref in done:
                yield ray.get(ref)

    def shutdown(self) -> None:
        """Stop the local Ray this executor started (a joined cluster is left running)."""
        if self._started:
            self._ray.shutdown()
            self._started = False


# ---- the driver ----------------------------------------------------------------------------


@dataclass(slots=True)
class SegmentStats:
    """What the segment phase did: partitions, how many were computed now and how many came
    from the cache (a resumed build), per-worker counts, seconds."""

    partitions: int = 0
    computed: int = 0
    reused: int = 0
    workers: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"partitions": self.partitions, "computed": self.computed,
                "reused": self.reused, "workers": self.workers,
                "seconds": round(self.seconds, 3)}  # fmt: skip


OnSegment = Callable[[Segment, SegmentStats], None]


class DistributedIndexer(Indexer):
    """An `Indexer` whose extraction step runs partitions on an executor, through the
    segment cache. Everything else (scan, incremental reuse, modalities, commit) is the
    indexer's own."""

    def __init__(
        self,
        root: Path,
        *,
        executor: Executor | None = None,
        partitions: int | None = None,
        embed: bool = False,
        config: dict[str, Any] | None = None,
        progress: Callable[[str, int, int], None] | None = None,
        on_segment: OnSegment | None = None,
    ) -> None:
        super().__init__(root, config=config, progress=progress, extract=self._extract_partitions)
        self.executor: Executor = executor or InlineExecutor()
        self.partitions = partitions
        self.embed = embed
        self.on_segment = on_segment
        self.stats = SegmentStats()
        self.segments = SegmentCache(self.index.cache_dir / SEGMENTS_DIR)

    def _salt(self) -> str:
        salt = f"extractor={self._extractor}"
        if self.embed:
            from maguyva.modalities.semantic.embed import make_provider

            salt += f";model={make_provider(self.config).identity.cache_key}"
        return salt

    def _jobs(self, parts: list[Partition], salt: str) -> Iterator[PartitionJob]:
        budget = float(self.config.get("structural_budget_s") or DEFAULT_BUDGET_S)
        embed_config = dict(self.config) if self.embed else None
        for part in parts:
            payloads = None
            if not self.executor.shared_fs:
                payloads = tuple(_read(self.root, f) for f in part.files)
            yield PartitionJob(part.key(salt), str(self.root), part.files, payloads, budget,
                               embed_config)  # fmt: skip

    def _extract_partitions(
        self,
        root: Path,
        files: list[SourceFile],
        config: dict[str, Any],
        progress: Callable[[str, int, int], None],
    ) -> tuple[dict[str, FileExtraction], list[Chunk], dict[str, Any]]:
        """The indexer's extraction step, distributed (the `extract` hook of `Indexer`)."""
        if not files:
            return {}, [], {"files": 0}
        started = time.perf_counter()
        state = self.last_state
        assert state is not None  # set by `update` before extraction
        digests = {f.path: state.files[f.path][2] for f in files}
        count = self.partitions or default_partitions(files, self.executor.workers)
        parts = partition(files, digests, count)
        salt = self._salt()
        stats = self.stats = SegmentStats(partitions=len(parts))
        segments: list[Segment] = []
        todo: list[Partition] = []
        for part in parts:
            cached = self.segments.get(part.key(salt))
            if cached is None:
                todo.append(part)
            else:
                segments.append(cached)
                stats.reused += 1
        self.progress("segments", stats.reused, len(parts))
        for segment in self.executor.run(self._jobs(todo, salt)):
            self.segments.put(segment)
            segments.append(segment)
            stats.computed += 1
            host = segment.worker
            stats.workers[host] = stats.workers.get(host, 0) + 1
            self.progress("segments", stats.reused + stats.computed, len(parts))
            if self.on_segment is not None:
                self.on_segment(segment, stats)
        stats.seconds = time.perf_counter() - started
        if self.embed:
            self._cache_embeddings(segments)
        extraction, chunks, report = _assemble(segments, digests)
        report["segments"] = stats.to_dict()
        self.segments.prune({p.key(salt) for p in parts})  # older runs' segments are superseded
        return extraction, chunks, report

    def _cache_embeddings(self, segments: list[Segment]) -> None:
        from maguyva.modalities.semantic.embed import EmbeddingCache, Embeddings, make_provider

        identity = make_provider(self.config).identity
        with EmbeddingCache(self.index.cache_dir / "embeddings", identity) as cache:
            for s in segments:
                if s.hashes and s.codes is not None and s.model == identity.cache_key:
                    floats = None if s.floats is None else s.floats.astype(np.float32)
                    cache.put_many(s.hashes, Embeddings(s.codes, floats))


def _read(root: Path, f: SourceFile) -> bytes:
    try:
        return read_bytes(root, f.path)
    except OSError:
        return b""


def _assemble(
    segments: list[Segment], digests: dict[str, str]
) -> tuple[dict[str, FileExtraction], list[Chunk], dict[str, Any]]:
    """The extraction and chunks of the segments, and an extraction report shaped like
    `structural.extract_repository`'s (the result of the indexer's `extract` hook)."""
    records: dict[str, FileExtraction] = {}
    chunks: list[Chunk] = []
    languages: dict[str, Counter[str]] = {}
    problems: list[dict[str, str]] = []
    for segment in segments:
        for row in segment.rows:
            result = unpack(row)
            ex = result.extraction
            if ex.path not in digests or ex.path in records:
                continue
            records[ex.path] = ex
            chunks.extend(result.chunks)
            stats = languages.setdefault(ex.language or "unknown", Counter())
            stats.update(files=1, bytes=result.size, definitions=len(ex.definitions),
                         imports=len(ex.imports), calls=len(ex.calls),
                         chunks=len(result.chunks))  # fmt: skip
            if result.status not in ("ok", "no_grammar"):
                problems.append({"path": ex.path, "status": result.status,
                                 "detail": result.detail or ""})  # fmt: skip
    missing = sorted(digests.keys() - records.keys())
    if missing:
        raise MaguyvaError(f"distributed extraction lost {len(missing)} file(s), e.g. {missing[0]}")
    report = {
        "files": len(records),
        "chunks": len(chunks),
        "languages": {k: dict(v) for k, v in sorted(languages.items())},
        "failed": sorted(problems, key=lambda p: p["path"]),
        "timed_out": sum(1 for p in problems if p["status"] == "timeout"),
    }
    return records, chunks, report


def distributed_build(
    root: Path | str,
    *,
    executor: Executor | None = None,
    partitions: int | None = None,
    embed: bool = False,
    config: dict[str, Any] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    on_segment: OnSegment | None = None,
    rebuild: bool = False,
    wait_for_lock: bool = False,
) -> tuple[BuildSummary, SegmentStats]:
    """Build (or update) the index of `root` with extraction, and embedding when `embed`,
    spread over `executor` (default: in-process). Returns the build summary and the
    segment statistics (computed vs reused partitions)."""
    indexer = DistributedIndexer(Path(root), executor=executor, partitions=partitions,
                                 embed=embed, config=config, progress=progress,
                                 on_segment=on_segment)  # fmt: skip
    summary = indexer.update(rebuild=rebuild, wait_for_lock=wait_for_lock)
    return summary, indexer.stats


__all__ = [
    "DistributedIndexer",
    "Executor",
    "InlineExecutor",
    "PartitionJob",
    "RayExecutor",
    "SegmentStats",
    "distributed_build",
    "extractor_fingerprint",
    "run_partition",
]
