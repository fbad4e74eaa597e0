"""A question's inflected words against the sub-tokens of symbol names (structural, issue 22):
"floats" finds `FloatSerializer`, "serializing" `serialize_f64`, for understand_code only.
Fixture: two pydantic-core 2.27.2 serializers (`float.rs`, `string.rs`), indexed for real."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from maguyva.interfaces.cli.main import main
from maguyva.modalities.protocol import RetrieverQuery
from maguyva.modalities.structural.stems import forms, stem
from maguyva.query.engine import Engine

FIXTURES = Path(__file__).parent / "fixtures" / "inflections"


@pytest.mark.parametrize(
    "word, expected",
    [
        ("floats", "float"),
        ("records", "record"),
        ("matches", "match"),
        ("classes", "class"),
        ("entries", "entr"),
        ("encrypted", "encrypt"),
        ("embedded", "embed"),
        ("serializing", "serializ"),
        ("called", "call"),  # a doubled l stays
        ("status", "status"),
        ("analysis", "analysis"),
        ("capped", "capped"),  # "cap" is too short a stem
        ("string", "string"),
        ("used", "used"),
        ("Floats", "Floats"),  # not a plain lower-case word
        ("max_records", "max_records"),
    ],
)
def test_stem(word: str, expected: str):
    assert stem(word) == expected


def test_forms():
    assert forms("floats") == ("floats", "float", "floate")
    assert forms("serializing") == ("serializing", "serializ", "serialize")
    assert forms("messages") == ("messages", "message")
    assert forms("entries") == ("entries", "entry")
    assert forms("float") == ("float",)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    root = tmp_path_factory.mktemp("inflections") / "repo"
    shutil.copytree(FIXTURES, root)
    (root / ".maguyva.toml").write_text('modalities = ["text", "structural", "graph"]\n')
    assert main(["-q", "index", str(root)]) == 0
    return Engine.open(root)


def _symbols(engine: Engine, intent: str, terms: list[str]) -> list[str]:
    request = RetrieverQuery(text=" ".join(terms), intent=intent, target="", terms=terms)
    return [h.symbol or "" for h in engine.searcher("structural").search(request, 20)]


def test_an_inflected_question_word_finds_the_name(engine: Engine):
    found = _symbols(engine, "understand_code", ["floats", "written", "serializing"])
    assert found and found[0].endswith("FloatSerializer"), found
    assert any(s.endswith("serialize_f64") for s in found), found


def test_other_intents_match_words_as_written(engine: Engine):
    found = _symbols(engine, "find_references", ["floats", "serializing"])
    assert not any(s.endswith("FloatSerializer") for s in found), found
