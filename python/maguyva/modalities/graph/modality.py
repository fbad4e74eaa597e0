"""GraphModality: the build side (from the structural extraction) and the loader."""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from maguyva.errors import ModalityUnavailable
from maguyva.modalities.graph import incremental, store, store_pack
from maguyva.modalities.graph.build import build_with_log, finish
from maguyva.modalities.graph.schema import CONF_FLOOR
from maguyva.modalities.graph.searcher import GraphSearcher
from maguyva.modalities.protocol import BuildContext
from maguyva.support.gcpause import paused_gc


class GraphModality:
    """Builds `<generation>/graph/graph.bin` and opens it as a `GraphSearcher`."""

    name: ClassVar[str] = "graph"

    def __init__(self) -> None:
        # a writer that stays up (watch, the MCP server) keeps its last build in memory
        self._memory = incremental.Memory()

    def build(self, ctx: BuildContext) -> dict[str, Any]:
        t0 = time.perf_counter()
        # read file by file by the builder (a lazy view stays lazy; nothing is copied whole)
        extraction = ctx.extraction if ctx.extraction is not None else {}
        ctx.progress("graph", 0, 1)
        previous = Path(ctx.previous_dir) / self.name if ctx.previous_dir else None
        config = ctx.config or {}
        floor = float(config.get("graph_edge_floor", CONF_FLOOR))
        # kept after an update (a change set without a reason), not after a from-scratch build:
        # that one's peak memory (docs/scale.md) stays what it was, and a one-shot run exits
        remember = bool(config.get("graph_remember", True)) and (
            ctx.changes is not None and not getattr(ctx.changes, "reason", "")
        )
        key = (floor, ctx.read_text is not None, str(Path(ctx.root).resolve()))
        out = Path(ctx.out_dir) / self.name
        memory, self._memory = self._memory, incremental.Memory()  # taken: reset on failure
        patched = changed = None
        # Resolution allocates millions of small, long-lived objects (nodes, edge slots, memo
        # entries) and frees almost none: the cyclic collector's full passes over them were
        # pure overhead (they find nothing to free), so it is paused during the build and the
        # patch.
        with paused_gc():
            if remember and memory.fits(previous, key):
                changed = _body_changes(ctx.changes)
                if changed is not None:
                    patched = incremental.patch(memory, extraction, changed, ctx.files)
            if patched is not None:
                assembled, contents, signatures, note = patched
                head = {"reuse": note, "reused_files": len(contents) - int(note.split()[0]),
                        "digest_s": 0.0, "resolve_s": round(time.perf_counter() - t0, 3),
                        "mode": "patch"}  # fmt: skip
                spans = incremental.patched_spans(memory, ctx.chunks, changed or [])
                chunks = spans if spans is not None else ctx.chunks
                memory.spans = spans
                arrays, strings, report, log = finish(assembled, chunks, contents, signatures, head)
            else:
                memory = incremental.Memory()
                arrays, strings, report, log = build_with_log(
                    extraction,
                    ctx.chunks,
                    read_text=ctx.read_text,
                    previous=previous.parent if previous is not None else None,
                    sources=ctx.files,
                    floor=floor,
                    keep=memory if remember else None,
                )
        meta = {"report": report, "languages": report.pop("languages")}
        t1 = time.perf_counter()
        linked = patched is not None and previous is not None
        size = _write(out, arrays, strings, meta, previous if linked else None, memory, remember)
        report["names_linked"] = bool(memory.part_linked) if remember else False
        report["log_bytes"] = incremental.write(out, log)
        report["write_s"] = round(time.perf_counter() - t1, 3)
        if remember and memory.builder is not None:
            memory.remember(log, out, key)
            self._memory = memory
        ctx.progress("graph", 1, 1)
        report["bytes"] = size
        report["build_s"] = round(time.perf_counter() - t0, 3)
        report["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        if not report["files"]:
            report["note"] = "no structural extraction: the graph is empty"
        return report

    def prepare(self) -> bool:
        """Build the tables this writer's first declaration patch needs now (a watcher's idle
        time: `incremental.prepare`); False when no build is kept in memory."""
        with paused_gc():
            return incremental.prepare(self._memory)

    def verify(self, directory: Path) -> list[str]:
        """fsck: every graph file (`graph.bin` with its parts, the edge log) read and checked
        (header, sizes, checksum), and the sections' lengths consistent."""
        problems = []
        for name in (store.FILE_NAME, incremental.LOG_FILE):
            try:
                sections, _ = store.read(Path(directory), name)
            except Exception as exc:  # fsck reports, never raises
                problems.append(f"{name}: {exc}")
                continue
            try:
                for key in sections.compressed():  # a frame that does not decompress: damage
                    sections[key]
            except Exception as exc:  # fsck reports, never raises
                problems.append(f"{name}: {exc}")
                continue
            if name == store.FILE_NAME:
                n = len(sections.get("node_kind", ()))
                qname = "node_qprefix_id" if "node_qprefix_id" in sections else "node_qname.off"
                for key in ("node_file", "node_start", "node_c", "node_name.off", qname):
                    got = len(sections.get(key, ())) - (key.endswith(".off"))
                    if got != n:
                        problems.append(f"{name}: section {key} has {got} rows, nodes {n}")
                problems += _verify_lookup(sections) + _verify_packed(sections, n)
        return problems

    def open(self, gen_dir: Path, manifest: dict[str, Any] | None = None) -> GraphSearcher:
        path = Path(gen_dir) / self.name
        if not (path / store.FILE_NAME).exists():
            raise ModalityUnavailable(f"graph modality not built in {gen_dir}")
        return GraphSearcher.open(Path(gen_dir), manifest)


def _verify_lookup(sections: Mapping[str, np.ndarray]) -> list[str]:
    """The stored name lookup sections (format 3) equal to those computed again from the
    names and kinds (a checksum proves a file is what was written, this that what was
    written was right)."""
    if not all(k in sections for k in store.LOOKUP_SECTIONS):
        return []  # an older format: the reader computes them
    try:
        bits = 32 if sections["lookup_name.hash"].dtype == np.uint32 else 64
        again = store.name_lookup(
            sections["node_kind"], sections["node_name.blob"], sections["node_name.off"], bits
        )
    except Exception as exc:  # fsck reports, never raises
        return [f"{store.NAMES_PART}: name lookup not computable: {exc}"]
    return [
        f"{store.NAMES_PART}: section {k} differs from the names it indexes"
        for k in store.LOOKUP_SECTIONS
        if again[k].dtype != sections[k].dtype or not np.array_equal(again[k], sections[k])
    ]


def _verify_packed(sections: Mapping[str, np.ndarray], n: int) -> list[str]:
    """The packed sections of format 4 (`store_pack`) rebuilt as a reader rebuilds them."""
    try:
        m = len(sections["edge_kind"])
        store_pack.edges(sections, n)
        store_pack.line_pointers(sections, m)
        store_pack.confidences(sections, m)
        store_pack.qualified_names(sections, store.strings(sections, "node_name"))
    except Exception as exc:  # fsck reports, never raises
        return [f"{store.FILE_NAME}: packed sections do not rebuild: {exc}"]
    return []


def _body_changes(changes: Any) -> list[str] | None:
    """The modified paths of a change set with nothing added, deleted or renamed (what a
    patch can follow), or None."""
    if changes is None or getattr(changes, "reason", "") or changes.added or changes.deleted:
        return None
    if changes.renamed:
        return None
    return list(changes.modified)


# what `names.bin` holds: the nodes' names, kinds and files, paths, module names (what a
# body-only edit does not change; the rest of graph.bin does)
PART_ARRAYS = ("node_kind", "node_file", "node_dkind")
PART_STRINGS = ("node_name", "node_qname", "paths", "module_names", "def_kinds")
# what no graph question reads (fused questions' chunk centrality, PageRank, cycle numbers):
# stored compressed, decompressed when first read (format 4)
COLD_SECTIONS = frozenset({"chunk_ids.blob", "chunk_ids.off", "chunk_c", "node_pr", "node_scc"})


def _write(out: Path, arrays: dict, strings: dict, meta: dict, previous: Path | None,
           memory: incremental.Memory, remember: bool) -> int:  # fmt: skip
    """Write graph.bin and its names part; the part is hard-linked from `previous` (the
    generation this writer wrote last) when it is the same, byte for byte."""
    arrays, strings = dict(arrays), dict(strings)
    part = {k: arrays.pop(k) for k in PART_ARRAYS}
    for k in PART_STRINGS:
        v = strings.pop(k)
        blob, off = v if isinstance(v, store.Packed) else store.pack_strings(v)
        part[f"{k}.blob"], part[f"{k}.off"] = blob, off
    arrays = store_pack.pack_graph(arrays)
    same = (  # compared as built, before packing (`pack_names` costs more than the compare)
        previous is not None
        and memory.part is not None
        and memory.part.keys() == part.keys()
        and all(
            memory.part[k].dtype == v.dtype and np.array_equal(memory.part[k], v)
            for k, v in part.items()
        )
    )
    memory.part_linked = False
    size = 0
    if same and previous is not None:
        out.mkdir(parents=True, exist_ok=True)
        try:
            os.link(previous / store.NAMES_PART, out / store.NAMES_PART)
            memory.part_linked = True
            size = (out / store.NAMES_PART).stat().st_size
        except OSError:
            same = False
    if not same:
        lookup = store.name_lookup(part["node_kind"], part["node_name.blob"], part["node_name.off"])
        packed = {**store_pack.pack_names(part), **lookup}
        size = store.write(out, packed, {}, {"part": "names"}, store.NAMES_PART)
    memory.part = {k: np.array(v) for k, v in part.items()} if remember else None
    return size + store.write(
        out, arrays, strings, {**meta, "parts": [store.NAMES_PART]}, compress=COLD_SECTIONS
    )
