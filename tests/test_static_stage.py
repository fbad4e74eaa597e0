"""Every chunk by meaning within the first stage (issue 17): a staged first build commits the
static tier's rows of every line window right after its text answers, then of every extracted
chunk with structural, and its semantic plan links them. A reader between the commits gets
answers by meaning with coverage that says so; a writer killed between them leaves that
searchable and the next build completes it. Real code (standard-library packages), the real
model and table; the test waits for the build's phases, never for a time."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

from test_staged import _killed_at

from maguyva.api import Index
from maguyva.build.indexer import build_index
from maguyva.query.engine import Engine
from maguyva.store.generations import IndexDir

STDLIB = Path(sysconfig.get_paths()["stdlib"])
CONFIG: dict[str, Any] = {"first_build_stages": True, "jobs": 1, "embedding_threads": 1,
                          "semantic_max_chunks": 40}  # fmt: skip
QUESTION = "how is a JSON document decoded into Python objects"


def corpus(root: Path) -> Path:
    for name in ("json", "email"):
        shutil.copytree(STDLIB / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def semantic_of(manifest: dict[str, Any]) -> dict[str, Any]:
    return manifest["modalities"]["semantic"]


def read_between(root: Path) -> tuple[dict[str, Any], Any]:
    """Build, answering a question by meaning as each later stage starts."""
    seen: dict[str, Any] = {}

    def read_now(phase: str, done: int, total: int) -> None:
        # ("structural", 0, 1): the line windows' generations are committed;
        # ("graph", 0, 1): the extracted chunks', the graph and plan not yet
        if phase in ("structural", "graph") and done == 0 and phase not in seen:
            engine = Engine.open(root)
            by_meaning = engine.search(QUESTION, limit=10, modalities=["semantic"])
            assert by_meaning.results, by_meaning.notes
            # every hit by meaning names the tier that answered it: the static rows alone
            assert all(r.extra.get("tier") == "static" for r in by_meaning.results)
            seen[phase] = (engine.generation.manifest, engine.search(QUESTION, limit=10),
                           Index.open(root).status())  # fmt: skip

    summary = build_index(root, config=CONFIG, progress=read_now)
    return seen, summary


def check_static_answer(manifest: dict[str, Any], response: Any, status: dict[str, Any]) -> None:
    status_semantic = semantic_of(manifest)
    assert status_semantic["built"] and status_semantic["pending"], status_semantic
    assert "semantic" in manifest["pending"]
    cov = response.coverage["semantic"]
    # every chunk of the generation is answered by meaning, all of them by the static tier
    assert cov["chunks"] == manifest["chunks"] == cov["static"] == cov["pending"] > 100
    assert cov["embedded"] == 0 and not cov["complete"]
    assert any(f"{cov['static']:,} pending answered by the static tier" in n
               for n in response.notes), response.notes  # fmt: skip
    assert response.weights.get("semantic", 0) > 0, response.weights
    assert response.results and any(r.path.startswith("json/") for r in response.results[:5])
    assert status["modalities"]["semantic"]["coverage"]["static"] == cov["static"]
    assert status["modalities"]["semantic"]["pending"] is True


def test_a_search_after_the_first_stage_answers_by_meaning_over_every_chunk(tmp_path):
    root = corpus(tmp_path / "repo")
    seen, summary = read_between(root)
    windows, response, status = seen["structural"]
    assert windows["built_for"]["extractor"] == "line-windows"
    check_static_answer(windows, response, status)
    extracted, response, status = seen["graph"]
    assert extracted["generation"] > windows["generation"]
    assert "extractor" not in extracted["built_for"] or (
        extracted["built_for"]["extractor"] != "line-windows")  # fmt: skip
    check_static_answer(extracted, response, status)
    # the plan linked the extracted chunks' static rows: nothing pending is left without one
    final = IndexDir(root / ".maguyva").current(pin=False)
    report = semantic_of(final.manifest)["report"]
    assert not report.get("static_only") and final.manifest.get("pending") == []
    assert report["static"] == report["pending"] > 0 and report["embedded"] > 0
    rows = json.loads((final.path / "semantic" / "static.ids.json").read_bytes())
    assert len(rows) == extracted["chunks"]  # the extracted chunks' rows, linked, not redone
    assert summary.generation == final.number


def test_kill9_between_the_stages_then_the_next_build_completes(tmp_path):
    for phase in ("structural", "graph"):  # after the windows' commits; after the chunks'
        root = corpus(tmp_path / phase)
        _killed_at(root, phase, CONFIG)
        committed = IndexDir(root / ".maguyva").current(pin=False).manifest
        assert semantic_of(committed)["report"]["static_only"]
        response = Engine.open(root).search(QUESTION, limit=10)
        assert response.coverage["semantic"]["static"] == committed["chunks"]
        build_index(root, config=CONFIG)
        final = IndexDir(root / ".maguyva").current(pin=False).manifest
        report = semantic_of(final)["report"]
        assert not final.get("pending") and not report.get("static_only")
        assert report["static"] == report["pending"] > 0, report
        assert report["new"] + report["from_cache"] >= report["embedded"] > 0
    env = {**os.environ}
    fsck = subprocess.run([sys.executable, "-m", "maguyva", "fsck", "--root", str(root),
                           "--json"], capture_output=True, text=True, env=env, timeout=600)  # fmt: skip
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    assert json.loads(fsck.stdout)
