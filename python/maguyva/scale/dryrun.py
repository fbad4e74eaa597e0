"""What indexing a repository would cost, before anything is spent or written.

`dry_run(root)` walks the repository exactly as a build does (same walker, same skip rules),
then extracts chunks from all files (small repositories) or from a deterministic sample of
files (large ones: chunks and tokens are extrapolated per language from the sample's ratio to
bytes) and asks the semantic modality's own `dry_run` what it would embed. It reports files,
bytes, chunks, tokens (local tokenizer and the remote provider's estimate), the estimated
cost for the remote provider, the largest directories and the skipped files by reason.

Nothing is written: the embedding cache is consulted only when the index already has one
(otherwise a throw-away directory stands in for it).
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from maguyva.config import effective_config, index_dir_for
from maguyva.errors import MaguyvaError
from maguyva.model import SourceFile
from maguyva.repo.walk import walk_repository

VOYAGE_CODE_3_USD_PER_MTOK = 0.18
"""Voyage AI list price of `voyage-code-3`, US dollars per million input tokens (voyageai.com
pricing page, checked 2025; the first 200M tokens of an account are free, not counted here).
Prices change: pass `price_per_mtok` to override."""

VOYAGE_CHARS_PER_TOKEN = 3.0
"""The Voyage provider's own conservative estimate (embed/voyage.py): code averages 3-4
characters per token, so this over-estimates cost rather than under-estimating it."""

LOCAL_FULL_PER_CPU_S = 65.0
LOCAL_HEADS_PER_CPU_S = 80.0
"""The local model's measured throughput, chunks per CPU-second (the fused int8 graph, version
2; 400 random Django 5.2.8 chunks, full texts and heads, two runs under load 10-13: 65.0 and
77.0-83.7): docs/semantic-embedder.md. The dry run's time is CPU-seconds over the cores."""
SECOND_THREAD_COST = 1.0
"""CPU a second thread adds to the same work: none measurable since bulk threads are
concurrent one-thread runs (59.4 vs 57.4 chunks/CPU-s, docs/semantic.md)."""

SAMPLE_FILES = 2000
"""Files extracted when the repository is larger (seeded sample; ~1-2 min of CPU at most)."""


@dataclass(slots=True)
class LanguageStats:
    files: int = 0
    bytes: int = 0
    sampled_files: int = 0
    sampled_bytes: int = 0
    sampled_chunks: int = 0
    chunks: int = 0  # exact when every file was sampled, else extrapolated by bytes


@dataclass(slots=True)
class DryRunReport:
    """The answer of `dry_run`: JSON-able with `to_dict()`, printable with `format_report`."""

    root: str
    files: int
    bytes: int
    chunks: int
    exact: bool
    sampled_files: int
    languages: dict[str, dict[str, int]]
    largest_dirs: list[dict[str, Any]]
    skipped: dict[str, int]
    skipped_examples: dict[str, list[str]]
    embedding: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    not_sent: list[dict[str, str]] = field(default_factory=list)
    """Every file a remote embedder would never receive (secrets), with the reason."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def largest_dirs(files: list[SourceFile], depth: int = 2, top: int = 10) -> list[dict[str, Any]]:
    """The `top` directories (up to `depth` levels deep) by bytes, with their file counts."""
    totals: dict[str, list[int]] = {}
    for f in files:
        parts = f.path.split("/")[:-1]
        if not parts:
            entry = totals.setdefault("./", [0, 0])
            entry[0] += 1
            entry[1] += f.size
        for level in range(1, min(depth, len(parts)) + 1):
            key = "/".join(parts[:level]) + "/"
            entry = totals.setdefault(key, [0, 0])
            entry[0] += 1
            entry[1] += f.size
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1][1], kv[0]))[:top]
    return [{"dir": d, "files": n, "bytes": b} for d, (n, b) in ranked]


def sample_files(files: list[SourceFile], limit: int, seed: int = 0) -> list[SourceFile]:
    """All files when there are at most `limit`, else a seeded sample of `limit`, taken per
    language in proportion to its file count (every language with files gets at least one)."""
    if len(files) <= limit:
        return list(files)
    rng = random.Random(seed)
    by_lang: dict[str, list[SourceFile]] = {}
    for f in files:
        by_lang.setdefault(f.language or "", []).append(f)
    picked: list[SourceFile] = []
    for _, group in sorted(by_lang.items()):
        share = max(1, round(limit * len(group) / len(files)))
        picked.extend(rng.sample(group, min(share, len(group))))
    return sorted(picked, key=lambda f: f.path)


def _semantic_estimate(
    root: Path, config: dict[str, Any], sample: list[SourceFile], chunks: list[Any],
    scale: float, price: float,
) -> dict[str, Any]:  # fmt: skip
    """Ask the semantic modality what it would embed for the sampled chunks (its own dry run:
    cache hits, secret exclusions, heads-first phases, local tokens), then scale it up."""
    from maguyva.modalities.protocol import BuildContext
    from maguyva.modalities.semantic.modality import MODALITY
    from maguyva.modalities.semantic.texts import head_text

    out: dict[str, Any] = {"scale": round(scale, 3)}
    index_dir = index_dir_for(root, config)
    cache = index_dir / "cache"
    with tempfile.TemporaryDirectory(prefix="maguyva-dryrun-") as tmp:
        cache_dir = cache if cache.is_dir() else Path(tmp)
        ctx = BuildContext(root=root, out_dir=Path(tmp) / "out", files=sample, chunks=chunks,
                           extraction={}, config=config, cache_dir=cache_dir)  # fmt: skip
        try:
            report = MODALITY.dry_run(ctx)
        except MaguyvaError as exc:
            report = {"error": str(exc)}
    out["provider_report"] = report
    if report.get("provider", {}).get("provider") == "local" and "to_embed" in report:
        out["local_time"] = local_time(round(report["to_embed"] * scale),
                                       round(report.get("heads_to_embed", 0) * scale),
                                       report.get("phases", "full"), config)  # fmt: skip
    for key in ("eligible", "cached", "to_embed", "heads_to_embed", "tokens_to_send"):
        if isinstance(report.get(key), int):
            out[key] = round(report[key] * scale)
    if isinstance(report.get("duplicates"), dict):  # texts sharing another chunk's vector
        out["duplicates"] = {k: round(v * scale) for k, v in report["duplicates"].items()}
    # The remote provider's bill, whatever provider is configured: the reference model.
    full_chars = sum(len(f"{c.header}\n{c.text}" if c.header else c.text) for c in chunks)
    head_chars = sum(len(head_text(c)) for c in chunks)
    full_tokens = round(full_chars / VOYAGE_CHARS_PER_TOKEN * scale)
    head_tokens = round(head_chars / VOYAGE_CHARS_PER_TOKEN * scale)
    out["remote"] = {
        "model": "voyage-code-3",
        "usd_per_mtok": price,
        "tokens_full": full_tokens,
        "tokens_heads": head_tokens,
        "usd_full": round(full_tokens / 1e6 * price, 2),
        "usd_heads_first_phase": round(head_tokens / 1e6 * price, 2),
        "usd_heads_then_bodies": round((full_tokens + head_tokens) / 1e6 * price, 2),
    }
    return out


def local_time(bodies: int, heads: int, phases: str, config: dict[str, Any]) -> dict[str, Any]:
    """The expected time of the local embedding: CPU-seconds at the measured rates, and the
    wall time on the cores it may use (`embedding_threads`, else every core; threads beyond
    the first cost `SECOND_THREAD_COST`), on an idle machine (shared cores take longer)."""
    import os

    texts_bodies = 0 if phases == "heads" else bodies
    cpu_s = texts_bodies / LOCAL_FULL_PER_CPU_S + heads / LOCAL_HEADS_PER_CPU_S
    cores = max(1, int(config.get("embedding_threads") or os.cpu_count() or 1))
    return {"texts": texts_bodies + heads, "bodies": texts_bodies, "heads": heads,
            "phases": phases, "cpu_s": round(cpu_s, 1), "cores": cores,
            "wall_s": round(cpu_s * (SECOND_THREAD_COST if cores > 1 else 1.0) / cores, 1),
            "rates_per_cpu_s": {"full": LOCAL_FULL_PER_CPU_S, "heads": LOCAL_HEADS_PER_CPU_S}}  # fmt: skip


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def dry_run(
    root: Path | str,
    config: dict[str, Any] | None = None,
    *,
    sample: int = SAMPLE_FILES,
    price_per_mtok: float = VOYAGE_CODE_3_USD_PER_MTOK,
    semantic: bool = True,
    progress: Callable[[str, int, int], None] | None = None,
) -> DryRunReport:
    """Estimate an index build of `root` without writing anything (see the module doc).
    `sample=0` extracts every file (exact chunk counts, as slow as a build's extract phase)."""
    from maguyva.modalities.structural.modality import extract_repository

    started = time.perf_counter()
    root = Path(root).resolve()
    if not root.is_dir():
        raise MaguyvaError(f"{root}: not a directory")
    values = effective_config(root, config or {}).values
    walked = walk_repository(root, values)
    files = walked.files
    picked = files if sample <= 0 else sample_files(files, sample)
    exact = len(picked) == len(files)
    extraction, chunks, _ = extract_repository(
        root, picked, {**values, "jobs": values.get("jobs")},
        progress or (lambda phase, done, total: None),
    )  # fmt: skip
    del extraction
    stats: dict[str, LanguageStats] = {}
    for f in files:
        s = stats.setdefault(f.language or "other", LanguageStats())
        s.files += 1
        s.bytes += f.size
    for f in picked:
        s = stats[f.language or "other"]
        s.sampled_files += 1
        s.sampled_bytes += f.size
    lang_of = {f.path: f.language or "other" for f in picked}
    for c in chunks:
        stats[lang_of.get(c.path, "other")].sampled_chunks += 1
    for s in stats.values():
        if exact or s.sampled_bytes == 0:
            s.chunks = s.sampled_chunks if exact else round(s.bytes / 2000)  # ~2 kB a chunk
        else:
            s.chunks = round(s.sampled_chunks * s.bytes / s.sampled_bytes)
    total_chunks = sum(s.chunks for s in stats.values())
    examples: dict[str, list[str]] = {}
    for path, reason in walked.skipped_files:
        mine = examples.setdefault(reason, [])
        if len(mine) < 5:
            mine.append(path)
    report = DryRunReport(
        root=str(root),
        files=len(files),
        bytes=sum(f.size for f in files),
        chunks=total_chunks,
        exact=exact,
        sampled_files=len(picked),
        languages={k: asdict(v) for k, v in sorted(stats.items(), key=lambda kv: -kv[1].bytes)},
        largest_dirs=largest_dirs(files),
        skipped=dict(sorted(walked.skipped.items())),
        skipped_examples=examples,
    )
    if semantic and chunks:
        scale = total_chunks / len(chunks)
        report.embedding = _semantic_estimate(root, values, picked, chunks, scale, price_per_mtok)
    report.not_sent = secret_files(root, files)
    report.seconds = round(time.perf_counter() - started, 2)
    return report


def secret_files(root: Path, files: list[SourceFile]) -> list[dict[str, str]]:
    """The files kept out of remote embedding (every file, not the sample), with why."""
    from maguyva.modalities.semantic.embed.secrets import file_secret_reason
    from maguyva.repo.reader import read_text

    out = []
    for f in files:
        try:
            text: str | None = read_text(root, f.path)
        except OSError:
            text = None
        reason = file_secret_reason(f.path, text)
        if reason:
            out.append({"path": f.path, "reason": reason})
    return out


NOT_SENT_SHOWN = 20


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def format_report(report: DryRunReport) -> str:
    """The human-readable form `maguyva index --dry-run` prints."""
    how = "exact" if report.exact else f"estimated from {report.sampled_files} sampled files"
    lines = [
        f"dry run of {report.root} (nothing written; {report.seconds:.1f}s)",
        f"  files   {report.files:,}  ({_size(report.bytes)})",
        f"  chunks  {report.chunks:,}  ({how})",
    ]
    emb = report.embedding
    if emb:
        lines.append(f"  embed   {emb.get('to_embed', 0):,} chunks to embed, "
                     f"{emb.get('cached', 0):,} cached; "
                     f"{emb.get('tokens_to_send', 0):,} tokens with the configured provider")  # fmt: skip
        dup = emb.get("duplicates") or {}
        if any(dup.values()):
            lines.append(f"  dedup   {dup.get('texts', 0):,} chunks and {dup.get('heads', 0):,} "
                         "heads not embedded: the model sees another chunk's text")  # fmt: skip
        local = emb.get("local_time")
        if local:
            split = (f"{local['bodies']:,} bodies + {local['heads']:,} heads, heads first: the "
                     "progress counts both" if local["heads"] and local["bodies"] else
                     f"{local['heads']:,} heads" if local["heads"] else
                     f"{local['bodies']:,} chunks")  # fmt: skip
            lines.append(
                f"  local   {local['texts']:,} texts ({split}): ~{local['cpu_s']:,.0f} CPU-s, "
                f"~{_duration(local['wall_s'])} on {local['cores']} idle core(s) at "
                f"{LOCAL_FULL_PER_CPU_S:g} chunks / {LOCAL_HEADS_PER_CPU_S:g} heads per CPU-s; "
                "text, structural and graph answer before it"
            )
        remote = emb.get("remote", {})
        if remote:
            lines.append(
                f"  remote  {remote['model']} at ${remote['usd_per_mtok']}/M tokens: "
                f"full ~{remote['tokens_full']:,} tokens = ${remote['usd_full']:,.2f}; "
                f"heads first ~{remote['tokens_heads']:,} tokens = "
                f"${remote['usd_heads_first_phase']:,.2f}"
            )
    lines.append("  largest directories:")
    for d in report.largest_dirs:
        lines.append(f"    {d['dir']:<32} {d['files']:>7,} files  {_size(d['bytes']):>10}")
    if report.not_sent:
        lines.append(f"  never sent to a remote embedder ({len(report.not_sent):,} files):")
        for entry in report.not_sent[:NOT_SENT_SHOWN]:
            lines.append(f"    {entry['path']:<40} {entry['reason']}")
        if len(report.not_sent) > NOT_SENT_SHOWN:
            lines.append(
                f"    ... {len(report.not_sent) - NOT_SENT_SHOWN:,} more (--json lists all)"
            )
    if report.skipped:
        lines.append("  skipped:")
        for reason, count in report.skipped.items():
            shown = ", ".join(report.skipped_examples.get(reason, [])[:3])
            lines.append(f"    {reason:<18} {count:>6,}  e.g. {shown}")
    return "\n".join(lines)


__all__ = ["VOYAGE_CODE_3_USD_PER_MTOK", "DryRunReport", "dry_run", "format_report"]
