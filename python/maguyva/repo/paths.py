"""Root confinement: every path a caller hands Maguyva must stay inside the repository root.

One function decides for every entry point (MCP, CLI, Python API), so the refusal is the same
everywhere: `..` that climbs out, absolute paths, symlinks whose target lies outside, and a
sibling directory that merely shares the root's name as a prefix (`/repo` vs `/repo-old`) all
raise `PathEscapeError` with one message that does not reveal whether the target exists.

The check compares *resolved* paths component by component (`Path.is_relative_to`), never
string prefixes, which is what the sibling case needs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from maguyva.errors import BadQueryError, PathEscapeError


def escape_error(path: str | os.PathLike[str]) -> PathEscapeError:
    """The single refusal every entry point raises."""
    return PathEscapeError(f"{os.fspath(path)!r}: path is outside the repository root")


def resolve_root(root: str | os.PathLike[str]) -> Path:
    """The canonical root (symlinks resolved), so comparisons use one spelling."""
    return Path(os.path.realpath(os.fspath(root)))


def confine(
    root: str | os.PathLike[str], path: str | os.PathLike[str], *, allow_absolute: bool = False
) -> Path:
    """Resolve `path` (relative to `root`) and return it if it stays inside `root`.

    Relative paths are joined to the root; absolute ones are refused unless `allow_absolute`
    (the CLI allows an absolute path that lies inside the root, as ripgrep users expect; MCP
    and the Python API take root-relative paths only). Symlinks are followed before the check.
    """
    text = os.fspath(path)
    if not isinstance(text, str):
        raise BadQueryError("paths must be text")
    if "\x00" in text:
        raise BadQueryError("path contains a NUL byte")
    real_root = resolve_root(root)
    if os.path.isabs(text) and not allow_absolute:
        raise escape_error(text)
    candidate = Path(os.path.realpath(os.path.join(real_root, text)))
    if not inside(real_root, candidate):
        raise escape_error(text)
    return candidate


def inside(real_root: str | os.PathLike[str], real_path: str | os.PathLike[str]) -> bool:
    """The one comparison: is the resolved `real_path` the resolved root or below it?

    Both must already be real paths (`resolve_root`, `os.path.realpath`, a descriptor's
    `/proc/self/fd` link); components are compared, never string prefixes."""
    return Path(real_path).is_relative_to(Path(real_root))


def contained_paths(root: str | os.PathLike[str], rels: Iterable[str]) -> dict[str, bool]:
    """`contained` for many indexed paths of one answer, the root resolved once: the same
    check per path (a NUL byte or an absolute path is refused, the path's real path must be
    the root or below it), without a second `realpath` and a `pathlib` object per path (a
    common literal answers with hundreds of files). A plainly spelled path whose every
    component exists and is no link is below the root as it is (`_core.plain_paths`: one
    native call, each directory `lstat`ed once, as `realpath` would with one `lstat` per
    component of the whole path); any other is left to `realpath`."""
    from maguyva import _core  # the native module: not for the client's imports

    real_root = os.fspath(resolve_root(root))
    below = real_root.rstrip(os.sep) + os.sep
    verdict: dict[str, bool] = {}
    asked: list[str] = []
    for rel in rels:
        if rel in verdict:
            continue
        if not isinstance(rel, str) or "\x00" in rel or os.path.isabs(rel):
            verdict[rel] = False
            continue
        verdict[rel] = True  # its real path is the root joined with it, unless said below
        asked.append(rel)
    posix = os.sep == "/" and not os.altsep
    plain = _core.plain_paths(below, asked) if posix else [False] * len(asked)
    for rel, is_plain in zip(asked, plain, strict=True):
        if not is_plain:
            real = os.path.realpath(os.path.join(real_root, rel))
            verdict[rel] = real == real_root or real.startswith(below)
    return verdict


def contained(root: str | os.PathLike[str], rel: str) -> bool:
    """True when the root-relative `rel` (an indexed path about to be answered with) still
    resolves inside `root`: every output path is checked with this before it is shown, so a
    file swapped for a symlink after indexing is not answered from."""
    try:
        confine(root, rel)
    except (PathEscapeError, BadQueryError):
        return False
    return True


def relative(root: str | os.PathLike[str], path: str | os.PathLike[str], **kw: bool) -> str:
    """`confine`, then the root-relative POSIX spelling the index uses ("" for the root)."""
    resolved = confine(root, path, **kw)
    rel = resolved.relative_to(resolve_root(root))
    return "" if rel == Path(".") else PurePosixPath(*rel.parts).as_posix()


def under(rel_path: str, prefixes: list[str]) -> bool:
    """True when the root-relative `rel_path` is one of `prefixes` or inside one of them."""
    for prefix in (p.rstrip("/") for p in prefixes):
        if not prefix or rel_path == prefix or rel_path.startswith(prefix + "/"):
            return True
    return False
