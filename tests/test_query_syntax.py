"""The Zoekt-like query subset: fields, phrases, regexes, negation, and plain questions that
must pass through untouched."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maguyva.errors import BadQueryError
from maguyva.query.syntax import parse, path_matches, to_glob


@pytest.mark.parametrize(
    "query",
    [
        "who calls parse_config",
        "where is Session.request defined",
        "how does (the) retry loop work or fail",
        "Error: connection refused",
        "what breaks if I change to_key_val_list",
        "http://example.com handler",
        "code similar to: x = a -b",
        "def f():\n    return -x\n",
    ],
)
def test_plain_questions_pass_through(query: str):
    parsed = parse(query)
    assert parsed.text == query.strip() if "\n" not in query else parsed.text == query
    assert not parsed.has_filters and parsed.regex is None and parsed.symbol is None


def test_phrase_keeps_quotes_and_filters_are_split():
    parsed = parse('"Invalid URL" file:sessions.py -lang:go lang:Python case:yes')
    assert parsed.text == '"Invalid URL"'
    assert parsed.files == ["*sessions.py*"]
    assert parsed.exclude_languages == ["go"] and parsed.languages == ["python"]
    assert parsed.case == "sensitive"


def test_aliases_and_negation():
    parsed = parse('retry path:src/*.py language:rust -test -"slow path" -file:vendor f:x')
    assert parsed.text == "retry"
    assert parsed.files == ["src/*.py", "*x*"] and parsed.languages == ["rust"]
    assert parsed.exclude_terms == ["test", "slow path"]
    assert parsed.exclude_files == ["*vendor*"]


def test_regex_and_symbol():
    assert parse("/fo+ ba[rz]/ file:*.py").regex == "fo+ ba[rz]"
    assert parse("regex:^def\\s").text == "^def\\s"
    parsed = parse("sym:Session -file:test")
    assert parsed.symbol == "Session" and parsed.text == "Session"
    assert parse("mode:text,graph foo").modalities == ["text", "graph"]
    assert parse('file:"my dir/a b.py" x').files == ["*my dir/a b.py*"]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("/(unclosed/", "invalid regular expression"),
        ("case:maybe foo", "case:"),
        ("mode:vectors foo", "mode:"),
        ("file:x.py lang:python", "nothing to search for"),
        ("sym:Foo bar", "cannot be combined"),
        ("/a/ /b/", "only one regular expression"),
        ("-sym:Foo x", "cannot be negated"),
    ],
)
def test_bad_queries_are_clear(query: str, message: str):
    with pytest.raises(BadQueryError, match=message):
        parse(query)


def test_globs():
    assert to_glob("client") == "*client*" and to_glob("*.py") == "*.py"
    assert path_matches("src/a.py", "*.py") and path_matches("src/a.py", "a.py")
    assert path_matches("src/a.py", "src/*") and not path_matches("src/a.py", "lib/*")


@given(st.lists(st.from_regex(r"[a-z_]{1,8}", fullmatch=True), min_size=1, max_size=6))
def test_words_without_syntax_are_preserved(words: list[str]):
    query = " ".join(words)
    assert parse(query).text == query
