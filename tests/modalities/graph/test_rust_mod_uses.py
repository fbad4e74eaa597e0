"""A Rust path through an inline module that re-exports (issue 22): rustls's `lib.rs` holds
`pub mod sign { pub use crate::crypto::signer::{CertifiedKey, SigningKey}; }`, and the
crate names the trait `sign::SigningKey` (`&dyn sign::SigningKey` after `use crate::sign`)
or imports it as `crate::sign::SigningKey`. Those uses resolve to the trait through the
block's `use`; before, the walk stopped at the module, which has no member of that name."""

from __future__ import annotations

import pytest

from maguyva.query.engine import Engine
from tests.support.repos import assert_use_listed, indexed

FILES = {
    "Cargo.toml": '[package]\nname = "moduses"\nversion = "0.1.0"\n',
    "src/lib.rs": "pub mod crypto;\nmod server;\n\n/// Signing keys.\npub mod sign {\n"
    "    pub use crate::crypto::signer::{CertifiedKey, SigningKey};\n}\n",
    "src/crypto/mod.rs": "pub mod signer;\nuse crate::sign::SigningKey;\n\n"
    "pub fn load() -> Option<Box<dyn SigningKey>> {\n    None\n}\n",
    "src/crypto/signer.rs": "pub trait SigningKey {\n    fn algorithm(&self) -> u16;\n}\n\n"
    "pub struct CertifiedKey {\n    pub key: u16,\n}\n",
    "src/server.rs": "use crate::sign;\n\n"
    "pub(crate) fn choose(key: &dyn sign::SigningKey) -> u16 {\n    key.algorithm()\n}\n\n"
    "pub(crate) fn keep(k: sign::CertifiedKey) -> u16 {\n    k.key\n}\n",
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    return indexed(tmp_path_factory.mktemp("moduses") / "repo", FILES)


@pytest.mark.parametrize(
    ("question", "user", "line"),
    [
        ("references to SigningKey", "src/server.rs", 3),  # `sign::SigningKey`
        ("references to SigningKey", "src/crypto/mod.rs", 4),  # `use crate::sign::SigningKey`
        ("what is affected if CertifiedKey changes", "src/server.rs", 7),
    ],
)
def test_a_path_through_an_inline_modules_use_reaches_the_item(
    engine: Engine, question: str, user: str, line: int
) -> None:
    res = engine.search(question, limit=10)
    assert res.intent in ("find_references", "impact_analysis")
    assert_use_listed(res, user, line)
    assert res.results[0].path != "src/lib.rs"  # the re-export is no use
