"""What opening an index costs: the text index (with its BM25 postings) and the graph, alone
and with a first question (issue 21: a packed file is decompressed when it is opened).

    python benches/open_cost.py GEN_DIR [--runs 15] [--term auth --term url] [--target NAME]

`GEN_DIR` is a generation directory (`ROOT/.maguyva/gen-NNNNNN`); run it with each checkout's
Python on its own index, alternated. CPU (`process_time`) per operation, median of `--runs`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path


def cpu_ms(f: Callable[[], object], runs: int) -> float:
    out = []
    for _ in range(runs):
        t = time.process_time()
        f()
        out.append((time.process_time() - t) * 1000)
    return statistics.median(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gen", type=Path)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--term", action="append", default=None)
    parser.add_argument("--target", default="get_auth_from_url")
    args = parser.parse_args(argv)
    from maguyva.modalities.graph.searcher import GraphSearcher
    from maguyva.modalities.protocol import RetrieverQuery
    from maguyva.store import spans

    text, terms = args.gen / "text", args.term or ["auth", "url"]

    def bm25() -> None:
        spans.open_index(text).bm25(terms, 10)

    def graph() -> None:
        GraphSearcher.open(args.gen).search(RetrieverQuery(
            text=args.target, terms=[args.target], intent="find_references", target=args.target),
            10)  # fmt: skip

    for name, f in (("text index open (with BM25)", lambda: spans.open_index(text)),
                    ("... and a first BM25 question", bm25),
                    ("graph open", lambda: GraphSearcher.open(args.gen)),
                    ("... and a first references question", graph)):  # fmt: skip
        print(f"{name:<38} {cpu_ms(f, args.runs):8.3f} ms CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
