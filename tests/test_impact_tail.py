"""Impact answers on Rust (issue 22): a file that names the target inside a macro's tokens
(`debug_assert!(..Box<dyn crate::api::Resolver>..)`) or by its path (`impl
crate::api::Resolver for AlwaysOne`) is affected through a graph reference; one that names it
only in a `macro_rules!` body, where the graph has no edge, is brought in by the text index's
word matches after the graph's hits. A file that only re-exports the target (`pub use` in
`lib.rs`, whose doc comment also names it) comes after every file that uses it. Fixture:
tests/fixtures/rust_impact."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from maguyva.interfaces.cli.main import main
from maguyva.modalities.graph.uselines import file_lines, named_lines
from maguyva.query.engine import Engine

FIXTURE = Path(__file__).parent / "fixtures" / "rust_impact"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    root = tmp_path_factory.mktemp("impact") / "repo"
    shutil.copytree(FIXTURE, root)
    (root / ".maguyva.toml").write_text('modalities = ["text", "structural", "graph"]\n')
    assert main(["-q", "index", str(root)]) == 0
    return Engine.open(root)


def test_a_type_position_use_without_an_edge_is_in_the_answer(engine: Engine):
    res = engine.search("what is affected if Resolver changes", limit=10)
    paths = [r.path for r in res.results]
    # a type by its path (`impl crate::api::Resolver for`, `Box<dyn crate::api::Resolver>`)
    # is a graph reference, and so is one inside a macro's tokens (`debug_assert!(..)`,
    # parsed again as an expression): no text tail is needed for either
    handy = res.results[paths.index("src/handy.rs")]
    assert handy.lines == [3, 9] and not handy.extra.get("text_tail")
    checks = res.results[paths.index("src/checks.rs")]
    assert checks.lines == [2] and not checks.extra.get("text_tail")
    # a `macro_rules!` transcriber stays tokens: no edge, the text index's word match
    rules = res.results[paths.index("src/rules.rs")]
    assert rules.lines == [3] and rules.extra.get("text_tail")
    assert paths.index("src/conn.rs") < paths.index("src/rules.rs")  # the graph's hits first
    assert paths.index("src/checks.rs") < paths.index("src/rules.rs")
    assert "src/api.rs" not in paths  # the definition is not its own dependent


def test_a_re_export_only_file_comes_after_the_files_that_use_it(engine: Engine):
    res = engine.search("what is affected if Resolver changes", limit=10)
    paths = [r.path for r in res.results]
    assert paths[-1] == "src/lib.rs", paths
    lib = res.results[-1]
    assert lib.extra.get("import_only") and 4 not in lib.lines  # a doc comment is no use


def test_a_skeleton_chunk_keeps_each_line_where_it_is(engine: Engine):
    chunks = engine.chunks.by_path("src/lib.rs")
    text = file_lines(chunks)
    source = (FIXTURE / "src" / "lib.rs").read_text().splitlines()
    assert all(text[n] == source[n - 1] for n in text), "a line read from the wrong place"
    assert text[26] == "    Resolver,"
    # the re-export's continuation line and the doc comment are not uses
    assert named_lines(chunks, frozenset({"Resolver"}), set()) == set()
