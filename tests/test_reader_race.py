"""A long-lived reader sees one consistent generation while a writer commits and collects
(issue 17: "background builds must never disturb a search").

A chunk row stored as a span of its file (`store.spans`) has no text of its own: the reader
cuts it from the text index's content. A reader that stays open (the warm server behind
`maguyva search`, an MCP server) takes over from its previous generation the segment tables of
the files a new generation hard-links (`SegmentedChunkStore`, keyed by file identity). Those
tables remembered the path they were first read at, and the spans were cut from *that*
generation's content: once the writer collected it (two commits later), the texts came back
empty and the search warned that "the stored content is not the one they were cut from"
(~2 of 400 searches during a background build of psutil). The tests drive that interleaving
step by step, waiting for generation numbers, never for a time.
"""

from __future__ import annotations

import json
import logging
import shutil
import sysconfig
import threading
from pathlib import Path

import pytest
from durability_support import build

from maguyva.api import Index
from maguyva.extract.chunks import source_lines
from maguyva.model import Chunk
from maguyva.store import blocks
from maguyva.store.chunks import CHUNKS_DIR, segment_of
from maguyva.store.generations import IndexDir
from maguyva.support.sealed import read_sealed

STDLIB = Path(sysconfig.get_paths()["stdlib"])
HELD = "textwrap.py"  # read by the reader; never edited
EDITED = "shlex.py"  # edited by the writer between generations
WARNING = "not the one they were cut from"


def _corpus(root: Path) -> Path:
    """A real tree: modules and a package of the running Python's standard library."""
    root.mkdir()
    for name in ("textwrap", "shlex", "fnmatch", "glob"):
        shutil.copy(STDLIB / f"{name}.py", root / f"{name}.py")
    shutil.copytree(STDLIB / "json", root / "json", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _edit(root: Path, n: int) -> None:
    with open(root / EDITED, "a", encoding="utf-8") as fh:
        fh.write(f"\n\ndef added_{n}(value):\n    return value + {n}\n")


def _committed(root: Path) -> int:
    return IndexDir(root / ".maguyva").current(pin=False).number


def _is_span_block(gen_dir: Path, path: str) -> bool:
    """Is `path`'s block in its chunk segment a span block (rows without their texts)?"""
    where = gen_dir / CHUNKS_DIR / f"{segment_of(path):02d}.jsonl"
    payload = read_sealed(where, "chunks", blocks.ROWS_VERSION)
    return any(payload[at] == blocks.SPAN_MARK
               for p, _n, at, _size in blocks.blocks(payload, where) if p == path)  # fmt: skip


def _expected(root: Path, chunks: list[Chunk]) -> dict[str, str]:
    """Each chunk's text as the first, consistent read gave it, checked against the oracle:
    the rows that are lines `start..end` of the file on disk (all but class skeletons) must
    be most of them, or the test would not exercise spans."""
    lines = source_lines((root / HELD).read_text(encoding="utf-8"))
    cut = [c for c in chunks if c.text == "\n".join(lines[c.start_line - 1 : c.end_line])]
    assert len(chunks) > 5 and len(cut) >= len(chunks) - 2, "the test needs span rows"
    return {c.id: c.text for c in chunks}


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if WARNING in r.getMessage()]


def test_a_held_generation_reads_its_own_content_after_the_one_it_took_tables_from_is_collected(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = _corpus(tmp_path / "repo")
    build(root)
    reader = Index.open(root)  # one long-lived reader, as the warm server keeps
    first = reader.engine()
    assert first.generation.number == 1
    assert _is_span_block(first.generation.path, HELD), "the test needs span rows"
    chunks = first.chunks.by_path(HELD)  # decodes HELD's segment at generation 1
    expected = _expected(root, chunks)

    _edit(root, 1)
    assert not build(root).noop
    second = reader.engine()  # reopened on generation 2: HELD's segment is a hard link
    assert second.generation.number == 2
    first.generation.release()  # the reader is done with generation 1
    del first

    _edit(root, 2)  # generation 3 committed while the reader holds generation 2
    assert not build(root).noop
    assert _committed(root) == 3
    assert 1 not in IndexDir(root / ".maguyva").generations(), "generation 1 was not collected"

    with caplog.at_level(logging.WARNING, logger="maguyva"):
        held = second.chunks.by_path(HELD)
        assert {c.id: c.text for c in held} == expected
        one = chunks[len(chunks) // 2]
        record = second.chunks.record(one.id, HELD)
        assert record is not None and record.text == expected[one.id]
        third = reader.engine()  # and the generation after it, which inherits again
        assert third.generation.number == 3
        assert {c.id: c.text for c in third.chunks.by_path(HELD)} == expected
        found = reader.search("def dedent", limit=3)
        assert found.results and found.results[0].path == HELD
    assert _warnings(caplog) == []


@pytest.mark.slow
def test_a_reader_thread_searching_through_many_commits_never_mixes_generations(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Stress: one long-lived reader searches and reads HELD's chunk texts in a loop while the
    writer commits 30 generations (each collecting the one two before it)."""
    root = _corpus(tmp_path / "repo")
    build(root)
    reader = Index.open(root)
    expected = _expected(root, reader.engine().chunks.by_path(HELD))
    stop = threading.Event()
    seen: list[int] = []
    wrong: list[str] = []
    reads = threading.Event()

    def read_loop() -> None:
        while not stop.is_set():
            engine = reader.engine()
            got = {c.id: c.text for c in engine.chunks.by_path(HELD)}
            if got != expected:
                wrong.append(f"generation {engine.generation.number}: {json.dumps(got)[:200]}")
            reader.search("how is text wrapped to a width", limit=5)
            seen.append(engine.generation.number)
            reads.set()

    with caplog.at_level(logging.WARNING, logger="maguyva"):
        thread = threading.Thread(target=read_loop, daemon=True)
        thread.start()
        try:
            for n in range(30):
                assert reads.wait(120), "the reader stopped reading"
                reads.clear()  # one read at least between two commits
                _edit(root, n)
                assert not build(root).noop
            assert reads.wait(120)
        finally:
            stop.set()
            thread.join(120)
    assert wrong == []
    assert _warnings(caplog) == []
    assert len(set(seen)) >= 10, f"the reader saw too few generations: {sorted(set(seen))}"
