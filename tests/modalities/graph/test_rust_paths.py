"""Rust module paths in the graph (issue 22): rustls calls `tls13::fill_in_psk_binder(...)`
after `use crate::client::{tls13}` where `client` is a module declared inline in lib.rs
(`pub mod client { mod tls13; }`, no file of its own), `x509::wrap_in_sequence(...)` after
`use crate::x509`, `crate::x509::...` and `Self::...`; `pub use` re-exports are imports of
what they name, listed after the real uses. The fixture (tests/fixtures/rust_paths) is
written in that shape."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from maguyva.modalities.graph.modules import ModuleIndex
from maguyva.modalities.graph.schema import EdgeKind
from maguyva.modalities.graph.searcher import GraphSearcher
from maguyva.query.engine import Engine
from tests.graph_support import build_graph

FIXTURE = Path(__file__).parents[2] / "fixtures" / "rust_paths"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    from maguyva.interfaces.cli.main import main

    root = tmp_path_factory.mktemp("rust_paths") / "repo"
    shutil.copytree(FIXTURE, root)
    (root / ".maguyva.toml").write_text('modalities = ["text", "structural", "graph"]\n')
    assert main(["-q", "index", str(root)]) == 0
    return Engine.open(root)


def _answer(engine: Engine, question: str) -> list[tuple[str, int, int, list[int]]]:
    res = engine.search(question, limit=10)
    return [(r.path, r.start_line, r.end_line, r.lines) for r in res.results]


def test_module_path_call_through_an_inline_module_is_a_call_edge(engine: Engine):
    found = _answer(engine, "who calls fill_in_psk_binder")
    assert found[0][0] == "src/client/hs.rs"
    assert 4 in found[0][3] and found[0][1] <= 4 <= found[0][2]
    assert all(path != "src/client/tls13.rs" for path, *_ in found)  # not its own definition


def test_module_path_call_through_use_crate_module_and_crate_root_path(engine: Engine):
    found = _answer(engine, "who calls wrap_in_sequence")
    assert found[0][0] == "src/crypto/signer.rs"
    assert {7, 12} <= set(found[0][3])  # `x509::wrap_in_sequence`, `crate::x509::...`
    lib = next(f for f in found if f[0] == "src/lib.rs")  # `mod x509;` then `x509::...`
    assert 19 in lib[3] and lib[1] <= 19 <= lib[2]


def test_self_path_call(engine: Engine):
    found = _answer(engine, "who calls with_len")
    assert found[0][0] == "src/client/tls13.rs" and 7 in found[0][3]


def test_pub_use_reexport_is_an_import_listed_after_uses(engine: Engine):
    # `crate::crypto::public_key_to_spki(...)` goes through `pub use signer::...` in mod.rs
    res = engine.search("who references public_key_to_spki", limit=10).results
    assert [r.path for r in res] == ["src/client/hs.rs", "src/crypto/mod.rs"]
    assert 9 in res[0].lines and res[0].start_line <= 9 <= res[0].end_line
    assert res[1].extra.get("import_only") is True and res[1].lines == [3]


def test_inline_module_paths_resolve_to_the_files_module():
    index = ModuleIndex([("src/lib.rs", "rust"), ("src/client/hs.rs", "rust"),
                         ("src/client/tls13.rs", "rust")])  # fmt: skip
    hs = 1
    assert index.resolve(hs, "crate::client::tls13") == ("rs:src::client::tls13", [])
    assert index.resolve(hs, "super::tls13::Binder") == ("rs:src::client::tls13", ["Binder"])
    assert index.resolve(hs, "crate::client") == ("rs:src::", ["client"])


def test_module_path_calls_are_calls_edges(tmp_path: Path):
    repo = {p.relative_to(FIXTURE).as_posix(): p.read_text()
            for p in FIXTURE.rglob("*") if p.is_file()}  # fmt: skip
    graph = GraphSearcher.open(build_graph(tmp_path / "r", repo, tmp_path / "gen")).graph
    for target, caller in (("fill_in_psk_binder", "emit_client_hello"),
                           ("wrap_in_sequence", "public_key_to_spki"),
                           ("wrap_in_sequence", "spki_of")):  # fmt: skip
        sites, _ = graph.walk_dependents(graph.find(target), 1, frozenset({EdgeKind.CALLS}))
        assert caller in {graph.names[n] for n in sites}, (target, caller)


def test_relative_paths_inside_inline_modules_are_call_edges(tmp_path: Path):
    """Inside `mod client_hello { .. }` of server/tls13.rs (rustls's shape), `self::` is the
    inline module, `super::` the file's module, `super::super::` from a nested inline module
    the file's module too; `crate::` paths and `Self::` reach into inline modules."""
    repo = {p.relative_to(FIXTURE).as_posix(): p.read_text()
            for p in FIXTURE.rglob("*") if p.is_file()}  # fmt: skip
    graph = GraphSearcher.open(build_graph(tmp_path / "r", repo, tmp_path / "gen")).graph
    for target, caller in (("decide_early_data", "handle"),  # self::
                           ("emit_ticket", "handle"),  # super:: from an inline module
                           ("emit_ticket_count", "inner_helper"),  # super::super::
                           ("emit_ticket_count", "bench_emit_ticket_count"),  # #[cfg(test)] mod
                           ("max_early_data_size", "handle"),  # Self:: in an inline mod's impl
                           ("check_aligned_handshake", "decide_early_data"),  # `use ..::{self}`
                           ("inner_helper", "emit_ticket"),  # crate:: into inline modules
                           ("max_fragment_len", "emit_ticket_count")):  # fmt: skip
        sites, _ = graph.walk_dependents(graph.find(target), 1, frozenset({EdgeKind.CALLS}))
        assert caller in {graph.names[n] for n in sites}, (target, caller)


def test_use_inside_an_inline_module_counts_from_the_module(tmp_path: Path):
    """`mod tests { use super::*; use super::spki_of; }` in crypto/signer.rs names signer's
    own items: the call is an edge to signer's `spki_of`, and the file imports nothing from
    its parent module `crypto` (the glob was read from the file: `crypto`)."""
    repo = {p.relative_to(FIXTURE).as_posix(): p.read_text()
            for p in FIXTURE.rglob("*") if p.is_file()}  # fmt: skip
    graph = GraphSearcher.open(build_graph(tmp_path / "r", repo, tmp_path / "gen")).graph
    sites, _ = graph.walk_dependents(graph.find("spki_of"), 1, frozenset({EdgeKind.CALLS}))
    assert "spki_of_wraps" in {graph.names[n] for n in sites}
    crypto = [n for n in range(len(graph.names)) if graph.qnames[n] == "src::crypto"]
    importers = graph.walk_dependents(crypto, 1, frozenset({EdgeKind.IMPORTS}))[0] if crypto else []
    assert "signer.rs" not in {graph.names[n] for n in importers}
