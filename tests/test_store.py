"""Sealed files, the commit protocol, the writer lock and reader leases."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from durability_support import answers, build, write_repo
from hypothesis import given, settings
from hypothesis import strategies as st

from maguyva.errors import CorruptIndexError, IndexBusyError, IndexVersionError
from maguyva.store.checksums import verify_generation
from maguyva.store.generations import MANIFEST, IndexDir
from maguyva.support import sealed


@given(st.binary(max_size=300), st.data())
@settings(max_examples=60, deadline=None)
def test_every_bit_flip_and_truncation_of_a_sealed_file_is_detected(payload, data):
    blob = sealed.seal("chunks", payload)
    assert sealed.unseal(Path("f"), blob, "chunks", 1) == payload
    bit = data.draw(st.integers(0, len(blob) * 8 - 1))
    flipped = bytearray(blob)
    flipped[bit // 8] ^= 1 << (bit % 8)
    with pytest.raises((CorruptIndexError, IndexVersionError)):
        sealed.unseal(Path("f"), bytes(flipped), "chunks", 1)
    cut = data.draw(st.integers(0, len(blob) - 1))
    with pytest.raises(CorruptIndexError):
        sealed.unseal(Path("f"), blob[:cut], "chunks", 1)


def test_loader_checks_sizes_before_reading_and_refuses_newer_versions(tmp_path):
    path = tmp_path / "x"
    head = b"MAGUYVA chunks 1 999999999999999 00000000"
    path.write_bytes(head + b" %08x\n" % sealed.crc32(head) + b"tiny")
    with pytest.raises(CorruptIndexError, match="truncated or extended"):
        sealed.read_sealed(path, "chunks")
    path.write_bytes(sealed.seal("chunks", b"data", version=7))
    with pytest.raises(IndexVersionError, match="newer Maguyva"):
        sealed.read_sealed(path, "chunks")
    path.write_bytes(sealed.seal("meta", b"{}"))
    with pytest.raises(CorruptIndexError, match="expected 'chunks'"):
        sealed.read_sealed(path, "chunks")
    path.write_text('{"format_version": 1}')
    with pytest.raises(CorruptIndexError, match="not a Maguyva index file"):
        sealed.read_sealed(path, "chunks")


def test_commit_writes_checksummed_generation_and_cleans_leftovers(tmp_path):
    write_repo(tmp_path)
    summary = build(tmp_path)
    index = IndexDir(tmp_path / ".maguyva")
    gen = index.current()
    assert gen.number == summary.generation
    assert verify_generation(gen.path) == []
    assert sealed.is_sealed(tmp_path / ".maguyva" / MANIFEST)
    # a killed writer's leftovers are removed by the next writer
    (tmp_path / ".maguyva" / "gen-000099.tmp-12345").mkdir()
    (tmp_path / ".maguyva" / f"{MANIFEST}.tmp-12345").write_text("half")
    (tmp_path / "pkg" / "core.py").write_text("def changed():\n    return 2\n")
    build(tmp_path)
    assert not list((tmp_path / ".maguyva").glob("*.tmp-*"))


def test_old_format_index_is_rebuilt_and_newer_is_refused(tmp_path):
    write_repo(tmp_path)
    (tmp_path / ".maguyva").mkdir()
    (tmp_path / ".maguyva" / MANIFEST).write_text('{"format_version": 1, "generation": 1}')
    with pytest.raises(IndexVersionError, match="older index format"):
        IndexDir(tmp_path / ".maguyva").current()
    assert not build(tmp_path).noop  # rebuilt
    manifest = sealed.read_sealed_json(tmp_path / ".maguyva" / MANIFEST, "manifest")
    manifest["format_version"] = 99
    (tmp_path / ".maguyva" / MANIFEST).write_bytes(
        sealed.seal("manifest", sealed.dumps_json(manifest))
    )
    with pytest.raises(IndexVersionError, match="newer Maguyva"):
        IndexDir(tmp_path / ".maguyva").current()
    with pytest.raises(IndexVersionError, match="newer Maguyva"):
        build(tmp_path)  # never overwrite a newer index


def test_writer_lock_names_the_holder_and_dies_with_it(tmp_path):
    index = IndexDir(tmp_path / "idx")
    code = (
        "import sys, time; from pathlib import Path; from maguyva.store.generations import IndexDir\n"
        "with IndexDir(Path(sys.argv[1])).writer_lock():\n"
        "    print('locked', flush=True); time.sleep(60)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code, str(index.path)],
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "locked"
        with pytest.raises(IndexBusyError, match=f"pid {child.pid}"), index.writer_lock():
            pass
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        started = time.monotonic()
        with index.writer_lock(wait=True, timeout=10):
            pass  # a killed writer leaves no stale lock
        assert time.monotonic() - started < 10
    finally:
        child.kill()
        child.wait()


def test_leased_generation_survives_commits_and_is_collected_after(tmp_path):
    write_repo(tmp_path)
    build(tmp_path)
    index = IndexDir(tmp_path / ".maguyva")
    pinned = index.current()
    for variant in (1, 2, 3, 0):
        write_repo(tmp_path, variant)
        build(tmp_path)
    assert pinned.path.is_dir(), "a generation in use was deleted"
    assert verify_generation(pinned.path) == []
    pinned.release()
    write_repo(tmp_path, 1)
    build(tmp_path)
    assert not pinned.path.exists()
    assert len(index.generations()) <= 2


def test_commit_fsyncs_new_files_only_and_reuses_checksums_of_linked_ones(tmp_path, monkeypatch):
    from maguyva.store import checksums
    from maguyva.store import generations as store

    index = IndexDir(tmp_path / ".maguyva")
    with index.writer_lock():
        number, tmp = index.begin()
        (tmp / "kept.bin").write_bytes(b"k" * 5000)
        (tmp / "old.bin").write_bytes(b"o" * 10)
        first = index.commit(number, tmp, {})

    synced: list[str] = []
    read: list[str] = []

    class Recording(store.OsFiles):
        def fsync_file(self, path: Path) -> None:
            synced.append(Path(path).name)
            super().fsync_file(path)

    real_crc = checksums.checksum_table_one

    def crc(path: Path) -> int:
        read.append(Path(path).name)
        return real_crc(path)

    monkeypatch.setattr(store, "FILES", Recording())
    monkeypatch.setattr(checksums, "checksum_table_one", crc)
    with index.writer_lock():
        number, tmp = index.begin()
        os.link(first.path / "kept.bin", tmp / "kept.bin")
        (tmp / "new.bin").write_bytes(b"n" * 7)
        second = index.commit(number, tmp, {}, previous=first.path)
    assert "kept.bin" not in synced and "kept.bin" not in read
    assert {"new.bin", "CHECKSUMS"} <= set(synced) and "new.bin" in read
    table = sealed.read_packed_json(second.path / "CHECKSUMS", "checksums")
    assert table["kept.bin"] == [5000, sealed.crc32(b"k" * 5000)]
    assert verify_generation(second.path) == []
    # a file with the same name but another inode is read and synced
    synced.clear()
    with index.writer_lock():
        number, tmp = index.begin()
        (tmp / "kept.bin").write_bytes(b"K" * 5000)
        third = index.commit(number, tmp, {}, previous=second.path)
    assert "kept.bin" in synced and verify_generation(third.path) == []


def test_collected_generation_leaves_at_once_and_its_trash_is_cleaned(tmp_path):
    """A commit collects the generation before the previous one by renaming it to `trash-*`
    (it is no generation any more at once) and deleting it in the background; a trash
    directory a killed writer left behind is removed by the next writer."""
    from maguyva.store import generations as store

    write_repo(tmp_path)
    build(tmp_path)
    index = IndexDir(tmp_path / ".maguyva")
    first = index.current(pin=False)
    write_repo(tmp_path, 1)
    build(tmp_path)
    write_repo(tmp_path, 2)
    build(tmp_path)
    assert first.number not in index.generations() and not first.path.exists()
    store.trash_pool().submit(lambda: None).result()  # the deletions queued before are done
    assert not list(index.path.glob(f"{store.TRASH}*"))
    left = index.path / f"{store.TRASH}gen-000001-999-1"
    (left / "chunks").mkdir(parents=True)
    (left / "chunks" / "00.jsonl").write_bytes(b"x")
    write_repo(tmp_path, 0)
    build(tmp_path)
    assert not left.exists()
    assert answers(tmp_path)


def test_format_2_index_is_read_as_is_and_updated_to_format_3(tmp_path):
    """A format-2 index (no delta) is read without a rebuild; the next update writes format 3,
    which a reader of format 2 refuses (it would miss the delta)."""
    from maguyva.store.generations import FORMAT_VERSION, MIN_FORMAT_VERSION

    assert (MIN_FORMAT_VERSION, FORMAT_VERSION) == (2, 3)
    write_repo(tmp_path)
    build(tmp_path)
    path = tmp_path / ".maguyva" / MANIFEST
    manifest = sealed.read_sealed_json(path, "manifest")
    manifest["format_version"] = 2
    path.write_bytes(sealed.seal("manifest", sealed.dumps_json(manifest)))
    assert IndexDir(tmp_path / ".maguyva").current(pin=False).manifest["format_version"] == 2
    assert build(tmp_path).noop  # read as it is
    write_repo(tmp_path, 1)
    assert not build(tmp_path).noop
    current = IndexDir(tmp_path / ".maguyva").current(pin=False)
    assert current.manifest["format_version"] == 3 and current.manifest["layout"]["mode"] == "delta"


def test_checksum_table_takes_a_written_files_crc_only_while_it_is_that_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A graph file's CRC comes from its writer (no read back) and equals the file's; a file
    changed since it was written is read again."""
    import zlib

    import numpy as np

    from maguyva.modalities.graph import store as graph_store
    from maguyva.store import checksums
    from maguyva.store.checksums import checksum_table

    d = tmp_path / "gen"
    graph_store.write(d, {"a": np.arange(100_000, dtype=np.int64)}, {"s": ["x", "y"]}, {})
    data = (d / "graph.bin").read_bytes()
    with monkeypatch.context() as m:

        def no_read_back(path: Path) -> int:
            raise AssertionError(f"{path} read back")

        m.setattr(checksums, "checksum_table_one", no_read_back)
        assert checksum_table(d)["graph.bin"] == [len(data), zlib.crc32(data)]
    graph_store.write(d, {"a": np.arange(100_000, dtype=np.int64)}, {"s": ["x", "z"]}, {})
    damaged = bytearray((d / "graph.bin").read_bytes())
    damaged[100] ^= 1
    (d / "graph.bin").write_bytes(bytes(damaged))  # another inode or mtime: not the written one
    assert checksum_table(d)["graph.bin"] == [len(damaged), zlib.crc32(bytes(damaged))]


def test_a_rebuild_leaves_one_generation_and_spares_a_leased_one(tmp_path):
    """`--rebuild` writes a generation from scratch: the previous one is collected at once
    (it used to stay beside it), unless a reader holds it, who then goes on reading it."""
    from maguyva.store import generations as store

    write_repo(tmp_path)
    build(tmp_path)
    write_repo(tmp_path, 1)
    build(tmp_path)  # an update keeps the generation before it
    index = IndexDir(tmp_path / ".maguyva")
    assert len(index.generations()) == 2
    build(tmp_path, rebuild=True)
    assert len(index.generations()) == 1
    pinned = index.current()  # a reader of the rebuilt generation
    build(tmp_path, rebuild=True)
    assert pinned.number in index.generations() and verify_generation(pinned.path) == []
    assert answers(tmp_path)
    pinned.release()
    build(tmp_path, rebuild=True)
    store.trash_pool().submit(lambda: None).result()
    assert len(index.generations()) == 1 and not pinned.path.exists()
    assert not list(index.path.glob(f"{store.TRASH}*"))
