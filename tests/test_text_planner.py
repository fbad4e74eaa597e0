"""The trigram planner's class windows (`[0-9a-f]{8}-[0-9a-f]{4}`: OR of 256 trigrams on each
side of the dash) against a brute-force `re` oracle on real code: every file that matches
is found, whatever the case mode (a dropped trigram alternative loses files)."""

from __future__ import annotations

import random
import re
import sysconfig
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maguyva import _core
from maguyva.errors import BadQueryError
from maguyva.repo.walk import walk_repository

STDLIB = Path(sysconfig.get_paths()["stdlib"])


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The standard library's top-level modules (uuid, ipaddress, hashlib, ... hold hex, MAC
    and version strings), plus files with one identifier each of every hex digit around a
    separator, so that each trigram alternative of a window is the only one in some file."""
    root = tmp_path_factory.mktemp("planner")
    for src in STDLIB.glob("*.py"):
        (root / "lib" / src.name).parent.mkdir(parents=True, exist_ok=True)
        (root / "lib" / src.name).write_bytes(src.read_bytes())
    rng = random.Random(3)
    hexd = "0123456789abcdef"
    for i, (a, b) in enumerate((a, b) for a in hexd for b in hexd):
        left = "".join(rng.choice(hexd) for _ in range(7)) + a
        right = b + "".join(rng.choice(hexd) for _ in range(3))
        sep = "-:"[i % 2]
        text = f"id = '{left.upper() if i % 3 == 0 else left}{sep}{right}'\n"
        (root / "ids" / f"{a}{b}.txt").parent.mkdir(parents=True, exist_ok=True)
        (root / "ids" / f"{a}{b}.txt").write_text(text)
    return root


@pytest.fixture(scope="module")
def index(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> _core.TextIndex:
    out = tmp_path_factory.mktemp("planner_idx") / "text"
    files = [(f.path, []) for f in walk_repository(corpus).files]
    _core.build_text_index(str(corpus), str(out), files)
    return _core.TextIndex(str(out))


@pytest.fixture(scope="module")
def contents(corpus: Path, index: _core.TextIndex) -> dict[str, bytes]:
    return {p: (corpus / p).read_bytes() for p in index.paths()}


def _ours(index: _core.TextIndex, pattern: str, case: str) -> tuple[set[str], int]:
    files, candidates, _ = index.search(
        pattern, regex=True, case=case, max_lines=1 << 60, max_lines_per_file=1, count_all=False
    )
    return {f[0] for f in files}, candidates


def _oracle(contents: dict[str, bytes], pattern: str, case: str) -> set[str]:
    flags = re.MULTILINE | (re.IGNORECASE if case == "insensitive" else 0)
    rx = re.compile(pattern.encode(), flags)
    return {p for p, data in contents.items() if rx.search(data)}


@pytest.mark.parametrize("case", ["sensitive", "insensitive", "smart"])
def test_hex_windows_find_every_file(
    index: _core.TextIndex, contents: dict[str, bytes], case: str
) -> None:
    pattern = "[0-9a-f]{8}[-:][0-9a-f]{4}"
    oracle_case = "sensitive" if case == "sensitive" else "insensitive"
    got, _ = _ours(index, pattern, case)
    want = _oracle(contents, pattern, oracle_case)
    assert got == want
    # Every one of the 256 digit pairs around the separator is some file's only match
    # (a third of the identifiers are upper case: case-sensitive, some of those do not match).
    ids = {p for p in want if p.startswith("ids/")}
    assert len(ids) == 256 if case != "sensitive" else 170 <= len(ids) < 256
    # The windows are a filter (one separator: 256 trigrams a window): fewer candidates than
    # documents, and every file with a dashed identifier is found.
    dashed, candidates = _ours(index, pattern.replace("[-:]", "-"), case)
    assert candidates < len(contents) / 2
    assert dashed == _oracle(contents, pattern.replace("[-:]", "-"), oracle_case)
    assert len({p for p in dashed if p.startswith("ids/")}) >= 85


CLASSES = ["[0-9]", "[0-9a-f]", "[a-f]", "[xyz]", "[-:]", "[0-9A-F]"]
PIECES = ["-", ":", "0", "a", "id", "= '"]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    parts=st.lists(
        st.tuples(
            st.sampled_from(CLASSES + PIECES),
            st.sampled_from(["", "{2}", "{3}", "{4}", "{5}", "{2,}", "+", "?", "*"]),
        ),
        min_size=2,
        max_size=6,
    ),
    case=st.sampled_from(["sensitive", "insensitive"]),
)
def test_class_runs_equal_brute_force(
    index: _core.TextIndex,
    contents: dict[str, bytes],
    parts: list[tuple[str, str]],
    case: str,
) -> None:
    pattern = "".join(p if not q else f"(?:{p}){q}" for p, q in parts)
    if re.fullmatch(pattern, ""):  # every line holds an empty match: refused, clearly
        with pytest.raises(BadQueryError, match="empty string"):
            _ours(index, pattern, case)
        return
    got, _ = _ours(index, pattern, case)
    assert got == _oracle(contents, pattern, case), pattern
