"""understand_code per question under the structural inflection weights (docs/eval-rust-ts-2.md).

    .venv/bin/python benches/understand_variants.py ROOT IDX SET.jsonl [SET.jsonl ...] \
        [--form-weights 0,0.25,0.5,0.75,1] [--no-subject]

For each `FORM_WEIGHT` (`modalities/structural/symbol_search.py`) every understand_code
question of the sets is asked through the real `Engine.search` (limit 10); printed: file MRR
of the tune half, the held-out half and the blind questions (`-blind-` in the id), then the
first right file's rank per question. `--no-subject` turns the subject place off
(`places.place_of(..., subject=False)`), to see what it adds.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from maguyva.modalities.structural import symbol_search
from maguyva.query import engine as engine_module
from maguyva.query.engine import Engine
from maguyva.query.places import place_of


def _questions(paths: list[Path]) -> list[dict]:
    out = []
    for path in paths:
        for line in path.read_text().splitlines():
            if line.strip() and (q := json.loads(line)).get("intent") == "understand_code":
                out.append(q)
    return out


def _rank(engine: Engine, question: dict) -> int | None:
    wanted = {span["path"] for span in question["relevant"]}
    paths = list(dict.fromkeys(r.path for r in engine.search(question["query"]).results))
    return next((i + 1 for i, p in enumerate(paths) if p in wanted), None)


def _mrr(ranks: dict[str, int | None], ids: list[str]) -> float:
    return sum(1 / r for i in ids if (r := ranks[i])) / len(ids) if ids else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("index_dir", type=Path)
    parser.add_argument("sets", type=Path, nargs="+")
    parser.add_argument("--form-weights", default=str(symbol_search.FORM_WEIGHT))
    parser.add_argument("--no-subject", action="store_true")
    args = parser.parse_args()
    if args.no_subject:
        engine_module.place_of = lambda q, subject=True: place_of(q, subject=False)  # type: ignore[assignment]
    engine = Engine.open(args.root, args.index_dir)
    questions = _questions(args.sets)
    groups = {
        "tune": [q["id"] for q in questions if q.get("split") == "tune"],
        "held-out": [
            q["id"] for q in questions if q.get("split") != "tune" and "-blind-" not in q["id"]
        ],
        "blind": [q["id"] for q in questions if "-blind-" in q["id"]],
    }
    for weight in (float(w) for w in args.form_weights.split(",")):
        symbol_search.FORM_WEIGHT = weight
        ranks = {q["id"]: _rank(engine, q) for q in questions}
        summary = "  ".join(
            f"{g} ({len(ids)}) {_mrr(ranks, ids):.3f}" for g, ids in groups.items() if ids
        )
        print(f"FORM_WEIGHT {weight}: {summary}")
        print(
            "   ",
            " ".join(
                f"{i.rsplit('-', 2)[-2]}-{i.rsplit('-', 1)[-1]}:{r}" for i, r in ranks.items()
            ),
        )


if __name__ == "__main__":
    main()
