"""A hostile repository must not turn the tool against its user: the cases of
`tests/support/hostile.py` that broke something, each through the real CLI (a subprocess) and
the real git, with the control file checked afterwards (nothing else in the index lost).
The table of every probe, before and after: docs/trust.md (`benches/hostile_probes.py`).
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from support.hostile import CONTROL_NAME, DEEP, MARK, make_case, write_git_hostile
from test_trust import cli_env, maguyva

from maguyva.config import MAX_CONFIG_BYTES
from maguyva.extract import extract_source
from maguyva.extract.extractor import MAX_NESTING
from maguyva.repo.git import git_digests
from maguyva.repo.ignore import _glob_regex, parse_ignore

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def control_found(root: Path, env: dict[str, str]) -> bool:
    found = maguyva(root, "search", CONTROL_NAME, "--json", env=env, timeout=120)
    return found.returncode == 0 and '"control.py"' in found.stdout


def one_line_error(stderr: str, *needles: str) -> bool:
    """Exactly one line, a `maguyva: error:` naming every needle; never an internal error."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    return (len(lines) == 1 and lines[0].startswith("maguyva: error: ")
            and all(n in lines[0] for n in needles))  # fmt: skip


# -- git: a repository's .git/config names programs; none of them runs -----------------------


@needs_git
def test_hostile_git_config_runs_nothing_and_index_is_whole(tmp_path: Path):
    root = make_case(tmp_path, "git_hostile")
    marker = tmp_path / "pwned.log"
    env = cli_env(tmp_path)
    built = maguyva(root, "index", "--modalities", "text,structural", env=env, timeout=300)
    assert built.returncode == 0, built.stderr
    (root / "pkg" / "m0.py").write_text("def f0():\n    return 'changed'\n")
    again = maguyva(root, "index", env=env, timeout=300)  # an update: git asked again
    assert again.returncode == 0, again.stderr
    assert not marker.exists(), marker.read_text()
    assert control_found(root, env)
    # the control: the same config does run its program for git's own read-only commands
    subprocess.run(["git", "-C", str(root), "ls-files", "-s"], capture_output=True, timeout=60)
    assert MARK in marker.read_text()


@needs_git
def test_git_digests_trust_only_a_matching_stat(tmp_path: Path):
    """Blob ids come from git's index only for files whose ctime, mtime, inode and size match
    it and are older than it; a clean filter or fsmonitor in the repository's config never
    runs (a filter `process` that never answers used to hang `diff-files`)."""
    root = tmp_path / "repo"
    root.mkdir()
    write_git_hostile(root, marker=tmp_path / "pwned.log")
    known = git_digests(root)  # every file touched after the commit is hashed by us instead
    assert known is not None and set(known) == {".gitattributes"}
    past = time.time() - 60  # older than the index git writes next: no entry is racy (git
    for path in (root / "pkg").iterdir():  # would record a racy one with size 0)
        os.utime(path, (past, past))
    subprocess.run(["git", "-C", str(root), "-c", "core.fsmonitor=false", "-c",
                    "filter.evil.process=", "-c", "filter.evil.clean=cat",
                    "update-index", "--refresh", "-q"], capture_output=True, timeout=60)  # fmt: skip
    (tmp_path / "pwned.log").unlink(missing_ok=True)
    known = git_digests(root)
    assert known is not None and len(known) == 81 and not (tmp_path / "pwned.log").exists()
    listed = subprocess.run(["git", "-C", str(root), "-c", "core.fsmonitor=false", "ls-files",
                             "-s"], capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert {line.split("\t")[1]: line.split()[1] for line in listed.splitlines()
            if line.split("\t")[1] in known} == known  # fmt: skip


@needs_git
def test_git_file_pointing_elsewhere_lists_nothing_of_the_other_repository(tmp_path: Path):
    root = make_case(tmp_path, "git_file")
    env = cli_env(tmp_path)
    built = maguyva(root, "index", "--modalities", "text,structural", env=env, timeout=300)
    assert built.returncode == 0, built.stderr
    assert control_found(root, env)
    found = maguyva(root, "search", '"OTHER_SECRET"', env=env)
    assert found.returncode == 1 and "elsewhere" not in found.stdout


# -- config files: nested, undecodable or huge -> one line naming the file -------------------


@pytest.mark.parametrize(
    ("name", "data", "needle"),
    [
        (".maguyva.toml", "x = " + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
        (".maguyva.toml", b"limit = 3\n# \xff\xfe\n", "not UTF-8"),
        ("pyproject.toml", "a = " + "{b = " * 50_000 + "1" + "}" * 50_000 + "\n", "too deeply"),
        ("pyproject.toml", "[tool.x]\n" + "k = 1\n" * (MAX_CONFIG_BYTES // 6 + 1), "too large"),
    ],
    ids=["deep-array", "invalid-utf8", "deep-inline-table", "over-limit"],
)
def test_hostile_config_file_is_one_clear_line(tmp_path: Path, name: str, data, needle: str):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "control.py").write_text(f"def {CONTROL_NAME}():\n    return 1\n")
    path = root / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    env = cli_env(tmp_path)
    for args in (("index", "--modalities", "text"), ("search", CONTROL_NAME), ("config",)):
        out = maguyva(root, *args, env=env, timeout=120)
        assert out.returncode == 2 and one_line_error(out.stderr, name, needle), out.stderr
    path.unlink()  # the file gone, the same repository indexes
    built = maguyva(root, "index", "--modalities", "text", env=env, timeout=120)
    assert built.returncode == 0, built.stderr
    assert control_found(root, env)


# -- ignore rules: a glob that makes a backtracking regex explode ---------------------------


def reference_match(glob: str, path: str) -> bool:
    """gitignore matching by components, by brute force: `**` is zero or more components
    (one or more when last), any other component matches one by `fnmatchcase`."""
    gs, ps = glob.split("/"), path.split("/")

    def at(i: int, j: int) -> bool:
        if i == len(gs):
            return j == len(ps)
        if gs[i] == "**":
            if i == len(gs) - 1:
                return j < len(ps)
            return any(at(i + 1, k) for k in range(j, len(ps) + 1))
        return j < len(ps) and fnmatch.fnmatchcase(ps[j], gs[i]) and at(i + 1, j + 1)

    return at(0, 0)


_COMPONENT = st.lists(st.sampled_from(["a", "b", "*", "?", "[ab]", "[!a]", "**"]), min_size=1,
                      max_size=5).map("".join)  # fmt: skip
_GLOB = st.lists(st.one_of(_COMPONENT, st.just("**")), min_size=1, max_size=4).map("/".join)
_PATH = st.lists(st.text("ab", min_size=1, max_size=6), min_size=1, max_size=4).map("/".join)


@settings(max_examples=400, deadline=None)
@given(_GLOB, _PATH)
def test_glob_regex_matches_like_the_brute_force(glob: str, path: str):
    regex = _glob_regex(glob)
    assume(regex is not None)
    assert bool(re.match(regex + r"\Z", path, re.DOTALL)) == reference_match(glob, path)


def test_backtracking_glob_is_linear_and_build_finishes(tmp_path: Path):
    """`*a` x 24 then `*b` against 250-byte names of `a`: exponential for a backtracking
    translation (8 stars against 40 bytes took 1.3 s CPU), instant now; the build whose change
    detection asks every directory completes and keeps the control file."""
    rules = parse_ignore("*a" * 24 + "*b\n**/x/**/y/**/z\n")
    assert rules[0][0].match("a" * 250) is None and rules[0][0].match("a" * 30 + "b")
    assert rules[1][0].match("x/y/z") is None  # two inner `**`: decided as "not ignored"
    root = make_case(tmp_path, "gitignore_regex")
    env = cli_env(tmp_path)
    built = maguyva(root, "index", "--modalities", "text", env=env, timeout=300)
    assert built.returncode == 0, built.stderr
    assert control_found(root, env)


# -- content: 100,000-deep nesting in every grammar ---------------------------------------


@pytest.mark.slow
def test_deep_nesting_in_every_grammar_is_extracted_within_budget():
    """Each grammar's deep file (brackets, calls, ifs 100,000 deep) is parsed and extracted
    with status ok, no exception, inside the per-file budget."""
    for rel, (language, text) in DEEP.items():
        result = extract_source(rel, language, text.encode())
        assert result.status == "ok", (rel, result.detail)
        assert result.chunks, rel


def test_deep_calls_and_functions_are_extracted():
    """100,000 nested calls: the query cursor took minutes in one uninterruptible call (61 s
    at 100,000 nested functions) before `MAX_QUERY_DEPTH`; 100,000 nested functions keep
    `MAX_NESTING` of them (qualified names grew quadratically: 20,000 deep took 74 s)."""
    language, text = DEEP["deep_call.py"]
    result = extract_source("deep_call.py", language, text.encode())
    assert result.status == "ok" and result.counts[2] > 0, result.detail  # the outer calls
    deep = b"function f(){" * 100_000 + b"}" * 100_000 + b"\nfunction after() { g(); }\n"
    result = extract_source("deep_defs.js", "javascript", deep)
    assert result.status == "ok", result.detail
    names = [d.qualified_name for d in result.extraction.definitions]
    assert len(names) == MAX_NESTING + 1 and "after" in names
    assert max(len(n) for n in names) == len(".".join(["f"] * MAX_NESTING))


@pytest.mark.slow
def test_deep_nesting_repository_indexes_and_answers(tmp_path: Path):
    root = make_case(tmp_path, "deep_nesting")
    env = cli_env(tmp_path)
    built = maguyva(root, "index", "--modalities", "text,structural,graph", env=env,
                    timeout=600)  # fmt: skip
    assert built.returncode == 0 and "internal error" not in built.stderr, built.stderr
    assert control_found(root, env)


def test_status_does_not_open_a_large_file_swapped_for_a_fifo(tmp_path: Path):
    """`maguyva status` re-reads the indexed files over the size cap (generated or not): one
    replaced by a FIFO after the build used to block it forever in `open`."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "control.py").write_text(f"def {CONTROL_NAME}():\n    return 1\n")
    (root / "big.py").write_text("x = 1\n" + f"# {'a' * 80}\n" * 13_000)  # 1.1 MB
    env = cli_env(tmp_path)
    built = maguyva(root, "index", "--modalities", "text", env=env, timeout=300)
    assert built.returncode == 0, built.stderr
    (root / "big.py").unlink()
    os.mkfifo(root / "big.py")
    status = maguyva(root, "status", env=env, timeout=120)  # raises TimeoutExpired on a hang
    assert status.returncode == 0, status.stderr
    assert "over the size cap" in status.stdout
