"""Semantic build cost on a real repository, before/after settings side by side, fresh caches.

Each configuration copies the tree, builds only the semantic modality, and prints process CPU
and wall seconds with the build report (chunks, new embeddings, partial, tokens). "before" is
the previous default (window 256, fixed batches of 16 texts). Run:

    .venv/bin/pip download requests==2.32.3 --no-binary :all: --no-deps -d /tmp/reqdl
    tar xzf /tmp/reqdl/requests-2.32.3.tar.gz -C /tmp
    .venv/bin/python benches/semantic_build.py /tmp/requests-2.32.3

`update` mode: a long-running writer (an `Indexer` kept up, as `maguyva watch` and `mcp
--watch` run it) on an existing index; each run appends a function to TARGET and updates with
the path as a hint; prints the semantic modality's wall time and phases per run (its report's
`mode` and `timings_ms`) with the load average, then the medians (docs/semantic.md):

    .venv/bin/python benches/semantic_build.py update /tmp/dm7/stdall json/decoder.py \
        [--runs 7] [--modalities text,structural,semantic] [--anchor 'def _decode_uXXXX(s, pos):\n']

`--anchor`: a body edit instead (a line with a reference, and in even runs a call, inserted
after the anchor: no definition added). Each row also has the whole update's wall and CPU
time and the commit's. For an A/B of two versions of `semantic.py`, run it once with
`PYTHONPATH=<a worktree whose python/maguyva/semantic.py is the old one>/python` (copy
`_core.abi3.so` into it) on one copy of the tree and once without on another copy.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import maguyva.modalities.semantic.embed.local as local
from maguyva.build.indexer import build_index

CONFIGS: dict[str, dict[str, Any]] = {
    "before: window 256, batches of 16": {"embedding_max_length": 256},
    "after: window 128, token-bounded batches": {},
    "after: heads only (phase one)": {"semantic_phases": "heads"},
}


def update(argv: list[str]) -> None:
    import argparse
    import os
    import statistics

    from maguyva.build.indexer import Indexer

    parser = argparse.ArgumentParser(prog="semantic_build.py update")
    parser.add_argument("root", type=Path)
    parser.add_argument("target")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--modalities", default="text,structural,semantic")
    parser.add_argument("--anchor", help="body edit: insert a line after this text")
    args = parser.parse_args(argv)
    anchor = args.anchor.encode().decode("unicode_escape") if args.anchor else None
    config = {"modalities": args.modalities.split(","), "semantic_phases": "heads",
              "semantic_max_chunks": 2}  # fmt: skip
    target = args.root / args.target
    original = target.read_text()
    writer = Indexer(args.root, config=config)
    writer.update()
    try:
        target.write_text(original + "\n\ndef maguyva_bench_warm():\n    return 0\n")
        wall = time.perf_counter()
        writer.update(hints=[args.target])  # the first update of a writer plans every chunk
        print(json.dumps({"first_update_s": round(time.perf_counter() - wall, 3)}), flush=True)
        rows = []
        for n in range(args.runs):
            if anchor:
                name = anchor.split("(")[0].split()[-1]
                call = f"{name}({n})" if n % 2 == 0 else str(n)
                target.write_text(
                    original.replace(anchor, anchor + f"    {name}.__name__ and {call}\n")
                )
            else:
                target.write_text(original + f"\n\ndef maguyva_bench_{n}(x):\n    return x + {n}\n")
            load = os.getloadavg()[0]
            cpu, wall = time.process_time(), time.perf_counter()
            summary = writer.update(hints=[args.target])
            wall = time.perf_counter() - wall
            report = summary.modalities["semantic"]["report"]
            row = {"load": round(load, 2), "semantic_ms": round(summary.timings_s["semantic"] * 1000, 1),
                   "update_ms": round(wall * 1000, 1),
                   "update_cpu_ms": round((time.process_time() - cpu) * 1000, 1),
                   "commit_ms": round(summary.timings_s.get("commit", 0) * 1000, 1),
                   "mode": report["mode"], "layout": report.get("layout"), "new": report["new"],
                   **report["timings_ms"]}  # fmt: skip
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        target.write_text(original)
        writer.update(hints=[args.target])
    keys = [k for k in rows[0] if isinstance(rows[0][k], float | int) and k != "new"]
    print(json.dumps({"median": {k: statistics.median(r[k] for r in rows) for k in keys}}))


def main() -> None:
    if sys.argv[1] == "update":
        update(sys.argv[2:])
        return
    src = Path(sys.argv[1])
    original = local.MiniLMProvider.__init__
    for name, extra in CONFIGS.items():
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "repo"
            shutil.copytree(src, root)
            if name.startswith("before"):

                def fixed(self: Any, *args: Any, **kwargs: Any) -> None:
                    kwargs.update(batch_size=16, batch_tokens=1 << 30)
                    original(self, *args, **kwargs)

                local.MiniLMProvider.__init__ = fixed  # type: ignore[method-assign]
            config = {"modalities": ["semantic"], "embedding_threads": 1, **extra}
            cpu, wall = time.process_time(), time.perf_counter()
            build_index(root, config=config)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            local.MiniLMProvider.__init__ = original  # type: ignore[method-assign]
            meta = json.loads(next(root.glob(".maguyva/gen-*/semantic/meta.json")).read_text())
            keys = ("chunks", "new", "partial", "pending", "tokens", "phases")
            print(json.dumps({"config": name, "cpu_s": round(cpu, 1), "wall_s": round(wall, 1),
                              **{k: meta.get(k) for k in keys}}), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
