"""The graph phase alone, on an existing index: memory, CPU, and whether two builds agree.

    nice -n 10 .venv/bin/python benches/graph_phase.py build INDEX_DIR OUT_DIR [--tracemalloc]
    .venv/bin/python benches/graph_phase.py compare OUT_A OUT_B [--targets 300]

`build` opens the committed generation of INDEX_DIR (built by `maguyva index` or
`benches/kernel_index.py` with the structural modality), hands the graph modality the same
lazy views the indexer does (`SegmentExtraction`, `SegmentChunks`) and builds the graph into
OUT_DIR/graph, sampling the process's PSS every 100 ms (peak, CPU seconds, wall). No previous
generation is given, so nothing is reused: it is a full graph build of the index's files.

`compare` says whether two such builds wrote the same graph: every section of `graph.bin`
and `edgelog.bin` byte for byte (the report's timings excepted), then the answers of
`callers`, `callees`, `references` and `impact` for a few hundred names drawn from the graph
(seeded). Exit code 1 on any difference. Used to check that a change of the builder's data
layout does not change what it builds (docs/changelog.md, "The graph phase: one pass over the extraction").
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from maguyva.build.memory import RssSampler
from maguyva.modalities.graph import MODALITY
from maguyva.modalities.graph import store as gstore
from maguyva.modalities.graph.incremental import LOG_FILE
from maguyva.modalities.protocol import BuildContext
from maguyva.repo.changes import RepoState
from maguyva.store.chunks import SEGMENTS, segment_of
from maguyva.store.fileindex import read_file_index
from maguyva.store.generations import IndexDir
from maguyva.store.views import SegmentChunks, SegmentExtraction

MIB = 1 << 20


def build(index_dir: Path, out: Path, trace: bool) -> dict:
    gen = IndexDir(index_dir).current(pin=False)
    data = read_file_index(gen.path)  # files.json with the generation's delta applied
    index = data.index
    counts = [0] * SEGMENTS
    for p, e in index.items():
        counts[segment_of(p)] += e[2]
    files = RepoState.from_json(data.state).source_files()
    root = Path(gen.manifest.get("root") or data.state.get("root", "."))
    chunks = SegmentChunks(gen.path, counts, index, data.delta)
    extraction = SegmentExtraction(gen.path, index)
    del data, index
    out.mkdir(parents=True, exist_ok=True)
    # the searcher maps lines to chunks: share the index's (with its delta of changed files)
    for name in ("chunks", "delta", "files.json", "files-delta.json"):
        if (gen.path / name).exists() and not (out / name).exists():
            (out / name).symlink_to(gen.path / name)
    ctx = BuildContext(root, out, files, chunks, extraction, {}, out / "cache")
    if trace:
        tracemalloc.start(1)
    w0, c0 = time.perf_counter(), time.process_time()
    with RssSampler(interval_s=0.1) as sampler:
        base = sampler.samples[0].rss if sampler.samples else 0
        report = MODALITY.build(ctx)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    result = {
        "index": str(index_dir),
        "generation": str(gen.path),
        "files": len(files),
        "chunks": len(chunks),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "pss_before_mib": round(base / MIB),
        "pss_peak_mib": round(sampler.peak / MIB),
        "report": report,
    }
    if trace:
        current, peak = tracemalloc.get_traced_memory()
        result["tracemalloc_peak_mib"] = round(peak / MIB, 1)
        result["tracemalloc_end_mib"] = round(current / MIB, 1)
        tracemalloc.stop()
    extraction.close()
    (out / "result.json").write_text(json.dumps(result, indent=1))
    return result


# timings, and how the graph was arrived at (reused log, patched in memory): not what it holds
VOLATILE = ("build_s", "peak_rss_mb", "digest_s", "resolve_s", "centrality_s", "log_s", "bytes",
            "log_bytes", "write_s", "reuse", "reused_files", "mode")  # fmt: skip


def _meta(meta: dict) -> dict:
    meta = json.loads(json.dumps(meta))
    for key in VOLATILE:
        meta.get("report", {}).pop(key, None)
    return meta


def compare(a: Path, b: Path, targets: int) -> list[str]:
    problems: list[str] = []
    for name in (gstore.FILE_NAME, LOG_FILE):
        sa, ma = gstore.read(a / "graph", name)
        sb, mb = gstore.read(b / "graph", name)
        if sa.keys() != sb.keys():
            problems.append(f"{name}: sections differ: {sorted(sa.keys() ^ sb.keys())}")
        for key in sorted(sa.keys() & sb.keys()):
            x, y = sa[key], sb[key]
            if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
                problems.append(f"{name}: section {key} differs ({x.shape} vs {y.shape})")
        if _meta(ma) != _meta(mb):
            problems.append(f"{name}: meta differs: {_meta(ma)} vs {_meta(mb)}")
    ga, gb = MODALITY.open(a, {}), MODALITY.open(b, {})
    sections, _ = gstore.read(a / "graph")
    names = sorted(set(gstore.strings(sections, "node_name").all()))
    rng = random.Random(10)
    picked = rng.sample(names, min(targets, len(names)))
    asked = 0
    for name in picked:
        for method, args in (("callers", ()), ("callees", ()), ("references", ()),
                             ("impact", (2,))):  # fmt: skip
            fa, fb = getattr(ga, method, None), getattr(gb, method, None)
            if fa is None or fb is None:
                continue
            ra, rb = fa(name, *args), fb(name, *args)
            asked += 1
            if repr(ra) != repr(rb):
                problems.append(f"{method}({name!r}) differs")
    print(f"compared {len(picked)} names, {asked} queries", file=sys.stderr)
    return problems


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("index_dir", type=Path)
    b.add_argument("out", type=Path)
    b.add_argument("--tracemalloc", action="store_true")
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    c.add_argument("--targets", type=int, default=300)
    args = ap.parse_args()
    if args.cmd == "build":
        print(json.dumps(build(args.index_dir, args.out, args.tracemalloc), indent=1))
        return
    problems = compare(args.a, args.b, args.targets)
    for p in problems[:50]:
        print(p)
    print("identical" if not problems else f"{len(problems)} differences")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
