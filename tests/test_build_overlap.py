"""A small update builds the semantic part in a thread alongside the other modalities
(`modality_builds.build_modalities`): its answer is the one the sequential build gives (see
tests/test_semantic_update.py, whose updates take this path), and its failure is the
update's failure. Real files (the standard library's json package), the local model."""

from __future__ import annotations

import errno
import json
import shutil
import threading
from pathlib import Path

import pytest

from maguyva.build import modality_builds
from maguyva.build.indexer import Indexer
from maguyva.modalities.semantic import modality as semantic
from maguyva.store.generations import IndexDir, IndexWriteError

STDLIB_JSON = Path(json.__file__).parent
# one semantic build per update (no never-gate slices): which thread runs it is the question
CONFIG = {"modalities": ["text", "structural", "semantic"], "semantic_phases": "heads",
          "semantic_max_chunks": 2, "semantic_follows": False}  # fmt: skip


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(STDLIB_JSON, root / "json", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _edit(root: Path, n: int) -> list[str]:
    path = root / "json/decoder.py"
    path.write_text(path.read_text() + f"\n\ndef overlap_{n}():\n    return {n}\n")
    return ["json/decoder.py"]


def test_semantic_runs_in_a_thread_for_small_updates_only(tmp_path: Path, monkeypatch) -> None:
    root = _repo(tmp_path)
    writer = Indexer(root, config=CONFIG)
    threads: list[str] = []
    inner = semantic.SemanticModality.build

    def spy(self, ctx):
        threads.append(threading.current_thread().name)
        return inner(self, ctx)

    monkeypatch.setattr(semantic.SemanticModality, "build", spy)
    writer.update()  # a first build: in order, in the caller's thread
    writer.update(hints=_edit(root, 1))  # one file: alongside the others
    monkeypatch.setattr(modality_builds, "OVERLAP_MAX_CHANGES", 0)
    writer.update(hints=_edit(root, 2))  # above the limit: in order again
    main = threading.current_thread().name
    assert threads == [main, "maguyva-build-semantic", main]
    manifest = IndexDir(root / ".maguyva").current().manifest
    assert all(manifest["modalities"][m]["built"] for m in CONFIG["modalities"])


def test_a_failing_background_build_fails_the_update_and_keeps_the_generation(
    tmp_path: Path, monkeypatch
) -> None:
    root = _repo(tmp_path)
    writer = Indexer(root, config=CONFIG)
    writer.update()
    index = IndexDir(root / ".maguyva")
    before = index.current().number

    def full_disk(self, ctx):
        assert threading.current_thread().name == "maguyva-build-semantic"
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(semantic.SemanticModality, "build", full_disk)
    with pytest.raises(IndexWriteError, match=r"No space left.*previous generation still serves"):
        writer.update(hints=_edit(root, 1))
    assert index.current().number == before  # nothing committed, the last generation serves
    monkeypatch.undo()
    summary = writer.update()
    assert index.current().number > before and summary.modalities["semantic"]["built"]


def test_ctrl_c_does_not_wait_for_the_background_build(tmp_path: Path, monkeypatch) -> None:
    """A Ctrl-C while text builds ends the update at once: the semantic thread, still busy
    (a writer's first update may plan every chunk for many seconds), is not waited for."""
    from maguyva.modalities.text import modality as text

    root = _repo(tmp_path)
    writer = Indexer(root, config=CONFIG)
    writer.update()
    before = IndexDir(root / ".maguyva").current().number
    release, started = threading.Event(), threading.Event()
    busy: list[threading.Thread] = []

    def slow(self, ctx):
        busy.append(threading.current_thread())
        started.set()
        release.wait(120)
        raise OSError(errno.EIO, "released")

    def ctrl_c(self, ctx):
        started.wait(60)
        raise KeyboardInterrupt

    monkeypatch.setattr(semantic.SemanticModality, "build", slow)
    monkeypatch.setattr(text.TextModality, "build", ctrl_c)
    try:
        with pytest.raises(KeyboardInterrupt):
            writer.update(hints=_edit(root, 1))
        assert busy and busy[0].is_alive()  # returned while the thread still ran
    finally:
        release.set()
        for thread in busy:
            thread.join(60)
    assert IndexDir(root / ".maguyva").current().number == before
