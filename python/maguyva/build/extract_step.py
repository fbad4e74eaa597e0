"""The extraction step of a build: the changed files extracted (structural extraction on all
cores, an `Extract` hook, or line windows without tree-sitter) and spilled one at a time."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from maguyva.build.phases import Progress
from maguyva.build.spill import Spill, spill_encoded, spill_file
from maguyva.build.windows import window_blocks
from maguyva.extract.cache import ExtractCache
from maguyva.extract.chunks import line_window_chunks
from maguyva.extract.types import FileExtraction
from maguyva.model import Chunk, SourceFile
from maguyva.repo.reader import read_text
from maguyva.store.extraction import encode_extraction
from maguyva.store.rows import canonical_json

Extract = Callable[
    [Path, list[SourceFile], dict[str, Any], Progress],
    tuple[dict[str, FileExtraction], list[Chunk], dict[str, Any]],
]
"""An extraction step: `(root, files, config, progress) -> (extraction by path, chunks,
report)`, the signature of `structural.extract_repository`. `Indexer(extract=...)` replaces
the default (streaming, all cores) step with it; `scale.distributed` passes its own."""


def extract_changed(
    root: Path,
    files: list[SourceFile],
    digests: dict[str, str],
    spill: Spill,
    *,
    config: dict[str, Any],
    progress: Progress,
    hook: Extract | None,
    cache: Callable[[], ExtractCache],
) -> dict[str, Any]:
    """Extract `files` (only the changed ones) into `spill`, encoded, one file at a time;
    returns the extraction report. The `extract` hook when given; otherwise structural
    extraction on all cores when available, line-window chunks when not."""
    if not files:
        return {"files": 0}
    languages = {f.path: f.language for f in files}
    put = functools.partial(spill_file, spill, digests, languages)
    if hook is line_windows and spill.root is not None:  # the text stage, on every core
        for path, block in window_blocks(root, files, config.get("jobs"), progress):
            spill.add(path, block, window_fragment(digests[path], path, languages.get(path)))
        return {"files": len(files), **LINE_WINDOWS_REPORT}
    if hook is not None:
        extraction, chunks, report = hook(root, files, config, progress)
        by_path: dict[str, list[Chunk]] = {}
        for c in chunks:
            by_path.setdefault(c.path, []).append(c)
        del chunks
        for f in files:
            put(f.path, extraction.pop(f.path, None), by_path.pop(f.path, []))
        return report
    try:
        from maguyva.extract import grammars  # noqa: F401 (is tree-sitter importable?)
        from maguyva.extract.driver import DEFAULT_BUDGET_S, caching, extract_files
    except ImportError:
        for source in files:
            try:
                text = read_text(root, source.path)
            except OSError:
                text = ""
            put(source.path, None, line_window_chunks(source.path, text) if text else [])
        return {"structural": "unavailable; line windows"}
    # Finished files go to the extraction cache as they complete, so a Ctrl-C or a crash
    # before the commit does not lose them; the next run takes them from there.
    from maguyva.modalities.structural.modality import ExtractionTally

    budget = float(config.get("structural_budget_s") or DEFAULT_BUDGET_S)
    tally = ExtractionTally(budget)
    seen: set[str] = set()
    with caching(cache()) as counts:
        stream = extract_files(
            root, files, jobs=config.get("jobs"), budget_s=budget, progress=progress
        )
        with contextlib.closing(stream):
            for result in stream:
                if result.path in seen or result.path not in digests:
                    continue
                seen.add(result.path)
                spill_encoded(spill, digests, result)
                tally.add(result)
    for f in files:  # a file the extractor did not report: indexed without chunks
        if f.path not in seen:
            put(f.path, None, [])
    return {**tally.report(), "extract_cached": counts["cached"]}


def line_windows(
    root: Path, files: list[SourceFile], config: dict[str, Any], progress: Progress
) -> tuple[dict[str, FileExtraction], list[Chunk], dict[str, Any]]:
    """An `Extract` step without tree-sitter: every file cut into windows of lines, nothing
    extracted (the text stage of a staged first build, `build.staged`: seconds where the
    extraction takes a minute)."""
    chunks: list[Chunk] = []
    for n, source in enumerate(files):
        try:
            text = read_text(root, source.path)
        except OSError:
            text = ""
        if text:
            chunks.extend(line_window_chunks(source.path, text))
        if n % 256 == 0:
            progress("extract", n, len(files))
    return {}, chunks, {"files": len(files), **LINE_WINDOWS_REPORT}


LINE_WINDOWS_REPORT = {"structural": "pending; line windows"}


def window_fragment(digest: str, path: str, language: str | None) -> bytes:
    """The extraction fragment `spill_file` writes for a file of line windows (none)."""
    return canonical_json([digest, encode_extraction(FileExtraction(path, language))])
