"""The literal ranking's grouping in Rust (`TextIndex.literal_groups`) gives the hits the
Python transcription below gives (the code it replaced: one tuple per matching line, grouped
and scored in Python), on a real corpus and on lines with the cases the two regex engines
could disagree on (non-ASCII lines, `\\x1c`, bytes glued to a match)."""

from __future__ import annotations

import re
import shutil
import sysconfig
from pathlib import Path
from typing import Any

import hypothesis
import pytest

from maguyva.modalities.protocol import RetrieverQuery
from maguyva.modalities.text import literal
from maguyva.modalities.text import modality as text
from maguyva.model import Hit

ODD = (
    "def self_check(self): pass\n"
    "class\x1cself: pass\n"
    "def \u00e9t\u00e9(self): return self\n"
    "  x = \u00b5self + self\u00aa + _self + self_\n"
    "#  define self 1\n"
    "pub(crate) fn self() {}\n"
    "caf\xe9 self\n"
)


def reference(searcher: text.TextSearcher, query: RetrieverQuery, k: int) -> list[Hit]:
    """`TextSearcher._literal` before the grouping moved to Rust."""
    target = query.target if query.regex else query.target.strip()
    files, _, _ = searcher._raw(
        target, regex=query.regex, case=query.case, whole_word=query.whole_word,
        path_glob=query.path_glob, max_lines=literal.MAX_FILES_RANKED * literal.MAX_LINES_PER_FILE,
        max_files=literal.MAX_FILES_RANKED, max_lines_per_file=literal.MAX_LINES_PER_FILE,
        count_all=False,
    )  # fmt: skip
    definition = None if query.regex else literal.definition_pattern(target)
    ranked: list[Any] = []
    file_lines: dict[str, list[int]] = {}
    for path, _n, _nl, lines in files:
        file_lines[path] = [line for line, _, _ in lines]
        groups: dict[Any, list[Any]] = {}
        spans: dict[Any, Any] = {}
        enclosing = searcher._index.enclosing(path, [line for line, _, _ in lines])
        for (line, line_text, cols), chunk in zip(lines, enclosing, strict=True):
            key = chunk[2] if chunk else ("line", line)
            spans[key] = chunk if chunk else (line, line, None)
            groups.setdefault(key, []).append((line, line_text, cols))
        demoted = literal.is_demoted(path)
        for key, group in groups.items():
            start, end = spans[key][0], spans[key][1]
            is_def = definition is not None and any(definition.search(t) for _, t, _ in group)
            whole = any(literal.any_whole_word(t, cols) for _, t, cols in group)
            n = sum(len(cols) for _, _, cols in group)
            sort_key = (not is_def, demoted, not whole, -n / max(1, end - start + 1),
                        len(path), path, start)  # fmt: skip
            ranked.append((sort_key, path, spans[key], group, is_def, whole))
    ranked.sort(key=lambda entry: entry[0])
    hits = []
    for sort_key, path, (start, end, chunk_id), group, is_def, whole in ranked[:k]:
        hits.append(Hit(
            path=path, start_line=start, end_line=end, key=chunk_id,
            score=round(2.0 * is_def + 1.0 * whole + min(-sort_key[3], 1.0), 4),
            snippet=group[0][1], lines=[line for line, _, _ in group],
            extra={"columns": [[line, s, e] for line, _, cols in group for s, e in cols],
                   "definition": is_def, "whole_word": whole, "file_lines": file_lines[path]},
        ))  # fmt: skip
    return hits


@pytest.fixture(scope="module")
def text_dir(tmp_path_factory) -> Path:
    from maguyva.interfaces.cli.main import main

    root = tmp_path_factory.mktemp("groups") / "repo"
    root.mkdir()
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for name in ("shlex", "textwrap", "fnmatch", "glob", "bisect", "heapq", "netrc", "abc"):
        shutil.copy(stdlib / f"{name}.py", root / f"{name}.py")
    shutil.copytree(stdlib / "json", root / "json")
    (root / "odd.py").write_text(ODD, encoding="utf-8")
    (root / "odd.rs").write_text(ODD.replace("self", "Self"), encoding="utf-8")
    assert main(["-q", "index", str(root), "--modalities", "text,structural"]) == 0
    gen = max((root / ".maguyva").glob("gen-*"))
    return gen / "text"


@pytest.fixture(scope="module")
def searcher(text_dir: Path) -> text.TextSearcher:
    return text.TextSearcher(text_dir)


QUERIES = [
    ("self", {}), ("Self", {}), ("self", {"case": "insensitive"}), ("self", {"whole_word": True}),
    ("def", {}), ("return", {}), ("__init__", {}), ("JSONDecodeError", {}), ("dedent", {}),
    ("s+elf", {"regex": True}), (r"\bdef\s+\w+", {"regex": True}), ("é", {}),
    ("self", {"path_glob": "json/*"}), ("split", {"case": "sensitive"}), ("zzz_nowhere", {}),
]  # fmt: skip


@pytest.mark.parametrize(("target", "options"), QUERIES, ids=lambda q: str(q))
def test_grouped_hits_are_the_reference(searcher, target: str, options: dict[str, Any]):
    query = RetrieverQuery(text=target, intent="exact_match", target=target, **options)
    for k in (5, 5000):
        assert searcher._literal(query, k) == reference(searcher, query, k)


def test_the_odd_lines_are_decided(searcher):
    query = RetrieverQuery(text="self", intent="find_definition", target="self")
    hits = searcher._literal(query, 100)
    assert hits == reference(searcher, query, 100)
    odd = [h for h in hits if h.path == "odd.py"]
    assert odd and any(h.extra["definition"] for h in odd)
    # `\x1c` is whitespace to `re`: the second line is a class definition of `self`
    assert re.search(r"^\s*class\b", "class\x1cself") and literal.rust_dialect(
        literal.definition_pattern("self")
    )


@pytest.mark.parametrize(
    ("target", "intent", "options"),
    [("self", "find_definition", {}), ("return", "exact_match", {}),
     ("def", "exact_match", {"case": "insensitive"}), ("s+elf", "exact_match", {"regex": True}),
     ("import", "find_references", {})],
)  # fmt: skip
def test_the_best_k_are_the_prefix_of_the_full_ranking(searcher, target, intent, options):
    """Rust keeps only the best k groups (and those `re` decides): any k gives the first k of
    the ranking of every group."""
    query = RetrieverQuery(text=target, intent=intent, target=target, **options)
    everything = searcher._literal(query, 10**6)
    assert len(everything) > 10
    for k in (1, 2, 3, 7, 20, 50, len(everything) - 1, len(everything)):
        assert searcher._literal(query, k) == everything[:k], k


def test_the_decoded_content_cache(text_dir: Path, monkeypatch):
    """A search keeps the documents it decoded (within the budget) and answers as a searcher
    without the cache (`MAGUYVA_TEXT_CACHE_MB=0`) does, asked once or again."""
    monkeypatch.setenv("MAGUYVA_TEXT_CACHE_MB", "0")
    uncached = text.TextSearcher(text_dir)
    monkeypatch.setenv("MAGUYVA_TEXT_CACHE_MB", "1")
    cached = text.TextSearcher(text_dir)
    assert cached._index.content_cache_size() == (0, 0, 1 << 20)
    for target in ("self", "return", "JSONDecodeError"):
        query = RetrieverQuery(text=target, intent="exact_match", target=target)
        want = uncached._literal(query, 50)
        assert cached._literal(query, 50) == want
        assert cached._literal(query, 50) == want
        assert cached.grep(target) == uncached.grep(target)
    docs, size, budget = cached._index.content_cache_size()
    assert docs > 0 and 0 < size <= budget
    assert uncached._index.content_cache_size() == (0, 0, 0)


_PIECES = ["def", "class", "fn", "pub", "(crate)", "#", "define", "export", "async", "self",
           "self_", "_self", "x", "0", ":", "(", ")", " ", "\t", "\x0b", "\x0c", "\x1c", "\x1f",
           "\r", "=", ".", "!", "macro_rules"]  # fmt: skip


@hypothesis.settings(max_examples=400, deadline=None)
@hypothesis.given(hypothesis.strategies.lists(hypothesis.strategies.sampled_from(_PIECES),
                                              max_size=12),
                  hypothesis.strategies.sampled_from(["self", "x", "define", "fn"]))  # fmt: skip
def test_the_ascii_dialect_decides_ascii_lines_as_re(pieces: list[str], name: str):
    """The `regex` crate's pattern (`rust_dialect`: ASCII `\\s`, `\\w`, `\\b`, cheap to build)
    decides an ASCII line as `re`'s Unicode pattern does; Python's ASCII mode stands for the
    crate's `(?-u:\\b)` here."""
    line = "".join(pieces)
    source = literal.definition_source(name)
    assert source is not None
    ascii_pattern = literal.rust_dialect(source).replace(r"(?-u:\b)", r"\b")
    assert bool(re.search(ascii_pattern, line, re.ASCII)) == bool(re.search(source, line))
