"""Searchable in seconds: embedding never gates the index (issue 17).

A large build commits text, structural and graph at once and embeds in later generations
(`maguyva.build.follow`). These tests run the real `maguyva` command in subprocesses over
real code (modules of the standard library), with the local model or the fake Voyage server
of `test_embed_voyage.py` (which counts what is sent), and wait for states (a committed
generation, a progress file, a request received), never for a time."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_embed_voyage import VoyageServer

from maguyva.build.progress import read_progress
from maguyva.errors import MaguyvaError
from maguyva.modalities.semantic.embed import content_hash
from maguyva.scale.dryrun import SECOND_THREAD_COST
from maguyva.store.generations import IndexDir

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PACKAGES = ("email", "json", "http", "logging", "xml/dom")
MODULES = ("argparse", "textwrap", "shlex", "fnmatch", "glob", "tarfile", "zipfile")
TIMEOUT_S = 300.0  # generous: the machine is shared


def make_corpus(root: Path, packages: tuple[str, ...] = PACKAGES,
                modules: tuple[str, ...] = MODULES) -> Path:  # fmt: skip
    """A real tree: packages and modules of the running Python's standard library."""
    for name in packages:
        shutil.copytree(STDLIB / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in modules:
        target = root / f"{name}.py"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(STDLIB / f"{name}.py", target)
    return root


def maguyva(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:  # fmt: skip
    proc = subprocess.run([sys.executable, "-m", "maguyva", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=TIMEOUT_S)  # fmt: skip
    if check:
        assert proc.returncode in (0, 1), proc.stderr
    return proc


def wait_for(what: str, condition: Callable[[], Any], proc: subprocess.Popen | None = None) -> Any:
    """Poll `condition` until it returns something truthy; fail with `what` on timeout or
    when `proc` ends first."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        if proc is not None and proc.poll() is not None:
            found = condition()
            if found:
                return found
            out = proc.stderr.read() if proc.stderr else ""
            pytest.fail(f"the build ended ({proc.returncode}) before {what}: {out[-2000:]}")
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def manifest(index_dir: Path) -> dict[str, Any] | None:
    """The committed manifest (None before the first commit)."""
    try:
        return IndexDir(index_dir).read_manifest()
    except MaguyvaError:
        return None


def semantic_report(m: dict[str, Any] | None) -> dict[str, Any] | None:
    status = (m or {}).get("modalities", {}).get("semantic", {})
    return status.get("report") if status.get("built") else None


def summary_of(stdout: str) -> dict[str, Any]:
    lines = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    return next(x for x in lines if x["type"] == "summary")["data"]["maguyva"]


def test_a_search_during_the_first_build_answers_and_states_coverage(tmp_path: Path) -> None:
    root = make_corpus(tmp_path / "repo")
    index_dir = root / ".maguyva"
    env = {**os.environ, "MAGUYVA_EMBEDDING_THREADS": "1"}
    build = subprocess.Popen([sys.executable, "-m", "maguyva", "index", str(root)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env)  # fmt: skip
    try:
        first = wait_for(
            "a generation committed before its embedding",
            lambda: (r := semantic_report(manifest(index_dir))) is not None and r["left"] > 0
            and manifest(index_dir),
            build,
        )  # fmt: skip
        assert all(first["modalities"][m]["built"] for m in ("text", "structural", "graph"))
        # the first answer comes from what is committed, while the build goes on
        found = maguyva("search", "how is a MIME message parsed from bytes", "--json",
                        "--root", str(root), env=env)  # fmt: skip
        assert found.returncode == 0, found.stderr
        data = summary_of(found.stdout)
        cov = data["coverage"]["semantic"]
        assert cov["chunks"] > 1000 and cov["embedded"] < cov["chunks"] and not cov["complete"]
        assert any(n.startswith(f"semantic: {cov['embedded']:,} of {cov['chunks']:,} chunks")
                   for n in data["notes"]), data["notes"]  # fmt: skip
        explained = maguyva("search", "how is a MIME message parsed from bytes", "--explain",
                            "--root", str(root), env=env)  # fmt: skip
        assert "note: semantic: " in explained.stdout
        # status, from another process: coverage, and the running build's rate and ETA
        wait_for("a progress report of the embedding",
                 lambda: (p := read_progress(index_dir)) and p["alive"]
                 and str(p.get("phase", "")).startswith("embed") and p.get("rate"), build)  # fmt: skip

        # the build moves between phases (embed, then the next slice's plan) while `status`
        # starts up, so ask again until one status process saw the embedding running
        def embedding_status() -> str | None:
            out = maguyva("status", "--root", str(root), env=env).stdout
            return out if "building: embed" in out else None

        status_out = wait_for("a status that shows the embedding running", embedding_status, build)
        assert "chunks embedded" in status_out, status_out
        assert "/s" in status_out.split("building: embed")[1].splitlines()[0], status_out
        assert build.poll() is None, "the build ended before the checks: they proved nothing"
    finally:
        if build.poll() is None:
            build.send_signal(signal.SIGINT)
        build.communicate(timeout=TIMEOUT_S)
    # interrupted while embedding: still searchable, and the next run resumes (not a no-op)
    after = maguyva("search", "parse a MIME message", "--root", str(root), env=env)
    assert after.returncode == 0, after.stderr
    left = semantic_report(manifest(index_dir))["left"]
    assert left > 0
    resumed = maguyva("index", str(root), "--json", "--set", "semantic_max_chunks=64", env=env)
    summary = json.loads(resumed.stdout)
    assert summary["changes"].get("reason") == "embedding resumed"
    assert summary["modalities"]["semantic"]["report"]["new"] == 64
    assert semantic_report(manifest(index_dir))["left"] <= left - 64


class HangingVoyage(VoyageServer):
    """The fake Voyage server, holding request number `hang_at` (1-based) until released."""

    def __init__(self, hang_at: int) -> None:
        super().__init__()
        self.hang_at = hang_at
        self.release = threading.Event()
        self.arrived = threading.Event()
        self._count = 0
        self._lock = threading.Lock()
        handler = self.httpd.RequestHandlerClass
        original = handler.do_POST
        server = self

        def do_post(h: Any) -> None:
            with server._lock:
                server._count += 1
                mine = server._count
            if mine == server.hang_at:
                server.arrived.set()
                server.release.wait(TIMEOUT_S)
            original(h)

        handler.do_POST = do_post  # type: ignore[method-assign]


@pytest.fixture
def voyage() -> Iterator[HangingVoyage]:
    server = HangingVoyage(hang_at=3)
    yield server
    server.release.set()
    server.close()


def sent_texts(server: VoyageServer, start: int = 0) -> list[str]:
    return [t for body in server.requests[start:] for t in body["input"]]


def cached_hashes(index_dir: Path) -> set[str]:
    import sqlite3

    db = sqlite3.connect(index_dir / "cache" / "embeddings" / "vectors.sqlite")
    try:
        return {row[0] for row in db.execute("SELECT content FROM vectors")}
    finally:
        db.close()


def test_background_build_killed_while_embedding_resumes_without_embedding_twice(
    tmp_path: Path, voyage: HangingVoyage
) -> None:
    root = make_corpus(tmp_path / "repo", packages=("json", "email"), modules=("textwrap",))
    index_dir = root / ".maguyva"
    env = {**os.environ, "MAGUYVA_EMBEDDING_PROVIDER": "voyage", "VOYAGE_API_KEY": "pa-fake",
           "MAGUYVA_VOYAGE_BASE_URL": voyage.url}  # fmt: skip
    started = maguyva("index", str(root), "--background", "--json", env=env)
    out = json.loads(started.stdout)
    # it returned with a searchable generation, the embedding still running detached
    assert out["generation"] is not None and out["pid"] is not None
    assert out["semantic"]["embedded"] == 0 and out["semantic"]["left"] > 0
    pid = out["pid"]
    assert voyage.arrived.wait(TIMEOUT_S), "the background build never reached request 3"
    progress = read_progress(index_dir)
    assert progress is not None and progress["pid"] == pid and progress["alive"]
    os.kill(pid, signal.SIGKILL)
    wait_for("the killed build to be gone", lambda: not read_progress(index_dir)["alive"])
    stored = cached_hashes(index_dir)  # what the killed build had embedded and kept
    assert len(stored) >= 64, "two requests' vectors should be in the cache"
    voyage.release.set()
    # the index answers meanwhile; status says no build is running
    found = maguyva("search", "decode a JSON document", "--root", str(root), env=env)
    assert found.returncode == 0, found.stderr
    assert "building:" not in maguyva("status", "--root", str(root), env=env).stdout
    before = len(voyage.requests)
    resumed = maguyva("index", str(root), "--json", env=env)
    summary = json.loads(resumed.stdout)
    assert summary["changes"].get("reason") == "embedding resumed", summary["changes"]
    again = [content_hash(t) for t in sent_texts(voyage, before)]
    assert again, "the resumed build sent nothing"
    assert not stored & set(again), "a vector kept by the killed build was asked for again"
    assert len(again) == len(set(again))
    final = semantic_report(manifest(index_dir))
    assert final["left"] == 0 and final["pending"] == 0
    # and now there is nothing to do
    assert json.loads(maguyva("index", str(root), "--json", env=env).stdout)["noop"]


def test_dry_run_states_the_local_embedding_time_and_what_the_count_counts(tmp_path: Path) -> None:
    root = make_corpus(tmp_path / "repo", packages=("json",), modules=("textwrap",))
    args = ("index", str(root), "--dry-run", "--set", "semantic_phases=heads-first",
            "--set", "embedding_threads=2")  # fmt: skip
    report = json.loads(maguyva(*args, "--json").stdout)
    local = report["embedding"]["local_time"]
    emb = report["embedding"]
    assert local["bodies"] == emb["to_embed"] > 0 and local["heads"] == emb["heads_to_embed"] > 0
    assert local["texts"] == local["bodies"] + local["heads"] and local["cores"] == 2
    rates = local["rates_per_cpu_s"]
    cpu_s = local["bodies"] / rates["full"] + local["heads"] / rates["heads"]
    assert local["cpu_s"] == pytest.approx(cpu_s, abs=0.1)
    assert local["wall_s"] == pytest.approx(cpu_s * SECOND_THREAD_COST / 2, abs=0.1)
    text = maguyva(*args).stdout
    assert (f"local   {local['texts']:,} texts ({local['bodies']:,} bodies + "
            f"{local['heads']:,} heads, heads first: the progress counts both)") in text  # fmt: skip
    assert "CPU-s" in text and "on 2 idle core(s)" in text
    assert not (root / ".maguyva").exists()


def test_mcp_answers_and_status_state_semantic_coverage(tmp_path: Path) -> None:
    from test_mcp import text_of, with_session

    root = make_corpus(tmp_path / "repo", packages=("json",), modules=("textwrap",))
    maguyva("index", str(root), "--set", "semantic_max_chunks=10", "--set", "embedding_threads=1")
    cov = semantic_report(manifest(root / ".maguyva"))
    assert cov["new"] == 10 and cov["left"] > 0

    async def scenario(session: Any) -> tuple[str, dict[str, Any]]:
        found = await session.call_tool("search", {"query": "how is a JSON string decoded"})
        status = await session.call_tool("index_status", {})
        return text_of(found), json.loads(text_of(status))

    found, status = with_session(root, scenario)
    assert "semantic: 10 of " in found, found
    semantic = status["modalities"]["semantic"]["coverage"]
    assert semantic["embedded"] + semantic["head_only"] == 10 and not semantic["complete"]
    assert status["build"] is None  # nothing is running


def test_implementation_is_embedded_before_tests_vendored_and_generated_code(
    tmp_path: Path,
) -> None:
    """With a cap, the chunks embedded are the implementation's, although a vendored copy of
    the same code (same lengths, a path that sorts first) would otherwise go first."""
    from maguyva.build.indexer import Indexer
    from maguyva.modalities.semantic.priority import peripheral
    from maguyva.modalities.semantic.reader import read_rows

    root = make_corpus(tmp_path / "repo", packages=("json",), modules=())
    shutil.copytree(root / "json", root / "_vendor" / "json")
    shutil.copy(STDLIB / "textwrap.py", root / "json" / "test_wrap.py")
    config = {"modalities": ["text", "semantic"], "semantic_max_chunks": 30,  # json has 39
              "semantic_phases": "full", "embedding_threads": 1}  # fmt: skip
    Indexer(root, config=config).update()
    rows = read_rows(IndexDir(root / ".maguyva").current().path / "semantic")
    assert len(rows["paths"]) >= 30
    ours = {h for p, h in zip(rows["paths"], rows["hashes"], strict=True) if not peripheral(p)}
    theirs = {h for p, h in zip(rows["paths"], rows["hashes"], strict=True) if peripheral(p)}
    assert not theirs, "a test or vendored chunk was embedded before the implementation"
    assert len(ours) == 30
    assert peripheral("_vendor/json/decoder.py") and peripheral("json/test_wrap.py")
    for path in ("pkg/tests/x.py", "a/migrations/0001_initial.py", "m_pb2.py", "x.spec.ts",
                 "node_modules/y/index.js", "FooTest.java", "conftest.py"):  # fmt: skip
        assert peripheral(path), path
    for path in ("json/decoder.py", "latest/x.py", "contest.py", "src/testing_utils/y.py"):
        assert not peripheral(path), path


def test_a_partial_embedding_weighs_as_much_as_it_covers(tmp_path: Path) -> None:
    """Semantic ranks only the chunks it embedded: at 10 % coverage its full weight put them
    above the answer (understand_code MRR 0.40 against BM25's 0.585 on requests, docs)."""
    from maguyva.api import Index
    from maguyva.query.routing import plan_query

    root = make_corpus(tmp_path / "repo", packages=("json",), modules=("textwrap",))
    index = Index.open(root, modalities=["text", "structural", "semantic"],
                       semantic_max_chunks=12, embedding_threads=1)  # fmt: skip
    index.build(modalities=["text", "structural", "semantic"])
    response = index.search("how is a JSON string decoded into objects")
    cov = response.coverage["semantic"]
    # the chunks left pending answer by the static tier meanwhile, at half weight
    assert cov["static"] == cov["pending"] > 0
    share = (cov["embedded"] + cov["head_only"] + 0.5 * cov["static"]) / cov["chunks"]
    assert 0 < share < 1
    full = plan_query(response.intent, response.confidence, preset="default").weights
    assert response.weights["semantic"] == pytest.approx(full["semantic"] * share, abs=1e-4)
    assert response.weights["text"] == full["text"]


def test_central_files_are_embedded_before_leaves(tmp_path: Path) -> None:
    """The graph is built before the embedding starts: with a cap, the chunks embedded are in
    files whose centrality is above the median (shortest first would pick leaves too)."""
    from maguyva.build.indexer import Indexer
    from maguyva.modalities.semantic.priority import central_files
    from maguyva.modalities.semantic.reader import read_rows

    root = make_corpus(tmp_path / "repo", packages=("json", "email"), modules=("textwrap",))
    config = {"modalities": ["text", "graph", "semantic"], "semantic_max_chunks": 60,
              "semantic_phases": "full", "embedding_threads": 1}  # fmt: skip
    Indexer(root, config=config).update()
    gen = IndexDir(root / ".maguyva").current().path
    central = central_files(gen / "graph")
    assert central and len(central) < len({p.relative_to(root).as_posix()
                                           for p in root.rglob("*.py")})  # fmt: skip
    rows = read_rows(gen / "semantic")
    assert len(rows["paths"]) >= 60
    leaves = sorted({p for p in rows["paths"] if p not in central})
    assert not leaves, leaves


def test_budget_and_cap_bound_the_whole_update_not_each_slice() -> None:
    from maguyva.build import follow

    assert follow.first_config({"semantic_time_budget_s": 30.0})["semantic_time_budget_s"] == 0.0
    free = follow.slice_config({}, spent_s=100.0, embedded=5000)
    assert free is not None and free["semantic_time_budget_s"] == follow.SEMANTIC_SLICE_S
    config = {"semantic_time_budget_s": 20.0, "semantic_max_chunks": 100}
    first = follow.slice_config(config, spent_s=0.0, embedded=0)
    assert first is not None and first["semantic_time_budget_s"] == follow.SEMANTIC_SLICE_S
    later = follow.slice_config(config, spent_s=15.0, embedded=60)
    assert later is not None and later["semantic_time_budget_s"] == 5.0
    assert later["semantic_max_chunks"] == 40
    assert follow.slice_config(config, spent_s=20.0, embedded=60) is None
    assert follow.slice_config(config, spent_s=1.0, embedded=100) is None
    done = {"modalities": {"semantic": {"built": True, "report": {"left": 0, "pending": 3}}}}
    assert follow.semantic_left(done) == 0  # `left` is what counts, when reported
    old = {"modalities": {"semantic": {"built": True,
                                       "report": {"pending": 3, "partial": 2, "phases": "full"}}}}  # fmt: skip
    assert follow.semantic_left(old) == 5
    assert follow.semantic_left({"modalities": {"semantic": {"built": False}}}) == 0


def test_a_watchers_first_build_answers_before_it_embeds(tmp_path: Path) -> None:
    """`maguyva watch` / `mcp --watch` on a fresh index: the same never-gate first build (its
    later small updates keep `graph_follows`' per-edit slices)."""
    from maguyva.build.indexer import Indexer

    root = make_corpus(tmp_path / "repo", packages=("json",), modules=())
    writer = Indexer(root, config={"modalities": ["text", "semantic"],
                                   "semantic_max_chunks": 10, "embedding_threads": 1})  # fmt: skip
    writer.follows_by_default = True  # as the watcher sets it
    summary = writer.update()
    assert "searchable" in summary.timings_s and summary.generation == 2
    assert summary.modalities["semantic"]["report"]["new"] == 10
