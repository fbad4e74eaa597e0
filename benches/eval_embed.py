"""Quality and cost of the local embedder on real code: docstring -> function retrieval.

The standard-library task of the shared evaluation: every documented `def` of the CPython
standard library (tests, idlelib, lib2to3, site-packages, ensurepip, turtledemo skipped); the
query is the docstring's first sentence (>= 4 words, no `>>>`), the document is the function
with its docstring removed (>= 3 non-blank lines); duplicate queries dropped; `--n` pairs drawn
with `random.Random(0)` from the pool sorted by (file, line). One relevant document per query.

Each configuration embeds the documents the way the semantic modality does (`header + "\\n" +
text`, header `"<path>: function <name>\\n<def line>"`) and reports MRR@10 for float cosine,
sign bits + Hamming (Rust `hamming_topk`) and Hamming top-100 rescored with floats, plus the
document-embedding cost: process CPU seconds (robust to other load on a shared machine) and
wall seconds. Run:

    .venv/bin/python benches/eval_embed.py --n 300 [--speed [--only "1 thread"]] [--repeat 3]
    .venv/bin/python benches/eval_embed.py --corpus /tmp/django-5.2.8 [--sample 400 --threads 2]
        [--rows 4 8 16 32]
    .venv/bin/python benches/eval_embed.py --n 1000 --head-windows 128 96 80 64   # heads only
    .venv/bin/python benches/eval_embed.py --n 1000 --head-slacks 0 80   # heads as planned
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
from docstring_task import STDLIB, STDLIB_SKIP, document, function_pairs, mrr, unique

from maguyva import _core
from maguyva.modalities.semantic.embed import MiniLMProvider
from maguyva.modalities.semantic.embed.hardware import encoder_macs_per_token, read_cpu
from maguyva.modalities.semantic.embed.local import DIM, FFN, LAYERS
from maguyva.modalities.semantic.texts import head_text
from maguyva.model import Chunk


def pairs(n: int) -> list[tuple[str, Chunk]]:
    """`n` pairs of the standard-library task, drawn with `random.Random(0)`."""
    return random.Random(0).sample(unique(function_pairs(STDLIB, STDLIB_SKIP)), n)


def floor(tokens: int, texts: int) -> dict[str, Any]:
    """The compute floor of embedding `texts` texts of `tokens` tokens in all: the encoder's
    int8 multiply-accumulates over the machine's peak int8 rate per core (`/proc/cpuinfo`)."""
    cpu = read_cpu()
    seq = tokens / max(texts, 1)
    macs = tokens * encoder_macs_per_token(LAYERS, DIM, FFN, seq)
    out: dict[str, Any] = {"cpu": cpu.model, "mhz": cpu.mhz, "int8": list(cpu.int8),
                           "gmacs": round(macs / 1e9, 1)}  # fmt: skip
    for isa in cpu.int8:
        out[f"floor_chunks_per_cpu_s_{isa}"] = round(texts / (macs / cpu.peak_macs(isa)), 1)
    return out


def _cpu_s() -> float:
    """CPU seconds of this process and its threads (onnxruntime's and the tokenizer's)."""
    return time.process_time()


def evaluate(
    docs: list[str], queries: list[str], provider: MiniLMProvider, repeat: int = 1
) -> dict[str, Any]:
    """Quality and cost of `provider` on the task; the cost is the median of `repeat` runs."""
    provider.embed(["warm up", "warm up again"], "document")
    cpus, walls = [], []
    for _ in range(max(1, repeat)):
        c0, w0 = _cpu_s(), time.perf_counter()
        d = provider.embed(docs, "document")
        cpus.append(_cpu_s() - c0)
        walls.append(time.perf_counter() - w0)
    cpu, wall = float(np.median(cpus)), float(np.median(walls))
    q = provider.embed(queries, "query")
    assert d.floats is not None and q.floats is not None
    sims = q.floats @ d.floats.T
    float_rank = [list(np.argsort(-s, kind="stable")[:10]) for s in sims]
    ids, _ = _core.hamming_topk(q.codes, d.codes, 100)
    bin_rank = [list(r[:10]) for r in ids]
    resc = [sorted(r, key=lambda j, i=i: -sims[i, j])[:10] for i, r in enumerate(ids)]
    return {
        "mrr_float": round(mrr(float_rank), 3),
        "mrr_binary": round(mrr(bin_rank), 3),
        "mrr_rescore100": round(mrr(resc), 3),
        "tokens": d.tokens,
        "cpu_s": round(cpu, 2),
        "cpu_s_runs": [round(c, 2) for c in cpus],
        "wall_s": round(wall, 2),
        "chunks_per_cpu_s": round(len(docs) / cpu, 1),
        "chunks_per_s": round(len(docs) / wall, 1),
        **floor(d.tokens, len(docs)),
    }


def corpus_cost(root: Path, sample: int, threads: int, rows: list[int]) -> dict[str, Any]:
    """Chunk counts of a whole source tree (the build's extraction) and the default embedder's
    rate on a seeded sample of its own chunks, heads and full texts (the texts a build embeds),
    extrapolated to every chunk: CPU-seconds, and wall seconds on `threads` threads; beside
    each, the compute floor (`floor`). `rows`: also the heads at that many texts per run
    (cost only: activation scales are per run, so those vectors depend on their batch mates)."""
    from maguyva.config import effective_config
    from maguyva.modalities.semantic.texts import plan_chunk
    from maguyva.modalities.structural.modality import extract_repository
    from maguyva.repo.walk import walk_repository

    values = effective_config(root, {}).values
    files = walk_repository(root, values).files
    _, chunks, _ = extract_repository(root, files, values, lambda phase, done, total: None)
    provider = MiniLMProvider(threads=threads)
    planned = [plan_chunk(c, provider.identity) for c in chunks]
    picked = random.Random(0).sample(planned, min(sample, len(planned)))
    provider.embed(["warm up", "warm up again"], "document")
    out: dict[str, Any] = {"files": len(files), "chunks": len(chunks), "threads": threads,
                           "sample": len(picked)}  # fmt: skip
    runs = [("head", provider), ("text", provider)]
    runs += [
        (f"head, {n} rows per run", MiniLMProvider(threads=threads, batch_size=n)) for n in rows
    ]
    for kind, embedder in runs:
        texts = [getattr(p, kind.split(",")[0]) for p in picked]
        embedder.embed(["warm up", "warm up again"], "document")
        c0, w0 = _cpu_s(), time.perf_counter()
        tokens = embedder.embed(texts, "document").tokens
        cpu, wall = _cpu_s() - c0, time.perf_counter() - w0
        rate, wall_rate = len(texts) / cpu, len(texts) / wall
        cost = floor(tokens, len(texts))
        out[kind] = {"per_cpu_s": round(rate, 1), "per_wall_s": round(wall_rate, 1),
                     "all_cpu_s": round(len(chunks) / rate), "all_wall_s": round(len(chunks) / wall_rate),
                     "tokens": tokens, **{k: v for k, v in cost.items() if k.startswith("floor")}}  # fmt: skip
    out["cpu"] = read_cpu().model
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--speed", action="store_true", help="also compare session options")
    ap.add_argument("--only", help="run only the configurations whose name contains this")
    ap.add_argument("--repeat", type=int, default=1, help="embed the documents N times (median)")
    ap.add_argument("--corpus", type=Path, help="instead: the cost of embedding this tree")
    ap.add_argument("--sample", type=int, default=400, help="chunks of --corpus to embed")
    ap.add_argument("--threads", type=int, default=2, help="intra-op threads for --corpus")
    ap.add_argument(
        "--rows", type=int, nargs="*", default=[], help="--corpus: heads at N rows per run"
    )
    ap.add_argument(
        "--head-windows", type=int, nargs="*", default=[],
        help="instead: the heads (as a build makes them) at each of these token windows",
    )  # fmt: skip
    ap.add_argument(
        "--head-slacks", type=int, nargs="*", default=[],
        help="instead: the heads phase's texts at each `texts.HEAD_SLACK` (0: the rule before)",
    )  # fmt: skip
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.corpus:
        print(
            json.dumps(corpus_cost(args.corpus, args.sample, args.threads, args.rows)), flush=True
        )
        return
    data = pairs(args.n)
    queries = [q for q, _ in data]
    full = [document(c) for _, c in data]
    plain = [c.text for _, c in data]
    heads = [head_text(c) for _, c in data]
    configs: list[tuple[str, list[str], dict[str, Any]]] = [
        (f"head only, window {w}", heads, {"max_length": w}) for w in args.head_windows
    ]
    # a document at most `s` characters longer than its head is its own head (`texts.own_head`)
    configs += [
        (f"head as planned, slack {s}", [d if len(d) - len(h) <= s else h
                                         for d, h in zip(full, heads, strict=True)], {})
        for s in args.head_slacks
    ] + ([("chunk, 128 (full coverage)", full, {})] if args.head_slacks else [])  # fmt: skip
    if not args.head_windows and not args.head_slacks:
        configs += [
            ("plain source, 256", plain, {"max_length": 256}),
            ("chunk, 256", full, {"max_length": 256}),
            ("chunk, 128", full, {"max_length": 128}),
            ("head only (header + first lines)", heads, {"max_length": 128}),
        ]
    if args.speed:
        before = {"graph": "weight-only", "batch_size": 64}  # the default until issue 17
        spin = {"session.intra_op.allow_spinning": "1"}
        configs += [
            ("speed: 1 thread, weight-only graph, 64 rows per run (before)", full,
             {"threads": 1, **before}),
            ("speed: 1 thread, weight-only graph, 1 row per run", full,
             {"threads": 1, "graph": "weight-only"}),
            ("speed: 1 thread, int8 graph, 1 row per run (default)", full, {"threads": 1}),
            ("speed: 1 thread, int8 graph, 4 rows per run", full, {"threads": 1, "batch_size": 4}),
            ("speed: 1 thread, int8 graph, 16 rows per run", full,
             {"threads": 1, "batch_size": 16}),
            ("speed: 1 thread, int8 graph, 1 row, window 256", full,
             {"threads": 1, "max_length": 256}),
            ("speed: 2 threads, int8 graph, 1 row per run (default)", full, {"threads": 2}),
            ("speed: 2 threads, int8 graph, 1 row per run, intra-op threads", full,
             {"threads": 2, "concurrent_runs": False}),
            ("speed: 2 threads, int8 graph, 1 row per run, intra-op threads, spinning", full,
             {"threads": 2, "concurrent_runs": False, "session_options": spin}),
            ("speed: 2 threads, weight-only graph, 64 rows per run, intra-op (before)", full,
             {"threads": 2, "concurrent_runs": False, **before}),
        ]  # fmt: skip
    results = []
    for name, docs, opts in configs:
        if args.only and args.only not in name:
            continue
        res = evaluate(docs, queries, MiniLMProvider(**opts), args.repeat)
        res["config"] = name
        results.append(res)
        print(json.dumps(res), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
