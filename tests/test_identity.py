"""The caches of immutable index files, keyed by file identity (device, inode, size, mtime),
never serve a new file that took a collected generation's inode: on ext4 a file written after
another was deleted gets its inode at once, and a copy's mtime can be set, so a new file can
have an old one's identity and other bytes. A hard link of a live file is still reused."""

from __future__ import annotations

import json
import os
from pathlib import Path

from maguyva.modalities.semantic.segments import read_json
from maguyva.modalities.structural import symbol_search
from maguyva.modalities.structural.symbols import encode_segment, segment_name, segment_of
from maguyva.store.file_states import FILES_JSON, file_states
from maguyva.store.generations import write_sealed
from maguyva.store.identity import identity, may_serve
from maguyva.support import sealed


def _on_its_inode(old: Path, new: Path, data: bytes) -> None:
    """Make `new` a file with `old`'s identity (device, inode, size, mtime) and the bytes
    `data`, `old` gone: what a new file on a collected generation's freed inode can be (ext4
    hands the inode to the next file at once). Done by moving `old` and rewriting it in place,
    so it holds on any file system, whoever else creates files meanwhile."""
    new.parent.mkdir(parents=True, exist_ok=True)
    st = os.stat(old)
    assert len(data) == st.st_size
    os.rename(old, new)
    with open(new, "r+b") as fh:
        fh.write(data)
    os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert identity(new) == (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    assert not old.exists() and new.read_bytes() == data


def _same_size(make, words: list[str]) -> tuple[bytes, bytes, str, str]:
    """Two encodings by `make` of two of `words` that have the same length."""
    seen: dict[int, tuple[bytes, str]] = {}
    for word in words:
        data = make(word)
        if len(data) in seen:
            return seen[len(data)][0], data, seen[len(data)][1], word
        seen[len(data)] = (data, word)
    raise AssertionError("no two encodings of the same size")


def test_may_serve_a_live_link_and_never_a_reused_inode(tmp_path: Path) -> None:
    old = tmp_path / "gen-000001" / "seg"
    old.parent.mkdir()
    old.write_bytes(b"first bytes")
    key = identity(old)
    link = tmp_path / "gen-000002" / "seg"
    link.parent.mkdir()
    os.link(old, link)
    assert may_serve(old, old, key) and may_serve(old, link, identity(link))
    new = tmp_path / "gen-000003" / "seg"
    link.unlink()  # both generations collected
    _on_its_inode(old, new, b"other bytes")
    assert identity(new) == key and not may_serve(old, new, key)


def test_semantic_segment_json_is_read_again_on_a_reused_inode(tmp_path: Path) -> None:
    old = tmp_path / "gen-000001" / "semantic" / "base.ids.json"
    old.parent.mkdir(parents=True)
    old.write_text(json.dumps(["aaaa"]))
    assert read_json(old) == ["aaaa"]
    link = tmp_path / "gen-000002" / "semantic" / "base.ids.json"
    link.parent.mkdir(parents=True)
    os.link(old, link)
    assert read_json(link) is read_json(old)  # the hard link is the same file: not decoded
    new = tmp_path / "gen-000003" / "semantic" / "base.ids.json"
    link.unlink()
    _on_its_inode(old, new, json.dumps(["bbbb"]).encode())
    assert read_json(new) == ["bbbb"]


def test_file_states_are_read_again_on_a_reused_inode(tmp_path: Path) -> None:
    def files_json(name: str) -> bytes:
        state = {"state": {"files": {name: [10, 1, "0" * 16]}}, "segments": {"files": {}}}
        return sealed.seal("files", sealed.dumps_json_packed(state), sealed.PACKED_VERSION)

    first, second, a, b = _same_size(files_json, [f"pkg/{c}{c}.py" for c in "abcdefghij"])
    old = tmp_path / "idx" / "gen-000001" / FILES_JSON
    old.parent.mkdir(parents=True)
    old.write_bytes(first)
    assert set(file_states(old.parent)) == {a}
    new = tmp_path / "idx" / "gen-000002" / FILES_JSON
    _on_its_inode(old, new, second)
    assert set(file_states(new.parent)) == {b}


def test_a_symbol_segment_is_parsed_again_on_a_reused_inode(tmp_path: Path) -> None:
    path = "pkg/core.py"
    m = segment_of(path)

    def segment(name: str) -> bytes:
        rows = [[name, name, "function", 1, 2, 1, None, f"def {name}()", "", 0]]
        return sealed.seal("symbols", encode_segment({path: rows}), 3)

    first, second, a, b = _same_size(segment, [f"load_{c}{c}{c}" for c in "abcdefghij"])
    old_dir, new_dir = (
        tmp_path / "gen-000001" / "structural",
        tmp_path / "gen-000002" / "structural",
    )
    old_dir.mkdir(parents=True)
    (old_dir / segment_name(m)).write_bytes(first)
    kept = symbol_search._load_segment(old_dir, m)  # held, as a warm reader's searcher holds it
    assert [h.symbol for h in symbol_search.StructuralSearcher([kept]).find_symbol(a)] == [a]
    _on_its_inode(old_dir / segment_name(m), new_dir / segment_name(m), second)
    fresh = symbol_search.StructuralSearcher([symbol_search._load_segment(new_dir, m)])
    assert [h.symbol for h in fresh.find_symbol(b)] == [b] and fresh.find_symbol(a) == []


def test_a_symbol_segment_linked_into_the_next_generation_is_not_parsed_again(
    tmp_path: Path,
) -> None:
    path = "pkg/core.py"
    m = segment_of(path)
    rows = [["load", "load", "function", 1, 2, 1, None, "def load()", "", 0]]
    old_dir, new_dir = (
        tmp_path / "gen-000001" / "structural",
        tmp_path / "gen-000002" / "structural",
    )
    old_dir.mkdir(parents=True)
    new_dir.mkdir(parents=True)
    write_sealed(old_dir / segment_name(m), "symbols", encode_segment({path: rows}), 3)
    kept = symbol_search._load_segment(old_dir, m)
    os.link(old_dir / segment_name(m), new_dir / segment_name(m))
    assert symbol_search._load_segment(new_dir, m) is kept


def test_a_chunk_segment_table_keeps_its_inode_and_other_entries_need_their_source(
    tmp_path: Path,
) -> None:
    """A chunk segment's table holds its file open, so no new file can take its inode: the
    identity alone says a link is the same file, even once the source is gone. A delta
    payload (bytes, nothing held open) is carried only while its source is still a link."""
    from durability_support import build, write_repo

    from maguyva.store import chunks
    from maguyva.store.generations import IndexDir

    root = tmp_path / "repo"
    write_repo(root)
    build(root)
    gen = IndexDir(root / ".maguyva").current(pin=False).path
    store = chunks.SegmentedChunkStore(gen)
    n = chunks.segment_of("pkg/core.py")
    table = store._segment(n)
    source = gen / chunks.CHUNKS_DIR / f"{n:02d}.jsonl"
    assert table.fd is not None and store.by_path("pkg/core.py")
    key = chunks._identity(source)
    assert key is not None
    link = tmp_path / "gen-next" / chunks.CHUNKS_DIR / source.name
    link.parent.mkdir(parents=True)
    os.link(source, link)
    assert chunks._carries(source, link, key, b"payload")  # both links live
    source.unlink()
    assert chunks._carries(source, link, key, table)
    assert not chunks._carries(source, link, key, b"payload")
