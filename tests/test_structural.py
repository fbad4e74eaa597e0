"""The structural modality end to end: extract a small polyglot repository, build the symbol
index, open it and search it the ways the spec lists."""

from __future__ import annotations

from pathlib import Path

import pytest

from maguyva.errors import CorruptIndexError, ModalityUnavailable
from maguyva.model import SourceFile
from maguyva.retriever import BuildContext, RetrieverQuery
from maguyva.structural import MODALITY, StructuralSearcher, extract_repository

REPO = {
    "src/config.py": '''
def parse_config(path):
    """Read the configuration file at path."""
    return {}


class Session:
    def request(self, method, url):
        return send(method, url)
''',
    "src/config.pyi": "def parse_config(path: str) -> dict: ...\n",
    "tests/test_config.py": "def parse_config(path):\n    return None\n",
    "web/loader.ts": "export function parseConfig(p: string) { return p; }\n"
    "export interface ConfigLoader { load(): void }\n",
    "web/index.ts": 'export { parseConfig } from "./loader";\n',
    "go/server.go": "package server\n\ntype Server struct{}\n\nfunc (s *Server) Request() {}\n",
    "lib/tokenizer.rs": "pub struct ParseConfig { pub depth: u32 }\n"
    "/// Splits input into tokens.\npub fn tokenize_input(s: &str) {}\n",
    "lib/response.rb": "class Response\n  def etag\n    @etag\n  end\n\n"
    "  def etag=(value)\n    @etag = value\n  end\n\n  def valid?\n    true\n  end\nend\n",
    "README.txt": "not code\n",
}


@pytest.fixture(scope="module")
def searcher(tmp_path_factory: pytest.TempPathFactory) -> StructuralSearcher:
    root = tmp_path_factory.mktemp("repo")
    files = []
    for rel, text in REPO.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        from maguyva.languages import detect_language

        files.append(SourceFile(rel, len(text), 0, detect_language(rel)))
    extraction, chunks, report = extract_repository(root, files, {}, lambda *a: None)
    assert report["files"] == len(REPO) and report["failed"] == []
    assert report["languages"]["python"]["files"] == 3
    assert {c.path for c in chunks} == set(REPO)  # every file gets chunks
    gen = root / ".gen"
    ctx = BuildContext(root, gen, files, chunks, extraction, {}, gen / "cache")
    built = MODALITY.build(ctx)
    assert built["symbols"] > 8
    found = MODALITY.open(gen, {})
    found.chunk_ids = {c.id for c in chunks}  # for the key check below
    return found


def q(target: str, intent: str = "find_definition", **kw) -> RetrieverQuery:
    return RetrieverQuery(text=target, intent=intent, target=target, **kw)


def top(s: StructuralSearcher, query: RetrieverQuery, n: int = 3) -> list[tuple[str, str]]:
    return [(h.path, h.symbol or "") for h in s.search(query, n)]


def test_exact_name_prefers_implementation_over_stub_and_test(searcher) -> None:
    hits = searcher.find_symbol("parse_config", limit=10)
    paths = [h.path for h in hits]
    assert paths[0] == "src/config.py"
    assert paths.index("src/config.py") < paths.index("src/config.pyi")
    assert paths.index("src/config.py") < paths.index("tests/test_config.py")
    assert hits[0].key in searcher.chunk_ids and hits[0].kind == "function"
    assert hits[0].symbol == "parse_config" and hits[0].start_line == 2


def test_find_definition_keeps_only_the_answer_tier(searcher) -> None:
    # The engine fuses this list and boosts by centrality: weaker matches left in it could
    # outrank the definition, so "where is X defined" keeps exact names and bodies only.
    hits = searcher.search(q("parse_config"), 10)
    assert [h.path for h in hits] == ["src/config.py", "tests/test_config.py"]
    # No exact spelling: the best tier (same letters, any case) answers.
    assert {h.symbol for h in searcher.search(q("parseconfig"), 10)} == {
        "parseConfig",
        "ParseConfig",
    }
    # Only a stub exists: the stub is the answer.
    stub_only = searcher.search(q("ConfigLoader.load"), 5)
    assert [h.symbol for h in stub_only] == ["ConfigLoader.load"]
    # Other intents keep the full ranking.
    refs = RetrieverQuery(
        text="who calls parse_config", intent="find_references", target="parse_config"
    )
    wide = searcher.search(refs, 10)
    assert {"src/config.pyi", "web/loader.ts"} <= {h.path for h in wide}


def test_ruby_suffixes_and_bare_names(searcher) -> None:
    # The classifier drops `=`/`?` from its target: the searcher takes it back from the text.
    setter = RetrieverQuery(text="def etag=", intent="find_definition", target="etag", kind="def")
    assert [(h.symbol, h.start_line) for h in searcher.search(setter, 5)] == [("Response.etag=", 6)]
    getter = RetrieverQuery(text="def etag", intent="find_definition", target="etag", kind="def")
    assert [(h.symbol, h.start_line) for h in searcher.search(getter, 5)] == [("Response.etag", 2)]
    assert top(searcher, q("valid?", intent="understand_code"), 5) == [
        ("lib/response.rb", "Response.valid?")
    ]
    # A bare name read as a word (`understand_code`) still answers with its definition first.
    bare = searcher.search(q("tokenize_input", intent="understand_code"), 5)
    assert bare[0].symbol == "tokenize_input"


def test_subtoken_spellings_find_each_other(searcher) -> None:
    for spelling in ("parseConfig", "ParseConfig", "parse_config", "PARSE_CONFIG"):
        found = {h.symbol for h in searcher.find_symbol(spelling, limit=10)}
        assert {"parse_config", "parseConfig", "ParseConfig"} <= found, spelling


def test_exact_case_ranks_first(searcher) -> None:
    assert top(searcher, q("ParseConfig"), 1) == [("lib/tokenizer.rs", "ParseConfig")]
    assert top(searcher, q("parseConfig"), 1) == [("web/loader.ts", "parseConfig")]


def test_prefix_and_qualified(searcher) -> None:
    assert ("lib/tokenizer.rs", "tokenize_input") in top(searcher, q("tokenize"))
    assert top(searcher, q("Session.request"), 1) == [("src/config.py", "Session.request")]
    assert top(searcher, q("Server.Request"), 1) == [("go/server.go", "Server.Request")]
    assert searcher.search(q("Nope.request"), 5) == []


def test_kind_filter_orders_by_asked_kind(searcher) -> None:
    assert top(searcher, q("ParseConfig", kind="struct"), 1)[0][1] == "ParseConfig"
    assert top(searcher, q("parse_config", kind="def"), 1)[0][1] == "parse_config"
    assert top(searcher, q("ConfigLoader", kind="interface"), 1)[0][1] == "ConfigLoader"


def test_natural_language_terms_match_names_and_docs(searcher) -> None:
    query = RetrieverQuery(
        text="how is input split into tokens",
        intent="understand_code",
        target="",
        terms=["input", "split", "tokens"],
    )
    assert top(searcher, query, 1) == [("lib/tokenizer.rs", "tokenize_input")]


def test_find_symbol(searcher) -> None:
    hits = searcher.find_symbol("request", limit=5)
    assert {h.symbol for h in hits} >= {"Session.request", "Server.Request"}
    assert searcher.find_symbol("Session", kind="class")[0].kind == "class"


def test_open_without_build_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(ModalityUnavailable):
        MODALITY.open(tmp_path, {})
    (tmp_path / "structural").mkdir()
    (tmp_path / "structural" / "symbols.json").write_text("{not json")
    with pytest.raises(CorruptIndexError):
        MODALITY.open(tmp_path, {})
