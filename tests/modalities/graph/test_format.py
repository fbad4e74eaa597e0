"""Graph formats 3 and 4: the CRC-32 trailer (written section by section, checked over the mapped
file), the exact-size rule, and the name lookup sections, whose answers must equal dicts
built from Python's own strings (`str.lower` included) for any names."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from graph_support import build_graph
from hypothesis import given
from hypothesis import strategies as st

from maguyva import _core
from maguyva.errors import CorruptIndexError, IndexVersionError
from maguyva.modalities.graph import store as gstore
from maguyva.modalities.graph.modality import GraphModality
from maguyva.modalities.graph.query import NameLookup
from maguyva.modalities.graph.schema import NodeKind

M64 = (1 << 64) - 1


def reference_hash(data: bytes) -> int:
    """The name hash as rust/src/py/graphio.rs documents it, in Python."""
    k = 0x9E3779B97F4A7C15
    h = ((len(data) * k) & M64) ^ 0x6A09E667F3BCC908
    for at in range(0, len(data), 8):
        word = int.from_bytes(data[at : at + 8].ljust(8, b"\0"), "little")
        h = ((h ^ word) * k) & M64
        h ^= h >> 29
    h ^= h >> 30
    h = (h * 0xBF58476D1CE4E5B9) & M64
    h ^= h >> 27
    h = (h * 0x94D049BB133111EB) & M64
    return h ^ (h >> 31)


@given(st.binary(max_size=100))
def test_the_name_hash_is_the_documented_one(data: bytes) -> None:
    assert _core.name_hash(data) == reference_hash(data)


def test_the_name_hash_is_pinned() -> None:
    """The hash is part of the file format: a change must come with a new format version."""
    assert gstore.name_hash("") == reference_hash(b"") == 0x492B8D6066C09227
    assert gstore.name_hash("JSONDecoder") == 0xDEB736BE88949509
    assert gstore.name_hash("é") == _core.name_hash("é".encode())
    assert len({gstore.name_hash("a" * n) for n in range(40)}) == 40  # the length is mixed in


@given(st.binary(max_size=5000), st.integers(0, 2**32 - 1))
def test_crc32_buffer_is_zlibs(data: bytes, initial: int) -> None:
    arr = np.frombuffer(data, dtype=np.uint8)
    assert _core.crc32_buffer(arr, initial) == zlib.crc32(data, initial)
    half = len(data) // 2
    assert _core.crc32_buffer(arr[half:], _core.crc32_buffer(arr[:half])) == zlib.crc32(data)


def _file(tmp_path: Path) -> bytes:
    """A format-4 file with a compressed section (`z`) beside raw ones."""
    gstore.write(tmp_path, {"x": np.arange(5, dtype=np.int32), "y": np.ones(3),
                            "z": np.arange(7, dtype=np.int64)},
                 {"s": ["a", "bé", "Ωmega"]}, {"k": 1}, compress=frozenset({"z"}))  # fmt: skip
    return (tmp_path / gstore.FILE_NAME).read_bytes()


def test_a_format_5_file_ends_with_its_crc_and_round_trips(tmp_path: Path) -> None:
    data = _file(tmp_path)
    assert struct.unpack_from("<I", data, 8)[0] == 5 == gstore.VERSION
    assert data.endswith(gstore.END)
    assert struct.unpack_from("<I", data, len(data) - 8)[0] == zlib.crc32(data[:-8])
    sections, meta = gstore.read(tmp_path)
    assert meta == {"k": 1} and sections["x"].tolist() == list(range(5))
    assert sections["y"].tolist() == [1.0] * 3
    assert gstore.strings(sections, "s").all() == ["a", "bé", "Ωmega"]
    assert sections.compressed() == ["z"] and sections["z"].tolist() == list(range(7))
    assert not sections["x"].flags.writeable  # views of the read buffer, never written
    assert not sections["z"].flags.writeable


def test_every_flipped_bit_and_every_truncation_is_refused(tmp_path: Path) -> None:
    data = _file(tmp_path)
    path = tmp_path / gstore.FILE_NAME
    for at in range(len(data)):
        for bit in (0, 7):
            damaged = bytearray(data)
            damaged[at] ^= 1 << bit
            path.write_bytes(bytes(damaged))
            # the version field names another format: refused as such (its checksum unknown)
            refused = (CorruptIndexError, IndexVersionError) if 8 <= at < 12 else CorruptIndexError
            with pytest.raises(refused):
                sections, _ = gstore.read(tmp_path)
                sections["z"]
    for cut in range(1, len(data)):
        path.write_bytes(data[:cut])
        with pytest.raises(CorruptIndexError):
            gstore.read(tmp_path)


def test_sections_must_fill_the_file_exactly(tmp_path: Path) -> None:
    """Bytes between the last section and the trailer, with a CRC that covers them, are
    refused (a writer bug or a spliced file), as is an extended file."""
    data = _file(tmp_path)
    path = tmp_path / gstore.FILE_NAME
    body = data[:-8] + b"\0" * 8
    path.write_bytes(body + struct.pack("<I", zlib.crc32(body)) + gstore.END)
    with pytest.raises(CorruptIndexError, match="sections end at"):
        gstore.read(tmp_path)
    path.write_bytes(data + b"\0" * 8)
    with pytest.raises(CorruptIndexError):
        gstore.read(tmp_path)


# names with case: ASCII, Latin with case folding quirks, Greek/Cyrillic/Turkish dotted I,
# the German sharp s, ligatures, lone surrogates (a name may carry them: surrogatepass)
NAME_CHARS = st.one_of(
    st.sampled_from("aAbBzZ_09"),
    st.sampled_from("ßẞİıΣσςǅǄﬁÅåΩωДдÉé\u0130\u212a\u2126"),
    st.characters(blacklist_categories=("Cs",)),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
)
NAMES = st.text(NAME_CHARS, max_size=12)


@given(st.lists(st.tuples(NAMES, st.sampled_from(list(NodeKind))), max_size=60),
       st.lists(NAMES, max_size=10))  # fmt: skip
def test_name_lookups_equal_dicts_of_python_strings(nodes, probes) -> None:
    names = [name for name, _ in nodes]
    kind = np.array([k for _, k in nodes], dtype=np.uint8)
    blob, off = gstore.pack_strings(names)
    sections = gstore.name_lookup(kind, blob, off)
    table = gstore.StringTable(blob, off)
    assert table.all() == names and [table[i] for i in range(len(names))] == names
    by_name, by_lower = NameLookup(sections["lookup_name.hash"], sections["lookup_name.node"],
                                   table, lower=False), NameLookup(
        sections["lookup_lower.hash"], sections["lookup_lower.node"], table, lower=True)  # fmt: skip
    want_name: dict[str, list[int]] = {}
    want_lower: dict[str, list[int]] = {}
    for i, (name, k) in enumerate(nodes):
        if k in gstore.LOOKUP_KINDS:
            want_name.setdefault(name, []).append(i)
            want_lower.setdefault(name.lower(), []).append(i)
    for key in [*names, *(n.lower() for n in names), *(n.upper() for n in names), *probes]:
        assert by_name.get(key, []) == want_name.get(key, []), key
        assert by_lower.get(key, []) == want_lower.get(key, []), key
        assert (key in by_name) == (key in want_name)


def test_fsck_finds_lookup_sections_that_do_not_match_the_names(
    tmp_path: Path, monkeypatch
) -> None:
    """A names part written with a wrong lookup (checksum right: what was written was wrong)
    is named by `verify` (a file over `SMALL_FILE`: a small one stores no lookup)."""
    monkeypatch.setattr(gstore, "SMALL_FILE", 0)
    repo = {"m.py": "def alpha():\n    return beta()\n\n\ndef beta():\n    return 1\n"}
    out = build_graph(tmp_path / "r", repo, tmp_path / "g") / "graph"
    assert GraphModality().verify(out) == []
    sections, meta = gstore.read(out, gstore.NAMES_PART)
    nodes = sections["lookup_name.node"].copy()
    assert len(nodes) >= 2
    nodes[[0, 1]] = nodes[[1, 0]]
    gstore.write(out, {**sections, "lookup_name.node": nodes}, {}, meta, gstore.NAMES_PART)
    problems = GraphModality().verify(out)
    assert problems == [f"{gstore.NAMES_PART}: section lookup_name.node differs from the names "
                        "it indexes"], problems  # fmt: skip


def test_a_hash_collision_never_changes_an_answer() -> None:
    """Every lookup node given the hash of one probe: the candidates' names decide."""
    names = ["Probe", "probe", "other", "PROBE", "probe"]
    blob, off = gstore.pack_strings(names)
    table = gstore.StringTable(blob, off)
    nodes = np.arange(len(names), dtype=np.int32)
    for probe in ("probe", "Probe", "nothing"):
        hashes = np.full(len(names), gstore.name_hash(probe), dtype=np.uint64)
        exact = NameLookup(hashes, nodes, table, lower=False)
        lower = NameLookup(hashes, nodes, table, lower=True)
        assert exact.get(probe, []) == [i for i, n in enumerate(names) if n == probe]
        assert lower.get(probe, []) == [i for i, n in enumerate(names) if n.lower() == probe]
