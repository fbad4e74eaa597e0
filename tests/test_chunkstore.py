"""The lazy, segmented chunk view the engine opens answers exactly as the fully loaded store,
and a damaged segment is still refused (when it is first touched)."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import pytest

from maguyva.build.indexer import build_index
from maguyva.errors import CorruptIndexError
from maguyva.store import blocks
from maguyva.store.chunks import ChunkStore, SegmentedChunkStore, segment_of
from maguyva.store.generations import IndexDir


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


def test_a_record_is_read_alone_and_equals_get(generation: Path) -> None:
    """`record` answers as `get` with the path, decoding only the record asked for (a file's
    rows are decoded by `get`, `by_path` and `enclosing`; `record` uses them when they are)."""
    full = ChunkStore.open(generation)
    lazy = SegmentedChunkStore(generation, inherit=False)
    for path in full.paths():
        for chunk in full.by_path(path):
            assert lazy.record(chunk.id, path) == chunk == full.record(chunk.id, path)
    assert not lazy._rows  # no file's rows were decoded
    some = full.by_path("json/decoder.py")[0]
    assert lazy.record(some.id, "json/encoder.py") is None
    assert full.record(some.id, "json/encoder.py") is None
    assert lazy.record("0" * 20, "json/decoder.py") is None
    assert lazy.record(some.id, "no/such/file.py") is None
    lazy.by_path("json/decoder.py")
    assert lazy.record(some.id, "json/decoder.py") == some


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


def test_a_delta_generation_reads_as_a_from_scratch_one(tmp_path: Path) -> None:
    """After small updates (a delta over hard-linked segments: edit, add, delete), the lazy
    store, the loaded store and the file states equal a from-scratch index of the same tree,
    and a reader of the next generation reuses the segments the previous one decoded."""
    from maguyva.build.indexer import Indexer
    from maguyva.store.chunks import _RECENT, read_delta, read_file_states

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    root = tmp_path / "repo"
    shutil.copytree(stdlib / "json", root / "json", ignore=shutil.ignore_patterns("__pycache__"))
    config = {"index_dir": str(tmp_path / "idx"), "modalities": ["text"]}
    writer = Indexer(root, config=config)
    writer.update()
    reader = SegmentedChunkStore(IndexDir(tmp_path / "idx").current(pin=False).path)
    kept = "json/scanner.py"
    reader.by_path(kept)
    decoder = root / "json" / "decoder.py"
    decoder.write_text(decoder.read_text() + "\n\ndef added_here():\n    return 1\n")
    (root / "json" / "tool.py").unlink()
    (root / "json" / "new.py").write_text("def brand_new():\n    return 2\n")
    writer.update()
    gen = IndexDir(tmp_path / "idx").current(pin=False).path
    delta = read_delta(gen)
    assert delta is not None and delta["index"]["json/tool.py"] is None
    assert {"json/decoder.py", "json/new.py"} <= set(delta["index"])
    scratch = tmp_path / "scratch"
    Indexer(root, config={**config, "index_dir": str(scratch)}).update()
    fresh = IndexDir(scratch).current(pin=False).path
    lazy, full, want = ChunkStore.lazy(gen), ChunkStore.open(gen), ChunkStore.open(fresh)
    assert lazy.paths() == full.paths() == want.paths() and len(lazy) == len(want)
    for path in want.paths():
        assert lazy.by_path(path) == full.by_path(path) == want.by_path(path)
        for chunk in want.by_path(path):
            assert lazy.get(chunk.id, path) == chunk == lazy.get(chunk.id)
            assert lazy.enclosing(path, chunk.start_line) == want.enclosing(path, chunk.start_line)
    assert lazy.by_path("json/tool.py") == [] and lazy.enclosing("json/tool.py", 1) is None
    states = read_file_states(gen)
    assert states == read_file_states(fresh) and "json/tool.py" not in states
    # the reader of the new generation took the unchanged segment over from the old one
    assert isinstance(lazy, SegmentedChunkStore)
    assert lazy._segment(segment_of(kept)) is reader._segment(segment_of(kept))
    assert _RECENT[gen.parent] is lazy._decoded
    alone = ChunkStore.lazy(gen)  # one record at a time, from the delta or a segment
    for path in want.paths():
        for chunk in want.by_path(path):
            assert alone.record(chunk.id, path) == chunk
    assert alone.record(want.by_path("json/scanner.py")[0].id, "json/tool.py") is None
    # damage in a delta file is refused when one of its files is first touched
    copy = tmp_path / "gen-copy"
    shutil.copytree(gen, copy)
    delta_chunks = next((copy / "delta").glob("*.chunks.jsonl"))
    data = bytearray(delta_chunks.read_bytes())
    data[-10] ^= 0xFF
    delta_chunks.write_bytes(bytes(data))
    damaged = ChunkStore.lazy(copy)
    assert damaged.by_path(kept) == want.by_path(kept)
    with pytest.raises(CorruptIndexError):
        damaged.by_path("json/decoder.py")


def test_decoded_files_are_bounded_and_answers_unchanged(generation: Path, monkeypatch) -> None:
    """Touching every file keeps at most `DECODED_PATHS` files' chunks decoded (the kernel's
    query process held all 1.2 million chunks, 10 GB); answers after eviction are unchanged."""
    import maguyva.store.chunks as chunkstore

    monkeypatch.setattr(chunkstore, "DECODED_PATHS", 5)
    full = ChunkStore.open(generation)
    lazy = SegmentedChunkStore(generation, inherit=False)
    for _ in range(2):
        for path in full.paths():
            assert lazy.by_path(path) == full.by_path(path)
            assert len(lazy._rows) <= 5
    assert len(lazy) == len(full)


def test_a_segment_in_another_record_layout_is_decoded_whole(generation: Path, tmp_path) -> None:
    """Records whose `path` is not where the range table expects it (keys in another order)
    are still read correctly: the segment falls back to a whole decode."""
    import json

    from maguyva.store.generations import write_sealed
    from maguyva.support.sealed import read_sealed

    copy = tmp_path / "gen"
    shutil.copytree(generation, copy)
    n = segment_of("json/decoder.py")
    segment = copy / "chunks" / f"{n:02d}.jsonl"
    records = [
        json.loads(line)
        for line in blocks.raw(
            read_sealed(segment, "chunks", blocks.ROWS_VERSION), segment
        ).splitlines()
    ]
    payload = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records).encode()
    segment.unlink()
    write_sealed(segment, "chunks", payload)
    want = ChunkStore.open(generation)
    lazy = SegmentedChunkStore(copy, inherit=False)
    assert lazy.by_path("json/decoder.py") == want.by_path("json/decoder.py") != []
    assert lazy._segment(n).whole is not None
    other = SegmentedChunkStore(generation, inherit=False)
    assert other.by_path("json/decoder.py") == want.by_path("json/decoder.py")
    assert other._segment(n).whole is None


def test_a_segment_whose_file_rows_are_split_is_decoded_whole(generation: Path, tmp_path) -> None:
    """A file's records not contiguous (another file's between them) cannot be one byte range:
    the segment falls back to a whole decode and answers stay exact."""
    import json

    from maguyva.store.generations import write_sealed
    from maguyva.support.sealed import read_sealed

    copy = tmp_path / "gen"
    shutil.copytree(generation, copy)
    n = segment_of("json/decoder.py")
    segment = copy / "chunks" / f"{n:02d}.jsonl"
    lines = blocks.raw(read_sealed(segment, "chunks", blocks.ROWS_VERSION), segment).splitlines(
        keepends=True
    )
    mine = [ln for ln in lines if json.loads(ln)["path"] == "json/decoder.py"]
    others = [ln for ln in lines if json.loads(ln)["path"] != "json/decoder.py"]
    assert len(mine) >= 2 and others
    segment.unlink()
    write_sealed(segment, "chunks", b"".join([mine[0], *others, *mine[1:]]))
    want = ChunkStore.open(generation)
    lazy = SegmentedChunkStore(copy, inherit=False)
    assert lazy.by_path("json/decoder.py") == want.by_path("json/decoder.py")
    assert lazy._segment(n).whole is not None
    for path in {json.loads(ln)["path"] for ln in others}:
        assert lazy.by_path(path) == want.by_path(path)
