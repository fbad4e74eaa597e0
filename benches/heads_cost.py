"""CPU per 1,000 chunks of the heads phase and of full coverage, under two head rules, paired.

A seeded sample of a source tree's chunks (the build's extraction) is planned as a build plans
them (`texts.plan_chunks`, with the window check) twice: with `texts.HEAD_SLACK` 0 (a chunk is
its own head only when its text is no longer than its head: the rule before) and with the
shipped slack. For each rule the heads phase embeds the distinct head keys, full coverage
then the distinct full texts not embedded yet. The rules alternate round by round in one
process (the same minutes, the same load), 2 concurrent one-text runs as a build embeds;
the figures are process CPU seconds, medians over the rounds, with the machine's int8 floor
(`eval_embed.floor`) beside them. Run:

    .venv/bin/python benches/heads_cost.py /work/corpora/django/django-5.2.8 [--sample 800]
        [--rounds 4]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
from eval_embed import floor

from maguyva.modalities.semantic import texts as texts_module
from maguyva.modalities.semantic.embed import MiniLMProvider
from maguyva.modalities.semantic.texts import Planned, plan_chunks


def phases(planned: list[Planned]) -> tuple[list[str], list[str]]:
    """The texts of the heads phase (one per distinct head key) and those full coverage adds
    (distinct full texts whose key the heads phase did not embed)."""
    heads = {p.head_hash: p.head for p in planned}
    bodies = {p.hash: p.text for p in planned if p.hash not in heads}
    return list(heads.values()), list(bodies.values())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--sample", type=int, default=800)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--slack", type=int, default=texts_module.HEAD_SLACK)
    args = ap.parse_args()
    from maguyva.config import effective_config
    from maguyva.modalities.structural.modality import extract_repository
    from maguyva.repo.walk import walk_repository

    values = effective_config(args.root, {}).values
    files = walk_repository(args.root, values).files
    _, chunks, _ = extract_repository(args.root, files, values, lambda *a: None)
    ordered = sorted(
        chunks, key=lambda c: (c.path, c.start_line, c.end_line, c.id)
    )  # not extraction order
    picked = random.Random(0).sample(ordered, min(args.sample, len(ordered)))
    provider = MiniLMProvider(threads=2)
    rules: dict[str, tuple[list[str], list[str]]] = {}
    for name, slack in (("before (slack 0)", 0), (f"after (slack {args.slack})", args.slack)):
        texts_module.HEAD_SLACK = slack
        rules[name] = phases(plan_chunks(picked, provider.identity))
    provider.embed(["warm up", "warm up again"], "document")
    cpu: dict[tuple[str, str], list[float]] = {}
    tokens: dict[tuple[str, str], int] = {}
    load0, when0 = os.getloadavg()[0], time.strftime("%H:%M", time.gmtime())
    for r in range(args.rounds):
        order = list(rules) if r % 2 == 0 else list(reversed(rules))
        for name in order:
            for phase, batch in zip(("heads", "bodies"), rules[name], strict=True):
                c0 = time.process_time()
                out = provider.embed(batch, "document")
                cpu.setdefault((name, phase), []).append(time.process_time() - c0)
                tokens[(name, phase)] = out.tokens
    n = len(picked)
    result: dict[str, Any] = {"root": str(args.root), "chunks": len(chunks), "sample": n,
                              "rounds": args.rounds}  # fmt: skip
    for name, (heads, bodies) in rules.items():
        h = float(np.median(cpu[(name, "heads")]))
        b = float(np.median(cpu[(name, "bodies")]))
        ht, bt = tokens[(name, "heads")], tokens[(name, "bodies")]
        result[name] = {
            "heads_texts": len(heads), "heads_tokens": ht,
            "heads_cpu_s_per_1000_chunks": round(1000 * h / n, 2),
            "heads_cpu_s_runs": [round(x, 2) for x in cpu[(name, "heads")]],
            "heads_per_cpu_s": round(len(heads) / h, 1),
            "full_texts": len(heads) + len(bodies), "full_tokens": ht + bt,
            "full_cpu_s_per_1000_chunks": round(1000 * (h + b) / n, 2),
            "full_cpu_s_runs": [round(x + y, 2) for x, y in
                                zip(cpu[(name, "heads")], cpu[(name, "bodies")], strict=True)],
            "texts_per_cpu_s": round((len(heads) + len(bodies)) / (h + b), 1),
            "floor_heads": floor(ht, len(heads)), "floor_full": floor(ht + bt, len(heads) + len(bodies)),
        }  # fmt: skip
    result["load"] = [round(load0, 1), round(os.getloadavg()[0], 1)]
    result["utc"] = f"{when0}-{time.strftime('%H:%M', time.gmtime())}"
    print(json.dumps(result))


if __name__ == "__main__":
    main()
