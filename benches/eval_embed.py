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
import ast
import inspect
import json
import random
import re
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from maguyva import _core
from maguyva.modalities.semantic.embed import MiniLMProvider
from maguyva.modalities.semantic.modality import head_text
from maguyva.model import Chunk

STDLIB = Path(sysconfig.get_paths()["stdlib"])
SKIP = {"test", "tests", "idlelib", "lib2to3", "site-packages", "ensurepip", "turtledemo"}


@dataclass
class Pair:
    query: str
    chunk: Chunk


def first_sentence(doc: str) -> str:
    para = inspect.cleandoc(doc).split("\n\n")[0].replace("\n", " ").strip()
    m = re.search(r"(?<=[.!?])\s", para)
    return para[: m.start()] if m else para


def pairs(n: int) -> list[Pair]:
    pool: list[Pair] = []
    for path in sorted(STDLIB.rglob("*.py")):
        rel = path.relative_to(STDLIB)
        if SKIP & set(rel.parts):
            continue
        try:
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        lines = source.splitlines()
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            doc = ast.get_docstring(node)
            if not doc or not isinstance(node.body[0], ast.Expr):
                continue
            query = first_sentence(doc)
            if len(query.split()) < 4 or ">>>" in query:
                continue
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            d0, d1 = node.body[0].lineno, node.body[0].end_lineno or node.body[0].lineno
            body = lines[start - 1 : d0 - 1] + lines[d1 : node.end_lineno]
            if sum(1 for x in body if x.strip()) < 3:
                continue
            sig = lines[node.lineno - 1].strip()
            header = f"{rel}: function {node.name}\n{sig}"
            chunk = Chunk(id=f"{rel}:{node.lineno}", path=str(rel), start_line=start,
                          end_line=node.end_lineno or start, kind="function", name=node.name,
                          header=header, text="\n".join(body))  # fmt: skip
            pool.append(Pair(query, chunk))
    counts: dict[str, int] = {}
    for p in pool:
        counts[p.query] = counts.get(p.query, 0) + 1
    pool = [p for p in pool if counts[p.query] == 1]
    return random.Random(0).sample(pool, n)


def mrr(ranked: list[list[int]]) -> float:
    total = 0.0
    for i, row in enumerate(ranked):
        if i in row[:10]:
            total += 1.0 / (row.index(i) + 1)
    return total / len(ranked)


def evaluate(docs: list[str], queries: list[str], provider: MiniLMProvider) -> dict[str, Any]:
    provider.embed(["warm up"], "document")
    c0, w0 = time.process_time(), time.perf_counter()
    d = provider.embed(docs, "document")
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
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
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--speed", action="store_true", help="also compare session options")
    ap.add_argument("--json")
    args = ap.parse_args()
    data = pairs(args.n)
    queries = [p.query for p in data]
    full = [f"{p.chunk.header}\n{p.chunk.text}" for p in data]
    plain = [p.chunk.text for p in data]
    heads = [head_text(p.chunk) for p in data]
    configs: list[tuple[str, list[str], dict[str, Any]]] = [
        ("plain source, 256", plain, {"max_length": 256}),
        ("chunk, 256", full, {"max_length": 256}),
        ("chunk, 128", full, {"max_length": 128}),
        ("head only (header + first lines)", heads, {"max_length": 128}),
    ]
    if args.speed:
        configs += [
            ("chunk, 256, 2 threads", full, {"max_length": 256, "threads": 2}),
            ("chunk, 256, batch 4", full, {"max_length": 256, "batch_size": 4}),
            ("chunk, 256, batch 64", full, {"max_length": 256, "batch_size": 64}),
            ("chunk, 256, no mem arena", full,
             {"max_length": 256, "session_options": {"enable_cpu_mem_arena": False}}),
        ]  # fmt: skip
    results = []
    for name, docs, opts in configs:
        res = evaluate(docs, queries, MiniLMProvider(**opts))
        res["config"] = name
        results.append(res)
        print(json.dumps(res), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
