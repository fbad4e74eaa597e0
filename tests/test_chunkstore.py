"""The lazy, segmented chunk view the engine opens answers exactly as the fully loaded store,
and a damaged segment is still refused (when it is first touched)."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import pytest

from maguyva.chunkstore import ChunkStore, SegmentedChunkStore, segment_of
from maguyva.errors import CorruptIndexError
from maguyva.indexer import build_index
from maguyva.store import IndexDir


@pytest.fixture(scope="module")
def generation(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("chunkstore") / "repo"
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    shutil.copytree(stdlib / "json", root / "json", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(stdlib / "email", root / "email", ignore=shutil.ignore_patterns("__pycache__"))
    index_dir = root.parent / "index"
    build_index(root, config={"index_dir": str(index_dir), "modalities": ["text"]})
    return IndexDir(index_dir).current(pin=False).path


def test_lazy_view_equals_the_loaded_store(generation: Path) -> None:
    full = ChunkStore.open(generation)
    lazy = ChunkStore.lazy(generation)
    assert isinstance(lazy, SegmentedChunkStore)
    assert len(full) > 300 and len(lazy) == len(full)
    assert lazy.paths() == sorted(full.paths())
    for path in full.paths():
        chunks = full.by_path(path)
        assert lazy.by_path(path) == chunks
        last = max(c.end_line for c in chunks)
        for line in range(1, last + 2, 7):
            assert lazy.enclosing(path, line) == full.enclosing(path, line)
        for chunk in chunks:
            assert lazy.get(chunk.id, path) == chunk == lazy.get(chunk.id)
    assert lazy.get("no-such-id", "json/__init__.py") is None
    assert lazy.by_path("no/such/file.py") == [] and lazy.enclosing("no/such.py", 1) is None


def test_lazy_view_decodes_only_what_is_asked(generation: Path) -> None:
    lazy = SegmentedChunkStore(generation)
    assert lazy.enclosing("json/decoder.py", 10) is not None
    assert list(lazy._segments) == [segment_of("json/decoder.py")]


def test_a_damaged_segment_is_refused_when_touched(generation: Path, tmp_path: Path) -> None:
    copy = tmp_path / "gen"
    shutil.copytree(generation, copy)
    n = segment_of("json/decoder.py")
    segment = copy / "chunks" / f"{n:02d}.jsonl"
    data = bytearray(segment.read_bytes())
    data[-10] ^= 0xFF
    segment.write_bytes(bytes(data))
    lazy = ChunkStore.lazy(copy)
    with pytest.raises(CorruptIndexError):
        lazy.enclosing("json/decoder.py", 10)
