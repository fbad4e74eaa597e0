"""Index a large repository (the Linux kernel) once and record what a monorepo user asks:
wall time and peak memory per phase, index size, query latency per intent, and what the local
embedder's throughput means for a corpus this size.

    nice -n 10 /usr/bin/time -v .venv/bin/python benches/kernel_index.py \
        /work/corpora/linux-source-6.1 --index-dir /tmp/scale-kidx --out /tmp/kernel_scale.json

The build is the same call `maguyva index` makes (`indexer.build_index`), run in-process so
that per-phase memory can be attributed: a sampler thread reads the proportional set size
(PSS) of this process and its extraction workers from /proc every 100 ms; phase boundaries
are the indexer's progress events (each phase starts with `(phase, 0, total)`). Semantic is not built here (about 5 CPU-hours locally): a sample of the
corpus's real chunks is embedded instead and the throughput extrapolated, full text and heads.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from maguyva.api import Index
from maguyva.build.indexer import build_index
from maguyva.build.memory import RssSampler

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the corpus is test code
from support.synthetic import generated_corpus as generate_corpus

GIB = 1 << 30
MIB = 1 << 20

QUERIES: dict[str, list[str]] = {
    "exact_match": ['"ECONNREFUSED"', '"scheduling while atomic"', '"no such literal zq9xk"'],
    "find_definition": [
        "where is schedule_timeout defined",
        "kmalloc_array",
        "struct task_struct",
    ],
    "find_references": ["who calls mutex_lock_interruptible", "callers of kfree_skb"],
    "impact_analysis": ["what depends on copy_from_user", "blast radius of list_del_rcu"],
    "understand_code": [
        "how does the scheduler pick the next task",
        "explain the page cache writeback",
    ],
    "find_similar": [
        "code like this:\nspin_lock_irqsave(&lock, flags);\nlist_add(&n->node, "
        "&head);\nspin_unlock_irqrestore(&lock, flags);"
    ],
}


class PhaseClock:
    """Progress callback that timestamps the first event of each phase: the indexer reports
    `(phase, 0, total)` when a phase starts, and phases run one after the other."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.starts: dict[str, float] = {}

    def __call__(self, phase: str, done: int, total: int) -> None:
        self.starts.setdefault(phase, time.perf_counter() - self.t0)

    def windows(self, end: float) -> list[tuple[str, float, float]]:
        """(phase, start, end) for each phase, a phase ending where the next one starts
        (`embed` is reported inside `semantic` and folded into it)."""
        marks = sorted((t, name) for name, t in self.starts.items() if name != "embed")
        out = []
        for i, (t, name) in enumerate(marks):
            stop = marks[i + 1][0] if i + 1 < len(marks) else end
            out.append((name, t, stop))
        return out


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def measure_queries(index: Index, runs: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for intent, queries in QUERIES.items():
        for query in queries:
            response = index.search(query)  # warm-up (loads the modalities once)
            times = []
            for _ in range(runs):
                started = time.perf_counter()
                response = index.search(query)
                times.append((time.perf_counter() - started) * 1000)
            out[query] = {
                "expected_intent": intent,
                "intent": response.intent,
                "strategy": response.fusion_strategy,
                "modalities": response.modalities,
                "results": len(response.results),
                "top": response.results[0].path if response.results else None,
                "p50_ms": round(statistics.median(times), 2),
                "p99_ms": round(percentile(times, 0.99), 2),
                "unavailable": sorted(response.unavailable),
            }
            print(f"  {intent:<16} {query[:40]!r:<44} p50 {out[query]['p50_ms']:8.2f} ms  "
                  f"p99 {out[query]['p99_ms']:8.2f} ms  {len(response.results)} results",
                  flush=True)  # fmt: skip
    # literal search alone (the text modality's grep, as `maguyva search -F` uses it)
    for literal in ("ECONNREFUSED", "scheduling while atomic", "zq9xk_absent"):
        index.grep(literal)
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            hits = index.grep(literal)
            times.append((time.perf_counter() - started) * 1000)
        out[f"grep:{literal}"] = {
            "results": len(hits),
            "p50_ms": round(statistics.median(times), 2),
            "p99_ms": round(percentile(times, 0.99), 2),
        }
        print(f"  grep {literal!r:<40} p50 {out[f'grep:{literal}']['p50_ms']:8.2f} ms", flush=True)
    return out


def embed_sample(index: Index, sample: int, total_chunks: int) -> dict[str, Any]:
    """Embed `sample` real chunks (full text, then heads) with the local provider on one
    thread and extrapolate to the whole corpus."""
    from maguyva.modalities.semantic.embed import MiniLMProvider
    from maguyva.modalities.semantic.texts import embed_text, head_text
    from maguyva.model import Chunk
    from maguyva.support import sealed

    store = index.engine().generation.path
    parts = sorted((store / "chunks").glob("*.jsonl"))
    counts = [sealed.read_sealed(p, "chunks").count(b"\n") for p in parts]
    rng = random.Random(7)
    wanted = sorted(rng.sample(range(sum(counts)), min(sample, sum(counts))))
    picked, base, i = [], 0, 0
    for part, count in zip(parts, counts, strict=True):  # decode only the sampled lines
        lines = sealed.read_sealed(part, "chunks").split(b"\n")
        while i < len(wanted) and wanted[i] < base + count:
            picked.append(json.loads(lines[wanted[i] - base]))
            i += 1
        base += count
    objs = [Chunk(**c) for c in picked]
    provider = MiniLMProvider(threads=1)
    provider.embed(["warm up"], "document")
    out: dict[str, Any] = {"sample": len(objs), "corpus_chunks": total_chunks}
    for label, texts in (
        ("full", [embed_text(c, provider.identity) for c in objs]),
        ("heads", [head_text(c) for c in objs]),
    ):
        tokens = provider.count_tokens(texts)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        provider.embed(texts, "document")
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        per_cpu_s = len(texts) / cpu
        out[label] = {
            "tokens_per_chunk": round(tokens / len(texts), 1),
            "cpu_s": round(cpu, 2),
            "wall_s": round(wall, 2),
            "chunks_per_cpu_s": round(per_cpu_s, 1),
            "chunks_per_wall_s": round(len(texts) / wall, 1),
            "corpus_cpu_hours": round(total_chunks / per_cpu_s / 3600, 2),
        }
        print(f"  embed {label}: {out[label]}", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--index-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--modalities", default="text,structural,graph")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--embed-sample", type=int, default=500)
    parser.add_argument("--keep", action="store_true", help="reuse an existing index")
    parser.add_argument("--memory", help="the `memory` budget (sets the extraction processes)")
    parser.add_argument("--jobs", type=int, help="extraction processes (default: all cores)")
    parser.add_argument("--interval", type=float, default=0.1,
                        help="memory sampling period, s (reading PSS of a large process costs "
                        "system CPU time, counted in the phases' CPU)")  # fmt: skip
    parser.add_argument("--generate", type=int, metavar="MODULES",
                        help="first write the synthetic corpus of MODULES modules at ROOT")  # fmt: skip
    args = parser.parse_args(argv)
    if args.generate:
        if args.root.exists():
            shutil.rmtree(args.root)
        generate_corpus(args.root, args.generate)
    if args.index_dir.exists() and not args.keep:
        shutil.rmtree(args.index_dir)
    config: dict[str, Any] = {
        "index_dir": str(args.index_dir),
        "modalities": args.modalities.split(","),
    }
    if args.memory:
        config["memory"] = args.memory
    if args.jobs:
        config["jobs"] = args.jobs
    clock = PhaseClock()
    load_before = os.getloadavg()
    print(f"building {args.root} -> {args.index_dir} ({args.modalities}); load average "
          f"{load_before[0]:.1f}", flush=True)  # fmt: skip
    with RssSampler(interval_s=args.interval) as sampler:
        sampler.started = clock.t0
        summary = build_index(args.root, config=config, progress=clock)
        end = time.perf_counter() - clock.t0
    load_after = os.getloadavg()
    phases = [
        {"phase": name, "seconds": round(b - a, 2),
         "cpu_s": round(sampler.cpu_between(a, b), 1),
         "peak_pss_mib": round(sampler.peak_between(a, b) / MIB)}
        for name, a, b in clock.windows(end)
    ]  # fmt: skip
    for p in phases:
        print(f"  {p['phase']:<12} {p['seconds']:8.2f} s  cpu {p['cpu_s']:8.1f} s  "
              f"peak {p['peak_pss_mib']:6d} MiB")  # fmt: skip
    gen = args.index_dir / f"gen-{summary.generation:06d}"
    sizes = {d.name: dir_size(d) for d in gen.iterdir() if d.is_dir()}
    sizes["total"] = dir_size(gen)
    languages = Index.open(args.root, index_dir=args.index_dir).engine().generation.manifest
    languages = languages.get("extract", {}).get("languages", {})
    corpus_bytes = sum(stats.get("bytes", 0) for stats in languages.values())
    result: dict[str, Any] = {
        "root": str(args.root),
        "files": summary.files,
        "chunks": summary.chunks,
        "skipped": summary.skipped,
        "wall_s": round(end, 2),
        "peak_pss_mib": round(sampler.peak / MIB),
        "maxrss_self_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "load_average": {"before": load_before, "after": load_after},
        "maxrss_children_mib": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
        "phases": phases,
        "timings_s": summary.timings_s,
        "modalities": {
            k: {"built": v.get("built"), "reason": v.get("reason")}
            for k, v in summary.modalities.items()
        },
        "index_bytes": sizes,
        "corpus_bytes": corpus_bytes,
    }
    print(f"wall {end:.1f} s, peak tree PSS {result['peak_pss_mib']} MiB (own max RSS "
          f"{result['maxrss_self_mib']} MiB), "
          f"index {sizes['total'] / MIB:.0f} MiB", flush=True)  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    index = Index.open(args.root, index_dir=args.index_dir)
    if args.runs:
        print("queries:", flush=True)
        result["queries"] = measure_queries(index, args.runs)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    if args.embed_sample:
        print("embedding sample:", flush=True)
        result["embedding"] = embed_sample(index, args.embed_sample, summary.chunks)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
