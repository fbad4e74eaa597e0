"""What the literal path keeps between questions (issue 21: the chunk store's decoded records)
answers as the uncached path does, and an index update is never answered from what the
previous generation kept."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from maguyva.api import Index
from maguyva.store.chunks import ChunkStore, SegmentedChunkStore
from maguyva.store.generations import IndexDir

BODY = 'def target():\n    return "needle_literal_xyz"\n\n\ndef other():\n    return 1\n'


def _repo(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text(BODY)
    (root / "pkg" / "more.py").write_text("x = 'needle_literal_xyz'\n" * 3)
    return root, tmp_path / "index"


def _answer(index: Index) -> list[tuple[str, int, int, str | None, list[int]]]:
    response = index.search('"needle_literal_xyz"')
    return [(r.path, r.start_line, r.end_line, r.symbol, r.lines) for r in response.results]


def test_an_update_is_not_answered_from_the_previous_generations_records(tmp_path: Path):
    """The function moves down three lines with its text (and so its chunk id) unchanged:
    a record kept across generations would show it at its old lines."""
    root, index_dir = _repo(tmp_path)
    index = Index.open(root, index_dir=index_dir, modalities=["text"])
    index.build()
    first = _answer(index)
    assert first == _answer(index)  # asked again: from what the first answer kept
    assert ("pkg/mod.py", 1, 2, "target", [2]) in first
    (root / "pkg" / "mod.py").write_text("# one\n# two\n# three\n" + BODY)
    index.build()
    moved = _answer(index)
    assert ("pkg/mod.py", 4, 5, "target", [5]) in moved
    fresh = Index.open(root, index_dir=index_dir, modalities=["text"])
    assert moved == _answer(fresh)  # as a new process, which kept nothing, answers


def test_kept_records_equal_the_uncached_ones(tmp_path: Path):
    root, index_dir = _repo(tmp_path)
    Index.open(root, index_dir=index_dir, modalities=["text"]).build()
    generation = IndexDir(index_dir).current(pin=False).path
    full = ChunkStore.open(generation)
    kept = SegmentedChunkStore(generation, inherit=False)
    for _ in range(2):  # the second pass is served from what the first kept
        for path in full.paths():
            for chunk in full.by_path(path):
                assert kept.record(chunk.id, path, text=False) == replace(chunk, text="")
                assert kept.record(chunk.id, path) == chunk
                fresh = SegmentedChunkStore(generation, inherit=False)
                head = fresh.record(chunk.id, path, text=False)
                assert head == replace(chunk, text="")
                assert not any(filled for *_, filled in fresh._raw.values())  # no span cut
    assert kept.record("0" * 20, "pkg/mod.py") is None
