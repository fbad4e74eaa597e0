"""Semantic build cost on a real repository, before/after settings side by side, fresh caches.

Each configuration copies the tree, builds only the semantic modality, and prints process CPU
and wall seconds with the build report (chunks, new embeddings, partial, tokens). "before" is
the previous default (window 256, fixed batches of 16 texts). Run:

    .venv/bin/pip download requests==2.32.3 --no-binary :all: --no-deps -d /tmp/reqdl
    tar xzf /tmp/reqdl/requests-2.32.3.tar.gz -C /tmp
    .venv/bin/python benches/semantic_build.py /tmp/requests-2.32.3
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import maguyva.embed.local as local
from maguyva.indexer import build_index

CONFIGS: dict[str, dict[str, Any]] = {
    "before: window 256, batches of 16": {"embedding_max_length": 256},
    "after: window 128, token-bounded batches": {},
    "after: heads only (phase one)": {"semantic_phases": "heads"},
}


def main() -> None:
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
