"""Bad filters and counts given to the MCP tools come back as one-sentence tool errors, never
a trace nor a silent empty answer: an unknown language, a malformed or never-matching path
glob (as an argument or in the query's own `lang:` / `file:` syntax), an unknown definition
kind, counts that are negative, absurd or of the wrong type. Through the SDK's own client
over a real stdio subprocess (`test_mcp.with_session`), on a real indexed repository (eight
standard-library modules); the session must survive every refusal, and good filters must
still narrow the answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from interfaces_corpus import make_corpus
from mcp import ClientSession
from test_mcp import text_of, with_session

from maguyva.api import Index

BAD: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    # languages: unknown, empty, not a string; in the query's syntax, included or excluded
    ("search", {"query": "dedent", "language": "klingon"},
     ("language 'klingon': unknown language", "python")),
    ("search", {"query": "dedent", "language": ""}, ("language", "at least 1 character")),
    ("search", {"query": "dedent", "language": 5}, ("language", "valid string")),
    ("search", {"query": "dedent lang:klingon"}, ("'klingon': unknown language",)),
    ("search", {"query": "dedent -lang:klingon"}, ("'klingon': unknown language",)),
    # path globs: malformed, never matching a root-relative path, empty, not a string
    ("search", {"query": "dedent", "path_glob": "[[["},
     ("path_glob", "unclosed character class")),
    ("search", {"query": "dedent", "path_glob": "src/[!a-"},
     ("path_glob", "unclosed character class")),
    ("search", {"query": "dedent", "path_glob": "/etc/*"}, ("path_glob", "relative to the")),
    ("search", {"query": "dedent", "path_glob": "../outside/*"}, ("path_glob", "'..'")),
    ("search", {"query": "dedent", "path_glob": ""}, ("path_glob", "at least 1 character")),
    ("search", {"query": "dedent", "path_glob": ["*.py"]}, ("path_glob", "valid string")),
    ("search", {"query": "dedent file:[[["}, ("unclosed character class",)),
    # counts: negative, zero, absurd, fractional, boolean, text, null, a list
    ("search", {"query": "dedent", "k": -1}, ("k", "greater than or equal to 1")),
    ("search", {"query": "dedent", "k": 10**30}, ("k", "less than or equal to 100")),
    ("search", {"query": "dedent", "k": 1e300}, ("k", "less than or equal to 100")),
    ("search", {"query": "dedent", "k": 2.5}, ("k", "fractional part")),
    ("search", {"query": "dedent", "k": True}, ("k", "got a boolean")),
    ("search", {"query": "dedent", "k": "ten"}, ("k", "valid integer")),
    ("search", {"query": "dedent", "k": None}, ("k", "valid integer")),
    ("search", {"query": "dedent", "k": [5]}, ("k", "valid integer")),
    ("search", {"query": "dedent", "budget_tokens": -5}, ("budget_tokens", "greater than")),
    ("search", {"query": "dedent", "budget_tokens": 10**12}, ("budget_tokens", "less than")),
    ("search", {"query": "dedent", "budget_tokens": False}, ("budget_tokens", "boolean")),
    # retrievers: none, not a list, unknown
    ("search", {"query": "dedent", "modalities": []}, ("modalities", "at least 1 item")),
    ("search", {"query": "dedent", "modalities": "text"}, ("modalities", "valid list")),
    ("search", {"query": "dedent", "modalities": ["vectors"]}, ("modalities", "semantic")),
    # the look-ups: kinds and counts
    ("find_symbol", {"name": "dedent", "kind": "spaceship"},
     ("kind 'spaceship': unknown kind", "function")),
    ("find_symbol", {"name": "dedent", "kind": ""}, ("kind", "at least 1 character")),
    ("find_symbol", {"name": "dedent", "limit": -1}, ("limit", "greater than or equal to 1")),
    ("find_symbol", {"name": "dedent", "limit": 1e9}, ("limit", "less than or equal to 200")),
    ("find_symbol", {"name": "dedent", "limit": True}, ("limit", "boolean")),
    ("find_references", {"symbol": "dedent", "depth": -1}, ("depth", "greater than")),
    ("find_references", {"symbol": "dedent", "depth": 10**6}, ("depth", "less than")),
    ("find_references", {"symbol": "dedent", "limit": "many"}, ("limit", "valid integer")),
    ("impact", {"symbol": "dedent", "depth": True}, ("depth", "boolean")),
    ("impact", {"symbol": "dedent", "limit": 0}, ("limit", "greater than or equal to 1")),
    ("read_chunk", {"path": "textwrap.py", "start_line": -1}, ("start_line", "greater than")),
    ("read_chunk", {"path": "textwrap.py", "start_line": 1.5}, ("start_line", "fractional")),
    ("read_chunk", {"path": "textwrap.py", "end_line": 0}, ("end_line", "greater than")),
    ("read_chunk", {"path": "textwrap.py", "end_line": True}, ("end_line", "boolean")),
]  # fmt: skip


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_corpus(tmp_path_factory.mktemp("mcp-filters"))
    Index.open(root).build()
    return root


def test_bad_filters_and_counts_are_one_sentence_tool_errors(root: Path) -> None:
    async def scenario(session: ClientSession) -> tuple[list[Any], Any]:
        outcomes = [await session.call_tool(name, args) for name, args, _ in BAD]
        alive = await session.call_tool("search", {"query": "dedent", "k": 3})
        return outcomes, alive

    outcomes, alive = with_session(root, scenario)
    for (name, args, words), result in zip(BAD, outcomes, strict=True):
        text = text_of(result)
        assert result.is_error, (name, args, text)
        assert "Traceback" not in text and "\n" not in text.strip(), (name, args, text)
        assert "errors.pydantic.dev" not in text, text
        for word in words:
            assert word in text, (name, args, word, text)
    assert not alive.is_error and alive.structured_content["results"]  # the session lived


def test_good_filters_still_narrow_the_answer(root: Path) -> None:
    """The checks refuse only what could match nothing: aliases, slash-free globs, a query's
    own `lang:`, a known kind and integral numbers sent as floats are answered, filtered."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search", {"query": "dedent", "language": "py", "k": 20}),
        ("search", {"query": "dedent", "path_glob": "pkg/*", "k": 20}),
        ("search", {"query": "dedent", "path_glob": "text*.py", "k": 20}),
        ("search", {"query": "dedent lang:python", "k": 20.0}),
        ("find_symbol", {"name": "dedent", "kind": "def", "limit": 5}),
    ]

    async def scenario(session: ClientSession) -> list[Any]:
        return [await session.call_tool(name, args) for name, args in calls]

    by_language, by_dir, by_name, by_syntax, by_kind = with_session(root, scenario)
    for result in (by_language, by_dir, by_name, by_syntax, by_kind):
        assert not result.is_error, text_of(result)
        assert json.loads(text_of(result)) == result.structured_content
    assert all(r["path"].endswith(".py") for r in by_language.structured_content["results"])
    assert {r["path"] for r in by_dir.structured_content["results"]} == {"pkg/__init__.py"}
    assert {r["path"] for r in by_name.structured_content["results"]} == {"textwrap.py"}
    assert by_syntax.structured_content["results"]
    kinds = {r["kind"] for r in by_kind.structured_content["results"]}
    assert kinds == {"function"}, kinds
