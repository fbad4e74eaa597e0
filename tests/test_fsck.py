"""Bit flips and truncation of every index file are detected by fsck and by the loaders;
`index --repair` makes the index sound again (falling back to a sound generation, or
rebuilding)."""

from __future__ import annotations

import random
import shutil

import pytest
from durability_support import answers, build, write_repo

from maguyva.build.fsck import fsck, repair
from maguyva.errors import CorruptIndexError
from maguyva.interfaces.cli.main import main
from maguyva.store import blocks
from maguyva.store.generations import CHECKSUMS, IndexDir
from maguyva.support import sealed

OWN = {"meta.json": "meta", "files.json": "files", "extract.json": "extract",
       "chunks.jsonl": "chunks", CHECKSUMS: "checksums"}  # fmt: skip


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    root = tmp_path_factory.mktemp("repo")
    write_repo(root, 0)
    build(root)
    return root, answers(root)


def _copy(pristine, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(pristine[0], root)
    gen = IndexDir(root / ".maguyva").current(pin=False)
    files = sorted(p for p in gen.path.rglob("*") if p.is_file())
    return root, gen, files


def test_every_file_bit_flip_is_named_by_fsck(pristine, tmp_path):
    root, _gen, files = _copy(pristine, tmp_path)
    assert fsck(root / ".maguyva").ok
    rng = random.Random(1)
    assert len(files) >= 8
    for path in files:
        original = path.read_bytes()
        if not original:
            continue
        damaged = bytearray(original)
        at = rng.randrange(len(damaged))
        damaged[at] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(damaged))
        report = fsck(root / ".maguyva")
        assert not report.ok and any(str(path.name) in e for e in report.errors), (path, at)
        kind = OWN.get(path.name) or {"chunks": "chunks", "extract": "extract"}.get(
            path.parent.name
        )
        if kind is not None:  # the indexer's own files: their loader refuses them too
            with pytest.raises(CorruptIndexError):
                sealed.read_sealed(path, kind, max_version=blocks.ROWS_VERSION)
        path.write_bytes(original)
    assert fsck(root / ".maguyva").ok


def test_every_file_truncation_is_caught_when_a_reader_opens(pristine, tmp_path):
    root, _gen, files = _copy(pristine, tmp_path)
    for path in files:
        original = path.read_bytes()
        path.write_bytes(original[: len(original) // 2])
        with pytest.raises(CorruptIndexError):
            IndexDir(root / ".maguyva").current()
        assert not fsck(root / ".maguyva").ok
        path.write_bytes(original)
    assert answers(root) == pristine[1]


def test_repair_falls_back_then_updates(pristine, tmp_path):
    root, _gen, _files = _copy(pristine, tmp_path)
    write_repo(root, 1)
    build(root)
    write_repo(root, 0)
    new = IndexDir(root / ".maguyva").current(pin=False)
    victim = next(p for p in sorted(new.path.rglob("*")) if p.is_file() and p.suffix != ".json")
    victim.write_bytes(victim.read_bytes()[:-1] + b"\x00")
    outcome = repair(root, config={"modalities": ["text", "structural", "graph"]})
    assert outcome["before"]["errors"] and outcome["after"]["ok"], outcome
    assert answers(root) == pristine[1]


def test_repair_rebuilds_when_nothing_is_sound_and_cli_exit_codes(pristine, tmp_path, capsys):
    root, _gen, files = _copy(pristine, tmp_path)
    (root / ".maguyva" / "manifest.json").write_bytes(b"garbage")
    for path in files:
        path.write_bytes(b"")
    assert main(["fsck", str(root)]) == 1
    assert "manifest.json" in capsys.readouterr().out
    assert main(["index", str(root), "--repair", "--modalities", "text,structural,graph"]) == 0
    assert main(["fsck", str(root)]) == 0
    assert answers(root) == pristine[1]


def test_fsck_runs_the_modality_verifier_beyond_checksums(pristine, tmp_path, capsys):
    """Damage that keeps every checksum right (a sealed, well-formed structural segment with a
    path that belongs to another segment; CHECKSUMS rewritten) is found by the structural
    verifier, which fsck runs; modalities without a verifier are named as checksum-only."""
    from maguyva.modalities.structural import symbols as symbol_index
    from maguyva.store import checksums
    from maguyva.store import generations as store

    root, gen, _files = _copy(pristine, tmp_path)
    report = fsck(root / ".maguyva")
    assert report.ok and report.verified_by["structural"] == "verify", report.verified_by
    assert set(report.verified_by) == {"text", "structural", "graph"}
    directory = gen.path / "structural"
    m = next(m for m in range(symbol_index.SEGMENTS)
             if symbol_index.read_segment(directory, m)["paths"])  # fmt: skip
    payload = symbol_index.read_segment(directory, m)
    payload["paths"][0] = next(p for p in ("a.py", "b.py", "c.py", "d.py")
                               if symbol_index.segment_of(p) != m)  # fmt: skip
    store.write_sealed(directory / symbol_index.segment_name(m), "symbols",
                       sealed.dumps_json(payload), symbol_index.FORMAT_VERSION)  # fmt: skip
    table = checksums.checksum_table(gen.path)
    store.write_sealed(gen.path / CHECKSUMS, "checksums", sealed.dumps_json(table))
    report = fsck(root / ".maguyva")
    assert [e for e in report.errors if e.startswith("structural: ")], report.errors
    assert all("another segment" in e for e in report.errors), report.errors
    assert main(["fsck", str(root)]) == 1
    assert "structural (verify)" in capsys.readouterr().out
