"""What the graph's and symbol index's formats cost a reader (docs/index-size.md):

    python benches/size_latency.py INDEX_DIR [--rounds N] [--answers ROOT OUT]

CPU per operation (`process_time`), median (and min) of N: `GraphSearcher.open`,
`symbol_search.load` with the segment caches cleared (every segment parsed), the first graph
question after an open and the same question warm (references and impact of six stdlib
names), a warm structural definition question and the first `chunk_c` (fused questions).
`--answers` also writes the responses of `Engine.search` to `QUESTIONS`, without their
timings, to OUT (to compare two versions' answers byte for byte). Run it with each
checkout's own Python on that checkout's index, alternated.
"""

import argparse
import functools
import json
import statistics
import time
from pathlib import Path

from maguyva.modalities.graph.searcher import GraphSearcher
from maguyva.modalities.protocol import RetrieverQuery
from maguyva.modalities.structural import symbol_search
from maguyva.store.generations import IndexDir

GRAPH = [("find_references", "urlsplit"), ("find_references", "getaddrinfo"),
         ("impact_analysis", "JSONDecoder"), ("impact_analysis", "quote_plus"),
         ("find_definition", "OrderedDict"), ("find_references", "HTTPConnection")]  # fmt: skip
DEFINITIONS = ("OrderedDict", "lru_cache", "Thread", "communicate", "JSONDecoder")
QUESTIONS = ["who calls urlsplit", "who references getaddrinfo",
             "what is affected if JSONDecoder changes", "impact of changing quote_plus",
             "callers of _get_sep", "where is OrderedDict defined", "def lru_cache",
             "class Thread", "find the definition of Popen.communicate",
             "how does the lru cache evict entries", "what calls Popen.communicate",
             "who uses HTTPConnection"]  # fmt: skip


def cpu(f, n: int = 1) -> float:
    c = time.process_time()
    for _ in range(n):
        f()
    return (time.process_time() - c) / n


def ask(searcher, intent: str, target: str):
    return searcher.search(RetrieverQuery(text=target, intent=intent, target=target,
                                          terms=[target]), 50)  # fmt: skip


def open_structural(gen: Path):
    symbol_search._CACHE.clear()
    symbol_search._RECENT.clear()
    return symbol_search.load(gen / "structural")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("index", type=Path)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--answers", nargs=2, metavar=("ROOT", "OUT"))
    args = parser.parse_args()
    gen = IndexDir(args.index).current(pin=False).path
    rounds = args.rounds
    g_open = [cpu(lambda: GraphSearcher.open(gen)) for _ in range(rounds)]
    s_open = [cpu(lambda: open_structural(gen)) for _ in range(rounds)]
    g, st = GraphSearcher.open(gen), open_structural(gen)
    first = {}
    for q in GRAPH:  # each on a searcher just opened: what the rebuilt parts cost once
        first[q] = cpu(functools.partial(ask, GraphSearcher.open(gen), *q))
    warm = {q: statistics.median(cpu(lambda q=q: ask(g, *q), 3) for _ in range(rounds))
            for q in GRAPH}  # fmt: skip
    sdef = statistics.median(
        cpu(lambda: [ask(st, "find_definition", t) for t in DEFINITIONS]) / len(DEFINITIONS)
        for _ in range(rounds)
    )
    fused = GraphSearcher.open(gen)
    chunk_c = cpu(lambda: fused.graph.chunk_c)
    print(f"graph open {statistics.median(g_open) * 1e3:.2f} ms CPU (min {min(g_open) * 1e3:.2f}); "
          f"structural open {statistics.median(s_open) * 1e3:.1f} ms (min {min(s_open) * 1e3:.1f})")  # fmt: skip
    print("graph question, first after open / warm (ms CPU): "
          + "; ".join(f"{t} {first[(i, t)] * 1e3:.2f}/{warm[(i, t)] * 1e3:.2f}" for i, t in GRAPH))  # fmt: skip
    print(
        f"structural definition warm {sdef * 1e3:.3f} ms CPU; chunk_c first use {chunk_c * 1e3:.1f} ms"
    )
    if args.answers:
        from maguyva.query.engine import Engine

        root, out = args.answers
        engine = Engine.open(Path(root), args.index)
        answers = []
        for q in QUESTIONS:
            r = engine.search(q, limit=10).to_dict()
            r.pop("timings_ms")
            r.pop("total_ms")
            answers.append(r)
        Path(out).write_text(json.dumps(answers, indent=0, sort_keys=True, default=str))


if __name__ == "__main__":
    main()
