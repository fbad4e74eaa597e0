"""Build a new index generation: walk, extract and chunk, then each modality builds its part.

One modality failing does not lose the others: its failure is recorded in the manifest and
reported as "unavailable" by every query until the next successful build.
"""

from __future__ import annotations

import json
import logging
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .chunks import line_window_chunks
from .chunkstore import write_chunks
from .config import load_config
from .errors import MaguyvaError, ModalityUnavailable
from .model import Chunk
from .registry import BUILD_ORDER, load_modality
from .retriever import BuildContext
from .store import Generation, IndexDir, default_index_dir
from .walk import walk_repository

log = logging.getLogger("maguyva.index")

Progress = Callable[[str, int, int], None]


@dataclass(slots=True)
class BuildSummary:
    """What a build did: the generation, per-phase seconds, per-modality status."""

    generation: int
    index_dir: str
    files: int
    chunks: int
    skipped: dict[str, int]
    timings_s: dict[str, float] = field(default_factory=dict)
    modalities: dict[str, dict[str, Any]] = field(default_factory=dict)


def _git_commit(root: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True, text=True, check=True, timeout=10,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _extract(
    root: Path, files: list[Any], config: dict[str, Any], progress: Progress
) -> tuple[dict[str, Any], list[Chunk], dict[str, Any]]:
    """Structural extraction when available; line-window chunks otherwise."""
    try:
        from .structural import extract_repository
    except ImportError:
        extract_repository = None
    if extract_repository is not None:
        return extract_repository(root, files, config, progress)
    chunks: list[Chunk] = []
    for source in files:
        try:
            text = (root / source.path).read_bytes().decode("utf-8", errors="replace")
        except OSError:
            continue
        chunks.extend(line_window_chunks(source.path, text))
    return {}, chunks, {"structural": "unavailable; line-window chunks"}


def build_index(
    root: Path,
    *,
    config: dict[str, Any] | None = None,
    progress: Progress | None = None,
    wait_for_lock: bool = False,
) -> BuildSummary:
    """Index the repository at `root` into a new committed generation."""
    root = root.resolve()
    if not root.is_dir():
        raise MaguyvaError(f"{root}: not a directory")
    config = load_config(root, config)
    index = IndexDir(
        Path(config["index_dir"]) if config.get("index_dir") else default_index_dir(root)
    )
    report = progress or (lambda phase, done, total: None)
    timings: dict[str, float] = {}

    with index.writer_lock(wait=wait_for_lock):
        started = time.perf_counter()
        walked = walk_repository(root, config)
        timings["walk"] = time.perf_counter() - started
        report("walk", len(walked.files), len(walked.files))

        started = time.perf_counter()
        extraction, chunks, extract_report = _extract(root, walked.files, config, report)
        timings["extract"] = time.perf_counter() - started

        previous = index.current().path if index.exists() else None
        number, tmp = index.begin()
        try:
            write_chunks(tmp, chunks)
            files_meta = {f.path: [f.size, f.mtime_ns] for f in walked.files}
            (tmp / "files.json").write_text(json.dumps(files_meta), encoding="utf-8")
            ctx = BuildContext(
                root=root, out_dir=tmp, files=walked.files, chunks=chunks,
                extraction=extraction, config=config, cache_dir=index.cache_dir,
                progress=report, previous_dir=previous,
            )  # fmt: skip
            index.cache_dir.mkdir(parents=True, exist_ok=True)
            modalities = _build_modalities(ctx, config, timings)
            manifest = {
                "root": str(root),
                "commit": _git_commit(root),
                "files": len(walked.files),
                "chunks": len(chunks),
                "skipped": walked.skipped,
                "extract": extract_report,
                "modalities": modalities,
                "timings_s": {k: round(v, 4) for k, v in timings.items()},
                "embedding": modalities.get("semantic", {}).get("report", {}).get("provider"),
            }
            (tmp / "meta.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
            generation: Generation = index.commit(number, tmp, manifest)
        except BaseException:
            index.abort(tmp)
            raise
    return BuildSummary(
        generation=generation.number,
        index_dir=str(index.path),
        files=len(walked.files),
        chunks=len(chunks),
        skipped=walked.skipped,
        timings_s=timings,
        modalities=modalities,
    )


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
        except Exception as exc:  # one modality's bug must not lose the others' work
            log.exception("%s: build failed", name)
            status[name] = {"built": False, "reason": f"build failed: {type(exc).__name__}: {exc}"}
        timings[name] = time.perf_counter() - started
    return status
