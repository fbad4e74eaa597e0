"""Evidence carried from a declaration to its implementation before understand_code's fusion
(query/carry.py, issue 22): a trait or interface (or one of its member declarations) to the
impl blocks and classes in other files, a thin wrapper to the namesake it calls. Fixtures:
excerpts of rustls 0.23.27 (`ResolvesServerCert`, `reject_early_data`) and a TypeScript
interface implemented in another file, indexed for real (text, structural, graph)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from maguyva.interfaces.cli.main import main
from maguyva.model import Hit
from maguyva.query.carry import carried, carry_lists
from maguyva.query.engine import Engine
from maguyva.query.routing import plan_query

FIXTURES = Path(__file__).parent / "fixtures" / "carry"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    root = tmp_path_factory.mktemp("carry") / "repo"
    shutil.copytree(FIXTURES, root)
    (root / ".maguyva.toml").write_text('modalities = ["text", "structural", "graph"]\n')
    assert main(["-q", "index", str(root)]) == 0
    return Engine.open(root)


def _hit(engine: Engine, path: str, line: int) -> Hit:
    chunk = engine.chunks.enclosing(path, line)
    assert chunk is not None
    return Hit(path=path, start_line=chunk.start_line, end_line=chunk.end_line, key=chunk.id)


def _carry(engine: Engine, hits: list[Hit], name: str = "semantic") -> list[Hit]:
    graph = engine.searcher("graph").graph
    return carry_lists({name: hits}, graph, engine.chunks, engine.searcher("text"))[name]


def test_a_trait_carries_to_each_impl_block_in_other_files(engine: Engine):
    trait = _hit(engine, "src/server_conn.rs", 18)  # its method declarations sit in its chunk
    other = _hit(engine, "src/quic.rs", 3)
    out = _carry(engine, [trait, other], "text")
    assert out[0] is trait and out[-1] is other
    carried_hits = out[1:-1]
    # the first `impl server_conn::ResolvesServerCert for ..` (not `impl ResolvesServerCertUsingSni`);
    # the second, in the same file, would add nothing to the file's evidence
    assert [(h.path, h.start_line) for h in carried_hits] == [("src/handy.rs", 18)]
    assert carried_hits[0].extra["carried_from"]


def test_a_trait_method_carries_to_its_overrides(engine: Engine):
    default = _hit(engine, "src/server_conn.rs", 26)  # `fn only_raw_public_keys` with a body
    out = _carry(engine, [default])
    assert [(h.path, h.symbol) for h in out[1:]] == [
        ("src/handy.rs", "src.handy.AlwaysResolvesServerRawPublicKeys.only_raw_public_keys")
    ]


def test_thin_wrapper_carries_to_the_namesake_it_calls(engine: Engine):
    wrapper = _hit(engine, "src/quic.rs", 17)
    out = _carry(engine, [wrapper])
    assert [(h.path, h.symbol) for h in out[1:]] == [
        ("src/server_conn.rs", "src.server_conn.ConnectionCore.reject_early_data")
    ]


def test_a_trait_with_many_implementing_files_carries_nothing(engine: Engine, monkeypatch):
    monkeypatch.setattr("maguyva.query.carry.MAX_IMPL_FILES", 0)
    trait = _hit(engine, "src/server_conn.rs", 18)
    assert _carry(engine, [trait]) == [trait]


def test_a_body_carries_nothing(engine: Engine):
    body = _hit(engine, "src/server_conn.rs", 37)  # the implementation: no namesake called
    impl = _hit(engine, "src/handy.rs", 20)
    assert _carry(engine, [body, impl]) == [body, impl]


def test_typescript_interface_carries_to_the_implementing_class(engine: Engine):
    interface = _hit(engine, "ts/fileSystem.ts", 7)  # one chunk, members and all
    out = _carry(engine, [interface])
    assert [(h.path, h.start_line) for h in out[1:]] == [("ts/realFileSystem.ts", 3)]


def test_only_the_understand_code_fusion_carries(engine: Engine):
    hits = [_hit(engine, "src/server_conn.rs", 18)]
    refs = plan_query("find_references", 0.4)
    assert carried(engine, refs, {"semantic": list(hits)}) == {"semantic": hits}
    understand = plan_query("understand_code", 0.4)
    assert understand.by_file and understand.strategy == "rrf"
    assert len(carried(engine, understand, {"semantic": list(hits)})["semantic"]) == 2


def test_search_ranks_the_implementation_next_to_the_trait(engine: Engine):
    response = engine.search("how does the server choose a certificate chain and signing key",
                             limit=2)  # fmt: skip
    assert response.intent == "understand_code" and response.fusion_strategy == "rrf"
    # without the carried evidence the second file is quic.rs (BM25 on "server")
    assert [r.path for r in response.results] == ["src/server_conn.rs", "src/handy.rs"]


def _validators_repo(root: Path) -> None:
    """pydantic-core's shape: a `Validator` trait with a default `default_value` that every
    validator implements and one overrides (`validators/with_default.rs`)."""
    src = root / "src"
    src.mkdir(parents=True)
    (src / "lib.rs").write_text(
        "mod mod_validators;\n" + "".join(f"mod v{i};\n" for i in range(6)) + "mod with_default;\n"
    )
    (src / "mod_validators.rs").write_text(
        "/// Implemented by all validators.\npub trait Validator {\n"
        "    fn validate(&self, input: i64) -> i64;\n\n"
        "    /// Get a default value, only used by the with-default validator.\n"
        "    fn default_value(&self) -> Option<i64> {\n        None\n    }\n}\n"
    )
    for i in range(6):
        (src / f"v{i}.rs").write_text(
            f"use crate::mod_validators::Validator;\n\npub struct V{i};\n\n"
            f"impl Validator for V{i} {{\n    fn validate(&self, input: i64) -> i64 {{\n"
            f"        input + {i}\n    }}\n}}\n"
        )
    (src / "with_default.rs").write_text(
        "use crate::mod_validators::Validator;\n\npub struct WithDefault { value: i64 }\n\n"
        "impl Validator for WithDefault {\n    fn validate(&self, input: i64) -> i64 {\n"
        "        input\n    }\n\n    fn default_value(&self) -> Option<i64> {\n"
        "        Some(self.value.clone())\n    }\n}\n"
    )


def test_a_default_method_carries_to_the_few_that_override_it(tmp_path: Path):
    # Seven files implement the trait (more than MAX_IMPL_FILES: the trait alone carries
    # nothing), one defines `default_value`: the method's declaration carries to it.
    root = tmp_path / "repo"
    _validators_repo(root)
    (root / ".maguyva.toml").write_text('modalities = ["text", "structural", "graph"]\n')
    assert main(["-q", "index", str(root)]) == 0
    engine = Engine.open(root)
    trait = _hit(engine, "src/mod_validators.rs", 2)
    assert _carry(engine, [trait]) == [trait]
    default = _hit(engine, "src/mod_validators.rs", 7)
    out = _carry(engine, [default])
    assert [(h.path, h.symbol) for h in out[1:]] == [
        ("src/with_default.rs", "src.with_default.WithDefault.default_value")
    ]
