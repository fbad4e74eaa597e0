"""The Python API on a real indexed repository (stdlib modules): search options, the explicit
shortcuts, read_chunk, status, refresh after a rebuild, threads, and the path-escape matrix."""

from __future__ import annotations

import doctest
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from interfaces_corpus import escape_matrix, make_corpus

import maguyva
import maguyva.api
from maguyva import BadQueryError, Index, MaguyvaError, PathEscapeError


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Index:
    root = make_corpus(tmp_path_factory.mktemp("api"))
    index = Index.open(root)
    summary = index.build()
    assert summary.files == 9
    return index


def test_docstring_examples_run():
    for module in (maguyva, maguyva.api):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0 and result.attempted > 0, module.__name__


def test_search_returns_typed_results(index: Index):
    response = index.search("where is dedent defined")
    assert isinstance(response, maguyva.Response)
    top = response.results[0]
    assert isinstance(top, maguyva.Result)
    assert (top.path, top.symbol) == ("textwrap.py", "dedent")
    assert response.intent == "find_definition" and response.fusion_strategy == "direct"
    assert top.provenance and top.provenance[0].modality == "structural"


def test_explicit_modality_control(index: Index):
    response = index.search("shlex split quotes", modalities=["text"], limit=3)
    assert response.modalities == ["text"] and len(response.results) <= 3
    with pytest.raises(BadQueryError):
        index.search("x", modalities=["vectors"])


def test_filters_globs_languages_paths(index: Index):
    everywhere = {r.path for r in index.search("dedent", limit=20).results}
    assert {"textwrap.py", "pkg/__init__.py"} <= everywhere
    only_pkg = index.search("dedent", paths=["pkg"], limit=20).results
    assert only_pkg and {r.path for r in only_pkg} == {"pkg/__init__.py"}
    no_pkg = index.search("dedent", globs=["!pkg/*"], limit=20).results
    assert no_pkg and all(not r.path.startswith("pkg/") for r in no_pkg)
    by_syntax = index.search("dedent -file:pkg", limit=20).results
    assert {r.path for r in by_syntax} == {r.path for r in no_pkg}
    assert index.search("dedent", languages=["rust"]).results == []
    assert index.search("dedent", language="py").results


def test_exact_and_regex_queries(index: Index):
    exact = index.search('"No closing quotation"')
    assert exact.intent == "exact_match" and exact.results[0].path == "shlex.py"
    fixed = index.search("No closing quotation", fixed_strings=True)
    assert fixed.results[0].path == "shlex.py"
    regex = index.search("/No (closing|escaped) [a-z]+/")
    assert regex.results and regex.results[0].path == "shlex.py"
    assert index.search("no closing quotation", fixed_strings=True, case="sensitive").results == []


def test_shortcuts(index: Index):
    assert [h.path for h in index.find_symbol("dedent")] == ["textwrap.py"]
    callers = index.find_references("dedent")
    assert "pkg/__init__.py" in {h.path for h in callers}
    assert "pkg/__init__.py" in {h.path for h in index.impact("dedent", depth=2)}
    assert any(h.symbol and "translate" in h.symbol for h in index.callees("_compile_pattern"))
    lines = index.grep("No closing quotation")
    assert lines and lines[0].path == "shlex.py"
    with pytest.raises(BadQueryError):
        index.find_symbol("  ")


def test_read_chunk(index: Index):
    chunk = index.read_chunk("textwrap.py", 1, 3)
    assert chunk.start_line == 1 and chunk.end_line == 3 and chunk.total_lines > 400
    assert chunk.text.count("\n") == 2
    assert index.read_chunk("link_in/__init__.py", 1, 1).path == "pkg/__init__.py"
    with pytest.raises(BadQueryError):
        index.read_chunk("textwrap.py", 5, 2)
    with pytest.raises(MaguyvaError, match="not an indexed file"):
        index.read_chunk(".maguyva.toml")


@pytest.mark.parametrize("case", range(12))
def test_path_escape_matrix_api(index: Index, case: int):
    path = escape_matrix(index.root)[case]
    message = f"{path!r}: path is outside the repository root"
    with pytest.raises(PathEscapeError) as info:
        index.read_chunk(path, 1, 1)
    assert str(info.value) == message
    with pytest.raises(PathEscapeError):
        index.search("dedent", paths=[path])
    with pytest.raises(PathEscapeError):
        index.build(paths=[path])


def test_absolute_path_inside_root_is_refused_by_the_api(index: Index):
    with pytest.raises(PathEscapeError):
        index.read_chunk(str(index.root / "textwrap.py"))


def test_status_and_refresh_after_rebuild(index: Index):
    status = index.status()
    assert status["files"] == 9 and status["stale_files"] == 0
    assert status["modalities"]["semantic"]["built"] is False  # excluded by .maguyva.toml
    before = index.engine().generation.number
    extra = index.root / "added.py"
    extra.write_text("def brand_new_helper():\n    return 42\n")
    try:
        index.build()
        assert index.engine().generation.number > before
        assert [h.path for h in index.find_symbol("brand_new_helper")] == ["added.py"]
    finally:
        extra.unlink()
        index.build()


def test_concurrent_searches_agree(index: Index):
    queries = ["where is dedent defined", '"No closing quotation"', "who calls translate"] * 4
    expected = {q: [r.path for r in index.search(q).results] for q in set(queries)}
    with ThreadPoolExecutor(max_workers=6) as pool:
        got = list(pool.map(lambda q: (q, [r.path for r in index.search(q).results]), queries))
    for query, paths in got:
        assert paths == expected[query]


def test_open_errors(tmp_path: Path):
    with pytest.raises(MaguyvaError, match="not a directory"):
        Index.open(tmp_path / "missing")
    with pytest.raises(maguyva.IndexNotFoundError):
        Index.open(tmp_path).search("x")


def test_a_filter_that_excludes_most_candidates_still_fills_the_limit(tmp_path: Path):
    """Filters apply after fusion over a bounded candidate list; when the filter keeps too few,
    the search looks deeper instead of answering short (regression: it returned nothing)."""
    import shutil
    import sysconfig

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    root = tmp_path / "repo"
    for package in ("email", "asyncio", "json"):
        shutil.copytree(
            stdlib / package, root / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    (root / ".maguyva.toml").write_text('modalities = ["text"]\n')
    index = Index.open(root)
    index.build()
    ranked = [r.path for r in index.search('"import"', limit=400).results]
    assert len(ranked) > 55
    deep = ranked[-1]  # beyond the first candidate list (5 x limit, at least 50)
    # two globs (either may match, as in ripgrep): not pushed down into the text retriever
    # (a single glob is), so they filter after fusion
    found = index.search('"import"', globs=[deep, "nowhere/*"], limit=1).results
    assert [r.path for r in found] == [deep]
    # query-syntax `file:` terms must all match (as in Zoekt)
    assert index.search(f'"import" file:{deep} file:nowhere/*', limit=5).results == []


def test_a_question_reads_the_manifest_only_when_it_changed(tmp_path, monkeypatch):
    """`Index.search` used to re-read and check the sealed manifest on every call; now one
    stat tells whether it is the file read last time (a commit renames a new one in)."""
    from maguyva.store.generations import IndexDir

    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def first():\n    return 1\n")
    index = Index.open(root, modalities=["text"])
    index.build(progress=None)
    reads = []
    real = IndexDir.read_manifest

    def counting(self):
        reads.append(1)
        return real(self)

    monkeypatch.setattr(IndexDir, "read_manifest", counting)
    assert index.search('"def first"').results
    before = len(reads)
    for _ in range(5):
        assert index.search('"def first"').results
    assert len(reads) == before  # unchanged manifest: not read again
    (root / "b.py").write_text("def second():\n    return 2\n")
    Index.open(root, modalities=["text"]).build(progress=None)  # another writer commits
    assert [r.path for r in index.search('"def second"').results] == ["b.py"]
    assert len(reads) > before
