"""The packed tables' sealed version (`sealed.PACKED_VERSION`): a generation's CHECKSUMS and
files.json are sealed as version 2, so that a Maguyva that reads up to version 1 (from before
packing: it would take the zlib bytes for damaged JSON) says the index was written by a newer
Maguyva; this one still reads tables sealed as version 1, packed or plain, and an update on
top of them commits version 2; a future version 3 is named as newer, never as damage.

Real code (eight standard-library modules, text, structural and graph), real builds; the
version-1 and version-3 tables are the same payloads sealed with those header versions."""

from __future__ import annotations

import shutil
import zlib
from pathlib import Path

import pytest
from durability_support import answers
from interfaces_corpus import make_corpus

from maguyva.api import Index
from maguyva.build.fsck import fsck
from maguyva.build.indexer import Indexer
from maguyva.errors import CorruptIndexError, IndexVersionError
from maguyva.interfaces.cli.main import main
from maguyva.store.generations import CHECKSUMS, IndexDir
from maguyva.support import sealed

FILES_JSON = "files.json"
KINDS = {CHECKSUMS: "checksums", FILES_JSON: "files"}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    root = make_corpus(tmp_path_factory.mktemp("sealed"))
    Index.open(root).build()
    return root, answers(root)


def copy_of(pristine: tuple[Path, list], tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "repo"
    shutil.copytree(pristine[0], root, symlinks=True)
    return root, IndexDir(root / ".maguyva").current(pin=False).path


def payload(path: Path) -> bytes:
    """The payload of a sealed file, whatever its version (the header is one line)."""
    return path.read_bytes().split(b"\n", 1)[1]


def reseal(gen: Path, name: str, version: int, plain: bool = False) -> None:
    """`gen/name` sealed again as `version` (its payload unpacked when `plain`), then the
    checksum table updated for it (itself sealed as `version` when it is the one changed)."""
    data = payload(gen / name)
    if plain:
        data = zlib.decompress(data)
    (gen / name).unlink()  # hard-linked between generations: replaced, not written through
    (gen / name).write_bytes(sealed.seal(KINDS[name], data, version))
    if name != CHECKSUMS:
        table = sealed.read_packed_json(gen / CHECKSUMS, "checksums")
        table[name] = [(gen / name).stat().st_size, sealed.crc32((gen / name).read_bytes())]
        (gen / CHECKSUMS).unlink()
        (gen / CHECKSUMS).write_bytes(
            sealed.seal("checksums", sealed.dumps_json_packed(table), sealed.PACKED_VERSION)
        )


def test_a_new_index_seals_its_packed_tables_as_version_2(pristine) -> None:
    gen = IndexDir(pristine[0] / ".maguyva").current(pin=False).path
    for name, kind in KINDS.items():
        assert (gen / name).read_bytes().startswith(b"MAGUYVA %s 2 " % kind.encode())
        assert payload(gen / name)[:1] == sealed.PACKED
        # what a Maguyva reading up to version 1 calls on it: newer, not damaged
        with pytest.raises(IndexVersionError, match="newer Maguyva") as caught:
            sealed.read_sealed_json(gen / name, kind, max_version=1)
        assert not isinstance(caught.value, CorruptIndexError)
        assert "damaged" not in str(caught.value)


@pytest.mark.parametrize("plain", [False, True], ids=["packed-v1", "plain-v1"])
def test_tables_sealed_as_version_1_are_still_read_and_updated(pristine, tmp_path, plain):
    root, gen = copy_of(pristine, tmp_path)
    reseal(gen, FILES_JSON, 1, plain)
    reseal(gen, CHECKSUMS, 1, plain)
    for name, kind in KINDS.items():
        assert (gen / name).read_bytes().startswith(b"MAGUYVA %s 1 " % kind.encode())
    report = fsck(root / ".maguyva")
    assert report.ok, report.errors
    assert answers(root) == pristine[1]
    # an update reads the version-1 tables of the generation it follows, writes version 2
    inode = (gen / FILES_JSON).stat().st_ino
    (root / "textwrap.py").write_text((root / "textwrap.py").read_text() + "\n\ndef added_now():"
                                      "\n    return 'ADDED_NOW'\n")  # fmt: skip
    summary = Indexer(root).update()
    assert not summary.noop and summary.changes["modified"] == 1, summary.changes
    new = IndexDir(root / ".maguyva").current(pin=False).path
    assert new != gen
    assert (new / CHECKSUMS).read_bytes().startswith(b"MAGUYVA checksums 2 ")
    # a small update keeps the version-1 file table (hard-linked) under its delta
    assert (new / "files-delta.json").exists()
    assert (new / FILES_JSON).stat().st_ino == inode
    assert fsck(root / ".maguyva").ok
    found = Index.open(root).search('"ADDED_NOW"').results
    assert [r.path for r in found] == ["textwrap.py"]


def test_a_checksum_table_of_version_3_is_named_newer_not_damaged(pristine, tmp_path, capsys,
                                                                   monkeypatch) -> None:  # fmt: skip
    root, gen = copy_of(pristine, tmp_path)
    reseal(gen, CHECKSUMS, 3)
    with pytest.raises(IndexVersionError) as caught:
        Index.open(root).search("where is dedent defined")
    message = str(caught.value)
    assert "written by a newer Maguyva (checksums format 3; this one reads up to 2)" in message
    assert "damaged" not in message and "repair" not in message, message
    monkeypatch.chdir(root)
    assert main(["search", "where is dedent defined", "--no-daemon"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("maguyva: error: ") and "newer Maguyva" in err, err
    assert len(err.strip().splitlines()) == 1 and "damaged" not in err, err
    report = fsck(root / ".maguyva")
    assert any("newer Maguyva" in e for e in report.errors), report.errors
    assert not any("damaged" in e or "mismatch" in e for e in report.errors), report.errors


def test_a_file_table_of_version_3_is_named_newer_by_fsck(pristine, tmp_path) -> None:
    root, gen = copy_of(pristine, tmp_path)
    reseal(gen, FILES_JSON, 3)
    report = fsck(root / ".maguyva")
    assert report.errors == [f"{gen / FILES_JSON}: written by a newer Maguyva (files format 3; "
                             "this one reads up to 2); upgrade Maguyva or rebuild with "
                             "`maguyva index --rebuild`"], report.errors  # fmt: skip
