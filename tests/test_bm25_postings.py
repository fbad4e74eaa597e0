"""BM25 from index-time postings (issue 21): the same ranking as the content scan, kept
through incremental updates, and an index built before the postings still answers.

The property tests build real indexes with `_core.build_text_index` over random small
corpora. The postings compute exact BM25 over every document with a match; today's scan
nominates at most `max_docs` documents and skips those whose terms are all in more than half
of the documents while a rarer term exists, so its results are a subset of the postings'
ranking with identical tuples (scores to the bit), and equal to it when nothing is skipped.
"""

from __future__ import annotations

import logging
import shutil
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maguyva import _core
from maguyva.build.indexer import build_index
from maguyva.errors import CorruptIndexError
from maguyva.modalities.text.modality import TextModality, open_index, postings_file
from maguyva.store.checksums import CHECKSUMS, checksum_table
from maguyva.store.generations import IndexDir, write_sealed
from maguyva.support import sealed

PIECES = ["cache", "Cache", "lru", "LRU_cache", "evict", "evicted", "entries", "entry",
          "parse", "parseConfig", "config", "ab", "abab", "x", "q7", "__init__", "é"]  # fmt: skip
GLUE = [" ", ".", "(", "_", "-", "\t", "é", ""]
TERMS = ["cache", "lru", "lru_cache", "evict", "entries", "parse", "parseconfig", "config",
         "ab", "aba", "init", "q7", "ca"]  # fmt: skip

LINE = st.lists(st.tuples(st.sampled_from(PIECES), st.sampled_from(GLUE)), max_size=8).map(
    lambda parts: "".join(p + g for p, g in parts)
)
FILE = st.tuples(
    st.lists(LINE, max_size=10),
    st.lists(st.tuples(st.integers(1, 11), st.integers(0, 10)), max_size=3),
)
CORPUS = st.lists(FILE, min_size=1, max_size=6)
QUERY = st.lists(st.sampled_from(TERMS), min_size=1, max_size=4, unique=True)


def _build(root: Path, out: Path, corpus: list[tuple[list[str], list[tuple[int, int]]]]) -> Any:
    shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    root.mkdir(parents=True)
    inputs = []
    for i, (lines, spans) in enumerate(corpus):
        path = f"f{i:02}.txt"
        (root / path).write_text("\n".join(lines), encoding="utf-8")
        chunks = [(s, s + n, f"{path}#{j}") for j, (s, n) in enumerate(spans)]
        inputs.append((path, chunks))
    _core.build_text_index(str(root), str(out), inputs)
    return _core.TextIndex(str(out))


@given(corpus=CORPUS, terms=QUERY, k=st.integers(1, 30))
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_postings_rank_exactly_as_the_scan(tmp_path, corpus, terms, k):
    index = _build(tmp_path / "root", tmp_path / "out", corpus)
    assert index.has_bm25_postings
    postings = index.bm25(terms, k, method="postings")
    assert postings == index.bm25(terms, k, method="scan_all")
    assert index.bm25(terms, k) == postings  # "auto" takes the postings
    # Today's scan: every chunk it returns is in the postings' full ranking, identical.
    everything = index.bm25(terms, 10_000, method="postings")
    today = index.bm25(terms, 10_000, method="scan", max_docs=10_000)
    assert all(hit in everything for hit in today)


def test_the_scan_skips_documents_of_common_terms_only(tmp_path):
    """The one difference, shown: `cache` is in 3 of 4 files, `evict` in one; the scan scores
    only the file with `evict`, the postings every file with a match."""
    corpus = [(["cache evict"], []), (["cache"], []), (["cache cache"], []), (["other"], [])]
    index = _build(tmp_path / "root", tmp_path / "out", corpus)
    today = index.bm25(["cache", "evict"], 10, method="scan")
    postings = index.bm25(["cache", "evict"], 10)
    assert [h[0] for h in today] == ["f00.txt"]
    assert [h[0] for h in postings] == ["f00.txt", "f02.txt", "f01.txt"]
    assert postings[0] == today[0]


def test_terms_the_postings_cannot_answer_go_to_the_scan(tmp_path):
    index = _build(tmp_path / "root", tmp_path / "out", [(["naïve cache"], [])])
    assert index.bm25(["naïve"], 5) == index.bm25(["naïve"], 5, method="scan")
    assert index.bm25(["naïve"], 5)[0][0] == "f00.txt"
    with pytest.raises(ValueError, match="no BM25 postings"):
        index.bm25(["naïve"], 5, method="postings")
    with pytest.raises(ValueError, match="method must be"):
        index.bm25(["cache"], 5, method="fast")


def test_damaged_postings_are_loud(tmp_path):
    _build(tmp_path / "root", tmp_path / "out", [(["lru cache evict"] * 5, [(1, 3)])])
    path = tmp_path / "out" / "trigram.bm25"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptIndexError, match=r"trigram\.bm25"):
        _core.TextIndex(str(tmp_path / "out"))
    assert TextModality().verify(tmp_path / "out")


# -- through the text modality: updates and an index built before the postings -------------

STDLIB = Path(sysconfig.get_paths()["stdlib"])
SOURCES = sorted((STDLIB / "json").glob("*.py"))
CONFIG: dict[str, Any] = {"modalities": ["text"], "jobs": 1}
QUESTIONS = [["decode", "json", "string"], ["scanner", "match"], ["encoder", "indent"]]


def _repo(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for src in SOURCES:
        shutil.copyfile(src, root / src.name)


def _text_dir(root: Path) -> Path:
    return IndexDir(root / ".maguyva").current().path / "text"


def _edit(root: Path, n: int) -> None:
    target = root / SOURCES[n % len(SOURCES)].name
    target.write_text(target.read_text() + f"\ndef decode_token_{n}(string):\n    return {n}\n")


def test_an_update_writes_postings_for_its_segment_and_links_the_rest(tmp_path):
    root = tmp_path / "repo"
    _repo(root)
    build_index(root, config=CONFIG)
    first = _text_dir(root)
    _edit(root, 1)
    report = build_index(root, config=CONFIG).modalities["text"]["report"]
    assert report["mode"] == "incremental"
    second = _text_dir(root)
    assert (second / "trigram.bm25").stat().st_ino == (first / "trigram.bm25").stat().st_ino
    assert (second / postings_file("seg-000001.idx")).is_file()
    scratch = tmp_path / "scratch"
    build_index(root, config={**CONFIG, "index_dir": str(scratch)})
    fresh = open_index(IndexDir(scratch).current().path / "text")
    updated = open_index(second)
    assert updated.has_bm25_postings
    for terms in [*QUESTIONS, ["decode", "token"]]:
        assert updated.bm25(terms, 20) == fresh.bm25(terms, 20)
        assert updated.bm25(terms, 20) == updated.bm25(terms, 20, method="scan_all")


def _strip_postings(gen: Path) -> None:
    """Make `gen` look like a generation written before BM25 postings existed."""
    for path in (gen / "text").glob("*.bm25"):
        path.unlink()
    (gen / CHECKSUMS).unlink()
    write_sealed(gen / CHECKSUMS, "checksums", sealed.dumps_json(checksum_table(gen)))


def test_an_index_without_postings_answers_then_is_rebuilt(tmp_path, caplog):
    root = tmp_path / "repo"
    _repo(root)
    build_index(root, config=CONFIG)
    gen = IndexDir(root / ".maguyva").current().path
    expected = {tuple(t): open_index(gen / "text").bm25(t, 10_000) for t in QUESTIONS}
    _strip_postings(gen)
    with caplog.at_level(logging.WARNING, logger="maguyva.modalities.text.modality"):
        searcher = TextModality().open(gen, {})
    assert "no BM25 postings" in caplog.text
    old = searcher._index
    assert not old.has_bm25_postings
    for terms in QUESTIONS:  # answered by the content scan, as before the postings
        assert old.bm25(terms, 20) == old.bm25(terms, 20, method="scan")
        assert {h[:5] for h in old.bm25(terms, 20)} <= {h[:5] for h in expected[tuple(terms)]}
    _edit(root, 2)
    report = build_index(root, config=CONFIG).modalities["text"]["report"]
    assert report["mode"] == "full"  # rebuilt, not an update on top of the old segments
    assert open_index(_text_dir(root)).has_bm25_postings
