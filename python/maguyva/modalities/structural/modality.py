"""The structural modality: extraction of every file (definitions, imports, calls, references
and syntax-aware chunks) and the symbol index that answers "where is X defined".

The indexer calls `extract_repository` once per index build; the chunks and the extraction it
returns feed every modality. `MODALITY.build` then writes the symbol index from that extraction
(no re-parsing; only the changed files' part when the indexer says what changed since the
previous generation), `MODALITY.open` loads it for search and `MODALITY.verify` checks it for
`maguyva fsck`. The symbol index itself is `symbols.py` (rows and format), `symbol_build.py`
and `symbol_search.py`, outside the extraction code, so that changing it does not invalidate
cached extraction.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from maguyva.extract import grammars
from maguyva.extract.driver import DEFAULT_BUDGET_S, extract_files
from maguyva.extract.types import FileExtraction
from maguyva.modalities.protocol import BuildContext
from maguyva.modalities.structural import symbol_build, symbol_search
from maguyva.modalities.structural.symbol_search import StructuralSearcher
from maguyva.model import Chunk, SourceFile
from maguyva.store.extraction import extractor_fingerprint

__all__ = ["MODALITY", "StructuralModality", "StructuralSearcher", "extract_repository"]


class ExtractionTally:
    """What an extraction run reports, counted one file result at a time in bounded memory:
    per-language counts, the files that failed or timed out, the five slowest files."""

    def __init__(self, budget_s: float) -> None:
        self.budget_s = budget_s
        self.started = time.monotonic()
        self.files = 0
        self.chunks = 0
        self.languages: dict[str, dict[str, int]] = {}
        self.problems: list[dict[str, str]] = []
        self.slowest: list[tuple[float, str]] = []

    def add(self, result: Any) -> None:
        """Count one `extract.driver.FileResult`."""
        definitions, imports, calls, chunks = result.counts  # counted without decoding
        self.files += 1
        self.chunks += chunks
        stats = self.languages.setdefault(result.language or "unknown", dict.fromkeys(
            ("files", "bytes", "definitions", "imports", "calls", "chunks"), 0))  # fmt: skip
        stats["files"] += 1
        stats["bytes"] += result.size
        stats["definitions"] += definitions
        stats["imports"] += imports
        stats["calls"] += calls
        stats["chunks"] += chunks
        if result.status not in ("ok", "no_grammar"):
            self.problems.append({"path": result.path, "status": result.status,
                                  "detail": result.detail or ""})  # fmt: skip
        self.slowest.append((result.seconds, result.path))
        if len(self.slowest) > 64:
            self.slowest = sorted(self.slowest, reverse=True)[:5]

    def report(self) -> dict[str, Any]:
        slowest = sorted(self.slowest, reverse=True)[:5]
        return {
            "files": self.files,
            "chunks": self.chunks,
            "languages": dict(sorted(self.languages.items())),
            "failed": sorted(self.problems, key=lambda p: p["path"]),
            "timed_out": sum(1 for p in self.problems if p["status"] == "timeout"),
            "budget_s": self.budget_s,
            "grammars_unavailable": grammars.unavailable(self.languages),
            "slowest": [{"path": p, "seconds": round(s, 4)} for s, p in slowest],
            "seconds": round(time.monotonic() - self.started, 3),
        }


def extract_repository(
    root: Path,
    files: list[SourceFile],
    config: dict[str, Any],
    progress: Callable[[str, int, int], None] = lambda phase, done, total: None,
) -> tuple[dict[str, FileExtraction], list[Chunk], dict[str, Any]]:
    """Extract every file of `files` under `root` on all cores.

    Returns the extraction per path, the chunks of every file (syntax-aware where a grammar
    exists, line windows otherwise) and a JSON-able report. Config keys: `jobs` (worker
    processes; default all cores), `structural_budget_s` (per-file budget in CPU seconds of
    the extracting thread, default 5).
    """
    budget = float(config.get("structural_budget_s", DEFAULT_BUDGET_S))
    tally = ExtractionTally(budget)
    extraction: dict[str, FileExtraction] = {}
    chunks: list[Chunk] = []
    # closed at once on Ctrl-C in this loop's body, not when the generator is collected
    stream = extract_files(root, files, jobs=config.get("jobs"), budget_s=budget,
                           progress=progress)  # fmt: skip
    with contextlib.closing(stream):
        for result in stream:
            extraction[result.extraction.path] = result.extraction
            chunks.extend(result.chunks)
            tally.add(result)
    report = tally.report()
    report["files"] = len(extraction)  # a path reported twice counts once
    return extraction, chunks, report


class StructuralModality:
    """Build and open the symbol index (`<generation>/structural/`)."""

    name: ClassVar[str] = "structural"

    def build(self, ctx: BuildContext) -> dict[str, Any]:
        """Write the symbol index from the extraction the indexer already computed: an update
        of the previous generation's when `ctx.changes` says what changed, else all of it."""
        previous = Path(ctx.previous_dir) / self.name if ctx.previous_dir else None
        return symbol_build.build(
            ctx.out_dir / self.name, ctx.extraction, ctx.chunks,
            previous=previous, changes=ctx.changes, extractor=_extractor_fingerprint(),
        )  # fmt: skip

    def open(self, gen_dir: Path, manifest: dict[str, Any]) -> StructuralSearcher:
        """Load the symbol index; `ModalityUnavailable` when it was not built."""
        return symbol_search.load(gen_dir / self.name)

    def verify(self, directory: Path) -> list[str]:
        """Problems of the symbol index under `directory` (`<generation>/structural/`)."""
        return symbol_build.verify(directory)


def _extractor_fingerprint() -> str:
    """The indexer's fingerprint of the extraction code: a symbol index built from another
    extractor's output is rebuilt, not updated (the indexer then re-extracted every file)."""
    return extractor_fingerprint()


MODALITY = StructuralModality()
