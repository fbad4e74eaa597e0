"""The graph's files: the names live in a part (`names.bin`) that a remembering writer
hard-links from the previous generation after a body-only edit; format 1 and 2 files are
still read, newer ones refused; damage to either file is found by the loader and by fsck's
`verify` (tests/modalities/graph/test_format.py: the format 3 trailer and the name lookups)."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from graph_support import build_with

from maguyva.errors import CorruptIndexError, IndexVersionError
from maguyva.modalities.graph import store as gstore
from maguyva.modalities.graph.modality import GraphModality

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "graph"


_build = build_with


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "python", root)
    writer = GraphModality()
    _build(writer, root, tmp_path / "g0")
    _build(writer, root, tmp_path / "g1", tmp_path / "g0", [])
    svc = root / "app" / "service.py"
    svc.write_text(
        svc.read_text().replace("return s.get(req)", "s.get(req)\n    return s._load(req)")
    )
    report = _build(writer, root, tmp_path / "g2", tmp_path / "g1", ["app/service.py"])
    assert report["mode"] == "patch" and report["names_linked"]
    return tmp_path / "g1", tmp_path / "g2"


def test_a_body_edit_links_the_names_part_and_writes_the_rest(built):
    g1, g2 = built
    a, b = g1 / "graph" / gstore.NAMES_PART, g2 / "graph" / gstore.NAMES_PART
    assert a.stat().st_ino == b.stat().st_ino  # one file, two generations
    assert (g1 / "graph" / gstore.FILE_NAME).stat().st_ino != (
        g2 / "graph" / gstore.FILE_NAME
    ).stat().st_ino
    sections, meta = gstore.read(g2 / "graph")
    assert meta["parts"] == [gstore.NAMES_PART]
    assert "node_name.blob" in sections and "edge_kind" in sections
    assert GraphModality().verify(g2 / "graph") == []


@pytest.mark.parametrize("version", [1, 2])
def test_a_format_1_or_2_file_is_still_read(tmp_path, version):
    arrays = {"x": np.arange(5, dtype=np.int32)}
    gstore.write(tmp_path, arrays, {"s": ["a", "bé"]}, {"k": 1}, version=version)
    data = (tmp_path / gstore.FILE_NAME).read_bytes()
    assert struct.unpack_from("<I", data, 8)[0] == version and not data.endswith(gstore.END)
    sections, meta = gstore.read(tmp_path)
    assert meta == {"k": 1} and sections["x"].tolist() == list(range(5))
    assert gstore.strings(sections, "s").all() == ["a", "bé"]


def test_a_newer_format_is_refused_clearly(tmp_path):
    gstore.write(tmp_path, {"x": np.arange(3)}, {}, {}, version=gstore.VERSION + 1)
    newer = f"graph format {gstore.VERSION + 1}, this Maguyva reads 1 to {gstore.VERSION}"
    with pytest.raises(IndexVersionError, match=newer):
        gstore.read(tmp_path)


@pytest.mark.parametrize("name", [gstore.NAMES_PART, gstore.FILE_NAME])
@pytest.mark.parametrize("damage", ["flip", "truncate", "remove"])
def test_damage_to_either_file_is_found_by_the_loader_and_verify(built, name, damage):
    _, g2 = built
    path = g2 / "graph" / name
    data = bytearray(path.read_bytes())
    path.unlink()  # the part is shared with g1: replace it, do not write through the link
    if damage == "flip":
        data[len(data) // 2] ^= 0x10
        path.write_bytes(bytes(data))
    elif damage == "truncate":
        path.write_bytes(bytes(data[: len(data) - 100]))
    with pytest.raises((CorruptIndexError, gstore.ModalityUnavailable)):
        gstore.read(g2 / "graph")
    problems = GraphModality().verify(g2 / "graph")
    assert problems and problems[0].startswith(gstore.FILE_NAME), problems


def test_a_bad_part_name_is_corrupt(tmp_path):
    gstore.write(tmp_path, {"x": np.arange(3)}, {}, {"parts": ["../elsewhere.bin"]})
    with pytest.raises(CorruptIndexError, match="bad part name"):
        gstore.read(tmp_path)
    data = (tmp_path / gstore.FILE_NAME).read_bytes()
    assert struct.unpack_from("<I", data, 8)[0] == gstore.VERSION
