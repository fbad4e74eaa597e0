"""Hostile repositories: content, names, ignore rules, config files and `.git` directories
written to make an indexer fall over (deep nesting, huge lines, pathological globs, names with
control bytes, a `.git/config` that names programs to run). Each case writes into a root that
also holds `control.py`, whose function must still be indexed and answered afterwards.

Used by `tests/test_hostile.py` and `benches/hostile_probes.py` (the table of docs/trust.md).
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CONTROL_NAME = "control_marker_fn"
CONTROL = f'''"""A file of ordinary code beside the hostile ones: it must stay indexed."""


def {CONTROL_NAME}(value):
    return value + 1
'''
DEPTH = 100_000
MARK = "PWNED"
"""What a program named by a hostile `.git/config` writes, to say it ran."""


@dataclass(frozen=True, slots=True)
class Case:
    """One hostile repository: `write(root)` adds the hostile part; `slow` ones are scale."""

    name: str
    what: str
    write: Callable[[Path], None]
    slow: bool = False


def _put(root: Path, rel: str | bytes, data: bytes | str) -> None:
    path = os.path.join(os.fsencode(root), os.fsencode(rel))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data.encode() if isinstance(data, str) else data)


def nested(open_: str, close: str, depth: int = DEPTH, inner: str = "1") -> str:
    return open_ * depth + inner + close * depth


# Deep nesting, one file per grammar: brackets, parentheses, blocks and ifs as each allows.
DEEP: dict[str, tuple[str, str]] = {
    "deep.py": ("python", "x = " + nested("(", ")") + "\ny = " + nested("[", "]") + "\n"),
    "deep_call.py": ("python", "x = " + nested("f(", ")") + "\n"),
    "deep.js": ("javascript", "const x = " + nested("[", "]") + ";\n"
                "function g() {" + nested("if (a) {", "}", inner="h();") + "}\n"),
    "deep.ts": ("typescript", "let x = " + nested("(", ")") + ";\n"),
    "deep.tsx": ("tsx", "const x = " + nested("f(", ")") + ";\n"),
    "deep.go": ("go", "package p\nfunc g() {" + nested("if a {", "}", inner="h()") + "}\n"),
    "deep.rs": ("rust", "fn g() {" + nested("if a {", "}", inner="h()") + "}\n"
                "fn m() { v!" + nested("(", ")") + "; }\n"),
    "deep.java": ("java", "class C { void g() {" + nested("if (a) {", "}", inner="h();")
                  + "} }\n"),
    "deep.c": ("c", "int g(void) {" + nested("if (a) {", "}", inner="h();") + "}\n"),
    "deep.cpp": ("cpp", "int g() { return " + nested("f(", ")") + "; }\n"),
    "deep.cs": ("csharp", "class C { int G() { return " + nested("(", ")") + "; } }\n"),
    "deep.rb": ("ruby", "x = " + nested("[", "]") + "\n"),
    "deep.php": ("php", "<?php\n$x = " + nested("f(", ")") + ";\n"),
    "deep.kt": ("kotlin", "fun g() = " + nested("f(", ")") + "\n"),
    "deep.swift": ("swift", "let x = " + nested("(", ")") + "\n"),
    "deep.scala": ("scala", "object O { val x = " + nested("f(", ")") + " }\n"),
    "deep.sh": ("bash", "x=" + nested("$(", ")", depth=20_000, inner="echo") + "\n"),
}  # fmt: skip


def write_deep(root: Path) -> None:
    for rel, (_, text) in DEEP.items():
        _put(root, rel, text)


def write_long_line(root: Path) -> None:
    """A 50 MB single line (over the hard limit: skipped) and one at the hard limit (16 MiB)."""
    _put(root, "huge_line.py", b"x = 1; " * (50_000_000 // 7))
    _put(root, "at_limit.py", b"a = 1; " * ((16 << 20) // 7) + b"\n")


def write_million_lines(root: Path) -> None:
    _put(root, "lines.py", b"x\n" * 1_000_000)


def write_minified(root: Path) -> None:
    body = ";".join(f"var v{i}=function(a,b){{return a*{i}+b}}" for i in range(60_000))
    _put(root, "bundle.min.js", body)  # ~2.5 MB in one line


def write_identical(root: Path, count: int = 5_000) -> None:
    text = "def same(a, b):\n    return a + b\n\n\nclass Same:\n    pass\n"
    for i in range(count):
        _put(root, f"copies/c{i // 500}/same{i}.py", text)


def write_empty_files(root: Path, count: int = 200_000) -> None:
    for d in range(count // 1000):
        base = root / "empty" / f"d{d}"
        base.mkdir(parents=True)
        for i in range(1000):
            (base / f"e{i}.py").touch()


def write_gitignore_many(root: Path) -> None:
    """10,000 patterns, and directories for them to be matched against."""
    rules = [f"build{i}/**/*.o\n!keep{i}\n/gen{i}*\n" for i in range(3_400)]
    _put(root, ".gitignore", "".join(rules))
    for d in range(200):
        _put(root, f"tree/d{d}/sub/m.py", f"def f{d}():\n    return {d}\n")


def write_gitignore_pathological(root: Path) -> None:
    """Globs that make a backtracking regex engine explode on a long directory name."""
    stars = "*a" * 24 + "*b"
    _put(root, ".gitignore", f"{stars}\n**/{stars}/**\n[[[[[[\n\\\n!\n/\n")
    for i in range(4):
        _put(root, f"{'a' * 200}{i}/{'a' * 200}/m.py", "def deep_a():\n    return 1\n")


def write_toml_deep(root: Path) -> None:
    _put(root, ".maguyva.toml", "limit = 3\nx = " + nested("[", "]", inner="1") + "\n")


def write_toml_huge(root: Path) -> None:
    """A 60 MB `pyproject.toml` (a table of 2 million keys) and a deep inline table."""
    lines = "".join(f"k{i} = {i}\n" for i in range(2_000_000))
    _put(root, "pyproject.toml", "[project]\nname = 'x'\n[tool.other]\n" + lines)
    _put(root, "sub/pyproject.toml", "a = " + nested("{b = ", "}", depth=50_000) + "\n")


NAMES: dict[str | bytes, str] = {
    "new\nline.py": "def in_newline():\n    return 1\n",
    "esc\x1b[31mred\x1b]0;title\x07.py": "def in_escape():\n    return 1\n",
    b"bad\xff\xfeutf8.py": "def in_invalid_utf8():\n    return 1\n",
    "bidi\u202eyp.txt.py": "def in_bidi_name():\n    return 1\n",
    "tab\tand\rcr.py": "def in_tab_cr():\n    return 1\n",
}


def write_names(root: Path) -> None:
    for rel, text in NAMES.items():
        _put(root, rel, text)


def write_long_paths(root: Path) -> None:
    """A path of ~3,900 bytes (15 components of 255) and one component at the 255 limit."""
    part = "p" * 250
    _put(root, "/".join([part] * 15) + "/long_path.py", "def in_long_path():\n    return 1\n")
    _put(root, "n" * 252 + ".py", "def in_long_name():\n    return 1\n")


TROJAN = (
    "def is_admin(user):\n"
    '    access_level = "user\u202e \u2066# check if admin\u2069 \u2066"\n'
    '    if access_level != "user\u202e \u2066# admin only\u2069 \u2066":\n'
    "        return True\n"
    "    return False\n"
)


def write_trojan(root: Path) -> None:
    _put(root, "trojan.py", TROJAN)


def _script(path: Path, marker: Path) -> str:
    path.write_text(f"#!/bin/sh\necho {MARK} \"$0\" >> '{marker}'\ncat >/dev/null 2>&1\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def write_git_hostile(root: Path, marker: Path | None = None) -> None:
    """A repository (as an unpacked archive brings it: the user owns `.git/config`) whose
    config names programs git would run for an indexer's read-only commands: an fsmonitor
    hook, a clean filter for every file, an external diff, a pager, hooks; `marker` (default
    `root/../pwned.log`) collects what ran."""
    marker = marker or root.parent / "pwned.log"
    git = ["git", "-C", str(root), "-c", "core.hooksPath=/dev/null"]
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    subprocess.run([*git, "init", "-q"], check=True, env=env)
    for i in range(80):  # above changes.GIT_THRESHOLD: an update asks git for digests
        _put(root, f"pkg/m{i}.py", f"def f{i}():\n    return {i}\n")
    _put(root, ".gitattributes", "* filter=evil diff=evil\n")
    subprocess.run([*git, "add", "-A"], check=True, env=env)
    ident = ["-c", "user.name=h", "-c", "user.email=h@h"]
    subprocess.run([*git, *ident, "commit", "-qm", "x"], check=True, env=env)
    tools = root / ".git" / "evil"
    tools.mkdir()
    prog = _script(tools / "prog", marker)
    for key, value in (("core.fsmonitor", prog), ("filter.evil.clean", prog),
                       ("filter.evil.smudge", prog), ("filter.evil.process", prog),
                       ("diff.evil.command", prog), ("diff.external", prog),
                       ("core.pager", prog), ("core.sshCommand", prog),
                       ("core.hooksPath", str(tools))):  # fmt: skip
        subprocess.run(["git", "-C", str(root), "config", key, value], check=True, env=env)
    for hook in ("post-checkout", "post-index-change", "pre-commit", "reference-transaction",
                 "fsmonitor-watchman"):  # fmt: skip
        _script(tools / hook, marker)
    # racy entries: git re-reads (and filters) a file whose mtime is not older than its index
    for i in range(80):
        os.utime(root / f"pkg/m{i}.py")


def write_git_file_elsewhere(root: Path) -> None:
    """`.git` is a file naming a git directory outside the root (another repository's)."""
    other = root.parent / "other"
    other.mkdir(exist_ok=True)
    subprocess.run(["git", "-C", str(other), "init", "-q"], check=True)
    _put(other, "secret_elsewhere.py", "OTHER_SECRET = 'elsewhere'\n")
    _put(root, ".git", f"gitdir: {other / '.git'}\n")


CASES: dict[str, Case] = {
    c.name: c
    for c in (
        Case("deep_nesting", f"{DEPTH:,} nested brackets/calls/ifs, one file per grammar",
             write_deep),
        Case("long_line", "a 50 MB single line; a 16 MiB one at the hard limit", write_long_line),
        Case("million_lines", "a million 1-char lines (2 MB)", write_million_lines),
        Case("minified", "a 2.5 MB minified bundle, one line", write_minified),
        Case("identical", "5,000 identical files", write_identical),
        Case("empty_files", "200,000 empty files", write_empty_files, slow=True),
        Case("gitignore_many", "a .gitignore of 10,200 patterns", write_gitignore_many),
        Case("gitignore_regex", "backtracking globs (`*a*a...*b`) and 200-byte names",
             write_gitignore_pathological),
        Case("toml_deep", f"a .maguyva.toml nested {DEPTH:,} deep", write_toml_deep),
        Case("toml_huge", "a 60 MB pyproject.toml; a 50,000-deep inline table",
             write_toml_huge),
        Case("names", "file names with newline, ESC, invalid UTF-8, bidi, tab/CR", write_names),
        Case("long_paths", "a 3,900-byte path; a 255-byte name", write_long_paths),
        Case("trojan", "Trojan-source bidi controls in strings", write_trojan),
        Case("git_hostile", ".git/config naming fsmonitor, filters, pager, hooks",
             write_git_hostile),
        Case("git_file", "`.git` a file pointing to another repository", write_git_file_elsewhere),
    )
}  # fmt: skip


def make_case(base: Path, name: str) -> Path:
    """`base/repo` holding `control.py` and case `name`; returns the root."""
    root = Path(os.path.realpath(base)) / "repo"
    root.mkdir(parents=True)
    _put(root, "control.py", CONTROL)
    CASES[name].write(root)
    return root
