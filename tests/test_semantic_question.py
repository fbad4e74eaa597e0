"""A question in words is embedded without its interrogative lead (understand_code only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from maguyva.modalities.protocol import RetrieverQuery
from maguyva.modalities.semantic import search as search_module
from maguyva.modalities.semantic.modality import MODALITY
from maguyva.modalities.semantic.question import question_content
from tests.test_semantic import function_chunks, make_ctx


@pytest.mark.parametrize(
    ("question", "content"),
    [
        ("how does the server choose a certificate", "server choose a certificate"),
        ("How are traffic secrets derived", "traffic secrets derived"),
        ("what happens when too many records are sent", "too many records are sent"),
        ("where does the client keep its sessions", "client keep its sessions"),
        ("why is an overload picked first", "overload picked first"),
        ("explain the retry policy", "retry policy"),
        ("  how do  a  redirects work", "redirects work"),
    ],
)
def test_the_lead_is_dropped(question: str, content: str) -> None:
    assert question_content(question) == content


@pytest.mark.parametrize(
    "question",
    [
        "session cookies are merged into the request",  # no lead
        "explain it",  # too little would be left
        "somehow does the cache evict",  # "how" inside a word is no lead
        "show how does the cache evict",  # a lead only at the start
    ],
)
def test_without_a_lead_the_question_is_kept(question: str) -> None:
    assert question_content(question) == question


def test_the_searcher_embeds_the_content_of_an_understand_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chunks, _ = function_chunks(limit=8)
    MODALITY.build(make_ctx(tmp_path, chunks))
    searcher = MODALITY.open(tmp_path / "gen", {})
    asked: list[str] = []
    real = search_module.query_embedding

    def recording(provider: Any, text: str) -> Any:
        asked.append(text)
        return real(provider, text)

    monkeypatch.setattr(search_module, "query_embedding", recording)
    question = "how does the shell split a command line into words"
    searcher.search(RetrieverQuery(text=question, intent="understand_code", target=""), 5)
    searcher.search(RetrieverQuery(text=question, intent="find_definition", target="split"), 5)
    snippet = "def f(x):\n    return x"
    searcher.search(
        RetrieverQuery(text=snippet, intent="understand_code", target="", snippet=snippet), 5
    )
    assert asked == ["shell split a command line into words", question, snippet]
