"""Types used where the extraction recorded no reference (issue 22). Rust: a type named in a
path before `::` (rustls's `hs::ExtensionProcessing::new()` in `server/tls12.rs` and
`server/tls13.rs`, `crate::ticketer::TicketRotator::new(..)` in `crypto/*/ticketer.rs`).
TypeScript: a type in a union, a type predicate or a qualified type (pyright-internal's
`| ParamDeclaration` and `decl is ParamDeclaration` in `declaration.ts`, `ActionKind.X` in
`diagnostic.ts`): only annotations' own type names counted before."""

from __future__ import annotations

import time

import pytest

from maguyva.extract import grammars
from maguyva.extract.extractor import extract
from maguyva.query.engine import Engine
from tests.support.repos import assert_use_listed, indexed

FILES = {
    "Cargo.toml": '[package]\nname = "pathuses"\nversion = "0.1.0"\n',
    "src/lib.rs": "pub mod ticketer;\npub mod server;\nmod crypto;\n",
    "src/ticketer.rs": "pub struct TicketRotator { lifetime: u32 }\n\n"
    "impl TicketRotator {\n    pub fn new(lifetime: u32) -> Self {\n"
    "        Self { lifetime }\n    }\n}\n",
    "src/crypto.rs": "pub fn ticketer() -> u32 {\n"
    "    let t = crate::ticketer::TicketRotator::new(6 * 60 * 60);\n    t.lifetime\n}\n",
    "src/server/mod.rs": "pub(crate) mod hs;\npub(crate) mod tls13;\npub(crate) mod config;\n",
    "src/server/config.rs": "use super::hs;\n\npub(crate) struct ServerConfig {\n"
    "    pub(crate) ep: Option<hs::ExtensionProcessing>,\n}\n",
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
        b"struct S {\n    v: Arc<dyn verify::ClientCertVerifier>,\n}\n"
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
        ("verify::ClientCertVerifier", 10),  # a type by its path, as written
    } <= refs
    assert ("ClientCertVerifier", 10) not in refs
    # modules (lower case) and `Self` are no item to refer to
    assert not {name for name, _ in refs} & {"hs", "crate::ticketer", "m", "Self", "crate"}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    return indexed(tmp_path_factory.mktemp("pathuses") / "repo", FILES)


@pytest.mark.parametrize(
    ("question", "user", "line"),
    [
        ("references to ExtensionProcessing", "src/server/tls13.rs", 4),
        ("references to ExtensionProcessing", "src/server/config.rs", 4),
        ("where is Stage used", "src/server/tls13.rs", 5),
        ("references to TicketRotator", "src/crypto.rs", 2),
    ],
)
def test_a_module_path_use_is_found_by_references(engine: Engine, question, user, line):
    res = engine.search(question, limit=10)
    assert res.intent == "find_references"
    assert_use_listed(res, user, line)


TS_FILES = {
    "src/declaration.ts": "export interface DeclarationBase { node: number }\n"
    "export interface ParamDeclaration extends DeclarationBase { index: number }\n"
    "export interface AliasDeclaration extends DeclarationBase { name: string }\n\n"
    "export type Declaration =\n    | AliasDeclaration\n    | ParamDeclaration;\n\n"
    "export function isParamDeclaration(decl: Declaration): decl is ParamDeclaration {\n"
    "    return 'index' in decl;\n}\n",
    "src/diagnostic.ts": "export const enum ActionKind {\n    Rename = 'rename',\n"
    "    Ignore = 'ignore',\n}\n\nexport interface RenameAction {\n"
    "    action: ActionKind.Rename;\n    oldName: string;\n}\n",
    "src/binder.ts": "import { Declaration } from './declaration';\n"
    "import { ActionKind } from './diagnostic';\n\n"
    "export function kindOf(decl: Declaration): ActionKind {\n"
    "    return decl.node > 0 ? ActionKind.Rename : ActionKind.Ignore;\n}\n",
}


def test_typescript_types_in_unions_predicates_and_qualified_names_are_references() -> None:
    grammar = grammars.load("typescript")
    assert grammar is not None
    for rel, uses in (
        ("src/declaration.ts", {("ParamDeclaration", 7), ("ParamDeclaration", 9)}),
        ("src/diagnostic.ts", {("ActionKind", 7)}),
    ):
        extraction, _ = extract(grammar, rel, TS_FILES[rel].encode(), time.monotonic() + 30)
        refs = {(r.name, r.line) for r in extraction.references}
        assert uses <= refs, (rel, refs)
        # a name being defined and the member of a qualified type are no reference
        assert not refs & {("ParamDeclaration", 2), ("Declaration", 5), ("RenameAction", 6)}
        assert "Rename" not in {n for n, _ in refs}


@pytest.fixture(scope="module")
def ts_engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    return indexed(tmp_path_factory.mktemp("tsuses") / "repo", TS_FILES)


@pytest.mark.parametrize(
    ("question", "user", "line"),
    [
        ("find all uses of ParamDeclaration", "src/declaration.ts", 7),
        ("find all uses of ActionKind", "src/diagnostic.ts", 7),
    ],
)
def test_a_use_in_the_defining_file_is_a_reference(ts_engine: Engine, question, user, line):
    res = ts_engine.search(question, limit=10)
    assert_use_listed(res, user, line)
