"""Graph format 4 and symbol index format 3 (issue 21, the index's size): an index whose graph
files are format 3 and whose symbol segments are format 2 (what main wrote before) opens,
answers the same and is sound under fsck; an edit updates it to what a from-scratch build of
the edited tree answers, in the new formats."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from durability_support import answers, build, write_repo
from hypothesis import given
from hypothesis import strategies as st

from maguyva.build.fsck import fsck
from maguyva.errors import CorruptIndexError
from maguyva.modalities.graph import incremental, store_pack
from maguyva.modalities.graph import store as gstore
from maguyva.modalities.graph.modality import COLD_SECTIONS
from maguyva.modalities.structural import symbols
from maguyva.store.checksums import CHECKSUMS, checksum_table
from maguyva.store.generations import IndexDir
from maguyva.support import sealed

# the int64 sections of format 3 that format 4 narrows when their values fit
WIDE = ("edge_lptr", "rev_ptr", "fwd_ptr", "ptr", "stats")
GRAPH_FILES = (gstore.FILE_NAME, gstore.NAMES_PART, incremental.LOG_FILE)


def _graph_to_format_3(directory: Path) -> None:
    """Each graph file written again as format 3 wrote it: int64 offsets and pointers,
    nothing compressed, 64-bit lookup hashes."""
    for name in GRAPH_FILES:
        sections, meta = gstore.read(directory, name)
        own = _own_sections(directory, name)
        arrays = {k: np.array(v) for k, v in store_pack.logical(sections).items() if k in own}
        for k, v in arrays.items():
            if (k.endswith(".off") or k in WIDE) and v.dtype == np.int32:
                arrays[k] = v.astype(np.int64)
        if "lookup_name.hash" in arrays:
            arrays.update(gstore.name_lookup(arrays["node_kind"], arrays["node_name.blob"],
                                             arrays["node_name.off"], bits=64))  # fmt: skip
        (directory / name).unlink()
        gstore.write(directory, arrays, {}, meta, name, version=3)


def _own_sections(directory: Path, name: str) -> list[str]:
    """The sections stored in `name` itself (not in its parts)."""
    sections, meta = gstore.read(directory, name)
    parts = set()
    for part in meta.get("parts", []):
        parts |= set(store_pack.logical(gstore.read(directory, part)[0]))
    return [k for k in store_pack.logical(sections) if k not in parts]


def _symbols_to_format_2(directory: Path) -> None:
    for m in range(symbols.SEGMENTS):
        payload = symbols.read_segment(directory, m)
        path = directory / symbols.segment_name(m)
        path.unlink()
        path.write_bytes(sealed.seal("symbols", sealed.dumps_json(payload), 2))
    meta = dict(symbols.read_meta(directory), format=2)
    (directory / symbols.META).unlink()
    (directory / symbols.META).write_bytes(sealed.seal("symbols_meta", sealed.dumps_json(meta), 2))


def _reseal(gen: Path) -> None:
    (gen / CHECKSUMS).unlink()
    table = checksum_table(gen)
    (gen / CHECKSUMS).write_bytes(sealed.seal("checksums", sealed.dumps_json(table)))


def _version(path: Path) -> int:
    return int.from_bytes(path.read_bytes()[8:12], "little")


def test_an_index_of_the_previous_formats_opens_answers_and_updates(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write_repo(root)
    build(root)
    gen = IndexDir(root / ".maguyva").current(pin=False)
    want = answers(root)
    graph_dir, symbol_dir = gen.path / "graph", gen.path / "structural"
    assert {_version(graph_dir / n) for n in GRAPH_FILES} == {gstore.VERSION}
    new_sizes = sum((graph_dir / n).stat().st_size for n in GRAPH_FILES)
    _graph_to_format_3(graph_dir)
    _symbols_to_format_2(symbol_dir)
    _reseal(gen.path)
    assert {_version(graph_dir / n) for n in GRAPH_FILES} == {3}
    assert sum((graph_dir / n).stat().st_size for n in GRAPH_FILES) > new_sizes
    assert not sealed.read_sealed(symbol_dir / "000.json", "symbols", 3).startswith(symbols.ZHEAD)
    report = fsck(root / ".maguyva")
    assert report.ok, report.errors
    assert answers(root) == want

    write_repo(root, 1)
    assert not build(root).noop
    updated = IndexDir(root / ".maguyva").current(pin=False)
    assert updated.number > gen.number
    assert {_version(updated.path / "graph" / n) for n in GRAPH_FILES} == {gstore.VERSION}
    assert symbols.read_meta(updated.path / "structural")["format"] == symbols.FORMAT_VERSION == 3
    assert fsck(root / ".maguyva").ok
    fresh = tmp_path / "fresh"
    shutil.copytree(root, fresh, ignore=shutil.ignore_patterns(".maguyva"))
    build(fresh)
    assert answers(root) == answers(fresh)


def test_format_4_narrows_compresses_and_refuses_a_bad_frame(tmp_path: Path, monkeypatch) -> None:
    wide = np.arange(10, dtype=np.int64)
    big = np.array([0, 2**40], dtype=np.int64)
    arrays = {"wide": wide, "big": big, "cold": np.arange(1000, dtype=np.int32)}
    # a file over SMALL_FILE: only the sections named are frames
    monkeypatch.setattr(gstore, "SMALL_FILE", 0)
    gstore.write(tmp_path, arrays, {"s": ["a", "bé"] * 50}, {},
                 compress=frozenset({"cold", "s.blob"}))  # fmt: skip
    assert sorted(gstore.read(tmp_path)[0].compressed()) == ["cold", "s.blob"]
    # a small file: every section of SMALL_SECTION bytes or more that shrinks is one too
    monkeypatch.undo()
    gstore.write(tmp_path, arrays, {"s": ["a", "bé"] * 50}, {},
                 compress=frozenset({"cold", "s.blob"}))  # fmt: skip
    sections, _ = gstore.read(tmp_path)
    assert sections["wide"].dtype == np.int32 and sections["wide"].tolist() == wide.tolist()
    assert sections["big"].dtype == np.int64 and sections["big"].tolist() == big.tolist()
    assert sorted(sections.compressed()) == ["cold", "s.blob", "s.off"]
    assert sections.length("cold") == 1000
    assert sections["cold"].tolist() == list(range(1000))
    assert gstore.strings(sections, "s").all() == ["a", "bé"] * 50
    assert (tmp_path / gstore.FILE_NAME).stat().st_size < 4000  # cold alone: 4000 raw
    # a frame that is not one, under a right CRC (a writer bug): refused when first read
    sections, _ = gstore.read(tmp_path)
    frame, dtype, size, where = sections._frames["cold"]
    sections._frames["cold"] = (frame[:-2], dtype, size, where)
    with pytest.raises(CorruptIndexError, match="does not decompress"):
        sections["cold"]


def test_cold_sections_are_not_decompressed_to_answer(tmp_path: Path) -> None:
    """A graph question (references, impact) reads none of the cold sections."""
    from maguyva.modalities.graph.searcher import GraphSearcher
    from maguyva.modalities.protocol import RetrieverQuery

    root = tmp_path / "repo"
    write_repo(root)
    build(root)
    gen = IndexDir(root / ".maguyva").current(pin=False)
    searcher = GraphSearcher.open(gen.path)
    sections = searcher.graph._sections
    assert isinstance(sections, gstore.Sections)
    # a small graph stores its other sections as frames too (`store.SMALL_FILE`)
    assert set(sections.compressed()) >= COLD_SECTIONS
    for intent in ("find_references", "impact_analysis"):
        assert searcher.search(RetrieverQuery(text="load_items", terms=["load_items"],
                                              intent=intent, target="load_items"), 10)  # fmt: skip
    assert not COLD_SECTIONS & set(sections._raw)
    assert searcher.graph.chunk_c and "chunk_c" in sections._raw


def test_fsck_rebuilds_the_packed_sections(tmp_path: Path) -> None:
    """A `graph.bin` whose degrees do not fit its edges, under a right CRC (a writer bug), is
    reported by fsck (`verify`) and refused by the first walk."""
    from maguyva.modalities.graph.modality import GraphModality
    from maguyva.modalities.graph.query import GraphIndex

    root = tmp_path / "repo"
    write_repo(root)
    build(root)
    graph_dir = IndexDir(root / ".maguyva").current(pin=False).path / "graph"
    assert GraphModality().verify(graph_dir) == []
    sections, meta = gstore.read(graph_dir)
    names = gstore.read(graph_dir, gstore.NAMES_PART)[0]
    arrays = {k: np.array(sections[k]) for k in sections if k not in names}
    arrays["node_outdeg"][0] += 1
    (graph_dir / gstore.FILE_NAME).unlink()
    gstore.write(graph_dir, arrays, {}, meta, compress=COLD_SECTIONS)
    assert any("do not rebuild" in p for p in GraphModality().verify(graph_dir))
    with pytest.raises(CorruptIndexError, match="degrees"):
        GraphIndex(*gstore.read(graph_dir)).rev_ptr  # noqa: B018


@given(st.lists(st.text(st.sampled_from("ab.é_"), max_size=4), max_size=40))
def test_dedupe_equals_a_dict_of_the_strings(strings: list[str]) -> None:
    blob, off = gstore.pack_strings(strings)
    got, want = store_pack.dedupe(blob, off), store_pack.dedupe_slow(blob, off)
    assert [a.tolist() for a in got] == [a.tolist() for a in want]
    ids, u_blob, u_off = got
    table = gstore.StringTable(u_blob, u_off)
    assert [table[i] for i in ids.tolist()] == strings
    assert len(set(strings)) == len(table)


def test_a_hash_collision_falls_back_to_the_dict(monkeypatch: pytest.MonkeyPatch) -> None:
    # the hash of a string is then its first byte and its length: "ab" and "ac" collide
    monkeypatch.setattr(store_pack, "_P", np.uint64(0))
    slow = store_pack.dedupe_slow
    calls = []
    monkeypatch.setattr(store_pack, "dedupe_slow", lambda *a: calls.append(1) or slow(*a))
    blob, off = gstore.pack_strings(["ab", "ac", "ab", "", "c"])
    ids, u_blob, _ = store_pack.dedupe(blob, off)
    assert ids.tolist() == [0, 1, 0, 2, 3] and u_blob.tobytes() == b"abacc" and calls == [1]


def _graph_arrays(rng: np.random.Generator, n: int, m: int, confs: int, top_line: int) -> dict:
    """Random edges with their CSR both ways, ordered by confidence within a node (as the build
    orders them), line lists and as many distinct confidences as `confs`."""
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    conf = rng.permutation(np.resize(rng.random(confs).astype(np.float32), m))  # each value used
    counts = rng.integers(0, 4, m)
    lptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    arrays = {"node_start": np.ones(n, dtype=np.int32), "edge_src": src, "edge_dst": dst,
              "edge_kind": rng.integers(0, 5, m).astype(np.uint8), "edge_conf": conf,
              "edge_lptr": lptr, "edge_lines": rng.integers(1, top_line, int(lptr[-1]))}  # fmt: skip
    for name, ends in (("fwd", src), ("rev", dst)):
        arrays[f"{name}_idx"] = np.lexsort((-conf, ends)).astype(np.int32)
        arrays[f"{name}_ptr"] = store_pack._counts_ptr(ends, n)
    return arrays


def _walks(s, n: int) -> list:
    """Every edge as both walks see it: by CSR position, its ends, kind, confidence, lines."""
    src, dst, fwd_ptr, fwd_idx, rev_ptr, rev_idx = store_pack.edges(s, n)
    m = len(s["edge_kind"])
    conf, lptr = store_pack.confidences(s, m), store_pack.line_pointers(s, m)
    lines = s["edge_lines"]
    return [[(int(src[e]), int(dst[e]), int(s["edge_kind"][e]), float(conf[e]),
              lines[lptr[e] : lptr[e + 1]].tolist()) for e in idx.tolist()]
            for idx in (fwd_idx, rev_idx)] + [fwd_ptr.tolist(), rev_ptr.tolist()]  # fmt: skip


@pytest.mark.parametrize(("n", "m", "confs", "top_line"),
                         [(1, 0, 1, 10), (7, 40, 5, 100), (30, 400, 300, 70000)])  # fmt: skip
def test_packed_edges_walk_as_the_arrays_they_replace(n, m, confs, top_line) -> None:
    """More than 256 confidences or a line past 65535 keep those sections as they were."""
    arrays = _graph_arrays(np.random.default_rng(m), n, m, confs, top_line)
    packed = store_pack.pack_graph(arrays)
    assert "edge_src" not in packed and "fwd_idx" not in packed
    assert ("edge_conf" in packed) == (confs > 256)
    assert (packed["edge_lines"].dtype == np.uint16) == (top_line <= 1 << 16)
    assert _walks(packed, n) == _walks(arrays, n)


def test_format_5_offsets_as_steps_and_format_4_still_read(tmp_path: Path) -> None:
    """A small file's offsets sections are frames of their steps (summed back to the same
    values and dtype); a falling `.off` section is stored as it is; a format 4 file (no steps,
    its lookups stored) reads the same."""
    names = [f"name_{i}" * (i % 7 + 1) for i in range(300)]
    falling = np.arange(200, 0, -1, dtype=np.int32)
    arrays = {"node_kind": np.zeros(300, dtype=np.uint8), "x.off": falling}
    for version in (gstore.VERSION, 4):
        out = tmp_path / f"v{version}"
        gstore.write(out, arrays, {"node_name": names}, {}, version=version)
        sections, _ = gstore.read(out)
        assert gstore.strings(sections, "node_name").all() == names
        assert sections["node_name.off"].dtype == np.int32
        assert sections["x.off"].tolist() == falling.tolist()
        assert ("node_name.off" in sections._steps) == (version >= 5)
        assert "x.off" not in sections._steps
