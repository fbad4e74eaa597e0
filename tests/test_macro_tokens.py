"""Calls and paths inside Rust macro invocations (issue 22): rustls's tests call
`decode_kx_params` only inside `assert!(..)` (`tls12/mod.rs`), and `debug!`, `vec!`,
`matches!` and `write!` hide calls and paths the same way. Their token trees are parsed again
as Rust expressions (`extract/macro_tokens.py`)."""

from __future__ import annotations

import pytest

from maguyva.extract import extract_source
from maguyva.query.engine import Engine
from tests.support.repos import assert_use_listed, indexed

FILES = {
    "Cargo.toml": '[package]\nname = "macrouses"\nversion = "0.1.0"\n',
    "src/lib.rs": "pub mod tls12;\npub mod kinds;\nmod log;\nmod client;\n",
    "src/client.rs": "use crate::kinds::{Kind, Params};\nuse crate::tls12;\n\n"
    "pub fn handle(buf: &[u8]) -> Option<Params> {\n"
    "    tls12::decode_kx_params(Kind::Dhe, buf).ok()\n}\n",
    "src/kinds.rs": "pub enum Kind {\n    Ecdhe,\n    Dhe,\n}\n\n"
    "pub struct Params { pub n: u8 }\n\n"
    "impl Params {\n    pub fn new(n: u8) -> Self {\n        Self { n }\n    }\n}\n",
    "src/tls12/mod.rs": "use crate::kinds::{Kind, Params};\n\n"
    "pub fn decode_kx_params(kind: Kind, buf: &[u8]) -> Result<Params, ()> {\n"
    "    if buf.is_empty() {\n        return Err(());\n    }\n"
    "    Ok(Params { n: buf[0] })\n}\n\n"
    "#[cfg(test)]\nmod tests {\n    use super::*;\n\n"
    "    #[test]\n    fn empty_is_an_error() {\n"
    "        assert!(\n            decode_kx_params(Kind::Ecdhe, &[])\n                .is_err()\n"
    "        );\n        assert_eq!(vec![Params::new(1).n], vec![decode_kx_params(\n"
    "            Kind::Dhe, &[1]).unwrap().n]);\n    }\n}\n",
    "src/log.rs": "use crate::kinds::Kind;\nuse crate::tls12;\n\n"
    "pub fn describe(kind: &Kind, buf: &[u8]) -> String {\n"
    "    let dhe = matches!(kind, Kind::Dhe);\n"
    '    format!("{} {:?}", dhe, tls12::decode_kx_params(Kind::Ecdhe, buf).is_ok())\n}\n',
}


def _calls_and_refs(rel: str) -> tuple[set[tuple[str, int]], set[tuple[str, int]]]:
    result = extract_source(rel, "rust", FILES[rel].encode())
    assert result.status == "ok"
    ex = result.extraction
    return {(c.callee, c.line) for c in ex.calls}, {(r.name, r.line) for r in ex.references}


def test_calls_and_paths_inside_macro_token_trees_are_extracted() -> None:
    calls, refs = _calls_and_refs("src/tls12/mod.rs")
    # `assert!(\n decode_kx_params(..)\n .is_err())`: the call on its own line
    assert ("decode_kx_params", 17) in calls
    # nested: `assert_eq!(vec![Params::new(1).n], vec![decode_kx_params(..)])`
    assert {("Params::new", 20), ("decode_kx_params", 20), ("vec", 20)} <= calls
    assert {("Kind", 17), ("Kind", 21)} <= refs
    calls, refs = _calls_and_refs("src/log.rs")
    assert ("tls12::decode_kx_params", 6) in calls
    assert {("Kind", 5), ("Kind", 6)} <= refs  # `matches!(kind, Kind::Dhe)`
    # the macros themselves stay calls, and nothing is taken twice
    assert {("matches", 5), ("format", 6)} <= calls
    result = extract_source("src/log.rs", "rust", FILES["src/log.rs"].encode())
    assert len(result.extraction.calls) == len(
        {(c.callee, c.line) for c in result.extraction.calls}
    )


def test_a_body_that_is_not_rust_costs_nothing_but_its_own_calls() -> None:
    src = (
        b"fn main() {\n"
        b'    log::debug!(target: "tls", "sent {}", render(x));\n'
        b'    let s = html! { <div class="a">{ label(y) }</div> };\n'
        b"    println!();\n}\n"
    )
    result = extract_source("m.rs", "rust", src)
    assert result.status == "ok"
    calls = {(c.callee, c.line, c.caller) for c in result.extraction.calls}
    assert ("render", 2, "main") in calls
    assert ("label", 3, "main") in calls
    assert [d.qualified_name for d in result.extraction.definitions] == ["main"]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    return indexed(tmp_path_factory.mktemp("macrouses") / "repo", FILES)


@pytest.mark.parametrize(
    ("question", "user", "line"),
    [
        ("who calls decode_kx_params", "src/tls12/mod.rs", 17),
        ("who calls decode_kx_params", "src/log.rs", 6),
        ("what breaks if I change decode_kx_params", "src/tls12/mod.rs", 20),
        ("references to Kind", "src/log.rs", 5),
    ],
)
def test_a_call_inside_a_macro_is_a_graph_edge(engine: Engine, question, user, line):
    res = engine.search(question, limit=10)
    assert res.intent in ("find_references", "impact_analysis")
    assert_use_listed(res, user, line)
