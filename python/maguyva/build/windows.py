"""The text stage's line windows (`build.staged`, step 1) on every core: each file read once,
cut into windows of lines, and stored as the chunk block the spill keeps (the windows as
spans of the file's bytes, `store.spans`).

The bytes are the ones the general path makes (`line_window_chunks`, `encode_chunks`, then
`Spill.add` reading the file again for `blocks.span_block`), without building a `Chunk`, a
row with its text, or parsing that row back: on the Linux kernel that round trip was most of
the stage's CPU, on one core. A file the fast cut cannot reproduce exactly (not UTF-8, a line
break `str.splitlines` and the stored lines disagree on, an empty window) takes the general
path, in the same worker."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path

from maguyva.build.phases import Progress
from maguyva.extract.chunks import WINDOW_LINES, WINDOW_OVERLAP, chunk_id, line_window_chunks
from maguyva.model import SourceFile
from maguyva.repo.reader import read_bytes
from maguyva.store import blocks
from maguyva.store.extraction import encode_chunks

IN_PROCESS_BELOW = 200
"""Fewer files than this are cut in the calling process (a pool's start costs more)."""

_SPLIT_APART = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
"""Characters `str.splitlines` breaks a line at and the stored lines (`spans.file_lines`,
`\\n` only) do not: a file holding one takes the general path."""


def window_block(path: str, content: bytes) -> bytes:
    """One file's line-window chunk rows as the block `Spill.add` would store for them (no
    bytes for a file without windows)."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        return _general(path, content)
    if not text:
        return b""
    if _SPLIT_APART.search(text):
        return _general(path, content)
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    step = max(1, WINDOW_LINES - WINDOW_OVERLAP)
    rows: list[bytes] = []
    which: list[list[int]] = []
    dumps = json.dumps
    start = 0
    while True:
        end = min(len(lines), start + WINDOW_LINES)
        body = "\n".join(lines[start:end])
        if not body:  # an empty window is stored with its text, not as a span
            return _general(path, content)
        row = {"id": chunk_id(path, body, f"#{start}"), "path": path, "start_line": start + 1,
               "end_line": end, "kind": "lines", "name": None, "qualified_name": None,
               "signature": None, "header": f"{path}:{start + 1}-{end}"}  # fmt: skip
        which.append([len(rows), start + 1, end])
        rows.append(dumps(row, ensure_ascii=False).encode() + b"\n")
        if end >= len(lines):
            break
        start += step
    return blocks.span_block_of(path, b"".join(rows), which, len(rows), content)


def _general(path: str, content: bytes) -> bytes:
    """`window_block` the long way: the chunks built, encoded, and stripped of their spans."""
    chunks = line_window_chunks(path, content.decode("utf-8", errors="replace"))
    if not chunks:
        return b""
    raw = encode_chunks(chunks)
    return blocks.span_block(path, raw, raw.count(b"\n"), content)


def file_block(root: str, path: str) -> bytes:
    """`window_block` of the file `path` under `root` (no bytes when it cannot be read, as
    `line_windows` gives such a file no chunks)."""
    try:
        content = read_bytes(root, path)
    except OSError:
        return b""
    return window_block(path, content)


def _run_batch(root: str, paths: list[str]) -> list[tuple[str, bytes]]:
    """A worker's task: its files' blocks."""
    return [(p, file_block(root, p)) for p in paths]


def window_blocks(
    root: Path, files: list[SourceFile], jobs: int | None, progress: Progress
) -> Iterator[tuple[str, bytes]]:
    """(path, block) of every file, in worker processes (`jobs`, default every core) when
    there are many; order not guaranteed. Ctrl-C (or the consumer closing this generator)
    kills the workers at once."""
    from maguyva.extract.driver import _batches, _context, _init_worker, _stop

    jobs = jobs or os.cpu_count() or 1
    total = len(files)
    if jobs <= 1 or total < IN_PROCESS_BELOW:
        for n, f in enumerate(files):
            yield f.path, file_block(str(root), f.path)
            if n % 256 == 255:
                progress("extract", n + 1, total)
        return
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=_context(),
                               initializer=_init_worker, initargs=(os.getpid(),))  # fmt: skip
    done = 0
    try:
        futures: set[Future[list[tuple[str, bytes]]]] = {
            pool.submit(_run_batch, str(root), [f.path for f in batch])
            for batch in _batches(files, jobs)
        }
        while futures:
            finished, futures = wait(futures, return_when=FIRST_COMPLETED)
            for fut in finished:
                results = fut.result()
                yield from results
                done += len(results)
                progress("extract", done, total)
    except BaseException:
        _stop(pool)
        raise
    pool.shutdown(wait=True)
