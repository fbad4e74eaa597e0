"""Chunks stored as spans of their file's content (`store.spans`, segment format 3): a span
row gives back the row the extractor wrote, what is not a span keeps its text, a generation
whose blocks hold every text (format 2, what the previous version wrote) opens and updates,
and stored bytes that are not the ones the spans were cut from are said, not silent."""

from __future__ import annotations

import json
import logging
import shutil
import zlib
from pathlib import Path

import pytest
from durability_support import answers, build, write_repo

from maguyva.build import indexer
from maguyva.build.fsck import fsck
from maguyva.build.spill import Spill
from maguyva.extract.chunks import line_window_chunks, source_lines
from maguyva.model import Chunk
from maguyva.store import blocks, spans
from maguyva.store.chunks import SEGMENTS, ChunkStore
from maguyva.store.extraction import encode_chunks
from maguyva.store.fileindex import stored_rows
from maguyva.store.generations import IndexDir
from maguyva.store.views import segment_name
from maguyva.support import sealed

SOURCE = "def f():\n    return 1\r\n\n\fclass K:\n    x = 'é'\n" + "y = 2\n" * 70


def _chunks() -> list[Chunk]:
    skeleton = Chunk("k", "m.py", 5, 6, "class", "K", "K", None, "m.py: class K", "class K: …")
    body = Chunk("f", "m.py", 1, 2, "function", "f", "f", "def f()", "m.py: function f",
                 "def f():\n    return 1")  # fmt: skip
    return [body, skeleton, *line_window_chunks("m.py", SOURCE)]


def _without_spans(directory: Path, root: Path | None = None) -> Spill:
    """The spill of a build that stores every text in its row (format 2)."""
    return Spill(directory)


def _mark(gen: Path) -> set[int]:
    """The marks of every chunk block of a generation's segments."""
    marks = set()
    for n in range(SEGMENTS):
        path = gen / segment_name(n, "chunks")
        payload = sealed.read_sealed(path, "chunks", blocks.ROWS_VERSION)
        marks |= {payload[at] for _p, _n, at, _len in blocks.blocks(payload, path)}
    return marks


def test_strip_then_fill_gives_back_the_rows_and_only_spans_lose_their_text() -> None:
    rows = encode_chunks(_chunks())
    content = SOURCE.encode()
    stripped, which = spans.strip(rows, content) or (b"", [])
    texts = {c.id: c.text for c in _chunks()}
    ids = [c.id for c in sorted(_chunks(), key=lambda c: (c.path, c.start_line, c.end_line, c.id))]
    spanned = {ids[i] for i, _s, _e in which}
    # the body is a span; the skeleton is not, nor the window that `splitlines` cut at the
    # form feed (where the chunker's lines, split on `\n` only, do not)
    window = _chunks()[2]
    assert "f" in spanned and "k" not in spanned and window.id not in spanned
    assert window.start_line == 1 and "\f" not in window.text
    assert len(which) < len(texts)
    lines = source_lines(SOURCE)
    cut = [
        json.dumps("\n".join(lines[s - 1 : e]), ensure_ascii=False).encode() for _n, s, e in which
    ]
    assert spans.fill(stripped, which, cut) == rows
    block = blocks.span_block("m.py", rows, rows.count(b"\n"), content)
    assert block[0] == blocks.SPAN_MARK and blocks.count(block) == len(texts)
    assert blocks.raw(block, "x", texts=False) == stripped
    assert spans.strip(rows, b"\xff" + content) is None  # decoded with replacement: texts kept


def test_an_index_stores_spans_and_reads_every_chunk_as_before(tmp_path: Path) -> None:
    """The same tree built with spans and without them (every text in its row, as format 2
    stored them): the same chunks, the same answers, a smaller chunk store, fsck sound."""
    root, plain = tmp_path / "repo", tmp_path / "plain"
    write_repo(root)
    shutil.copytree(root, plain)
    build(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(indexer, "Spill", _without_spans)
        build(plain)
    gen = IndexDir(root / ".maguyva").current(pin=False).path
    ref = IndexDir(plain / ".maguyva").current(pin=False).path
    assert blocks.SPAN_MARK in _mark(gen) and _mark(ref) == {blocks.MARK}
    got, want = ChunkStore.open(gen), ChunkStore.open(ref)
    assert sorted(got.paths()) == sorted(want.paths())
    for path in want.paths():
        assert got.by_path(path) == want.by_path(path)
        assert all(got.record(c.id, path) == c for c in want.by_path(path))
    assert stored_rows(gen) == stored_rows(ref)
    size = sum((gen / segment_name(n, "chunks")).stat().st_size for n in range(SEGMENTS))
    assert size < sum((ref / segment_name(n, "chunks")).stat().st_size for n in range(SEGMENTS))
    assert answers(root) == answers(plain)
    assert fsck(root / ".maguyva").ok


def test_an_index_without_spans_updates_to_what_a_fresh_build_stores(tmp_path: Path) -> None:
    """A generation whose rows all hold their texts (what the previous version wrote) opens,
    and after an edit its update equals a from-scratch build of the edited tree."""
    root = tmp_path / "repo"
    write_repo(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(indexer, "Spill", _without_spans)
        build(root)
    before = answers(root)
    write_repo(root, 1)
    assert not build(root).noop
    updated = IndexDir(root / ".maguyva").current(pin=False)
    fresh = tmp_path / "fresh"
    shutil.copytree(root, fresh, ignore=shutil.ignore_patterns(".maguyva"))
    build(fresh)
    scratch = IndexDir(fresh / ".maguyva").current(pin=False)
    assert stored_rows(updated.path) == stored_rows(scratch.path)
    assert answers(root) == answers(fresh) and before
    assert fsck(root / ".maguyva").ok


def test_content_that_is_not_what_the_spans_were_cut_from_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Spans are cut from the text index's bytes (the same texts as the work tree's file);
    when the bytes a span block names (its CRC) are neither there nor in the work tree (a
    file edited while it was indexed), the text index's are used, and that is said."""
    root = tmp_path / "repo"
    write_repo(root)
    build(root)
    gen = IndexDir(root / ".maguyva").current(pin=False).path
    path = next(p for p in ChunkStore.open(gen).paths() if p.endswith(".py"))
    stored = (root / path).read_bytes()
    lines = source_lines(stored.decode())
    ranges = [(1, 2), (2, len(lines)), (len(lines) + 1, len(lines) + 3)]
    want = [json.dumps("\n".join(lines[s - 1 : e]), ensure_ascii=False).encode() for s, e in ranges]
    assert spans.texts_of(gen, path, zlib.crc32(stored), ranges) == want
    assert spans._cut(stored, ranges) == want
    (root / path).write_text("changed = True\n")
    with caplog.at_level(logging.WARNING, logger="maguyva.store.spans"):
        assert spans.texts_of(gen, path, zlib.crc32(b"other bytes"), ranges) == want
    assert "changed while it was indexed" in caplog.text


def test_a_long_lived_reader_says_each_file_once_per_generation_and_forgets_old_ones(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The warm server reads generation after generation: each file whose content changed is
    said once per generation, and only the last few generations' files are remembered (the
    set of every one it ever said grew with each generation)."""
    from maguyva.support.once import GROUPS

    gens = [tmp_path / f"gen-{n:06d}" for n in range(3 * GROUPS)]

    def said(gen: Path, path: str) -> bool:
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="maguyva.store.spans"):
            assert spans.texts_of(gen, path, zlib.crc32(b"gone"), [(1, 1)]) == [b'""']
        return "changed while it was indexed" in caplog.text

    for gen in gens:  # no text index, no root: the bytes the spans were cut from are gone
        assert said(gen, "a.py") and said(gen, "b.py")
        assert not said(gen, "a.py")
    assert len(spans._WARNED) == 2 * GROUPS
    assert said(gens[0], "a.py")  # forgotten with its generation
    assert not said(gens[-1], "b.py")
