"""Rust types named in a path before `::` are uses of the type (issue 22): rustls's
`hs::ExtensionProcessing::new()` (`server/tls12.rs`, `server/tls13.rs`) and
`crate::ticketer::TicketRotator::new(..)` (`crypto/*/ticketer.rs`) had no reference edge, so
"references to ExtensionProcessing" missed both handshake files."""

from __future__ import annotations

import time

import pytest

from maguyva.extract import grammars
from maguyva.extract.extractor import extract
from maguyva.interfaces.cli.main import main
from maguyva.query.engine import Engine

FILES = {
    "Cargo.toml": '[package]\nname = "pathuses"\nversion = "0.1.0"\n',
    "src/lib.rs": "pub mod ticketer;\npub mod server;\nmod crypto;\n",
    "src/ticketer.rs": "pub struct TicketRotator { lifetime: u32 }\n\n"
    "impl TicketRotator {\n    pub fn new(lifetime: u32) -> Self {\n"
    "        Self { lifetime }\n    }\n}\n",
    "src/crypto.rs": "pub fn ticketer() -> u32 {\n"
    "    let t = crate::ticketer::TicketRotator::new(6 * 60 * 60);\n    t.lifetime\n}\n",
    "src/server/mod.rs": "pub(crate) mod hs;\npub(crate) mod tls13;\n",
    "src/server/hs.rs": "pub(super) struct ExtensionProcessing { pub(super) n: u8 }\n\n"
    "impl ExtensionProcessing {\n    pub(super) fn new() -> Self {\n"
    "        Self { n: 0 }\n    }\n}\n\npub(super) enum Stage {\n    Start,\n    Done,\n}\n",
    "src/server/tls13.rs": "use super::hs;\n\npub(super) fn handle() -> u8 {\n"
    "    let ep = hs::ExtensionProcessing::new();\n"
    "    let _stage = hs::Stage::Done;\n    ep.n\n}\n",
}


def test_a_type_before_a_path_separator_is_a_reference() -> None:
    src = (
        b"fn a() {\n    let ep = hs::ExtensionProcessing::new();\n"
        b"    let t = crate::ticketer::TicketRotator::new(1);\n"
        b"    let v = ProtocolVersion::TLSv1_3;\n    let w = Foo::new();\n"
        b"    let s = Self::helper();\n    m::helper(x);\n}\n"
    )
    grammar = grammars.load("rust")
    assert grammar is not None
    extraction, _ = extract(grammar, "a.rs", src, time.monotonic() + 30)
    refs = {(r.name, r.line) for r in extraction.references}
    assert {
        ("hs::ExtensionProcessing", 2),
        ("crate::ticketer::TicketRotator", 3),
        ("ProtocolVersion", 4),
        ("Foo", 5),
    } <= refs
    # modules (lower case) and `Self` are no item to refer to
    assert not {name for name, _ in refs} & {"hs", "crate::ticketer", "m", "Self", "crate"}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    root = tmp_path_factory.mktemp("pathuses") / "repo"
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / ".maguyva.toml").write_text('modalities = ["text", "structural", "graph"]\n')
    assert main(["-q", "index", str(root)]) == 0
    return Engine.open(root)


@pytest.mark.parametrize(
    ("question", "user"),
    [
        ("references to ExtensionProcessing", "src/server/tls13.rs"),
        ("where is Stage used", "src/server/tls13.rs"),
        ("references to TicketRotator", "src/crypto.rs"),
    ],
)
def test_a_module_path_use_is_found_by_references(engine: Engine, question: str, user: str):
    res = engine.search(question, limit=10)
    assert res.intent == "find_references"
    hits = {r.path: r for r in res.results}
    assert user in hits, [r.path for r in res.results]
    assert hits[user].start_line <= 4 <= hits[user].end_line or 4 in (hits[user].lines or [])
