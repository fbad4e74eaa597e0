"""The structural modality: extraction of every file (definitions, imports, calls, references
and syntax-aware chunks) and the symbol index that answers "where is X defined".

The indexer calls `extract_repository` once per index build; the chunks and the extraction it
returns feed every modality. `MODALITY.build` then writes the symbol index from that extraction
(no re-parsing; only the changed files' part when the indexer says what changed since the
previous generation), `MODALITY.open` loads it for search and `MODALITY.verify` checks it for
`maguyva fsck`. The symbol index itself is `symbol_index.py`, outside the extraction code, so
that changing it does not invalidate cached extraction.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from .extract import grammars
from .extract.driver import DEFAULT_BUDGET_S, extract_files
from .extract_types import FileExtraction
from .model import Chunk, SourceFile
from .retriever import BuildContext
from .symbol_index import StructuralSearcher

__all__ = ["MODALITY", "StructuralModality", "StructuralSearcher", "extract_repository"]


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
    started = time.monotonic()
    jobs = config.get("jobs")
    budget = float(config.get("structural_budget_s", DEFAULT_BUDGET_S))
    extraction: dict[str, FileExtraction] = {}
    chunks: list[Chunk] = []
    languages: dict[str, dict[str, int]] = {}
    problems: list[dict[str, str]] = []
    slowest: list[tuple[float, str]] = []
    # closed at once on Ctrl-C in this loop's body, not when the generator is collected
    stream = extract_files(root, files, jobs=jobs, budget_s=budget, progress=progress)
    with contextlib.closing(stream):
        for result in stream:
            ex = result.extraction
            extraction[ex.path] = ex
            chunks.extend(result.chunks)
            stats = languages.setdefault(
                ex.language or "unknown",
                {"files": 0, "bytes": 0, "definitions": 0, "imports": 0, "calls": 0, "chunks": 0},
            )
            stats["files"] += 1
            stats["bytes"] += result.size
            stats["definitions"] += len(ex.definitions)
            stats["imports"] += len(ex.imports)
            stats["calls"] += len(ex.calls)
            stats["chunks"] += len(result.chunks)
            if result.status not in ("ok", "no_grammar"):
                problems.append(
                    {"path": ex.path, "status": result.status, "detail": result.detail or ""}
                )
            slowest.append((result.seconds, ex.path))
    slowest.sort(reverse=True)
    report = {
        "files": len(extraction),
        "chunks": len(chunks),
        "languages": dict(sorted(languages.items())),
        "failed": sorted(problems, key=lambda p: p["path"]),
        "timed_out": sum(1 for p in problems if p["status"] == "timeout"),
        "budget_s": budget,
        "grammars_unavailable": grammars.unavailable(),
        "slowest": [{"path": p, "seconds": round(s, 4)} for s, p in slowest[:5]],
        "seconds": round(time.monotonic() - started, 3),
    }
    return extraction, chunks, report


class StructuralModality:
    """Build and open the symbol index (`<generation>/structural/`)."""

    name: ClassVar[str] = "structural"

    def build(self, ctx: BuildContext) -> dict[str, Any]:
        """Write the symbol index from the extraction the indexer already computed: an update
        of the previous generation's when `ctx.changes` says what changed, else all of it."""
        from . import symbol_index

        previous = Path(ctx.previous_dir) / self.name if ctx.previous_dir else None
        return symbol_index.build(
            ctx.out_dir / self.name, ctx.extraction, ctx.chunks,
            previous=previous, changes=ctx.changes, extractor=_extractor_fingerprint(),
        )  # fmt: skip

    def open(self, gen_dir: Path, manifest: dict[str, Any]) -> StructuralSearcher:
        """Load the symbol index; `ModalityUnavailable` when it was not built."""
        from . import symbol_index

        return symbol_index.load(gen_dir / self.name)

    def verify(self, directory: Path) -> list[str]:
        """Problems of the symbol index under `directory` (`<generation>/structural/`)."""
        from . import symbol_index

        return symbol_index.verify(directory)


def _extractor_fingerprint() -> str:
    """The indexer's fingerprint of the extraction code: a symbol index built from another
    extractor's output is rebuilt, not updated (the indexer then re-extracted every file)."""
    try:
        from .indexer import extractor_fingerprint
    except ImportError:  # pragma: no cover
        return ""
    return extractor_fingerprint()


MODALITY = StructuralModality()
