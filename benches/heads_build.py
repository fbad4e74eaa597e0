"""CPU of a whole heads build, and of its embedding alone, per embedded text (issue 17).

Builds a fresh index of ROOT in this process, as `maguyva index ROOT --set
semantic_phases=heads` does (one-shot writer: never gate, then the embedding in slices), and
measures with the local provider's `embed` wrapped: process CPU seconds inside it (tokenizing,
onnxruntime, pooling: "embedding alone"), texts and tokens; beside that the CPU of the planning
steps (`planning.plan`, `planning.text_of`) and of the whole build (this process and its
extraction processes, `getrusage`). Run with another checkout's code to compare (its
`_core.abi3.so` beside its sources):

    nice -n 10 .venv/bin/python benches/heads_build.py /tmp/django-5.2.8 [--phases heads]
    PYTHONPATH=/work/main/python nice -n 10 .venv/bin/python benches/heads_build.py ROOT
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _cpu() -> float:
    """CPU seconds of this process and of its waited-for children (extraction processes)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _timed(owner: Any, name: str, into: dict[str, float]) -> None:
    """Wrap `owner.name` to add the process CPU and wall seconds spent inside it to `into`."""
    inner: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        c0, w0 = time.process_time(), time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            into["cpu_s"] = into.get("cpu_s", 0.0) + time.process_time() - c0
            into["wall_s"] = into.get("wall_s", 0.0) + time.perf_counter() - w0
            into["calls"] = into.get("calls", 0) + 1

    setattr(owner, name, wrapper)


def measure(root: Path, phases: str, index_dir: Path) -> dict[str, Any]:
    from maguyva.api import Index
    from maguyva.modalities.semantic import planning
    from maguyva.modalities.semantic.embed.hardware import read_cpu
    from maguyva.modalities.semantic.embed.local import MiniLMProvider

    embed: dict[str, float] = {}
    inner = MiniLMProvider.embed

    def counted(self: MiniLMProvider, texts: list[str], input_type: Any) -> Any:
        c0, w0 = time.process_time(), time.perf_counter()
        result = inner(self, texts, input_type)
        embed["cpu_s"] = embed.get("cpu_s", 0.0) + time.process_time() - c0
        embed["wall_s"] = embed.get("wall_s", 0.0) + time.perf_counter() - w0
        embed["texts"] = embed.get("texts", 0) + len(texts)
        embed["tokens"] = embed.get("tokens", 0) + result.tokens
        return result

    MiniLMProvider.embed = counted  # type: ignore[method-assign]
    plans: dict[str, float] = {}
    text_of: dict[str, float] = {}
    _timed(planning, "plan", plans)
    _timed(planning, "text_of", text_of)
    from maguyva.modalities.semantic import build as semantic_build

    semantic_build.plan = planning.plan  # the build imported the names before the wrapping
    semantic_build.text_of = planning.text_of
    from maguyva.modalities.semantic.embed import EmbeddingCache
    from maguyva.modalities.semantic.queue import Candidates

    loop: dict[str, dict[str, float]] = {"put_many": {}, "settle": {}, "make_queue": {},
                                         "embed_loop": {}}  # fmt: skip
    _timed(semantic_build.Build, "embed", loop["embed_loop"])  # the whole loop, per build
    _timed(EmbeddingCache, "put_many", loop["put_many"])
    _timed(Candidates, "settle", loop["settle"])
    _timed(semantic_build, "make_queue", loop["make_queue"])
    load0 = os.getloadavg()[0]
    c0, w0 = _cpu(), time.perf_counter()
    shown = [w0]

    def progress(phase: str, done: int, total: int) -> None:
        """Every minute, the figures so far on stderr (a run cut short still gives rates)."""
        now = time.perf_counter()
        if now - shown[0] >= 60:
            shown[0] = now
            so_far = {k: round(v, 1) for k, v in embed.items()}
            print(json.dumps({"wall_s": round(now - w0), "cpu_s": round(_cpu() - c0, 1),
                              "phase": phase, "done": done, "total": total, "embed": so_far,
                              "text_of_cpu_s": round(text_of.get("cpu_s", 0.0), 1),
                              "load": os.getloadavg()[0]}), file=sys.stderr, flush=True)  # fmt: skip

    summary = Index.open(root, index_dir=index_dir, semantic_phases=phases).build(progress=progress)
    cpu, wall = _cpu() - c0, time.perf_counter() - w0
    texts = int(embed.get("texts", 0))
    return {
        "root": str(root),
        "phases": phases,
        "files": summary.files,
        "chunks": summary.chunks,
        "generation": summary.generation,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "texts": texts,
        "tokens": int(embed.get("tokens", 0)),
        "tokens_per_text": round(embed.get("tokens", 0) / max(texts, 1), 1),
        "embed_cpu_s": round(embed.get("cpu_s", 0.0), 1),
        "embed_wall_s": round(embed.get("wall_s", 0.0), 1),
        "texts_per_embed_cpu_s": round(texts / max(embed.get("cpu_s", 0.0), 1e-9), 1),
        "texts_per_build_cpu_s": round(texts / max(cpu, 1e-9), 1),
        "plan": {k: round(v, 2) for k, v in plans.items()},
        "text_of": {k: round(v, 2) for k, v in text_of.items()},
        **{name: {k: round(v, 2) for k, v in got.items()} for name, got in loop.items()},
        "timings_s": {k: round(v, 1) for k, v in summary.timings_s.items()},
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "load": [round(load0, 1), round(os.getloadavg()[0], 1)],
        "cpu": read_cpu().model,
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--phases", default="heads")
    ap.add_argument("--index-dir", type=Path, help="default: a fresh temporary directory")
    args = ap.parse_args()
    tmp = None
    if args.index_dir is None:
        tmp = Path(tempfile.mkdtemp(prefix="heads-build-"))
        args.index_dir = tmp / "index"
    try:
        print(json.dumps(measure(args.root, args.phases, args.index_dir)), flush=True)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
