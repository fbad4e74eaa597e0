"""A small real repository for the interface tests (CLI, API, MCP): eight modules of the
CPython standard library copied into a temporary root, next to the traps of the path-escape
matrix (a sibling directory sharing the root's name as a prefix, symlinks out of the root)."""

from __future__ import annotations

import os
import shutil
import sysconfig
from pathlib import Path

MODULES = ("shlex", "textwrap", "fnmatch", "glob", "bisect", "heapq", "colorsys", "netrc")
CONFIG = 'modalities = ["text", "structural", "graph"]\n'


def make_corpus(base: Path) -> Path:
    """`base/repo` (indexable, with `.maguyva.toml`), `base/repo-sibling/secret.py`,
    `base/outside/secret.txt`, and symlinks `repo/link_out` -> outside, `repo/link_file` ->
    the outside secret, `repo/link_in` -> `repo/pkg`."""
    base = Path(os.path.realpath(base))
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    root = base / "repo"
    (root / "pkg").mkdir(parents=True)
    for name in MODULES:
        shutil.copy(stdlib / f"{name}.py", root / f"{name}.py")
    (root / "pkg" / "__init__.py").write_text(
        "from textwrap import dedent\n\n\ndef tidy(s):\n    return dedent(s).strip()\n"
    )
    (root / ".maguyva.toml").write_text(CONFIG)
    (base / "repo-sibling").mkdir()
    (base / "repo-sibling" / "secret.py").write_text("SIBLING_SECRET = 1\n")
    (base / "outside").mkdir()
    (base / "outside" / "secret.txt").write_text("OUTSIDE_SECRET\n")
    os.symlink(base / "outside", root / "link_out")
    os.symlink(base / "outside" / "secret.txt", root / "link_file")
    os.symlink("pkg", root / "link_in")
    return root


def escape_matrix(root: Path) -> list[str]:
    """Paths that must be refused everywhere (all resolve outside `root`)."""
    base = root.parent
    return [
        "../outside/secret.txt",
        "pkg/../../outside/secret.txt",
        "./../repo-sibling/secret.py",
        "../repo-sibling/secret.py",
        "link_out/secret.txt",
        "link_file",
        "link_in/../../outside/secret.txt",
        "/etc/passwd",
        str(base / "outside" / "secret.txt"),
        str(base / "repo-sibling" / "secret.py"),
        "textwrap.py/../../outside",
        "..",
    ]


COMPONENTS = ["..", ".", "", "pkg", "textwrap.py", "link_in", "link_out", "link_file", "repo",
              "repo-sibling", "outside", "secret.txt", "new"]  # fmt: skip
"""Path components for generated paths: climbs, the fixture's symlinks, re-entry by name."""


def oracle_inside(root: Path, path: str) -> bool:
    """Does `path` resolve inside `root`? Resolved component by component, with the fixture's
    three symlinks spelled out (an oracle independent of `os.path.realpath`)."""
    base = root.parent
    links = {
        (*root.parts, "link_in"): (*root.parts, "pkg"),
        (*root.parts, "link_out"): (*base.parts, "outside"),
        (*root.parts, "link_file"): (*base.parts, "outside", "secret.txt"),
    }
    current: tuple[str, ...] = ("/",) if path.startswith("/") else root.parts
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            current = current[:-1] if len(current) > 1 else current
            continue
        current = links.get((*current, part), (*current, part))
    return current[: len(root.parts)] == root.parts
