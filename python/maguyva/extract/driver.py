"""Run extraction over many files: in worker processes on all cores, or in-process for small
inputs. Each file has a time budget; a file that blows it (or whose grammar fails) is still
indexed, with line-window chunks and no symbols, and is named in the report."""

from __future__ import annotations

import contextlib
import contextvars
import multiprocessing
import operator
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from itertools import starmap
from pathlib import Path
from typing import Any

from maguyva.extract import grammars, records
from maguyva.extract.cache import CACHEABLE, ExtractCache
from maguyva.extract.chunks import line_window_chunks, syntax_chunks
from maguyva.extract.extractor import BudgetExceeded, clock, extract
from maguyva.extract.types import Call, Definition, FileExtraction, Import, Reference
from maguyva.model import Chunk, SourceFile
from maguyva.repo.reader import read_bytes, read_text

DEFAULT_BUDGET_S = 5.0
IN_PROCESS_BELOW = 50
BATCH_BYTES = 1 << 20  # files per task: enough to amortise IPC, small enough to balance
BATCH_FILES = 64


class FileResult:
    """Everything extraction produced for one file. From a worker it arrives as the bytes
    the index stores (`encoded`); `extraction` and `chunks` are decoded from them only when
    asked for, which the indexer never does."""

    __slots__ = (
        "_chunks",
        "_encoded",
        "_extraction",
        "cached",
        "counts",
        "detail",
        "language",
        "path",
        "seconds",
        "size",
        "stats",
        "status",
    )

    def __init__(
        self,
        extraction: FileExtraction,
        chunks: list[Chunk],
        seconds: float,
        size: int,
        status: str = "ok",  # ok | no_grammar | timeout | error | unreadable
        detail: str | None = None,
        stats: dict[str, int] | None = None,
        cached: bool = False,  # taken from the extraction cache of an interrupted run
    ) -> None:
        self.path, self.language = extraction.path, extraction.language
        self.seconds, self.size, self.status, self.detail = seconds, size, status, detail
        self.stats = stats if stats is not None else {}
        self.cached = cached
        ex = extraction
        # (definitions, imports, calls, chunks): what the build report counts
        self.counts = (len(ex.definitions), len(ex.imports), len(ex.calls), len(chunks))
        self._extraction: FileExtraction | None = extraction
        self._chunks: list[Chunk] | None = chunks
        self._encoded: Encoded | None = None

    @classmethod
    def from_row(cls, row: EncodedRow, cached: bool = False) -> FileResult:
        """The result a worker (or the cache) sent as `encode_row`."""
        path, language, seconds, size, status, detail, counts, encoded = row
        result = cls.__new__(cls)
        result.path, result.language, result.seconds, result.size = path, language, seconds, size
        result.status, result.detail, result.stats, result.cached = status, detail, {}, cached
        result.counts = tuple(counts)
        result._extraction = result._chunks = None
        result._encoded = tuple(encoded)
        return result

    @property
    def extraction(self) -> FileExtraction:
        if self._extraction is None:
            assert self._encoded is not None
            self._extraction = records.decode_extraction(self.path, self._encoded[1])
        return self._extraction

    @property
    def chunks(self) -> list[Chunk]:
        if self._chunks is None:
            assert self._encoded is not None
            self._chunks = records.decode_chunks(self._encoded[0], self._encoded[2])
        return self._chunks

    @property
    def encoded(self) -> Encoded:
        """(chunk lines, extraction JSON, chunk order): what the index stores for this file
        (`records`), computed here when the result was made in this process."""
        if self._encoded is None:
            ordered, order = records.chunk_order(self.chunks)
            extraction = records.extraction_bytes(self.extraction)
            self._encoded = (records.chunk_bytes(ordered), extraction, order)
        return self._encoded


Encoded = tuple[bytes, bytes, "list[int] | None"]
EncodedRow = tuple[Any, ...]
"""(path, language, seconds, size, status, detail, counts, encoded): a FileResult as a
worker sends it and the cache keeps it."""


def encode_row(result: FileResult) -> EncodedRow:
    """`result` as the row a worker sends back (the inverse of `FileResult.from_row`)."""
    return (result.path, result.language, result.seconds, result.size, result.status,
            result.detail, result.counts, result.encoded)  # fmt: skip


def extract_source(
    path: str, language: str | None, data: bytes, budget_s: float = DEFAULT_BUDGET_S
) -> FileResult:
    """Extract one file's symbols and chunks. Never raises on bad input: malformed code
    yields the symbols of its valid parts; a blown budget or an internal failure yields
    line-window chunks and a status that says why."""
    started = time.monotonic()
    text = data.decode("utf-8", "replace")
    grammar = grammars.load(language)
    if grammar is None:
        return FileResult(
            FileExtraction(path, language),
            line_window_chunks(path, text),
            time.monotonic() - started,
            len(data),
            "no_grammar",
        )
    status, detail = "ok", None
    try:
        extraction, parsed = extract(grammar, path, data, clock() + budget_s)
        chunks = syntax_chunks(
            path, text, extraction.definitions, parsed.breaks, parsed.doc_starts, parsed.scopes
        )
    except BudgetExceeded as exc:
        status, detail = "timeout", f"time budget of {budget_s:g}s (CPU) exceeded ({exc})"
    except Exception as exc:  # one file must never fail the index: report it instead
        status, detail = "error", f"{type(exc).__name__}: {exc}"
    if status != "ok":
        extraction = FileExtraction(path, language, error=detail)
        chunks = line_window_chunks(path, text)
    return FileResult(extraction, chunks, time.monotonic() - started, len(data), status, detail)


def _extract_path(root: str, file: SourceFile, budget_s: float) -> FileResult:
    try:
        data = read_bytes(root, file.path)
    except OSError as exc:
        return _unreadable(file, exc)
    return extract_source(file.path, file.language, data, budget_s)


def _unreadable(file: SourceFile, exc: OSError) -> FileResult:
    detail = f"{type(exc).__name__}: {exc.strerror or exc}"
    return FileResult(
        FileExtraction(file.path, file.language, error=detail), [], 0.0, 0, "unreadable", detail
    )


# The distributed builder (scale/) sends results as plain tuples of the records' fields.
_DEF_ROW = operator.attrgetter(*Definition.__slots__)
_IMPORT_ROW = operator.attrgetter(*Import.__slots__)
_CALL_ROW = operator.attrgetter(*Call.__slots__)
_REF_ROW = operator.attrgetter(*Reference.__slots__)
_CHUNK_ROW = operator.attrgetter(*Chunk.__slots__)
Packed = tuple[Any, ...]


def pack(result: FileResult) -> Packed:
    """A FileResult as nested tuples (what a worker sends back)."""
    ex = result.extraction
    return (
        ex.path, ex.language, ex.error,
        list(map(_DEF_ROW, ex.definitions)), list(map(_IMPORT_ROW, ex.imports)),
        list(map(_CALL_ROW, ex.calls)), list(map(_REF_ROW, ex.references)),
        list(map(_CHUNK_ROW, result.chunks)),
        result.seconds, result.size, result.status, result.detail,
    )  # fmt: skip


def unpack(row: Packed) -> FileResult:
    """The inverse of `pack`."""
    path, language, error, defs, imports, calls, refs, chunks, seconds, size, status, detail = row
    extraction = FileExtraction(
        path, language,
        list(starmap(Definition, defs)), list(starmap(Import, imports)),
        list(starmap(Call, calls)), list(starmap(Reference, refs)), error,
    )  # fmt: skip
    return FileResult(extraction, list(starmap(Chunk, chunks)), seconds, size, status, detail)


def _extract_one(
    root: str, file: SourceFile, budget_s: float, cache: ExtractCache | None
) -> FileResult:
    """One file's result, from `cache` when it holds it. A fresh result is written to the
    cache at once, so an interrupt loses at most the files in progress."""
    try:
        data = read_bytes(root, file.path)
    except OSError as exc:
        return _unreadable(file, exc)
    if cache is not None:
        started = time.monotonic()
        hit = cache.get(file.path, data)
        if hit is not None:
            result = FileResult.from_row(hit, cached=True)
            result.seconds = time.monotonic() - started
            return result
    result = extract_source(file.path, file.language, data, budget_s)
    if cache is not None and result.status in CACHEABLE:
        cache.put(file.path, data, encode_row(result))
    return result


def _counted(counts: dict[str, int], result: FileResult) -> FileResult:
    if counts:
        counts["cached" if result.cached else "extracted"] += 1
    return result


def _run_batch(
    root: str, batch: list[SourceFile], budget_s: float, cache: ExtractCache | None = None
) -> list[tuple[EncodedRow, bool]]:
    """A worker's task: its files' results already encoded, so that the parent only
    forwards bytes (and never builds the records as objects)."""
    out = []
    for f in batch:
        result = _extract_one(root, f, budget_s, cache)
        out.append((encode_row(result), result.cached))
    return out


PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this worker when the process that forked it dies (`prctl`
    PR_SET_PDEATHSIG). Without it a `kill -9` of the indexer left workers deadlocked on each
    other's pipes (issue 20, C1). Elsewhere (no prctl) the parent-liveness check of
    `_init_worker` and the pool's own broken-pipe handling are what remain."""
    with contextlib.suppress(Exception):
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _init_worker(indexer_pid: int | None = None) -> None:
    """Set up an extraction worker: it dies with its parent, and it leaves Ctrl-C to the
    parent, which stops it (a worker that caught it would report it as its task's failure and
    go on with the next task). `indexer_pid` closes the race of a parent killed before the
    death signal was armed: a worker that finds it gone exits at once."""
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if indexer_pid is not None:
        try:
            os.kill(indexer_pid, 0)
        except ProcessLookupError:
            os._exit(1)
        except OSError:
            pass


def _stop(pool: ProcessPoolExecutor) -> None:
    """Stop at once: drop queued batches and kill the workers (their finished files are
    already in the cache). `shutdown(wait=True)` would instead finish every queued batch."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    # taken before `shutdown`, which drops the pool's reference to it
    result_writer = getattr(getattr(pool, "_result_queue", None), "_writer", None)
    for process in processes:
        with contextlib.suppress(Exception):
            process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    deadline = time.monotonic() + 1.0
    for process in processes:
        with contextlib.suppress(Exception):
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join(1.0)
    # A worker killed while sending a result leaves half a message in the result pipe, and the
    # pool's manager thread waits in `recv` for the rest forever; interpreter exit joins that
    # thread, so the process would hang (seen in CI). With the workers gone, the parent holds
    # the pipe's last write end: closing it turns that wait into EOF, and the thread ends.
    if result_writer is not None:
        with contextlib.suppress(Exception):
            result_writer.close()


def _batches(files: list[SourceFile], workers: int) -> list[list[SourceFile]]:
    """Group files into tasks of about BATCH_BYTES; big files first so the tail is short."""
    total = sum(f.size for f in files)
    limit = max(64 << 10, min(BATCH_BYTES, total // (workers * 8) or 1))
    ordered = sorted(files, key=lambda f: -f.size)
    out: list[list[SourceFile]] = []
    cur: list[SourceFile] = []
    size = 0
    for f in ordered:
        cur.append(f)
        size += f.size
        if size >= limit or len(cur) >= BATCH_FILES:
            out.append(cur)
            cur, size = [], 0
    if cur:
        out.append(cur)
    return out


def _context() -> multiprocessing.context.BaseContext:
    """`fork` when this process runs no other Python thread (fast, and no re-import of
    `__main__`); `forkserver` otherwise, since forking a threaded process can inherit held
    locks. Workers only run tree-sitter and this package, never the parent's Rust pools."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["maguyva.extract.driver"])
        return ctx
    return multiprocessing.get_context("spawn")


_ACTIVE_CACHE: contextvars.ContextVar[tuple[ExtractCache, dict[str, int]] | None] = (
    contextvars.ContextVar("maguyva_extract_cache", default=None)
)


@contextlib.contextmanager
def caching(cache: ExtractCache) -> Iterator[dict[str, int]]:
    """Use `cache` for every `extract_files` call inside the block (the indexer sets it
    around extraction; callers in between need not pass it along). Yields counts that
    fill as files are served: `cached` (from the cache) and `extracted`."""
    counts = {"cached": 0, "extracted": 0}
    token = _ACTIVE_CACHE.set((cache, counts))
    try:
        yield counts
    finally:
        _ACTIVE_CACHE.reset(token)


def extract_files(
    root: Path,
    files: list[SourceFile],
    jobs: int | None = None,
    budget_s: float = DEFAULT_BUDGET_S,
    progress: Callable[[str, int, int], None] | None = None,
    cache: ExtractCache | None = None,
) -> Iterator[FileResult]:
    """Extract every file, yielding results as they complete (order not guaranteed).

    Files found in `cache` (default: the one set by `caching`) are not extracted again, and
    each fresh result is added to it. On KeyboardInterrupt (or when the consumer stops
    iterating) the worker processes are killed and queued batches dropped at once."""
    jobs = jobs or os.cpu_count() or 1
    counts: dict[str, int] = {}
    if cache is None and (active := _ACTIVE_CACHE.get()) is not None:
        cache, counts = active
    total = len(files)
    done = 0
    report = progress or (lambda phase, done, total: None)
    if jobs <= 1 or total < IN_PROCESS_BELOW:
        for f in files:
            yield _counted(counts, _extract_one(str(root), f, budget_s, cache))
            done += 1
            report("extract", done, total)
        return
    pending_batches = _batches(files, jobs)
    retry_alone: list[list[SourceFile]] = []
    for attempt in range(2):
        if not pending_batches:
            break
        pool = ProcessPoolExecutor(
            max_workers=jobs,
            mp_context=_context(),
            initializer=_init_worker,
            initargs=(os.getpid(),),
        )
        try:
            futures: dict[Future[list[tuple[EncodedRow, bool]]], list[SourceFile]] = {
                pool.submit(_run_batch, str(root), b, budget_s, cache): b for b in pending_batches
            }
            while futures:
                finished, _ = wait(futures, return_when=FIRST_COMPLETED)
                for fut in finished:
                    batch = futures.pop(fut)
                    try:
                        results = fut.result()
                    except BrokenProcessPool:
                        # A grammar crashed a worker: retry these files one per task, once.
                        retry_alone.extend([f] for f in batch)
                        continue
                    for row, cached in results:
                        done += 1
                        report("extract", done, total)
                        yield _counted(counts, FileResult.from_row(row, cached))
        except BaseException:  # Ctrl-C, or the consumer closed this generator
            _stop(pool)
            raise
        pool.shutdown(wait=True)
        if attempt == 0:
            pending_batches, retry_alone = retry_alone, []
    for batch in retry_alone:  # crashed twice: index as plain text, report it
        for f in batch:
            done += 1
            report("extract", done, total)
            yield _crashed(root, f)


def _crashed(root: Path, file: SourceFile) -> FileResult:
    detail = "the parser crashed its worker process"
    try:
        text = read_text(root, file.path)
    except OSError:
        text = ""
    return FileResult(
        FileExtraction(file.path, file.language, error=detail),
        line_window_chunks(file.path, text),
        0.0,
        len(text),
        "error",
        detail,
    )
