"""Chunk and extraction rows stored as compressed blocks (segment format 2, `store.blocks`):
damage is caught, and an index whose segments are format 1 (written before the blocks)
opens, answers and updates."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from durability_support import answers, build, write_repo

from maguyva.build.fsck import fsck
from maguyva.errors import CorruptIndexError
from maguyva.store import blocks
from maguyva.store.checksums import CHECKSUMS, checksum_table
from maguyva.store.chunks import FILES_JSON, SEGMENTS, ChunkStore, segment_of
from maguyva.store.extraction import EXTRACTION_SCHEMA
from maguyva.store.fileindex import stored_rows
from maguyva.store.generations import IndexDir
from maguyva.store.rows import canonical_json
from maguyva.store.views import segment_name
from maguyva.support import sealed


def test_a_block_round_trips_and_damage_is_an_error() -> None:
    rows = b'{"id": "a", "path": "p.py"}\n' * 50
    block = blocks.block("p.py", rows, 50)
    assert blocks.is_block(block) and len(block) < len(rows) // 4
    assert blocks.raw(block, "x") == rows and blocks.count(block) == 50
    assert blocks.block("p.py", block, 50) == block  # a block is stored as it is
    assert blocks.block("p.py", b"", 0) == b"" and blocks.raw(b"", "x") == b""
    assert list(blocks.blocks(block + block, "x")) == [
        ("p.py", 50, 0, len(block)),
        ("p.py", 50, len(block), len(block)),
    ]
    for at in (len(block) - 3, len(block) // 2):
        damaged = bytearray(block)
        damaged[at] ^= 0x10
        with pytest.raises(CorruptIndexError):
            blocks.raw(bytes(damaged), "x")
    with pytest.raises(CorruptIndexError):
        blocks.raw(block[:-1], "x")  # runs past the end


def test_dictionary_frames_read_beside_plain_ones() -> None:
    """Format 4's blocks name their built-in dictionary in the frame: a format 3 block (no
    dictionary) and a format 4 one read alike, and a frame naming a dictionary this build
    does not have is damage, not a crash."""
    from maguyva import _core

    rows = (b'{"id": "0f3a", "path": "pkg/mod.py", "start_line": 1, "end_line": 9, "kind": '
            b'"function", "name": "f", "qualified_name": "f", "signature": "def f(x)"}\n')  # fmt: skip
    plain, packed = blocks.block("p.py", rows, 1), blocks.block("p.py", rows, 1, "chunks")
    assert len(packed) < len(plain)
    assert blocks.raw(plain, "x") == blocks.raw(packed, "x") == rows
    assert blocks.raw(blocks.block("p.py", b"[1]", 1, "extract"), "x") == b"[1]"
    with pytest.raises(ValueError, match="no dictionary"):
        _core.zstd_compress(rows, 6, "nothing")
    frame = bytearray(_core.zstd_compress(rows, 6, "chunks"))
    at = frame.index((0x4D470001).to_bytes(4, "little"))
    frame[at] ^= 0x7F  # another dictionary id
    with pytest.raises(ValueError, match="does not have"):
        _core.zstd_decompress(bytes(frame), len(rows))


def _to_format_1(gen: Path, extractor: str) -> None:
    """Rewrite a from-scratch generation's segments as format 1 wrote them (raw JSON Lines;
    the extraction in a JSON object naming the extractor), with `files.json` and the
    checksum table to match: what a generation built before the blocks holds."""
    meta = sealed.read_packed_json(gen / FILES_JSON, "files")
    index = meta["segments"]["files"]
    for n in range(SEGMENTS):
        chunk_path, extract_path = gen / segment_name(n, "chunks"), gen / segment_name(n, "extract")
        old_chunks = sealed.read_sealed(chunk_path, "chunks", blocks.ROWS_VERSION)
        old_extract = sealed.read_sealed(extract_path, "extract", blocks.ROWS_VERSION)
        chunk_parts: list[bytes] = []
        extract_parts = [b'{"extractor":', canonical_json(extractor), b',"files":{']
        coff, eoff = 0, sum(map(len, extract_parts))
        for i, path in enumerate(sorted(p for p in index if segment_of(p) == n)):
            e = index[path]
            rows = blocks.raw(old_chunks[e[0] : e[0] + e[1]], chunk_path)
            fragment = blocks.raw(old_extract[e[3] : e[3] + e[4]], extract_path)
            key = (b"," if i else b"") + canonical_json(path) + b":"
            extract_parts.append(key)
            eoff += len(key)
            index[path] = [coff, len(rows), e[2], eoff, len(fragment)]
            chunk_parts.append(rows)
            extract_parts.append(fragment)
            coff += len(rows)
            eoff += len(fragment)
        extract_parts.append(b'},"schema":' + canonical_json(EXTRACTION_SCHEMA) + b"}")
        for path, payload in ((chunk_path, chunk_parts), (extract_path, extract_parts)):
            path.unlink()
            path.write_bytes(sealed.seal(path.parent.name, b"".join(payload), 1))
    (gen / FILES_JSON).unlink()
    (gen / FILES_JSON).write_bytes(sealed.seal("files", sealed.dumps_json(meta)))
    (gen / CHECKSUMS).unlink()
    table = checksum_table(gen)
    (gen / CHECKSUMS).write_bytes(sealed.seal("checksums", sealed.dumps_json(table)))


def test_a_format_1_index_opens_answers_and_updates(tmp_path: Path) -> None:
    """Built, then rewritten as format 1: fsck is clean, every chunk and every answer is the
    same; an edit updates it, every segment rewritten as blocks (from the stored rows, nothing
    extracted again but the edit), to exactly what a from-scratch build of the edited tree
    stores."""
    root = tmp_path / "repo"
    write_repo(root)
    build(root)
    gen = IndexDir(root / ".maguyva").current(pin=False)
    want_chunks = ChunkStore.open(gen.path)
    want_answers = answers(root)
    _to_format_1(gen.path, gen.manifest["built_for"]["extractor"])
    assert not blocks.is_block(sealed.read_sealed(gen.path / segment_name(0, "chunks"), "chunks"))
    assert fsck(root / ".maguyva").ok
    got = ChunkStore.open(gen.path)
    assert {c.id: c for p in got.paths() for c in got.by_path(p)} == {
        c.id: c for p in want_chunks.paths() for c in want_chunks.by_path(p)
    }
    assert answers(root) == want_answers

    write_repo(root, 1)
    assert not build(root).noop
    updated = IndexDir(root / ".maguyva").current(pin=False)
    assert updated.number > gen.number
    for n in range(SEGMENTS):  # every segment written again, as blocks, once
        for kind in ("chunks", "extract"):
            assert not blocks.older_format(updated.path, segment_name(n, kind))
    assert blocks.older_format(gen.path, segment_name(0, "chunks"))
    assert fsck(root / ".maguyva").ok
    fresh = tmp_path / "fresh"
    shutil.copytree(root, fresh, ignore=shutil.ignore_patterns(".maguyva"))
    build(fresh)
    scratch = IndexDir(fresh / ".maguyva").current(pin=False)
    assert stored_rows(updated.path) == stored_rows(scratch.path)
    assert answers(root) == answers(fresh)
