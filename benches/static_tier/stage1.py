"""The answers of a staged first build's line-window generation (`build.staged`: text over
line windows and the static tier's rows of every window, nothing extracted, no graph, no
transformer vector) against the same generation with semantic off (BM25-only fusion), on the
understand_code sets, tune and held-out halves apart.

    .venv/bin/python benches/static_tier/stage1.py eval/click-8.1.7.nl.jsonl \\
        eval/click-8.1.7.generated.jsonl [--root DIR]

The build is stopped as its extraction starts (the windows' generations are committed then),
into a fresh index directory of its own."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from maguyva.eval.queryset import load_queries
from maguyva.eval.runner import run_system
from maguyva.eval.systems import EngineSystem
from maguyva.query.engine import Engine

INTENTS = ("understand_code",)


class Stop(Exception):
    """Raised from the progress callback as the extraction starts."""


def stage1_index(root: Path, index_dir: Path) -> dict[str, Any]:
    """Build `root` into `index_dir` up to its line-window generations; their manifest."""
    from maguyva.build.indexer import build_index
    from maguyva.store.generations import IndexDir

    def stop(phase: str, done: int, total: int) -> None:
        if phase == "structural" and done == 0:
            raise Stop

    config = {"first_build_stages": True, "index_dir": str(index_dir)}
    with contextlib.suppress(Stop):
        build_index(root, config=config, progress=stop)
    return IndexDir(index_dir).read_manifest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("queries", nargs="+", type=Path)
    ap.add_argument("--root", type=Path, default=None)
    args = ap.parse_args(argv)
    queries = [replace(q, id=f"{path.stem}:{q.id}") for path in args.queries
               for q in load_queries([path])]  # fmt: skip
    queries = [q for q in queries if q.intent in INTENTS]
    root = args.root
    if root is None:
        from maguyva.eval.corpora import fetch_corpus

        root = fetch_corpus(next(q.corpus for q in queries if q.corpus))
    root = Path(root).resolve()
    with tempfile.TemporaryDirectory(prefix="stage1-") as tmp:
        manifest = stage1_index(root, Path(tmp) / "index")
        cov = manifest["modalities"]["semantic"].get("report") or {}
        print(f"{root.name}: generation {manifest['generation']}, {manifest['chunks']} line "
              f"windows, {cov.get('static')} static rows", file=sys.stderr)  # fmt: skip
        results: dict[str, Any] = {}
        for name in ("off", "static"):
            engine = Engine.open(root, Path(tmp) / "index")
            if name == "off":
                engine._unavailable["semantic"] = "semantic off (bench: BM25-only fusion)"
            system = EngineSystem(name, engine, {"preset": "default"})
            results[name] = {}
            for split in ("tune", "heldout"):
                part = [q for q in queries if q.split == split]
                if not part:
                    continue
                agg = run_system(system, part, 10).by_intent.get("understand_code")
                results[name][split] = {"n": agg["queries"],
                                        "file_mrr": round(agg["file.mrr@10"], 3)}  # fmt: skip
            print(name, json.dumps(results[name]), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
