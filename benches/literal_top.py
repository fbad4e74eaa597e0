"""The text modality's literal path, before and after: same answers, time per question.

    .venv/bin/python benches/literal_top.py ROOT [--queries eval/X.jsonl ...] --dump OUT.json
    PYTHONPATH=BEFORE/python .venv/bin/python benches/literal_top.py ROOT ... --dump BEFORE.json
    .venv/bin/python benches/literal_top.py --compare BEFORE.json OUT.json

For every question (the mixed literals, definitions and references of `warm_cli.py`, and
every question of the given query sets), the `--json` form of `Index.search` (warm, in
process; `timings_ms` and `total_ms` dropped) and the text modality's own hits (`TextSearcher.search`,
k = 50, as the engine asks) are dumped; `--compare` says whether two dumps are equal, and
which questions differ. With `--runs N` the text modality's literal questions are also
timed (wall and CPU p50, the questions interleaved).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from warm_cli import MIXED, load

LITERAL_INTENTS = ("definition", "references", "literal")


def questions(sets: list[Path]) -> list[str]:
    out = [q for name in LITERAL_INTENTS for q in MIXED[name]]
    for path in sets:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append(json.loads(line)["query"])
    return list(dict.fromkeys(out))


def dump(root: Path, qs: list[str]) -> dict[str, Any]:
    from maguyva.api import Index
    from maguyva.modalities.protocol import RetrieverQuery
    from maguyva.query.intent import classify

    index = Index.open(root)
    index.warm()
    text = index.searcher("text")
    out: dict[str, Any] = {}
    for q in qs:
        response = index.search(q).to_dict()
        for timing in ("timings_ms", "total_ms"):
            response.pop(timing, None)
        verdict = classify(q)
        target = verdict.target or q
        hits = text.search(RetrieverQuery(text=q, intent=verdict.intent, target=target), 50)
        out[q] = {"response": response, "text": [asdict(h) for h in hits]}
    return out


def timed(root: Path, runs: int) -> dict[str, dict[str, float]]:
    from maguyva.api import Index
    from maguyva.modalities.protocol import RetrieverQuery

    index = Index.open(root)
    index.warm()
    text = index.searcher("text")
    literals = [q.strip('"') for q in MIXED["literal"]]
    asks = [RetrieverQuery(text=q, intent="exact_match", target=q) for q in literals]
    for ask in asks:
        text.search(ask, 50)
    wall: dict[str, list[float]] = {q: [] for q in literals}
    cpu: dict[str, list[float]] = {q: [] for q in literals}
    for _ in range(runs):
        for q, ask in zip(literals, asks, strict=True):
            started, cpu_started = time.perf_counter(), time.process_time()
            text.search(ask, 50)
            wall[q].append(time.perf_counter() - started)
            cpu[q].append(time.process_time() - cpu_started)
    return {
        q: {
            "wall_p50_ms": round(statistics.median(wall[q]) * 1e3, 2),
            "cpu_p50_ms": round(statistics.median(cpu[q]) * 1e3, 2),
        }
        for q in literals
    }


def compare(a: Path, b: Path) -> int:
    left, right = json.loads(a.read_text()), json.loads(b.read_text())
    differ = [q for q in left if left[q] != right.get(q)]
    missing = sorted(set(left) ^ set(right))
    print(f"{len(left)} questions; {len(differ)} differ; {len(missing)} in one dump only")
    for q in differ[:20]:
        print(f"  differs: {q!r}")
    return 1 if differ or missing else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", type=Path)
    parser.add_argument("--queries", action="append", type=Path, default=[])
    parser.add_argument("--dump", type=Path)
    parser.add_argument("--runs", type=int, default=0)
    parser.add_argument("--compare", nargs=2, type=Path)
    args = parser.parse_args()
    if args.compare:
        raise SystemExit(compare(*args.compare))
    if args.root is None:
        parser.error("ROOT is required unless --compare")
    print(f"load before: {load()}")
    if args.dump:
        qs = questions(args.queries)
        args.dump.write_text(json.dumps(dump(args.root, qs), indent=1, sort_keys=True))
        print(f"{len(qs)} questions dumped to {args.dump}")
    if args.runs:
        for q, row in timed(args.root, args.runs).items():
            print(
                f"  {q!r:24} wall p50 {row['wall_p50_ms']:7.2f} ms  CPU p50 {row['cpu_p50_ms']:7.2f} ms"
            )
    print(f"load after: {load()}")


if __name__ == "__main__":
    main()
