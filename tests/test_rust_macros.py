"""Rust items written inside macro invocations (issue 22): rustls declares its protocol enums
inside `enum_builder! { ... }`, a token tree the grammar does not parse. The fixtures are
rustls's own files: 0.23.27's `pub enum X { A => 0x00, ... }` form and the newer
`pub struct X(pub u8); enum XName { ... }` form."""

from __future__ import annotations

import json
from pathlib import Path

from maguyva.extract import extract_source
from maguyva.interfaces.cli.main import main

FIXTURES = Path(__file__).parent / "fixtures" / "rust_macros"


def _definitions(name: str) -> dict[str, tuple[str, int, int]]:
    result = extract_source(name, "rust", (FIXTURES / name).read_bytes())
    assert result.status == "ok"
    return {
        d.qualified_name: (d.kind, d.start_line, d.end_line) for d in result.extraction.definitions
    }


def test_enum_builder_items_are_definitions_with_the_files_lines():
    found = _definitions("enums.rs")
    assert found["AlertDescription"] == ("enum", 12, 48)
    assert {"HandshakeType", "ContentType", "ProtocolVersion"} <= set(found)
    # the variants, written `CloseNotify => 0x00,`, are still the enum's members
    assert found["AlertDescription.CloseNotify"][0] == "field"
    result = extract_source("enums.rs", "rust", (FIXTURES / "enums.rs").read_bytes())
    alert = next(d for d in result.extraction.definitions if d.name == "AlertDescription")
    assert alert.doc.startswith("The `AlertDescription` TLS protocol enum")
    assert any(c.kind == "enum" and c.start_line <= 12 <= c.end_line for c in result.chunks)


def test_newer_struct_and_name_enum_form():
    found = _definitions("enums_head.rs")
    assert found["AlertLevel"][0] == "struct" and found["AlertLevelName"][0] == "enum"
    assert {"ClientCertificateType", "Compression", "CompressionName"} <= set(found)


def test_macro_body_without_items_adds_nothing():
    src = b'fn main() {\n    println!("{}", 1);\n    let v = vec![1, 2, 3];\n}\n'
    result = extract_source("m.rs", "rust", src)
    assert [d.qualified_name for d in result.extraction.definitions] == ["main"]


def test_definition_query_finds_the_macro_wrapped_enum(tmp_path: Path, capsys, monkeypatch):
    root = tmp_path / "repo"
    root.mkdir()
    for path in FIXTURES.glob("*.rs"):
        (root / path.name).write_bytes(path.read_bytes())
    (root / ".maguyva.toml").write_text('modalities = ["text", "structural", "graph"]\n')
    assert main(["-q", "index", str(root)]) == 0
    monkeypatch.chdir(root)
    capsys.readouterr()
    assert main(["search", "where is AlertDescription defined", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    first = next(row["data"] for row in rows if row["type"] == "begin")
    assert first["path"]["text"] == "enums.rs"
    assert first["maguyva"]["symbol"] == "AlertDescription"
    assert first["maguyva"]["kind"] == "enum"
