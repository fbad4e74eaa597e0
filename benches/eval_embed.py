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

    .venv/bin/python benches/eval_embed.py --n 300 [--speed]
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


def evaluate(docs: list[str], queries: list[str], provider: MiniLMProvider) -> dict[str, Any]:
    provider.embed(["warm up"], "document")
    c0, w0 = _cpu_s(), time.perf_counter()
    d = provider.embed(docs, "document")
    cpu, wall = _cpu_s() - c0, time.perf_counter() - w0
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
        "wall_s": round(wall, 2),
        "chunks_per_cpu_s": round(len(docs) / cpu, 1),
        "chunks_per_s": round(len(docs) / wall, 1),
        **floor(d.tokens, len(docs)),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--speed", action="store_true", help="also compare session options")
    ap.add_argument("--only", help="run only the configurations whose name contains this")
    ap.add_argument("--json")
    args = ap.parse_args()
    data = pairs(args.n)
    queries = [q for q, _ in data]
    full = [document(c) for _, c in data]
    plain = [c.text for _, c in data]
    heads = [head_text(c) for _, c in data]
    configs: list[tuple[str, list[str], dict[str, Any]]] = [
        ("plain source, 256", plain, {"max_length": 256}),
        ("chunk, 256", full, {"max_length": 256}),
        ("chunk, 128", full, {"max_length": 128}),
        ("head only (header + first lines)", heads, {"max_length": 128}),
    ]
    if args.speed:
        no_spin = {"session.intra_op.allow_spinning": "0"}
        configs += [
            ("speed: chunk, 128, 1 thread", full, {"threads": 1}),
            ("speed: chunk, 128, 2 threads", full, {"threads": 2}),
            ("speed: chunk, 128, 2 threads, no spinning", full,
             {"threads": 2, "session_options": no_spin}),
            ("speed: chunk, 128, 1 thread, batch 4", full, {"threads": 1, "batch_size": 4}),
            ("speed: chunk, 128, 1 thread, 8192 tokens per run", full,
             {"threads": 1, "batch_tokens": 8192, "batch_size": 256}),
            ("speed: chunk, 128, 1 thread, no mem arena", full,
             {"threads": 1, "session_options": {"enable_cpu_mem_arena": False}}),
        ]  # fmt: skip
    results = []
    for name, docs, opts in configs:
        if args.only and args.only not in name:
            continue
        res = evaluate(docs, queries, MiniLMProvider(**opts))
        res["config"] = name
        results.append(res)
        print(json.dumps(res), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
