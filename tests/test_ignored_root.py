"""A tree whose own `.gitignore` leaves most of it out (Debian's kernel source ends with `/*`
and `!/debian/`) outside a git repository: `maguyva index` says so, and the `.maguyvaignore`
whitelist it suggests brings the code back without bringing in the index itself."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from maguyva.interfaces.cli.main import main
from maguyva.repo.walk import walk_repository

STDLIB = Path(sys.modules["json"].__file__).parent.parent  # real code nobody here wrote


@pytest.fixture
def packaged_tree(tmp_path: Path) -> Path:
    root = tmp_path / "linux-source"
    for package in ("json", "email", "http"):
        shutil.copytree(
            STDLIB / package, root / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    (root / "debian").mkdir()
    shutil.copy(STDLIB / "textwrap.py", root / "debian" / "rules.py")
    (root / ".gitignore").write_text("# Debian packaging\n/*\n!/debian/\n")
    return root


def _index(root: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["index", str(root), "--modalities", "text,structural"]) == 0
    return capsys.readouterr().out


def test_a_tree_its_own_rules_empty_gets_a_note(
    packaged_tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _index(packaged_tree, capsys)
    assert "indexed 1 files" in out
    assert "ignore rules leave out 3 of 4 top-level directories (email, http, json)" in out
    assert "not a git repository" in out and "!/*/" in out


def test_the_suggested_whitelist_brings_the_code_back_and_not_the_index(
    packaged_tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _index(packaged_tree, capsys)  # leaves .maguyva/ behind, as a user's first run would
    (packaged_tree / ".maguyvaignore").write_text("!/*/\n")
    out = _index(packaged_tree, capsys)
    assert "ignore rules leave out" not in out
    paths = [f.path for f in walk_repository(packaged_tree).files]
    assert {p.split("/")[0] for p in paths} == {"debian", "email", "http", "json"}
    assert "json/decoder.py" in paths


def test_a_git_repository_keeps_its_rules_without_a_note(
    packaged_tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (packaged_tree / ".git").mkdir()  # git would leave the same directories out
    out = _index(packaged_tree, capsys)
    assert "indexed 1 files" in out
    assert "ignore rules leave out" not in out


def test_a_few_ignored_directories_are_no_news(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "sdist"
    for package in ("json", "email", "http"):
        shutil.copytree(
            STDLIB / package, root / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    (root / ".gitignore").write_text("/http/\n")
    out = _index(root, capsys)
    assert "ignore rules leave out" not in out
