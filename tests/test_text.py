"""The text modality against brute-force oracles on real code (the CPython standard library)."""

from __future__ import annotations

import re
import sysconfig
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maguyva.errors import BadQueryError, CorruptIndexError, ModalityUnavailable
from maguyva.extract.chunks import line_window_chunks
from maguyva.modalities.protocol import BuildContext, RetrieverQuery
from maguyva.modalities.text.modality import MODALITY, TextSearcher, split_terms
from maguyva.repo.walk import walk_repository
from maguyva.store.chunks import write_chunks

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PACKAGES = ["json", "email", "http", "logging", "urllib", "xml/dom"]
EXTRA = {
    "notes/unicode.txt": "Grüße aus MÜNCHEN\nΣΊΣΥΦΟΣ and σίσυφος\nstraße STRASSE\n",
    "notes/latin1.txt": None,  # invalid UTF-8, written as bytes below
    "src/defs.py": "def parse_config(path):\n    return path\n\n\nx = parse_config('a')\n",
    "tests/test_defs.py": "from src.defs import parse_config\nparse_config('b')\n",
}


def _build(root: Path, gen: Path) -> dict:
    walked = walk_repository(root)
    chunks = []
    for f in walked.files:
        text = (root / f.path).read_bytes().decode("utf-8", "replace")
        chunks.extend(line_window_chunks(f.path, text))
    gen.mkdir(parents=True, exist_ok=True)
    write_chunks(gen, chunks)
    ctx = BuildContext(
        root=root, out_dir=gen, files=walked.files, chunks=chunks, extraction={},
        config={}, cache_dir=gen / "cache",
    )  # fmt: skip
    return MODALITY.build(ctx)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    for pkg in PACKAGES:
        for src in (STDLIB / pkg).glob("*.py"):
            dst = root / "lib" / pkg / src.name
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(src.read_bytes())
    for rel, text in EXTRA.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            (root / rel).write_bytes(b"caf\xe9 na\xefve r\xe9sum\xe9 latin1_marker\n")
        else:
            (root / rel).write_text(text, encoding="utf-8")
    (root / "blob.bin").write_bytes(b"\x00\x01binary")
    return root


@pytest.fixture(scope="module")
def built(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    gen = tmp_path_factory.mktemp("gen")
    return gen, _build(corpus, gen)


@pytest.fixture(scope="module")
def searcher(built: tuple[Path, dict]) -> TextSearcher:
    return MODALITY.open(built[0], {})


@pytest.fixture(scope="module")
def contents(corpus: Path, searcher: TextSearcher) -> dict[str, bytes]:
    return {p: (corpus / p).read_bytes() for p in searcher._index.paths()}


def _files(searcher: TextSearcher, pattern: str, **kw: object) -> set[str]:
    return {m.path for m in searcher.grep(pattern, max_results=10**9, **kw)}


def _oracle(contents: dict[str, bytes], rx: re.Pattern[bytes]) -> set[str]:
    return {p for p, data in contents.items() if rx.search(data)}


def test_build_report(built: tuple[Path, dict], contents: dict[str, bytes]) -> None:
    report = built[1]
    assert report["docs"] == len(contents) > 50
    assert report["content_bytes"] == sum(len(c) for c in contents.values())
    assert report["index_bytes"] + report["stored_bytes"] < report["content_bytes"]


words = st.sampled_from(["def ", "return", "import", "self", "Error", "__init__", "header", "xyz"])


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_random_literals_equal_brute_force(
    searcher: TextSearcher, contents: dict[str, bytes], data: st.DataObject
) -> None:
    paths = sorted(contents)
    path = data.draw(st.sampled_from(paths))
    body = contents[path]
    start = data.draw(st.integers(0, max(0, len(body) - 1)))
    length = data.draw(st.integers(1, 24))
    piece = body[start : start + length].decode("utf-8", "ignore").split("\n")[0]
    if not piece:
        piece = data.draw(words)
    case = data.draw(st.sampled_from(["sensitive", "insensitive"]))
    flags = re.IGNORECASE if case == "insensitive" else 0
    want = _oracle(contents, re.compile(re.escape(piece.encode()), flags))
    assert _files(searcher, piece, case=case) == want, piece


def test_non_ascii_case_insensitive(searcher: TextSearcher) -> None:
    assert _files(searcher, "grüße aus münchen", case="insensitive") == {"notes/unicode.txt"}
    assert _files(searcher, "σίσυφος", case="insensitive") == {"notes/unicode.txt"}
    hits = searcher.grep("ΣΊΣΥΦΟΣ", case="insensitive")
    assert [(h.line, len(h.columns)) for h in hits] == [(2, 2)]
    assert _files(searcher, "grüße aus münchen", case="sensitive") == set()


REGEX_TEMPLATES = [
    "{a}.*{b}",
    "{a}|{b}",
    "(?:{a})+ ?{b}",
    "{a}[a-z]?{b}",
    "^\\s*{a}",
    "{a}\\(",
    "[{c}{C}]{rest}",
]


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    a=st.sampled_from(["def", "class", "self", "return", "raise", "Error", "None", "parse", "ab"]),
    b=st.sampled_from(["init", "Value", "header", "(", "x", "message", "get"]),
    template=st.sampled_from(REGEX_TEMPLATES),
    case=st.sampled_from(["sensitive", "insensitive"]),
)
def test_random_regexes_equal_brute_force(
    searcher: TextSearcher, contents: dict[str, bytes], a: str, b: str, template: str, case: str
) -> None:
    pattern = template.format(
        a=re.escape(a), b=re.escape(b), c=a[0].lower(), C=a[0].upper(), rest=re.escape(a[1:])
    )
    flags = re.MULTILINE | (re.IGNORECASE if case == "insensitive" else 0)
    want = _oracle(contents, re.compile(pattern.encode(), flags))
    assert _files(searcher, pattern, regex=True, case=case) == want, pattern


def test_grep_lines_columns_and_options(searcher: TextSearcher, corpus: Path) -> None:
    hits = searcher.grep("parse_config", case="sensitive")
    got = {(h.path, h.line) for h in hits}
    assert got == {("src/defs.py", 1), ("src/defs.py", 5), ("tests/test_defs.py", 1),
                   ("tests/test_defs.py", 2)}  # fmt: skip
    first = next(h for h in hits if (h.path, h.line) == ("src/defs.py", 1))
    assert first.columns == [(4, 16)] and first.text == "def parse_config(path):"
    assert [h.path for h in searcher.grep("parse_config", path_glob="src/*")] == ["src/defs.py"] * 2
    assert len(searcher.grep("import", max_results=3)) == 3
    # smart case: lower-case pattern is insensitive, an upper-case letter makes it sensitive
    assert _files(searcher, "münchen") == {"notes/unicode.txt"}
    assert _files(searcher, "München") == set()
    # whole word
    assert _files(searcher, "parse", whole_word=True) == set() or all(
        re.search(rb"\bparse\b", (corpus / p).read_bytes())
        for p in _files(searcher, "parse", whole_word=True)
    )
    assert "src/defs.py" not in _files(searcher, "parse", whole_word=True)
    # invalid UTF-8 content is searchable
    assert _files(searcher, "latin1_marker") == {"notes/latin1.txt"}
    # short patterns fall back to a bounded scan
    assert len(searcher.grep("ab", max_results=5)) == 5


@pytest.mark.parametrize(
    "pattern", ["(unclosed", "a{99999999}", "(" * 1000 + "a" + ")" * 1000, "[z-a]", ""]
)
def test_bad_regex_is_a_clear_error(searcher: TextSearcher, pattern: str) -> None:
    with pytest.raises(BadQueryError):
        searcher.grep(pattern, regex=True)


def test_huge_alternation_is_refused_or_bounded(searcher: TextSearcher) -> None:
    pattern = "|".join(f"word{i}x[a-z]+y" for i in range(100_000))
    started = time.perf_counter()
    try:
        searcher.grep(pattern, regex=True)
    except BadQueryError as exc:
        assert "size limit" in str(exc) or "exceed" in str(exc)
    assert time.perf_counter() - started < 30  # a guard against hangs, not a speed test


def test_catastrophic_pattern_is_linear(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    (root / "long.txt").write_text("a" * 200_000 + "!\n")
    gen = tmp_path / "g"
    _build(root, gen)
    s = MODALITY.open(gen, {})
    assert s.grep("(a+)+$", regex=True) == []
    assert len(s.grep("(a+)+!", regex=True)) == 1


def test_bad_inputs_never_crash_the_build(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    (root / "ok.py").write_text("ok = 1\n")
    (root / "bad.txt").write_bytes(b"\xff\xfe broken \xc3 utf8\n")
    gen = tmp_path / "g"
    walked = walk_repository(root)
    (root / "ok.py").unlink()  # vanished between walk and build
    ctx = BuildContext(
        root=root, out_dir=gen, files=walked.files, chunks=[], extraction={}, config={},
        cache_dir=gen,
    )  # fmt: skip
    report = MODALITY.build(ctx)
    assert report["docs"] == 1 and report["skipped"] == {"unreadable": 1}
    assert [m.path for m in MODALITY.open(gen, {}).grep("broken")] == ["bad.txt"]


def test_search_ranks_definition_first_and_absent_is_empty(searcher: TextSearcher) -> None:
    q = RetrieverQuery(text="parse_config", intent="find_definition", target="parse_config")
    hits = searcher.search(q, 10)
    assert hits[0].path == "src/defs.py" and 1 in hits[0].lines
    assert hits[0].key is not None and hits[0].extra["definition"]
    assert {h.path for h in hits} == {"src/defs.py", "tests/test_defs.py"}
    absent = RetrieverQuery(text='"zq_absent_literal_q"', intent="exact_match",
                            target="zq_absent_literal_q")  # fmt: skip
    assert searcher.search(absent, 10) == []


def test_natural_language_ranks_by_bm25(searcher: TextSearcher) -> None:
    q = RetrieverQuery(
        text="how are cookies parsed", intent="understand_code", target="",
        terms=["cookies", "parsed"],
    )  # fmt: skip
    hits = searcher.search(q, 10)
    assert hits and hits[0].path.startswith("lib/http/cookie")
    assert all(h.key is not None for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_split_terms() -> None:
    assert split_terms(["how", "parseConfig", "HTTPServer", "read_file"]) == [
        "parseconfig", "parse", "config", "httpserver", "http", "server", "read_file", "read",
    ]  # fmt: skip


def test_thread_safe_searches(searcher: TextSearcher) -> None:
    want = [m.to_dict() for m in searcher.grep("return", max_results=500)]
    results: list[list[dict]] = []

    def run() -> None:
        results.append([m.to_dict() for m in searcher.grep("return", max_results=500)])

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [want] * 4


def test_corrupt_and_missing_index(built: tuple[Path, dict], tmp_path: Path) -> None:
    import shutil

    gen = tmp_path / "gen"
    shutil.copytree(built[0], gen)
    idx = gen / "text" / "trigram.idx"
    data = bytearray(idx.read_bytes())
    data[len(data) // 2] ^= 0xFF
    idx.write_bytes(bytes(data))
    with pytest.raises(CorruptIndexError):
        MODALITY.open(gen, {})
    idx.write_bytes(bytes(data[:100]))
    with pytest.raises(CorruptIndexError):
        MODALITY.open(gen, {})
    with pytest.raises(ModalityUnavailable):
        MODALITY.open(tmp_path / "nowhere", {})


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_mutated_literals_equal_brute_force(
    searcher: TextSearcher, contents: dict[str, bytes], data: st.DataObject
) -> None:
    """A literal from the corpus with one byte changed is mostly absent: the follow-mask
    filter must reject those files without ever dropping a real match."""
    body = contents[data.draw(st.sampled_from(sorted(contents)))]
    start = data.draw(st.integers(0, max(0, len(body) - 1)))
    piece = bytearray(body[start : start + data.draw(st.integers(3, 16))])
    if len(piece) < 3 or b"\n" in piece:
        piece = bytearray(b"self.assert")
    at = data.draw(st.integers(0, len(piece) - 1))
    piece[at] = data.draw(st.sampled_from(list(b"aeiouxyz_(.E0 ")))
    literal = piece.decode("utf-8", "ignore")
    if len(literal) < 1:
        return
    want = _oracle(contents, re.compile(re.escape(literal.encode())))
    assert _files(searcher, literal, case="sensitive") == want, literal


def test_count_all_is_exact_and_early_stop_is_a_prefix(
    searcher: TextSearcher, contents: dict[str, bytes]
) -> None:
    index = searcher._index
    full, _, _ = index.search("return", case="sensitive", max_lines=10**9, max_lines_per_file=3)
    quick, _, _ = index.search(
        "return", case="sensitive", max_lines=10**9, max_lines_per_file=3, count_all=False
    )
    assert {f[0] for f in full} == {p for p, c in contents.items() if b"return" in c}
    for path, n_matches, n_lines, lines in full:
        body = contents[path]
        assert n_matches == body.count(b"return")
        assert n_lines == sum(1 for line in body.split(b"\n") if b"return" in line)
        assert len(lines) == min(3, n_lines)
    assert [(f[0], f[3]) for f in quick] == [(f[0], f[3]) for f in full]
    assert all(q[1] <= f[1] for q, f in zip(quick, full, strict=True))


def test_damaged_content_is_detected(built: tuple[Path, dict], tmp_path: Path) -> None:
    import shutil

    gen = tmp_path / "gen"
    shutil.copytree(built[0], gen)
    content = gen / "text" / "content.bin"
    data = bytearray(content.read_bytes())
    for at in range(len(data) // 3, len(data), len(data) // 7):
        data[at] ^= 0x20  # flips letter case: LZ4 still decodes, only the CRC notices
    content.write_bytes(bytes(data))
    damaged = MODALITY.open(gen, {})
    with pytest.raises(CorruptIndexError):
        damaged.grep("e", max_results=10**9)


def test_zstd_store_answers_like_lz4(corpus: Path, searcher: TextSearcher, tmp_path: Path) -> None:
    walked = walk_repository(corpus)
    ctx = BuildContext(
        root=corpus, out_dir=tmp_path, files=walked.files, chunks=[], extraction={},
        config={"text_zstd_level": 3}, cache_dir=tmp_path / "cache",
    )  # fmt: skip
    report = MODALITY.build(ctx)
    assert report["stored_bytes"] < searcher.stats()["stored_bytes"]
    zstd = MODALITY.open(tmp_path, {})
    for pattern, regex in [("return", False), ("Error", False), (r"def \w+_\w+\(", True)]:
        got = [m.to_dict() for m in zstd.grep(pattern, regex=regex, max_results=10**9)]
        want = [m.to_dict() for m in searcher.grep(pattern, regex=regex, max_results=10**9)]
        assert got == want, pattern


@pytest.fixture(scope="module")
def wide_index(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, dict[str, bytes]]:
    """The standard library's top level and its tests (~630 files, many over 16 kB): enough
    candidates for a common literal that files-only questions decode files only up to their
    first match."""
    from maguyva import _core

    paths = sorted(
        str(p.relative_to(STDLIB)) for p in [*STDLIB.glob("*.py"), *STDLIB.glob("test/*.py")]
    )
    out = tmp_path_factory.mktemp("wide") / "text"
    report = _core.build_text_index(str(STDLIB), str(out), [(p, []) for p in paths])
    index = _core.TextIndex(str(out))
    contents = {p: (STDLIB / p).read_bytes() for p in index.paths()}
    assert report["docs"] == len(contents) > 600
    return index, contents


@pytest.mark.parametrize(
    ("pattern", "regex", "case", "whole_word"),
    [
        ("import", False, "sensitive", False),
        ("return", False, "sensitive", True),
        ("self.assert", False, "insensitive", False),
        ("def test_", False, "smart", False),
        (r"(?:def|class) [A-Z]", True, "sensitive", False),
        (r"^\s{0,8}raise$", True, "sensitive", False),
        ("getaddrinfo", False, "sensitive", False),
    ],
)
def test_files_only_equals_full_verification(
    wide_index: tuple[object, dict[str, bytes]],
    pattern: str,
    regex: bool,
    case: str,
    whole_word: bool,
) -> None:
    """A files-only question (first lines only, `count_all=False`) stops decoding a file at
    its first lines: the files, lines and columns equal a full verification's, and the files
    a brute-force scan's."""
    index, contents = wide_index
    for lines_per_file in (1, 3):
        kw = dict(regex=regex, case=case, whole_word=whole_word, max_lines=10**9)
        quick, candidates, _ = index.search(
            pattern, **kw, max_lines_per_file=lines_per_file, count_all=False
        )
        if pattern in ("import", "return"):
            assert candidates >= 512  # search.rs STREAMING_MIN_CANDIDATES: the streamed path
        full, _, _ = index.search(pattern, **kw, max_lines_per_file=lines_per_file)
        assert [(f[0], f[3]) for f in quick] == [(f[0], f[3]) for f in full], pattern
        for _path, n_matches, n_lines, lines in quick:
            assert n_lines == len(lines)
            assert n_matches == sum(len(cols) for _, _, cols in lines)
    if not regex and not whole_word and case == "sensitive":
        want = {p for p, body in contents.items() if pattern.encode() in body}
        assert {f[0] for f in quick} == want
        assert want
