"""Through the engine: an exact_match query takes the direct path to the text modality."""

from __future__ import annotations

from pathlib import Path

import pytest

from maguyva.query.engine import Engine

FILES = ["json/__init__.py", "json/decoder.py", "json/encoder.py", "json/scanner.py",
         "shlex.py", "textwrap.py", "fnmatch.py", "tokenize.py"]  # fmt: skip
CONFIG = {"modalities": ["text", "structural", "graph"]}


@pytest.fixture(scope="module")
def corpus(stdlib_index) -> Path:
    return stdlib_index(FILES, CONFIG)


@pytest.fixture(scope="module")
def engine(corpus: Path) -> Engine:
    return Engine.open(corpus)


def _containing(corpus: Path, literal: str) -> set[str]:
    return {rel for rel in FILES if literal.encode() in (corpus / rel).read_bytes()}


@pytest.mark.parametrize("literal", ["JSONDecodeError", "whitespace_only", "punctuation_chars"])
def test_exact_match_is_direct_and_returns_the_files_with_the_literal(
    engine: Engine, corpus: Path, literal: str
) -> None:
    want = _containing(corpus, literal)
    assert want  # the literals are taken from these files
    response = engine.search(f'"{literal}"', limit=50)
    assert response.intent == "exact_match"
    assert response.fusion_strategy == "direct"
    assert response.modalities == ["text"]
    assert {r.path for r in response.results} == want


@pytest.mark.parametrize(
    "literal",
    # a nonsense token, and real identifiers of the corpus in an order that occurs nowhere
    # (other modalities would find weak matches for those words)
    ["zq_no_such_literal_anywhere_zq", "scanstring decode JSONDecoder"],
)
def test_absent_literal_returns_nothing(engine: Engine, corpus: Path, literal: str) -> None:
    assert not _containing(corpus, literal)
    response = engine.search(f'"{literal}"', limit=10)
    assert response.intent == "exact_match"
    assert response.results == []
