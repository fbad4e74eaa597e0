"""Write a held-out find_similar query set: real functions with their names renamed.

    python benches/similar_set.py ROOT CORPUS COUNT SEED OUT.jsonl

Functions of 6-40 lines (Universal Ctags), docstring and decorators dropped, the function,
its parameters and locals renamed `f`, `v0`, `v1`, ... (`maguyva.eval.generate`); the answer
is the original. Every query is `heldout`: nothing is tuned on them.
"""

from __future__ import annotations

import random
import sys
from dataclasses import replace
from pathlib import Path

from maguyva.eval.ctags import run_ctags
from maguyva.eval.generate import similar_queries
from maguyva.eval.queryset import write_queries


def main(root: Path, corpus: str, count: int, seed: int, out: Path) -> None:
    tags = [t for t in run_ctags(root) if "/tests/" not in f"/{t.path}"]
    queries = similar_queries(tags, root, random.Random(seed), count, corpus)
    write_queries(out, [replace(q, split="heldout", corpus=corpus) for q in queries])
    print(f"wrote {len(queries)} queries to {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), Path(sys.argv[5]))
