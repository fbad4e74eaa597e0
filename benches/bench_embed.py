"""Local embedding provider: single-query latency and bulk chunk throughput on real code.

Chunks: the first 64 top-level functions of a few standard-library modules (docstrings kept).
Run: `.venv/bin/python -m pytest benches/bench_embed.py --benchmark-only`.
"""

from __future__ import annotations

import ast
import sysconfig
import time
from pathlib import Path

import pytest

from maguyva.modalities.semantic.embed import MiniLMProvider

STDLIB = Path(sysconfig.get_paths()["stdlib"])


def stdlib_functions(limit: int = 64) -> list[str]:
    out: list[str] = []
    for name in ("shlex.py", "fnmatch.py", "base64.py", "textwrap.py", "ftplib.py", "tarfile.py"):
        source = (STDLIB / name).read_text(encoding="utf-8")
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef) and len(out) < limit:
                out.append(
                    f"{name} {node.name}\n" + "\n".join(lines[node.lineno - 1 : node.end_lineno])
                )
    return out


@pytest.mark.parametrize("threads", [1, 2])
def test_query_latency(benchmark, threads: int) -> None:
    benchmark.group = "query embedding (single short query)"
    provider = MiniLMProvider(threads=threads)
    provider.embed(["warm up"], "query")
    benchmark(provider.embed, ["how does the http client retry failed requests"], "query")


@pytest.mark.parametrize(
    ("graph", "rows", "threads"),
    [("weight-only", 64, 1), ("int8", 1, 1), ("int8", 1, 2)],
)
def test_chunk_throughput(benchmark, graph: str, rows: int, threads: int) -> None:
    """Before (the shipped weight-only graph, up to 64 rows per run) and after (the int8-compute
    graph, one text per run) side by side; the extra info has the process CPU seconds per
    round."""
    benchmark.group = "bulk: 64 stdlib functions"
    texts = stdlib_functions()
    provider = MiniLMProvider(threads=threads, batch_size=rows, graph=graph)
    provider.embed(["warm up", "warm up again"], "document")
    cpu = time.process_time()
    result = benchmark.pedantic(provider.embed, (texts, "document"), rounds=2, iterations=1)
    benchmark.extra_info["cpu_s_per_round"] = round((time.process_time() - cpu) / 2, 2)
    benchmark.extra_info["chunks"] = len(texts)
    benchmark.extra_info["tokens"] = result.tokens
