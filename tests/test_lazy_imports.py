"""A literal question's process imports only what a literal search needs (issue 21): no
embedder (onnxruntime, tokenizers), no grammars (tree_sitter), no graph library (rustworkx),
no numpy. Checked from `sys.modules` of a real `maguyva search` run in a fresh interpreter,
in process (no warm server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from interfaces_corpus import make_corpus

from maguyva.api import Index

HEAVY = ("numpy", "onnxruntime", "tokenizers", "tree_sitter", "rustworkx")

PROBE = """
import json, sys
from maguyva.interfaces.cli.main import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_corpus(tmp_path_factory.mktemp("lazy"))
    Index.open(root).build(progress=None)
    return root


def _imported(root: Path, *argv: str) -> tuple[int, set[str]]:
    env = {**os.environ, "MAGUYVA_DAEMON": "0"}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], cwd=root, env=env, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    return report["code"], {name.split(".")[0] for name in report["modules"]}


@pytest.mark.parametrize(
    "argv",
    [
        ["search", '"def dedent"', "-q"],
        ["search", "/def (de|in)dent/", "--json", "-q"],
        ["search", "-F", "shlex.split", "-l", "-q"],
    ],
    ids=["literal", "regex", "fixed"],
)
def test_literal_search_imports_nothing_heavy(repo: Path, argv: list[str]) -> None:
    code, top = _imported(repo, *argv)
    assert code == 0  # found: the search really ran
    assert not top & set(HEAVY), sorted(top & set(HEAVY))


def test_the_probe_sees_heavy_imports_when_they_happen(repo: Path) -> None:
    """The check is not vacuous: a definition question opens the structural modality, whose
    grammars import tree_sitter."""
    code, top = _imported(repo, "search", "sym:dedent", "-q")
    assert code == 0
    assert "tree_sitter" in top
