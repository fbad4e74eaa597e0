"""`query/present.py`: a result's matching lines are its file's every matching line, read from
the file itself, whichever results are shown (the lines are gathered for the shown files only:
an answer of 2 or 3 results over a literal in every module must list the same lines as one of
all of them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from interfaces_corpus import MODULES, make_corpus

from maguyva.api import Index


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = make_corpus(tmp_path_factory.mktemp("present"))
    Index.open(root).build()
    return root


def _lines_with(path: Path, literal: str) -> list[int]:
    """The oracle: the 1-based numbers of the file's lines that hold `literal` (in any case:
    a literal in lower case is searched case-insensitively, smart case)."""
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    return [n for n, line in enumerate(text.split("\n"), 1) if literal in line.lower()]


@pytest.mark.parametrize("literal", ["return", "import", "self"])
def test_shown_results_list_their_files_every_matching_line(root, literal) -> None:
    index = Index.open(root)
    every = index.search(f'"{literal}"', limit=100).results
    assert len(every) >= len(MODULES) // 2  # the literal is in most modules
    for limit in (1, 2, 3):
        shown = index.search(f'"{literal}"', limit=limit).results
        assert [r.path for r in shown] == [r.path for r in every[:limit]]
        for result in shown:
            assert result.lines == _lines_with(root / result.path, literal), result.path
    for result in every:
        assert result.lines == _lines_with(root / result.path, literal), result.path
