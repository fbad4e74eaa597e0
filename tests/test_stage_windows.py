"""The text stage's line windows cut on every core (`build.windows`): each file read once and
its windows stored as the span block the general path (chunks built, encoded, stripped of
their texts by `Spill.add`) stores, byte for byte — on real standard-library files, on the
shapes that take the general path, and through a staged build stopped after its line-window
generations, in worker processes and in the calling one."""

from __future__ import annotations

import contextlib
import shutil
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from maguyva.build import windows
from maguyva.build.indexer import build_index
from maguyva.extract.chunks import line_window_chunks
from maguyva.store import blocks
from maguyva.store.extraction import encode_chunks
from maguyva.store.generations import IndexDir

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PACKAGES = ("json", "email", "http", "xml", "asyncio", "concurrent", "importlib", "unittest",
            "lib2to3", "idlelib", "ctypes", "tkinter")  # fmt: skip


def general(path: str, content: bytes) -> bytes:
    """The block the spill stored before `build.windows`: what `line_windows` and
    `Spill.add` made of the file."""
    chunks = line_window_chunks(path, content.decode("utf-8", errors="replace"))
    raw = encode_chunks(chunks)
    return blocks.span_block(path, raw, raw.count(b"\n"), content) if chunks else b""


def stdlib_files() -> list[Path]:
    return sorted(p for name in PACKAGES for p in (STDLIB / name).rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts)  # fmt: skip


def test_the_fast_cut_stores_the_general_paths_bytes_for_real_files():
    files = stdlib_files()
    assert len(files) > 300
    spans = 0
    for p in files:
        rel = str(p.relative_to(STDLIB))
        content = p.read_bytes()
        got = windows.window_block(rel, content)
        assert got == general(rel, content), rel
        spans += bool(got) and got[0] == blocks.SPAN_MARK
    assert spans > 300  # the fast cut was taken (span blocks), not only the general path


@pytest.mark.parametrize(
    "content",
    [b"", b"\n", b"\n\n\n", b"x", b"x\n" * 61, b"\n" * 130, b"a\r\nb\r\n", b"a\rb\n",
     b"a\x0cb\nc\n", b"\xff\xfe bad utf-8\n", "caf\u00e9 \u2028 x\n".encode(), b"a\x85b\n",
     ("line\n" * 50 + "\n" * 60 + "tail\n").encode(), "\u00e9\n".encode() * 200],
)  # fmt: skip
def test_the_shapes_that_take_the_general_path_store_the_same_bytes(content):
    assert windows.window_block("pkg/f.txt", content) == general("pkg/f.txt", content)


def corpus(root: Path) -> Path:
    for name in PACKAGES[:4]:
        shutil.copytree(STDLIB / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "crlf.txt").write_bytes(b"one\r\ntwo\r\n" * 40)
    (root / "latin1.txt").write_bytes(b"caf\xe9\n" * 80)
    return root


class Stop(Exception):
    """Raised as the extraction after the line windows starts."""


def stage_one(root: Path, index_dir: Path, config: dict[str, Any]) -> dict[str, bytes]:
    """A staged build of `root` stopped after its line-window generations: the chunk
    segment files of the last one committed."""
    phases: list[str] = []

    def stop(phase: str, done: int, total: int) -> None:
        if phases and phases[-1] == phase:
            return
        phases.append(phase)
        if phases.count("extract") == 2:
            raise Stop

    config = {"first_build_stages": True, "index_dir": str(index_dir), "embedding_threads": 1,
              **config}  # fmt: skip
    with contextlib.suppress(Stop):
        build_index(root, config=config, progress=stop)
    generation = IndexDir(index_dir).current(pin=False)
    assert generation.manifest["built_for"]["extractor"] == "line-windows"
    chunks = generation.path / "chunks"
    return {p.name: p.read_bytes() for p in sorted(chunks.iterdir())}


def test_a_staged_build_stores_the_same_windows_in_workers_and_in_process(tmp_path, monkeypatch):
    root = corpus(tmp_path / "repo")
    monkeypatch.setattr(windows, "IN_PROCESS_BELOW", 10)  # the corpus is cut by 2 workers
    pooled = stage_one(root, tmp_path / "pooled", {"jobs": 2})
    monkeypatch.setattr(windows, "IN_PROCESS_BELOW", 1 << 30)
    alone = stage_one(root, tmp_path / "alone", {"jobs": 2})
    monkeypatch.setattr(windows, "window_block", general)  # the general path, in-process
    before = stage_one(root, tmp_path / "before", {"jobs": 1})
    assert len(pooled) == 64 and any(len(v) > 200 for v in pooled.values())
    assert pooled == alone == before
