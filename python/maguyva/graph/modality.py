"""GraphModality: the build side (from the structural extraction) and the loader."""

from __future__ import annotations

import gc
import resource
import time
from pathlib import Path
from typing import Any, ClassVar

from ..errors import ModalityUnavailable
from ..retriever import BuildContext
from . import incremental, store
from .build import build_with_log
from .schema import CONF_FLOOR
from .searcher import GraphSearcher


class GraphModality:
    """Builds `<generation>/graph/graph.bin` and opens it as a `GraphSearcher`."""

    name: ClassVar[str] = "graph"

    def build(self, ctx: BuildContext) -> dict[str, Any]:
        t0 = time.perf_counter()
        # read file by file by the builder (a lazy view stays lazy; nothing is copied whole)
        extraction = ctx.extraction if ctx.extraction is not None else {}
        ctx.progress("graph", 0, 1)
        previous = Path(ctx.previous_dir) / self.name if ctx.previous_dir else None
        # Resolution allocates millions of small, long-lived objects (nodes, edge slots, memo
        # entries) and frees almost none: the cyclic collector's full passes over them were
        # pure overhead (they find nothing to free), so it is paused during the build.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            arrays, strings, report, log = build_with_log(
                extraction,
                ctx.chunks,
                read_text=ctx.read_text,
                previous=previous.parent if previous is not None else None,
                sources=ctx.files,
                floor=float((ctx.config or {}).get("graph_edge_floor", CONF_FLOOR)),
            )
        finally:
            if gc_was_enabled:
                gc.enable()
        meta = {"report": report, "languages": report.pop("languages")}
        size = store.write(Path(ctx.out_dir) / self.name, arrays, strings, meta)
        report["log_bytes"] = incremental.write(Path(ctx.out_dir) / self.name, log)
        ctx.progress("graph", 1, 1)
        report["bytes"] = size
        report["build_s"] = round(time.perf_counter() - t0, 3)
        report["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        if not report["files"]:
            report["note"] = "no structural extraction: the graph is empty"
        return report

    def open(self, gen_dir: Path, manifest: dict[str, Any] | None = None) -> GraphSearcher:
        path = Path(gen_dir) / self.name
        if not (path / store.FILE_NAME).exists():
            raise ModalityUnavailable(f"graph modality not built in {gen_dir}")
        return GraphSearcher.open(Path(gen_dir), manifest)
