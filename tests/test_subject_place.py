"""A question's subject laid out as a directory is a place (query/places.py, issue 22): "how
does the client pick a cipher suite" in a crate with `src/client/` and `src/server/` is about
`client/`. Fixture: two excerpts of rustls 0.23.27 (the server's `choose_suite_and_kx_group`,
the client's `ExpectServerHello`), indexed for real (text, structural, graph)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from maguyva.interfaces.cli.main import main
from maguyva.query.engine import Engine
from maguyva.query.places import place_of

FIXTURES = Path(__file__).parent / "fixtures" / "subject_dirs"


@pytest.mark.parametrize(
    "question, fragment",
    [
        ("how does the server pick a cipher suite", "/server/"),
        ("What is the Client doing with the ticket", "/client/"),
        ("where does the deframer split records", "/deframer/"),
        ("how are the keys replaced", "/keys/"),
    ],
)
def test_the_subject_of_a_how_question_is_a_directory_fragment(question: str, fragment: str):
    place = place_of(question)
    assert place is not None and fragment in place.fragments


@pytest.mark.parametrize(
    "question",
    [
        "how does a server pick a cipher suite",  # no definite subject
        "the server picks a cipher suite how",  # not a question's lead
        "where is ServerConfig defined",
    ],
)
def test_no_subject_no_place(question: str):
    assert place_of(question) is None


def test_the_subject_is_read_only_when_asked():  # the engine: understand_code only
    assert place_of("how does the server pick a cipher suite", subject=False) is None
    place = place_of("how does the server pick a cipher suite on Linux", subject=False)
    assert place is not None and place.fragments == ("linux",)


def test_a_subject_fragment_is_a_whole_directory_name():
    place = place_of("how does the server pick a cipher suite")
    assert place is not None
    assert place.matches("src/server/hs.rs") and place.matches("server/hs.rs")
    assert not place.matches("src/webpki/server_verifier.rs")
    assert not place.matches("src/webserver/hs.rs")


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    root = tmp_path_factory.mktemp("subject") / "repo"
    shutil.copytree(FIXTURES, root)
    (root / ".maguyva.toml").write_text('modalities = ["text", "structural", "graph"]\n')
    assert main(["-q", "index", str(root)]) == 0
    return Engine.open(root)


def _paths(engine: Engine, question: str) -> list[str]:
    response = engine.search(question)
    assert response.intent == "understand_code"
    return list(dict.fromkeys(r.path for r in response.results))


def test_the_subject_directory_comes_first(engine: Engine):
    """Without a definite subject the server's code ranks first for both sides' question (it
    holds more of the question's words); with one, each side's own file comes first."""
    assert _paths(engine, "how does a client pick a cipher suite and key exchange group") == [
        "src/server/hs.rs", "src/client/hs.rs"]  # fmt: skip
    response = engine.search("how does the client pick a cipher suite and key exchange group")
    assert response.results[0].path == "src/client/hs.rs"
    assert any(
        n.startswith("preferred files matching 'how does the client'") for n in response.notes
    )
    assert _paths(engine, "how does the server pick a cipher suite and key exchange group")[0] == (
        "src/server/hs.rs")  # fmt: skip


def test_a_subject_that_is_no_directory_changes_nothing(engine: Engine):
    plain = engine.search("how does a handshake pick a cipher suite and key exchange group")
    named = engine.search("how does the handshake pick a cipher suite and key exchange group")
    assert [r.path for r in named.results] == [r.path for r in plain.results]
    assert not any(n.startswith("preferred files matching") for n in named.notes)
