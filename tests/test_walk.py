"""The walker selects exactly git's view of a work tree, minus what it must refuse."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from maguyva.errors import ConfigError
from maguyva.repo.walk import walk_repository


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null"}
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


def _write(root: Path, rel: str, text: str = "print('hi')\n") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    _write(root, ".gitignore", "*.log\nbuild/\n!keep.log\n/top_only.txt\n")
    _write(root, "src/.gitignore", "generated_*\n!generated_keep.py\nsub/*.tmp\n")
    _write(root, "src/deep/.gitignore", "*.py\n!wanted.py\n")
    _write(root, ".git/info/exclude", "secret.txt\n")
    for rel in [
        "README.md",
        "a.py",
        "x.log",
        "keep.log",
        "top_only.txt",
        "nested/top_only.txt",
        "build/out.c",
        "nested/build/out.c",
        "src/main.py",
        "src/generated_x.py",
        "src/generated_keep.py",
        "src/sub/a.tmp",
        "src/sub/b.txt",
        "src/deep/a.py",
        "src/deep/wanted.py",
        "src/deep/notes.md",
        "secret.txt",
        "src/secret.txt",
        "docs/guide.rst",
    ]:
        _write(root, rel, f"content of {rel}\n")
    _git(root, "add", "a.py", "src/main.py")
    return root


def _git_view(root: Path) -> set[str]:
    listed = _git(root, "ls-files", "-co", "--exclude-standard").splitlines()
    # Hidden files (any component starting with a dot) are skipped by design.
    return {p for p in listed if not any(part.startswith(".") for part in p.split("/"))}


def test_file_set_equals_git_ls_files(repo: Path) -> None:
    got = {f.path for f in walk_repository(repo).files}
    assert got == _git_view(repo)
    assert "keep.log" in got and "x.log" not in got  # negation
    assert "nested/top_only.txt" in got and "top_only.txt" not in got  # anchored pattern
    assert "src/deep/wanted.py" in got and "src/deep/a.py" not in got  # nested ignore file
    assert "secret.txt" not in got  # info/exclude


def test_maguyvaignore_hidden_and_sizes(repo: Path) -> None:
    _write(repo, ".maguyvaignore", "docs/\n")
    _write(repo, ".hidden/file.py")
    _write(repo, "big/large.txt", "x" * 5000 + "\n")
    _write(repo, "big/allowed.txt", "y" * 5000 + "\n")
    (repo / "bin.dat").write_bytes(b"abc\0def")
    result = walk_repository(repo, {"max_file_bytes": 1000, "allow_large": ["big/allowed.*"]})
    got = {f.path for f in result.files}
    assert "docs/guide.rst" not in got
    assert not any(p.startswith(".hidden") for p in got)
    assert "big/allowed.txt" in got and "big/large.txt" not in got
    assert ("big/large.txt", "too_large") in result.skipped_files
    assert ("bin.dat", "binary") in result.skipped_files
    assert result.skipped == {"too_large": 1, "binary": 1}
    assert [f.path for f in result.files] == sorted(got)


def test_languages_sizes_and_mtimes(repo: Path) -> None:
    files = {f.path: f for f in walk_repository(repo).files}
    assert files["src/main.py"].language == "python"
    assert files["README.md"].language is None
    assert files["a.py"].size == (repo / "a.py").stat().st_size
    assert files["a.py"].mtime_ns == (repo / "a.py").stat().st_mtime_ns


def test_implausible_trigram_file_is_skipped(tmp_path: Path) -> None:
    import random

    rng = random.Random(7)
    blob = "".join(chr(rng.randrange(33, 127)) for _ in range(200_000))
    _write(tmp_path, "blob.js", blob)
    _write(tmp_path, "code.py", "def f(x):\n    return x + 1\n" * 2000)
    result = walk_repository(tmp_path)
    assert [f.path for f in result.files] == ["code.py"]
    assert result.skipped == {"too_many_trigrams": 1}


def test_symlinks_not_followed_by_default_and_loops_detected(tmp_path: Path) -> None:
    _write(tmp_path, "real/a.py")
    (tmp_path / "link.py").symlink_to(tmp_path / "real" / "a.py")
    (tmp_path / "real" / "loop").symlink_to(tmp_path / "real")
    default = walk_repository(tmp_path)
    assert [f.path for f in default.files] == ["real/a.py"]
    assert default.skipped.get("not_regular") == 2
    followed = walk_repository(tmp_path, {"follow_symlinks": True})
    assert {f.path for f in followed.files} == {"real/a.py", "link.py"}
    assert followed.skipped.get("symlink_loop") == 1


def test_unreadable_file_is_reported(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    _write(tmp_path, "locked.py")
    (tmp_path / "locked.py").chmod(0)
    assert walk_repository(tmp_path).skipped == {"unreadable": 1}


@pytest.mark.parametrize(
    "config",
    [
        {"max_file_bytes": -1},
        {"follow_symlinks": "yes"},
        {"allow_large": [3]},
        {"allow_large": ["a{"]},
    ],
)
def test_bad_config_is_a_clear_error(tmp_path: Path, config: dict) -> None:
    with pytest.raises(ConfigError):
        walk_repository(tmp_path, config)


def test_missing_root_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        walk_repository(tmp_path / "nope")
