"""Every configuration key is honoured from flags, the environment and files alike, and listed
by `maguyva config` with its source (issue 17); the modalities of an index are remembered.

The keys a module reads are declared in `maguyva.config.SCHEMA` itself, so the environment and
`maguyva config` see all of them whichever modules a process happened to import. Each test
that a `MAGUYVA_*` variable reaches `maguyva index` reads what the build recorded it ran with
(the manifest's `settings`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from maguyva.config import SCHEMA
from maguyva.interfaces.cli.main import main
from maguyva.store.generations import IndexDir

STDLIB = Path(sysconfig.get_paths()["stdlib"])

# key -> (the environment's text, the value the build must have run with)
ENV_VALUES: dict[str, tuple[str, Any]] = {
    "index_dir": ("", None),  # filled per test: a directory of its own
    "max_file_bytes": ("500000", 500000),
    "hard_max_file_bytes": ("2000000", 2000000),
    "embedding_tier": ("transformer", "transformer"),
    "allow_large": ("big/*.py, gen/*", ["big/*.py", "gen/*"]),
    "follow_symlinks": ("true", True),
    "max_trigrams": ("100000", 100000),
    "embedding_provider": ("voyage", "voyage"),
    "semantic_max_chunks": ("10", 10),
    "modalities": ("text,structural", ["text", "structural"]),
    "workers": ("1", 1),
    "jobs": ("1", 1),
    "structural_budget_s": ("5", 5.0),
    "preset": ("thorough", "thorough"),
    "limit": ("7", 7),
    "color": ("never", "never"),
    "memory": ("4G", "4G"),
    "graph_follows": ("true", True),
    "semantic_follows": ("false", False),
    "first_build_stages": ("false", False),
    "semantic_phases": ("heads", "heads"),
    "semantic_time_budget_s": ("30", 30.0),
    "embedding_max_length": ("128", 128),
    "embedding_threads": ("1", 1),
    "embedding_batch_size": ("16", 16),
    "graph_edge_floor": ("0.2", 0.2),
    "graph_min_confidence": ("0.3", 0.3),
    "graph_remember": ("false", False),
    "text_zstd_level": ("3", 3),
    "text_merge_ratio": ("0.2", 0.2),
    "text_max_segments": ("4", 4),
    "text_merge_min_docs": ("32", 32),
}


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("textwrap", "shlex"):
        shutil.copy(STDLIB / f"{name}.py", root / f"{name}.py")
    (root / ".maguyva.toml").write_text('modalities = ["text"]\n')
    for key in SCHEMA:
        monkeypatch.delenv(f"MAGUYVA_{key.upper()}", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))  # no user file
    return root


def test_every_key_of_the_schema_has_an_environment_test() -> None:
    assert set(ENV_VALUES) == set(SCHEMA)


def test_schema_is_complete_without_importing_the_modules() -> None:
    """A fresh interpreter that imports only `maguyva.config` knows every key."""
    code = "import json, maguyva.config as c; print(json.dumps(sorted(c.SCHEMA)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert set(json.loads(out.stdout)) == set(ENV_VALUES)


@pytest.mark.parametrize("key", sorted(ENV_VALUES))
def test_environment_variable_reaches_index(
    key: str, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    text, expected = ENV_VALUES[key]
    index_dir = repo / ".maguyva"
    if key == "index_dir":
        index_dir = tmp_path / "elsewhere"
        text, expected = str(index_dir), str(index_dir)
    if key == "embedding_provider":
        monkeypatch.setenv("VOYAGE_API_KEY", "pa-not-used")  # semantic is not built here
    monkeypatch.setenv(f"MAGUYVA_{key.upper()}", text)
    assert main(["index", str(repo), "--json"]) == 0, capsys.readouterr().err
    manifest = IndexDir(index_dir).read_manifest()
    assert manifest["settings"].get(key) == expected, manifest["settings"]


def test_set_flag_sets_any_key_and_bad_ones_are_one_line_errors(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index", str(repo), "--json", "--set", "text_max_segments=5",
                 "--set", "semantic-time-budget-s=12.5"]) == 0  # fmt: skip
    settings = IndexDir(repo / ".maguyva").read_manifest()["settings"]
    assert settings["text_max_segments"] == 5 and settings["semantic_time_budget_s"] == 12.5
    capsys.readouterr()
    for bad, said in (("nope=1", "unknown configuration key 'nope'"),
                      ("jobs=many", "--set jobs must be an integer"),
                      ("jobs", "--set expects KEY=VALUE")):  # fmt: skip
        assert main(["index", str(repo), "--set", bad]) == 2
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1, err


def test_config_lists_every_key_with_its_source(repo: Path) -> None:
    env = {**os.environ, "MAGUYVA_SEMANTIC_TIME_BUDGET_S": "420",
           "MAGUYVA_EMBEDDING_THREADS": "1"}  # fmt: skip
    out = subprocess.run([sys.executable, "-m", "maguyva", "config", "--json", "--root",
                          str(repo)], capture_output=True, text=True, env=env, check=True)  # fmt: skip
    rows = {r["key"]: r for r in json.loads(out.stdout)["settings"]}
    assert set(ENV_VALUES) <= set(rows)
    assert rows["semantic_time_budget_s"] == {"key": "semantic_time_budget_s", "value": 420.0,
                                              "source": "env (MAGUYVA_SEMANTIC_TIME_BUDGET_S)"}  # fmt: skip
    assert rows["embedding_threads"]["source"] == "env (MAGUYVA_EMBEDDING_THREADS)"
    assert rows["modalities"]["source"].startswith("project (")
    assert rows["jobs"] == {"key": "jobs", "value": None, "source": "default"}


def test_environment_budget_bounds_the_embedding_of_index(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The complaint of the issue: module keys given as MAGUYVA_* were ignored by index."""
    (repo / ".maguyva.toml").write_text('modalities = ["text", "semantic"]\n')
    monkeypatch.setenv("MAGUYVA_SEMANTIC_MAX_CHUNKS", "5")
    monkeypatch.setenv("MAGUYVA_EMBEDDING_THREADS", "1")
    assert main(["index", str(repo), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    report = summary["modalities"]["semantic"]["report"]
    assert report["new"] == 5 and report["left"] > 0


def test_plain_index_keeps_the_modalities_it_was_built_with(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / ".maguyva.toml").unlink()  # the default: every modality
    assert main(["index", str(repo), "--modalities", "text,structural,graph"]) == 0
    capsys.readouterr()
    (repo / "extra.py").write_text("def added():\n    return 1\n")
    assert main(["index", str(repo)]) == 0
    out = capsys.readouterr().out
    manifest = IndexDir(repo / ".maguyva").read_manifest()
    assert manifest["built_for"]["modalities"] == ["text", "structural", "graph"]
    assert not manifest["modalities"]["semantic"]["built"]
    assert "not started: semantic" in out
    assert "maguyva index --modalities text,structural,graph,semantic" in out
    # naming it adds it
    assert main(["index", str(repo), "--modalities", "text,structural,graph,semantic",
                 "--set", "semantic_max_chunks=3", "--set", "embedding_threads=1"]) == 0  # fmt: skip
    manifest = IndexDir(repo / ".maguyva").read_manifest()
    assert manifest["modalities"]["semantic"]["built"]
