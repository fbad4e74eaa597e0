"""The docstring -> function retrieval task, shared by the embedder benches.

For every documented `def` under a root (folders in `skip` left out) the query is the
docstring's first sentence (>= 4 words, no `>>>`), the document the function with its
docstring removed (>= 3 non-blank lines), as a chunk whose header is
`"<prefix><path>: function <name>\\n<def line>"` (what the semantic modality embeds is
`header + "\\n" + text`); queries that occur more than once are dropped. One relevant
document per query: the pair's own. `benches/eval_embed.py` (the standard library, MiniLM
configurations and throughput) and `benches/static_tier/eval_static.py` (held-out sdists,
static tier vs MiniLM vs BM25) both use it.
"""

from __future__ import annotations

import ast
import inspect
import re
import sysconfig
from pathlib import Path

import numpy as np

from maguyva import _core
from maguyva.model import Chunk

STDLIB = Path(sysconfig.get_paths()["stdlib"])
STDLIB_SKIP = frozenset({"test", "tests", "idlelib", "lib2to3", "site-packages", "ensurepip",
                         "turtledemo"})  # fmt: skip


def first_sentence(doc: str) -> str:
    """The first sentence of a docstring's first paragraph, on one line."""
    para = inspect.cleandoc(doc).split("\n\n")[0].replace("\n", " ").strip()
    m = re.search(r"(?<=[.!?])\s", para)
    return para[: m.start()] if m else para


def function_pairs(root: Path, skip: frozenset[str], prefix: str = "") -> list[tuple[str, Chunk]]:
    """(query, document chunk) for every documented function under `root`, in (file, walk)
    order, duplicates included (`unique` drops them)."""
    found: list[tuple[str, Chunk]] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if skip & set(rel.parts):
            continue
        try:
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        found += _pairs_of(tree, source.splitlines(), f"{prefix}{rel.as_posix()}")
    return found


def _pairs_of(tree: ast.AST, lines: list[str], rel: str) -> list[tuple[str, Chunk]]:
    found = []
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
        header = f"{rel}: function {node.name}\n{lines[node.lineno - 1].strip()}"
        found.append((query, Chunk(id=f"{rel}:{node.lineno}", path=rel, start_line=start,
                                   end_line=node.end_lineno or start, kind="function",
                                   name=node.name, header=header, text="\n".join(body))))  # fmt: skip
    return found


def unique(pairs: list[tuple[str, Chunk]]) -> list[tuple[str, Chunk]]:
    """The pairs whose query occurs once (a repeated query has no single right answer)."""
    counts: dict[str, int] = {}
    for q, _ in pairs:
        counts[q] = counts.get(q, 0) + 1
    return [(q, c) for q, c in pairs if counts[q] == 1]


def document(chunk: Chunk) -> str:
    """What the semantic modality embeds for a chunk with a header."""
    return f"{chunk.header}\n{chunk.text}"


def mrr(ranked: list[list[int]]) -> float:
    """MRR@10 when query i's answer is document i."""
    total = 0.0
    for i, row in enumerate(ranked):
        row = [int(x) for x in row[:10]]
        if i in row:
            total += 1.0 / (row.index(i) + 1)
    return total / len(ranked)


def float_ranks(q: np.ndarray, d: np.ndarray, depth: int = 10) -> list[list[int]]:
    """Documents by cosine (rows are normalised), best first."""
    return [[int(x) for x in np.argsort(-s, kind="stable")[:depth]] for s in q @ d.T]


def hamming_ranks(q: np.ndarray, d: np.ndarray, depth: int = 10) -> list[list[int]]:
    """Documents by Hamming distance of the packed codes (Rust `hamming_topk`)."""
    ids, _ = _core.hamming_topk(np.ascontiguousarray(q), np.ascontiguousarray(d), depth)
    return [[int(x) for x in r] for r in ids]
