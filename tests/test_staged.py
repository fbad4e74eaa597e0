"""The staged first build (`maguyva.build.staged`): text committed first, structural and the
graph in the generations after it. A reader between the commits gets text answers and a
pending note; a writer killed between them leaves the committed stage searchable and the next
build completes the rest; the last generation answers as a one-shot build does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from durability_support import CONFIG, answers, write_repo

from maguyva.api import Index
from maguyva.build.indexer import build_index
from maguyva.interfaces.mcp_models import StatusOutput
from maguyva.query.engine import Engine
from maguyva.store.fileindex import stored_rows
from maguyva.store.generations import IndexDir

STAGED = {**CONFIG, "first_build_stages": True}
ONE_SHOT = {**CONFIG, "first_build_stages": False}


def _index(root: Path) -> IndexDir:
    return IndexDir(root / ".maguyva")


def test_a_reader_between_the_commits_gets_text_answers_and_the_pending_note(tmp_path):
    root = tmp_path / "repo"
    write_repo(root)
    seen: dict[str, Any] = {}

    def read_now(phase: str, done: int, total: int) -> None:
        # ("structural", 0, 1): the text stage is committed, structural not yet built;
        # ("graph", 0, 1): text and structural committed, the graph not yet
        if phase not in ("structural", "graph") or done != 0 or phase in seen:
            return
        engine = Engine.open(root)
        definition = engine.search("parse_config", limit=10)
        callers = engine.search("who calls load_items", limit=10)
        status = Index.open(root).status()
        seen[phase] = (engine.generation.number, definition, callers, status)
        seen[phase + " phrased"] = engine.search("where is parse_config defined", limit=10)

    summary = build_index(root, config=STAGED, progress=read_now)

    text_gen, definition, _callers, status = seen["structural"]
    assert any(r.path == "pkg/core.py" for r in definition.results), definition
    assert any("structural pending" in note for note in definition.notes), definition.notes
    assert status["modalities"]["structural"]["pending"] is True
    assert status["modalities"]["graph"]["pending"] is True
    assert status["modalities"]["text"]["built"] is True
    # a question in words whose retriever is pending is looked up as the target's text
    # (definition lines first), not widened to a fusion of what is built
    phrased = seen["structural phrased"]
    assert phrased.results and phrased.results[0].path == "pkg/core.py", phrased
    assert any("searched the text for 'parse_config'" in n for n in phrased.notes), phrased.notes
    mcp = StatusOutput(indexed=True, **{k: v for k, v in status.items()
                                        if k in StatusOutput.model_fields})  # fmt: skip
    assert mcp.modalities["structural"].pending is True  # what MCP `index_status` returns

    structural_gen, definition, callers, status = seen["graph"]
    assert structural_gen > text_gen
    assert any(r.path == "pkg/core.py" and r.symbol for r in definition.results), definition
    assert not any("pending" in note for note in definition.notes), definition.notes
    assert any("graph pending" in note for note in callers.notes), callers.notes
    assert status["modalities"]["structural"]["built"] is True
    assert status["modalities"]["graph"].get("pending") is True

    assert summary.generation > structural_gen
    final = _index(root).current(pin=False).manifest
    assert final.get("pending") == []
    assert all(final["modalities"][m]["built"] for m in CONFIG["modalities"])


def test_the_last_generation_answers_as_a_one_shot_build(tmp_path):
    staged_root, one_shot_root = tmp_path / "staged", tmp_path / "one-shot"
    write_repo(staged_root)
    write_repo(one_shot_root)
    staged = build_index(staged_root, config=STAGED)
    one_shot = build_index(one_shot_root, config=ONE_SHOT)
    assert one_shot.generation == 1 and staged.generation == 3  # text; structural; graph
    assert answers(staged_root) == answers(one_shot_root)
    assert any(answers(staged_root))
    rows = stored_rows(_index(staged_root).current(pin=False).path)
    assert rows == stored_rows(_index(one_shot_root).current(pin=False).path)
    # and the next build finds nothing to do
    assert build_index(staged_root, config=STAGED).noop


def _killed_at(root: Path, phase: str, config: dict[str, Any] = STAGED) -> None:
    """Run a staged build in a child that SIGKILLs itself as `phase` starts."""
    code = (
        "import os, signal, sys; from pathlib import Path; "
        "from maguyva.build.indexer import build_index\n"
        "def progress(phase, done, total):\n"
        "    if phase == sys.argv[2] and done == 0:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        f"build_index(Path(sys.argv[1]), config={config!r}, progress=progress)\n"
    )
    child = subprocess.run(
        [sys.executable, "-c", code, str(root), phase], capture_output=True, timeout=600
    )
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()[-2000:]


def _kill_then_complete(tmp_path: Path, phase: str) -> tuple[dict[str, Any], Path]:
    root = tmp_path / "repo"
    write_repo(root)
    _killed_at(root, phase)
    committed = _index(root).current(pin=False).manifest
    assert committed["modalities"]["text"]["built"]
    assert any(r.path == "pkg/core.py" for r in Engine.open(root).search("parse_config").results)
    build_index(root, config=STAGED)
    return committed, root


def test_kill9_after_the_text_stage_then_the_next_build_completes(tmp_path):
    committed, root = _kill_then_complete(tmp_path, "structural")
    assert committed["pending"] == ["structural", "graph"]
    one_shot = tmp_path / "one-shot"
    write_repo(one_shot)
    build_index(one_shot, config=ONE_SHOT)
    final = _index(root).current(pin=False)
    assert not final.manifest.get("pending")
    assert answers(root) == answers(one_shot)
    assert stored_rows(final.path) == stored_rows(_index(one_shot).current(pin=False).path)


def test_kill9_before_the_graph_then_the_next_build_adds_only_the_graph(tmp_path):
    committed, root = _kill_then_complete(tmp_path, "graph")
    assert committed["pending"] == ["graph"] and committed["modalities"]["structural"]["built"]
    final = _index(root).current(pin=False).manifest
    assert final["generation"] == committed["generation"] + 1  # one follow-up, nothing else
    assert final["graph_of"] == committed["generation"]
    assert final.get("pending") == [] and final["modalities"]["graph"]["built"]
    one_shot = tmp_path / "one-shot"
    write_repo(one_shot)
    build_index(one_shot, config=ONE_SHOT)
    assert answers(root) == answers(one_shot)


def test_small_repositories_build_in_one_generation_by_default(tmp_path):
    root = tmp_path / "repo"
    write_repo(root)
    assert len(os.listdir(root)) < 100
    assert build_index(root, config=CONFIG).generation == 1
