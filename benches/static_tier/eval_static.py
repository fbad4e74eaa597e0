"""Static tier vs MiniLM vs BM25 on held-out docstring -> function retrieval, side by side.

Corpus: unpacked PyPI sdists that the table was NOT fitted on (distill.py fits on the
standard library and `requests`); test and docs folders skipped. For every documented
`def` the query is the docstring's first sentence (>= 4 words, no `>>>`), the document the
function with its docstring removed (>= 3 non-blank lines), embedded as the semantic modality
does (`"<path>: function <name>\\n<def line>"` + `"\\n"` + body); duplicate queries dropped;
every other function of the corpus is a distractor. MRR@10 for:

- MiniLM float (cosine) / binary (sign bits, Rust Hamming top-k);
- static float / binary (query and documents static);
- static documents with a MiniLM query (the query is one cheap transformer call);
- mixed: a random 70 % of the documents (seed 0) static, the rest MiniLM, one index;
- BM25 (`bm25s`, identifiers split on snake_case/camelCase, English stop words, no stemmer).

Throughput: static `embed` of `--speed N` standard-library chunks, process CPU seconds
(tokenizer threads included). Run:

    .venv/bin/python benches/static_tier/eval_static.py \\
        /tmp/statictier/sdists/attrs-24.2.0 /tmp/statictier/sdists/click-8.1.7 --speed 5000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

from maguyva.modalities.semantic.embed import Embeddings, MiniLMProvider, binarize
from maguyva.modalities.semantic.embed.static import StaticProvider

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))
from distill import STDLIB, chunks_of, python_files
from docstring_task import document, float_ranks, function_pairs, hamming_ranks, unique
from docstring_task import mrr as exact_mrr

SKIP = frozenset({"test", "tests", "docs", "doc", "examples", "bench", "benchmarks"})


def pairs(roots: list[Path]) -> tuple[list[str], list[str]]:
    """(queries, documents), query i answered by document i (`docstring_task`)."""
    found = [p for root in roots for p in function_pairs(root, SKIP, f"{root.name}/")]
    kept = unique(found)
    return [q for q, _ in kept], [document(c) for _, c in kept]


def mrr(ranked: list[list[int]]) -> float:
    return round(exact_mrr(ranked), 3)


def by_float(q: np.ndarray, d: np.ndarray) -> float:
    return mrr(float_ranks(q, d))


def by_hamming(q: np.ndarray, d: np.ndarray) -> float:
    return mrr(hamming_ranks(q, d))


SPLIT = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def code_tokens(text: str) -> list[str]:
    return [t.lower() for t in SPLIT.findall(text)]


def bm25(queries: list[str], docs: list[str]) -> list[list[int]]:
    """BM25 top-100 document ids per query."""
    import bm25s

    stop = set(bm25s.stopwords.STOPWORDS_EN)
    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(t, len(vocab)) for t in code_tokens(d) if t not in stop] for d in docs]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenization.Tokenized(ids=ids, vocab=vocab), show_progress=False)
    ranked = []
    for q in queries:
        words = [t for t in code_tokens(q) if t not in stop and t in vocab]
        scores = retriever.get_scores(words) if words else np.zeros(len(docs))
        ranked.append([int(i) for i in np.argsort(-scores, kind="stable")[:100]])
    return ranked


def rrf(
    *rankings: list[list[int]], weights: tuple[float, ...] = (), k: float = 60.0
) -> list[list[int]]:
    """Weighted reciprocal-rank fusion (the shape of the engine's fusion; equal by default)."""
    weights = weights or (1.0,) * len(rankings)
    fused = []
    for rows in zip(*rankings, strict=True):
        score: dict[int, float] = {}
        for w, row in zip(weights, rows, strict=True):
            for rank, doc in enumerate(row):
                score[doc] = score.get(doc, 0.0) + w / (k + rank + 1)
        fused.append(sorted(score, key=lambda d: (-score[d], d))[:10])
    return fused


def cached(provider: MiniLMProvider, texts: list[str], cache: Path) -> Embeddings:
    """MiniLM vectors of `texts`, kept in `cache` (the transformer is the slow part; the
    static tier is always recomputed)."""
    key = hashlib.sha256("\0".join(texts).encode()).hexdigest()[:16]
    path = cache / f"minilm-{key}.npy"
    if path.exists():
        floats = np.load(path)
    else:
        floats = provider.embed(texts, "document").floats
        assert floats is not None
        cache.mkdir(parents=True, exist_ok=True)
        np.save(path, floats)
    return Embeddings(binarize(floats), floats)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpus", nargs="+", type=Path, help="unpacked sdists (held out)")
    ap.add_argument("--speed", type=int, default=0, help="stdlib chunks for throughput")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/statictier/cache"))
    ap.add_argument("--window", type=int, default=128, help="static tier token window")
    ap.add_argument("--mixed", type=float, default=0.7, help="share of static documents")
    args = ap.parse_args()
    queries, docs = pairs(args.corpus)
    print(f"{len(queries)} pairs from {', '.join(p.name for p in args.corpus)}", flush=True)
    minilm, static = MiniLMProvider(), StaticProvider(max_length=args.window)
    mq, md = cached(minilm, queries, args.cache), cached(minilm, docs, args.cache)
    sq, sd = static.embed(queries, "query"), static.embed(docs, "document")
    assert mq.floats is not None and md.floats is not None
    assert sq.floats is not None and sd.floats is not None
    rng = np.random.default_rng(0)
    use_static = rng.random(len(docs)) < args.mixed
    xf = np.where(use_static[:, None], sd.floats, md.floats)
    xc = np.where(use_static[:, None], sd.codes, md.codes)
    rows = {
        "MiniLM": (by_float(mq.floats, md.floats), by_hamming(mq.codes, md.codes)),
        "static": (by_float(sq.floats, sd.floats), by_hamming(sq.codes, sd.codes)),
        "static docs, MiniLM query": (
            by_float(mq.floats, sd.floats), by_hamming(mq.codes, sd.codes)),
        f"mixed {args.mixed:.0%} static, MiniLM query": (
            by_float(mq.floats, xf), by_hamming(mq.codes, xc)),
        f"mixed {args.mixed:.0%} static, static query": (
            by_float(sq.floats, xf), by_hamming(sq.codes, xc)),
    }  # fmt: skip
    lexical = bm25(queries, docs)
    rows["BM25"] = (mrr(lexical), None)
    rows["BM25 + static binary (RRF)"] = (
        None,
        mrr(rrf(lexical, hamming_ranks(sq.codes, sd.codes, 100))),
    )
    rows["BM25 + static binary at weight 0.5 (RRF)"] = (
        None, mrr(rrf(lexical, hamming_ranks(sq.codes, sd.codes, 100), weights=(1.0, 0.5))))  # fmt: skip
    rows["BM25 + MiniLM binary (RRF)"] = (
        None,
        mrr(rrf(lexical, hamming_ranks(mq.codes, md.codes, 100))),
    )
    rows["BM25 + mixed 70% binary, MiniLM query (RRF)"] = (
        None, mrr(rrf(lexical, hamming_ranks(mq.codes, xc, 100))))  # fmt: skip
    print("| candidate | MRR@10 float | MRR@10 binary |\n|---|---|---|")
    for name, (f, b) in rows.items():
        print(
            f"| {name} | {'-' if f is None else f'{f:.3f}'} | {'-' if b is None else f'{b:.3f}'} |"
        )
    if args.speed:
        texts: list[str] = []
        for path in python_files(STDLIB):
            texts += chunks_of(path, STDLIB)[0]
        texts = random.Random(0).sample(texts, min(args.speed, len(texts)))
        for window in (128, 512):
            provider = StaticProvider(max_length=window)
            provider.embed(["warm up"], "document")
            c0, w0 = time.process_time(), time.perf_counter()
            out = provider.embed(texts, "document")
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            print(json.dumps({
                "window": window, "chunks": len(texts), "tokens": out.tokens,
                "cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
                "chunks_per_cpu_s": round(len(texts) / cpu),
            }), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
