"""Spans of reference and impact answers (issue 22): a file that imports a symbol and uses it
is answered with the chunk of its first use, not its import block, and the CLI prints every
use line. The fixture (tests/fixtures/ts_imports) imports `formatBytes` at line 1 and uses it
in `summary` (line 10) and at module level (line 13)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from maguyva.interfaces.cli.main import main
from maguyva.query.engine import Engine

FIXTURE = Path(__file__).parent / "fixtures" / "ts_imports"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("spans") / "repo"
    shutil.copytree(FIXTURE, root)
    (root / ".maguyva.toml").write_text('modalities = ["text", "structural", "graph"]\n')
    assert main(["-q", "index", str(root)]) == 0
    return root


@pytest.mark.parametrize("question", ["who references formatBytes",
                                      "what is affected if formatBytes changes"])  # fmt: skip
def test_span_is_the_first_use_not_the_import_block(root: Path, question: str):
    res = Engine.open(root).search(question, limit=10)
    hit = next(r for r in res.results if r.path == "src/report.ts")
    assert (hit.start_line, hit.end_line) == (6, 11)  # `summary`, which calls it at line 10
    assert {10, 13} <= set(hit.lines)


def test_cli_text_prints_every_use_line_of_an_impact_answer(root: Path, capsys, monkeypatch):
    monkeypatch.chdir(root)
    capsys.readouterr()
    assert main(["search", "what is affected if formatBytes changes", "--color", "never"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("src/report.ts:6-11")
    assert "10:  return formatBytes(meter.total);" in out
    assert "13:export const label = formatBytes(0);" in out


def test_an_import_whose_uses_have_no_edge_is_spanned_by_the_lines_naming_it(root: Path):
    # `Unit.KB` (an enum member read) is recorded as no edge: the file would be an import
    # block only; the lines that name the imported binding, past the import statement, are
    res = Engine.open(root).search("who references Unit", limit=10)
    hit = next(r for r in res.results if r.path == "src/other.ts")
    assert (hit.start_line, hit.end_line) == (6, 8) and 7 in hit.lines
    assert 3 not in hit.lines  # the continuation line of the import statement is no use
