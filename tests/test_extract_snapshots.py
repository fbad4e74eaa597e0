"""Snapshot tests: what extraction finds in one realistic fixture file per language.

Regenerate after an intended change with `MAGUYVA_UPDATE_SNAPSHOTS=1 pytest
tests/test_extract_snapshots.py` and review the diff; never hand-edit the snapshots.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from maguyva.extract import extract_source
from maguyva.repo.languages import detect_language

FIXTURES = Path(__file__).parent / "fixtures" / "langs"
SNAPSHOTS = Path(__file__).parent / "snapshots" / "structural"
UPDATE = os.environ.get("MAGUYVA_UPDATE_SNAPSHOTS") == "1"


def _summary(path: Path) -> dict:
    result = extract_source(path.name, detect_language(path.name), path.read_bytes())
    ex = result.extraction
    return {
        "status": result.status,
        "language": ex.language,
        "definitions": [
            {
                "kind": d.kind,
                "qualified_name": d.qualified_name,
                "lines": [d.start_line, d.end_line, d.name_line],
                "signature": d.signature,
                "doc": d.doc.split("\n")[0],
                "parent": d.parent,
                "bases": d.bases,
                "declaration": d.declaration,
            }
            for d in ex.definitions
        ],
        "imports": [[i.module, i.name, i.alias, i.line, i.level] for i in ex.imports],
        "calls": [[c.callee, c.line, c.caller] for c in ex.calls],
        "references": [[r.name, r.line, r.context] for r in ex.references],
        "chunks": [[c.kind, c.qualified_name, c.start_line, c.end_line] for c in result.chunks],
    }


FILES = sorted(FIXTURES.iterdir())


def test_every_required_language_has_a_fixture() -> None:
    have = {detect_language(p.name) for p in FILES}
    need = {"python", "javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp",
            "csharp", "ruby", "php", "kotlin", "swift", "scala", "bash"}  # fmt: skip
    assert need <= have


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_snapshot(path: Path) -> None:
    got = _summary(path)
    assert got["status"] == "ok"
    assert got["definitions"], "every fixture defines something"
    snap = SNAPSHOTS / f"{path.name}.json"
    text = json.dumps(got, indent=1, ensure_ascii=False) + "\n"
    if UPDATE or not snap.exists():
        SNAPSHOTS.mkdir(parents=True, exist_ok=True)
        snap.write_text(text, "utf-8")
        if not UPDATE:
            pytest.fail(f"snapshot {snap.name} was missing and has been written; review it")
    assert json.loads(snap.read_text("utf-8")) == got
