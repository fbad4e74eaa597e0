"""Root confinement: the escape matrix, allowed paths, and a property test against an
independent resolver over a tree with known symlinks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from interfaces_corpus import COMPONENTS, escape_matrix, make_corpus, oracle_inside

from maguyva.errors import BadQueryError, PathEscapeError
from maguyva.repo.paths import confine, contained, contained_paths, relative, under


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return make_corpus(tmp_path_factory.mktemp("paths"))


def test_escape_matrix_is_refused_with_one_message(root: Path):
    for path in escape_matrix(root):
        with pytest.raises(PathEscapeError) as info:
            confine(root, path, allow_absolute=True)
        assert str(info.value) == f"{path!r}: path is outside the repository root"


def test_absolute_paths_are_refused_unless_allowed(root: Path):
    inside = str(root / "textwrap.py")
    with pytest.raises(PathEscapeError):
        confine(root, inside)
    assert confine(root, inside, allow_absolute=True) == root / "textwrap.py"


def test_paths_inside_the_root_resolve(root: Path):
    assert relative(root, "textwrap.py") == "textwrap.py"
    assert relative(root, "./pkg/../textwrap.py") == "textwrap.py"
    assert relative(root, "link_in/__init__.py") == "pkg/__init__.py"  # symlink inside root
    assert relative(root, ".") == ""
    assert relative(root, "../repo/pkg") == "pkg"  # leaves and re-enters: resolves inside
    assert relative(root, "missing/file.py") == "missing/file.py"  # existence is not checked


def test_root_given_through_a_symlink(root: Path, tmp_path: Path):
    alias = tmp_path / "alias"
    os.symlink(root, alias)
    assert relative(alias, "pkg/__init__.py") == "pkg/__init__.py"
    with pytest.raises(PathEscapeError):
        confine(alias, "../outside/secret.txt")


def test_nul_byte_is_a_bad_query(root: Path):
    with pytest.raises(BadQueryError):
        confine(root, "text\x00wrap.py")


def test_under():
    assert under("pkg/a.py", ["pkg"]) and under("pkg", ["pkg/"]) and under("x", [""])
    assert not under("pkg2/a.py", ["pkg"])


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(st.sampled_from(COMPONENTS), min_size=1, max_size=7), absolute=st.booleans())
def test_confine_matches_the_oracle(tmp_path_factory, parts: list[str], absolute: bool):
    root = _ROOT.get("root") or _ROOT.setdefault(
        "root", make_corpus(tmp_path_factory.mktemp("prop"))
    )
    path = ("/" if absolute else "") + "/".join(parts)
    absolute = path.startswith("/")  # a leading empty component makes it absolute too
    expected = oracle_inside(root, path)
    try:
        resolved = confine(root, path, allow_absolute=True)
    except PathEscapeError:
        assert not expected, path
        return
    assert expected, path
    assert resolved.is_relative_to(root)
    with pytest.raises(PathEscapeError) if absolute else _nothing():
        confine(root, path)  # without allow_absolute, any absolute path is refused


@settings(max_examples=300, deadline=None)
@given(paths=st.lists(st.lists(st.sampled_from(COMPONENTS), min_size=1, max_size=6), max_size=8))
def test_contained_paths_agrees_with_contained(tmp_path_factory, paths: list[list[str]]):
    """The batch check of one answer's paths (root resolved once, string comparison of real
    paths) says what the one-path check says, for escapes, links and absolute paths alike."""
    root = _ROOT.get("root") or _ROOT.setdefault(
        "root", make_corpus(tmp_path_factory.mktemp("prop"))
    )
    rels = ["/".join(parts) for parts in paths] + [str(root / "textwrap.py"), "a\x00b"]
    rels += [str(p) for p in escape_matrix(root)]
    assert contained_paths(root, rels) == {rel: contained(root, rel) for rel in rels}


_ROOT: dict[str, Path] = {}


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
