"""Large-repository machinery: segments and their cache (kill and resume), the distributed
build (in-process and Ray) against the single-process index, dry-run estimates, the vector
stores, and the memory budget."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.synthetic import generated_corpus

from maguyva.api import Index
from maguyva.build import memory
from maguyva.build.indexer import build_index
from maguyva.errors import MaguyvaError
from maguyva.model import SourceFile
from maguyva.scale.distributed import InlineExecutor, distributed_build
from maguyva.scale.dryrun import VOYAGE_CODE_3_USD_PER_MTOK, dry_run, format_report
from maguyva.scale.vectorstore import LanceDBStore, LocalHammingStore, open_store
from maguyva.store import blocks
from maguyva.store.generations import IndexDir
from maguyva.store.segments import Segment, SegmentCache, partition

STDLIB = Path(sysconfig.get_paths()["stdlib"])
MODALITIES = ["text", "structural", "graph"]
PY = sys.executable
REPO = Path(__file__).resolve().parents[1]


def copy_stdlib(
    dest: Path, packages: tuple[str, ...] = ("json", "http", "logging", "email")
) -> Path:
    """A real corpus: a few CPython standard-library packages, without bytecode."""
    for name in packages:
        shutil.copytree(STDLIB / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def answers(root: Path, index_dir: Path) -> list[Any]:
    """Every intent's answers on queries derived from the corpus itself: definitions found by
    the structural index, their callers and impact, literals, a question, a snippet."""
    index = Index.open(root, index_dir=index_dir)
    names = sorted({h.name for h in index.find_symbol("get", limit=50) if getattr(h, "name", None)})
    queries = [f"where is {n} defined" for n in names[:4]]
    queries += [f"who calls {n}" for n in names[:3]] + [f"what depends on {n}" for n in names[:2]]
    queries += ['"Content-Length"', '"no such literal zq9"', "how are log records formatted",
                "code like this:\nfor key, value in items:\n    out[key] = value\n",
                "HTTPConnection", "dumps"]  # fmt: skip
    out = []
    for q in queries:
        r = index.search(q, preset="thorough")
        out.append((q, r.intent, r.fusion_strategy, sorted(r.modalities),
                    [(x.path, x.start_line, x.end_line, round(x.score, 12)) for x in r.results]))  # fmt: skip
    return out


# ---- segments ------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(
    names=st.sets(st.from_regex(r"[a-z]{1,6}(/[a-z]{1,6}){0,2}\.py", fullmatch=True),
                  min_size=1, max_size=40),
    count=st.integers(1, 9),
    changed=st.integers(0, 39),
)  # fmt: skip
def test_partitions_cover_every_file_once_and_keys_follow_content(names, count, changed):
    files = [SourceFile(n, 1, 0, "python") for n in sorted(names)]
    digests = {f.path: f"d-{f.path}" for f in files}
    parts = partition(files, digests, count)
    seen = [f.path for p in parts for f in p.files]
    assert sorted(seen) == sorted(names) and len(seen) == len(set(seen))
    assert parts == partition(list(reversed(files)), digests, count)  # order-independent
    victim = files[changed % len(files)].path
    edited = partition(files, {**digests, victim: "edited"}, count)
    for before, after in zip(parts, edited, strict=True):
        holds = victim in {f.path for f in before.files}
        assert (before.key("s") != after.key("s")) == holds
        assert before.key("s") != before.key("other salt")


def test_segment_cache_round_trip_and_torn_file(tmp_path):
    cache = SegmentCache(tmp_path / "seg")
    seg = Segment("k1", [("a.py", "python", None, [], [], [], [], [], 0.0, 3, "ok", None)])
    cache.put(seg)
    assert cache.get("k1") == seg and cache.keys() == {"k1"}
    data = cache.path("k1").read_bytes()
    cache.path("k1").write_bytes(data[: len(data) // 2])  # a torn write
    assert cache.get("k1") is None and not cache.path("k1").exists()
    assert cache.get("absent") is None


# ---- distributed build ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def stdlib_corpus(tmp_path_factory) -> tuple[Path, Path, list[Any]]:
    base = tmp_path_factory.mktemp("scale")
    root = copy_stdlib(base / "repo")
    single = base / "single"
    build_index(root, config={"index_dir": str(single), "modalities": MODALITIES})
    return root, single, answers(root, single)


def test_distributed_inline_answers_like_single_process(stdlib_corpus, tmp_path):
    root, _, expected = stdlib_corpus
    summary, stats = distributed_build(
        root, executor=InlineExecutor(), partitions=5,
        config={"index_dir": str(tmp_path / "dist"), "modalities": MODALITIES},
    )  # fmt: skip
    assert stats.computed == stats.partitions == 5 and stats.reused == 0
    assert summary.files == sum(1 for p in root.rglob("*") if p.is_file())
    got = answers(root, tmp_path / "dist")
    assert got == expected
    assert any(results for *_, results in got)  # the comparison is not between empty lists


KILL_SCRIPT = """
import os, signal, sys
from maguyva.scale.distributed import distributed_build

def on_segment(segment, stats):
    if stats.computed == int(sys.argv[3]):
        os.kill(os.getpid(), signal.SIGKILL)  # die like a killed build: no cleanup at all

distributed_build(sys.argv[1], partitions=int(sys.argv[4]), on_segment=on_segment,
                  config={"index_dir": sys.argv[2], "modalities": ["text", "structural", "graph"]})
"""


def test_killed_build_resumes_without_redoing_finished_segments(stdlib_corpus, tmp_path):
    root, _, expected = stdlib_corpus
    index_dir = tmp_path / "idx"
    run = subprocess.run([PY, "-c", KILL_SCRIPT, str(root), str(index_dir), "3", "8"],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == -9, run.stderr
    assert not (index_dir / "manifest.json").exists()  # nothing was committed
    finished = SegmentCache(index_dir / "cache" / "segments").keys()
    assert len(finished) == 3
    summary, stats = distributed_build(
        root, partitions=8, config={"index_dir": str(index_dir), "modalities": MODALITIES}
    )
    assert (stats.reused, stats.computed) == (3, 5)
    assert summary.generation >= 1
    assert answers(root, index_dir) == expected
    # a second build with nothing changed is a no-op for the indexer; a rebuild reuses all 8
    _, again = distributed_build(root, partitions=8, rebuild=True,
                                 config={"index_dir": str(index_dir), "modalities": MODALITIES})  # fmt: skip
    assert (again.reused, again.computed) == (8, 0)


def test_edit_recomputes_only_its_partition(tmp_path):
    root = generated_corpus(tmp_path / "repo", modules=12, functions=3)
    config = {"index_dir": str(tmp_path / "idx"), "modalities": MODALITIES}
    _, first = distributed_build(root, partitions=6, config=config)
    (root / "pkg" / "mod3.py").write_text("def replaced():\n    return 3\n")
    _, second = distributed_build(root, partitions=6, config=config, rebuild=True)
    assert first.computed == first.partitions
    assert (second.computed, second.reused) == (1, second.partitions - 1)
    assert Index.open(root, index_dir=tmp_path / "idx").find_symbol("replaced")


@pytest.mark.slow
def test_ray_build_answers_like_single_process(stdlib_corpus, tmp_path):
    pytest.importorskip("ray")
    from maguyva.scale.distributed import RayExecutor

    root, _, expected = stdlib_corpus
    executor = RayExecutor(num_cpus=2)
    try:
        summary, stats = distributed_build(
            root, executor=executor, partitions=6,
            config={"index_dir": str(tmp_path / "ray"), "modalities": MODALITIES},
        )  # fmt: skip
        # the cluster path (bytes shipped through the object store) gives the same segments
        executor.shared_fs = False
        _, shipped = distributed_build(
            root, executor=executor, partitions=6,
            config={"index_dir": str(tmp_path / "ray2"), "modalities": MODALITIES},
        )  # fmt: skip
    finally:
        executor.shutdown()
    assert stats.computed == 6 and len(stats.workers) >= 2  # several worker processes
    assert shipped.computed == 6
    assert answers(root, tmp_path / "ray") == expected
    assert answers(root, tmp_path / "ray2") == expected
    assert summary.files > 20


@pytest.mark.slow
def test_ray_embedding_fills_the_semantic_cache(tmp_path):
    pytest.importorskip("ray")
    from maguyva.scale.distributed import RayExecutor

    root = copy_stdlib(tmp_path / "repo", ("json",))
    config = {"modalities": ["semantic"], "semantic_phases": "full"}
    single = build_index(root, config={**config, "index_dir": str(tmp_path / "one")})
    executor = RayExecutor(num_cpus=2)
    try:
        summary, stats = distributed_build(root, executor=executor, partitions=3, embed=True,
                                           config={**config, "index_dir": str(tmp_path / "ray")})  # fmt: skip
    finally:
        executor.shutdown()
    report = summary.modalities["semantic"]["report"]
    assert summary.modalities["semantic"]["built"], summary.modalities
    assert report["new"] == 0 and report["from_cache"] == report["embedded"] > 0  # workers' vectors
    one = Index.open(root, index_dir=tmp_path / "one")
    two = Index.open(root, index_dir=tmp_path / "ray")
    for q in ("decode a JSON document", "escape a string", "pretty print with indentation"):
        a = one.search(q, modalities=["semantic"])
        b = two.search(q, modalities=["semantic"])
        assert [(r.path, r.start_line) for r in a.results] == [
            (r.path, r.start_line) for r in b.results]  # fmt: skip
    assert stats.computed == 3 and single.chunks == summary.chunks


# ---- dry run -------------------------------------------------------------------------------


def test_dry_run_counts_like_a_build_and_writes_nothing(stdlib_corpus, tmp_path):
    root, single, _ = stdlib_corpus
    (root / "blob.bin").write_bytes(b"\0" * 100)
    try:
        report = dry_run(root, {"index_dir": str(tmp_path / "never")}, sample=0)
    finally:
        (root / "blob.bin").unlink()
    assert not (tmp_path / "never").exists()
    built = Index.open(root, index_dir=single).engine().generation.manifest
    assert report.exact and report.files == built["files"] and report.chunks == built["chunks"]
    assert report.bytes == sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    assert report.skipped.get("binary") == 1 and report.skipped_examples["binary"] == ["blob.bin"]
    assert report.largest_dirs[0]["dir"] in {"http/", "logging/", "json/", "email/"}
    remote = report.embedding["remote"]
    assert remote["usd_full"] == round(remote["tokens_full"] / 1e6 * VOYAGE_CODE_3_USD_PER_MTOK, 2)
    assert 0 < remote["tokens_heads"] < remote["tokens_full"]
    assert report.embedding["to_embed"] > 0
    assert "largest directories" in format_report(report)


def test_dry_run_sample_extrapolates(tmp_path):
    root = generated_corpus(tmp_path / "repo", modules=40, functions=5)
    exact = dry_run(root, {"index_dir": str(tmp_path / "i")}, sample=0, semantic=False)
    sampled = dry_run(root, {"index_dir": str(tmp_path / "i")}, sample=10, semantic=False)
    assert not sampled.exact and sampled.sampled_files < exact.files
    assert abs(sampled.chunks - exact.chunks) <= 0.15 * exact.chunks


def test_dry_run_bad_root(tmp_path):
    with pytest.raises(MaguyvaError):
        dry_run(tmp_path / "missing")


# ---- vector stores -------------------------------------------------------------------------


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), width=st.sampled_from([1, 8, 48]),
       n=st.integers(1, 400), k=st.integers(1, 30))  # fmt: skip
def test_local_store_matches_brute_force(seed, width, n, k):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 256, (n, width), dtype=np.uint8)
    ids = rng.permutation(10 * n)[:n]
    store = LocalHammingStore(width)
    store.add(ids, codes)
    q = rng.integers(0, 256, width, dtype=np.uint8)
    dist = np.unpackbits(codes ^ q, axis=1).sum(axis=1)
    order = np.lexsort((np.arange(n), dist))[:k]  # ties by insertion order
    got_ids, got_d = store.search(q, k)
    assert got_ids.tolist() == ids[order].tolist() and got_d.tolist() == dist[order].tolist()


def test_lancedb_store_same_top_k_as_local(tmp_path):
    pytest.importorskip("lancedb")
    rng = np.random.default_rng(3)
    width, n = 48, 3000  # 384-bit codes, as the local model writes them
    codes = rng.integers(0, 256, (n, width), dtype=np.uint8)
    codes[100:140] = codes[7]  # exact ties across the k boundary
    ids = rng.permutation(1_000_000)[:n]
    local = open_store("local", width=width)
    lance = open_store("lancedb", width=width, uri=tmp_path / "lance")
    for start in (0, 1700):  # two appends: insertion order spans both
        end = 1700 if start == 0 else n
        local.add(ids[start:end], codes[start:end])
        lance.add(ids[start:end], codes[start:end])
    assert local.delete(ids[:25]) == lance.delete(ids[:25]) == 25
    assert len(local) == len(lance) == n - 25
    queries = [codes[7], codes[2000], *rng.integers(0, 256, (20, width), dtype=np.uint8)]
    for q in queries:
        for k in (1, 10, 50):
            a, b = local.search(q, k), lance.search(q, k)
            assert a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()
    # reopening the directory sees the same table; an IVF index does not change exact answers
    again = open_store("lancedb", width=width, uri=tmp_path / "lance")
    again.create_index(num_partitions=4)
    assert again.search(codes[7], 5)[0].tolist() == local.search(codes[7], 5)[0].tolist()
    approximate = LanceDBStore(tmp_path / "lance", width, exact=False, nprobes=2)
    ids_found, dists = approximate.search(codes[2000], 10)
    assert ids_found[0] == ids[2000] and dists[0] == 0
    with pytest.raises(MaguyvaError):
        open_store("lancedb", width=16, uri=tmp_path / "lance")
    with pytest.raises(ValueError):
        local.search(np.zeros(3, np.uint8), 1)


# ---- memory ------------------------------------------------------------------------------


def test_tree_rss_sees_children():
    child = subprocess.Popen([PY, "-c", "b = bytearray(200 << 20); import time; time.sleep(30)"])
    try:
        for _ in range(200):
            if memory.process_rss(child.pid) > 150 << 20:
                break
            subprocess.run(["sleep", "0.05"])
        assert memory.tree_rss() - memory.process_pss(os.getpid()) > 150 << 20
    finally:
        child.kill()
        child.wait()


def test_tree_cpu_counts_reaped_children():
    before = memory.tree_cpu()
    subprocess.run([PY, "-c", "import time\nend = time.process_time() + 0.5\n"
                    "while time.process_time() < end: pass"], check=True)  # fmt: skip
    assert memory.tree_cpu() - before >= 0.45  # the finished child's CPU, via cutime


BUDGET_SCRIPT = """
import json, sys
from pathlib import Path
from maguyva.errors import MaguyvaError
from maguyva.build.indexer import build_index
from maguyva.build.memory import RssSampler, run_within_budget

limit = int(sys.argv[3])
# one generation: a staged first build (tests/test_staged.py) would commit its text stage
# before the extraction reaches the budget, and "commits nothing" would not hold
config = {"index_dir": sys.argv[2], "jobs": 2, "modalities": ["text", "structural", "graph"],
          "first_build_stages": False}
peak = RssSampler(interval_s=0.05)
try:
    with peak:
        summary = run_within_budget(lambda: build_index(sys.argv[1], config=config), limit)
except MaguyvaError as exc:
    leftovers = sorted(p.name for p in Path(sys.argv[2]).glob("gen-*"))
    print(json.dumps({"error": str(exc), "generations": leftovers}))
    sys.exit(2)
print(json.dumps({"peak": peak.peak, "files": summary.files, "chunks": summary.chunks}))
"""


def test_build_stays_within_a_memory_budget(tmp_path):
    """A generated corpus (600 files, 12k functions) builds under a 512 MiB budget; the same
    build under 60 MiB is stopped with a clear error and commits nothing (so the budget is
    enforced, and the test can fail)."""
    root = generated_corpus(tmp_path / "repo", modules=600, functions=20)
    budget = 512 << 20
    run = subprocess.run([PY, "-c", BUDGET_SCRIPT, str(root), str(tmp_path / "i1"), str(budget)],
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:] + run.stdout
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["files"] == 601 and result["chunks"] >= 600 * 20
    assert 0 < result["peak"] <= budget
    # started with SIGINT ignored (as under nohup, or from a process that ignores it): the
    # budget must still stop the build (regression: it hung, interrupt_main being a no-op)
    ignore_sigint = lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)  # noqa: E731
    tight = subprocess.run([PY, "-c", BUDGET_SCRIPT, str(root), str(tmp_path / "i2"),
                            str(60 << 20)], capture_output=True, text=True, timeout=120,
                           preexec_fn=ignore_sigint)  # fmt: skip
    assert tight.returncode == 2, tight.stderr[-2000:]
    stopped = json.loads(tight.stdout.strip().splitlines()[-1])
    assert "memory budget of 60 MiB exceeded" in stopped["error"]
    assert stopped["generations"] == []  # the unfinished generation was removed
    assert "Traceback" not in tight.stderr


def test_budget_plan_honours_limits():
    plan = memory.plan_for_budget(2 << 30, cores=8)
    assert 1 <= plan.jobs <= 8
    small = memory.plan_for_budget(450 << 20, cores=8)
    assert small.jobs == 1
    with pytest.raises(MaguyvaError):
        memory.plan_for_budget(10 << 20, cores=2)
    assert (
        memory.parse_size("1.5G") == int(1.5 * (1 << 30)) and memory.parse_size("512M") == 512 << 20
    )
    with pytest.raises(MaguyvaError):
        memory.parse_size("lots")
    assert memory.run_within_budget(lambda: 41 + 1, 8 << 30) == 42
    errors: list[BaseException] = []

    def off_main() -> None:
        try:
            memory.run_within_budget(lambda: None, 8 << 30)
        except MaguyvaError as exc:
            errors.append(exc)

    import threading

    worker = threading.Thread(target=off_main)
    worker.start()
    worker.join()
    assert len(errors) == 1 and "main thread" in str(errors[0])


def test_phase_windows():
    windows = memory.phase_windows({"scan": 1.0, "extract": 2.0, "text": 0.5}, ["scan", "x",
                                   "extract", "text"])  # fmt: skip
    assert windows == [("scan", 0.0, 1.0), ("extract", 1.0, 3.0), ("text", 3.0, 3.5)]


def test_scripts_are_valid_python():
    for script in (KILL_SCRIPT, BUDGET_SCRIPT):
        compile(textwrap.dedent(script), "<script>", "exec")
    assert (REPO / "benches" / "kernel_index.py").is_file()


def test_scale_command_line(tmp_path, capsys):
    from maguyva.scale.__main__ import main

    root = generated_corpus(tmp_path / "repo", modules=6, functions=2)
    assert main(["dry-run", str(root), "--json", "--sample", "0",
                 "--index-dir", str(tmp_path / "none")]) == 0  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert report["files"] == 7 and report["exact"] and not (tmp_path / "none").exists()
    assert main(["build", str(root), "--partitions", "3", "--index-dir", str(tmp_path / "i"),
                 "--modalities", "text,structural", "--memory", "2G"]) == 0  # fmt: skip
    assert "3 computed, 0 reused of 3" in capsys.readouterr().out
    assert main(["build", str(tmp_path / "missing")]) == 2
    assert main(["build", str(root), "--memory", "lots"]) == 2


# ---- the streaming build: segment views, phases, the extraction hook -----------------------


def _segment_index(gen_dir: Path) -> dict[str, list[int]]:
    from maguyva.support import sealed

    return sealed.read_packed_json(gen_dir / "files.json", "files")["segments"]["files"]


def test_lazy_views_equal_the_stored_segments(stdlib_corpus):
    """`SegmentChunks` and `SegmentExtraction` over a built generation give exactly what the
    segment files hold, decoded whole (what the indexer used to keep in memory)."""
    from maguyva.modalities.protocol import chunk_spans
    from maguyva.store.chunks import SEGMENTS, ChunkStore, segment_of
    from maguyva.store.extraction import decode_extraction
    from maguyva.store.generations import IndexDir
    from maguyva.store.views import SegmentChunks, SegmentExtraction
    from maguyva.support import sealed

    _root, single, _ = stdlib_corpus
    gen = IndexDir(single).current().path
    index = _segment_index(gen)
    counts = [0] * SEGMENTS
    for path, entry in index.items():
        counts[segment_of(path)] += entry[2]
    chunks = SegmentChunks(gen, counts)
    stored = ChunkStore.open(gen)
    listed = list(chunks)
    assert len(chunks) == len(listed) == len(stored) > 1000
    assert {c.id: c for c in listed} == {c.id: stored.get(c.id) for c in listed}
    assert chunks[0] == listed[0] and chunks[-1] == listed[-1]
    assert chunks[len(chunks) // 2] == listed[len(listed) // 2]
    assert chunks[3:6] == listed[3:6]
    with pytest.raises(IndexError):
        chunks[len(chunks)]
    assert list(chunk_spans(chunks)) == [(c.path, c.start_line, c.end_line, c.id) for c in listed]
    assert list(chunk_spans(listed[:3])) == list(chunk_spans(chunks))[:3]

    whole = {}
    for part in sorted((gen / "extract").glob("*.json")):
        payload = sealed.read_sealed(part, "extract", blocks.ROWS_VERSION)
        for path, _n, at, size in blocks.blocks(payload, part):
            _digest, row = json.loads(blocks.raw(payload[at : at + size], part))
            whole[path] = decode_extraction(path, row)
    extraction = SegmentExtraction(gen, index, cache=8)
    assert len(extraction) == len(whole) and list(extraction) == sorted(whole)
    assert all(extraction[p] == whole[p] for p in reversed(sorted(whole)))  # past the cache
    assert dict(extraction.items()) == whole
    assert "no/such.py" not in extraction and extraction.get("no/such.py") is None
    with pytest.raises(KeyError):
        extraction["no/such.py"]
    extraction.close()


def test_build_streams_through_views_and_reports_every_phase(tmp_path, monkeypatch):
    """Modalities get the segment views (not lists), every phase starts with `(phase, 0,
    total)` and ends with `(phase, total, total)`, nothing spilled is left behind, and an edit
    re-extracts one file and writes its rows as a delta (no segment rewritten)."""
    from maguyva.build import indexer
    from maguyva.store.views import SegmentChunks, SegmentExtraction

    root = generated_corpus(tmp_path / "repo", modules=30, functions=4)
    seen: list[Any] = []
    real = indexer.build_modalities

    def spy(ctx, *args, **kwargs):
        seen.append((type(ctx.chunks), type(ctx.extraction), len(ctx.chunks), len(ctx.extraction)))
        return real(ctx, *args, **kwargs)

    monkeypatch.setattr(indexer, "build_modalities", spy)
    events: list[tuple[str, int, int]] = []
    config = {"index_dir": str(tmp_path / "idx"), "modalities": MODALITIES, "jobs": 1}
    summary = build_index(root, config=config, progress=lambda *e: events.append(e))
    assert seen == [(SegmentChunks, SegmentExtraction, summary.chunks, 31)]
    phases = ["scan", "extract", "write", "text", "structural", "graph", "commit"]
    firsts = []
    for e in events:
        if e[0] not in firsts:
            firsts.append(e[0])
    assert firsts == phases, firsts
    for phase in phases:
        mine = [e for e in events if e[0] == phase]
        assert mine[0][1] == 0, (phase, mine)
        assert mine[-1][1] == mine[-1][2] > 0, (phase, mine)
    gen = tmp_path / "idx" / f"gen-{summary.generation:06d}"
    assert not (gen / "spill").exists() and len(list((gen / "chunks").glob("*.jsonl"))) == 64

    (root / "pkg" / "mod3.py").write_text("def only_this():\n    return 3\n")
    events.clear()
    again = build_index(root, config=config, progress=lambda *e: events.append(e))
    assert next(e for e in events if e[0] == "extract") == ("extract", 0, 1)
    assert again.timings_s["segments_rewritten"] == 0.0
    layout = IndexDir(tmp_path / "idx").current(pin=False).manifest["layout"]
    assert (layout["mode"], layout["delta_paths"], layout["delta_files"]) == ("delta", 1, 1)
    hits = Index.open(root, index_dir=tmp_path / "idx").search("where is only_this defined")
    assert hits.results and hits.results[0].path == "pkg/mod3.py"


def test_extract_hook_builds_the_same_index(tmp_path):
    """`Indexer(extract=...)` replaces the extraction step; with the structural extractor
    behind it the stored chunks and extraction are byte-for-byte those of the default
    (streaming) step."""
    from maguyva.build.indexer import Indexer
    from maguyva.modalities.structural.modality import extract_repository
    from maguyva.support import sealed

    root = copy_stdlib(tmp_path / "repo", ("json", "logging"))
    calls: list[int] = []

    def hook(root_, files, config, progress):
        calls.append(len(files))
        return extract_repository(root_, files, config, progress)

    def stored(index_dir: Path) -> tuple[bytes, bytes]:
        gen = max(index_dir.glob("gen-*"))
        return (b"".join(sealed.read_sealed(p, "chunks", blocks.ROWS_VERSION) for p in sorted(gen.glob("chunks/*"))),
                b"".join(sealed.read_sealed(p, "extract", blocks.ROWS_VERSION) for p in sorted(gen.glob("extract/*"))))  # fmt: skip

    config = {"modalities": MODALITIES, "jobs": 1}
    Indexer(root, config={**config, "index_dir": str(tmp_path / "a")}, extract=hook).update()
    build_index(root, config={**config, "index_dir": str(tmp_path / "b")})
    assert calls == [len(list(root.rglob("*.py")))]
    assert stored(tmp_path / "a") == stored(tmp_path / "b")


def test_memory_config_key_sets_the_extraction_processes(tmp_path):
    from maguyva.build.indexer import Indexer

    root = generated_corpus(tmp_path / "repo", modules=2, functions=1)
    (root / ".maguyva.toml").write_text('memory = "2G"\n')
    plan = memory.plan_for_budget(2 << 30)
    assert Indexer(root).config["jobs"] == plan.jobs
    assert Indexer(root, config={"jobs": 1}).config["jobs"] == 1  # an explicit count wins
    with pytest.raises(MaguyvaError, match="too small"):
        Indexer(root, config={"memory": "100M"})
