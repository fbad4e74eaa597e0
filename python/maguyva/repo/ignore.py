"""The walker's ignore rules for directories (`.gitignore`, `.maguyvaignore`, git's global
excludes), so that change detection records the directories the walker enters."""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

from maguyva.repo.git import run_git
from maguyva.repo.reader import read_bytes, read_regular

_Rule = tuple[re.Pattern[str], bool]  # (compiled pattern, negated)


def _component_tokens(glob: str) -> list[str | None]:
    """One path component's glob as tokens: None for a run of `*`, else a regex of one
    character (a literal, `?`, a class)."""
    out: list[str | None] = []
    i, n = 0, len(glob)
    while i < n:
        if glob[i] == "*":
            while i < n and glob[i] == "*":
                i += 1
            out.append(None)
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[":
            end = glob.find("]", i + 2 if glob.startswith("[!", i) or glob.startswith("[^", i)
                            else i + 1)  # fmt: skip
            if end < 0:
                out.append(re.escape("["))
                i += 1
                continue
            body = glob[i + 1 : end]
            negated = body[:1] in ("!", "^")
            body = body[1:] if negated else body
            body = body.replace("\\", "\\\\").replace("/", "")
            out.append(f"[^{body}/]" if negated else f"[{body}]")  # never a `/`
            i = end + 1
        elif glob[i] == "\\" and i + 1 < n:
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return out


def _component_regex(glob: str) -> str:
    """A component's glob as a regex that cannot backtrack badly: the fixed-width pieces
    between stars are matched at their first occurrence in atomic groups (as `fnmatch` does;
    exact, because no piece and no star crosses a `/`), so `*a*a*a*b` against a 255-byte name
    is linear instead of exponential."""
    pieces: list[str] = [""]
    for token in _component_tokens(glob):
        if token is None:
            pieces.append("")
        else:
            pieces[-1] += token
    if len(pieces) == 1:
        return pieces[0]
    middle = "".join(f"(?>[^/]*?{piece})" for piece in pieces[1:-1] if piece)
    return pieces[0] + middle + "[^/]*" + pieces[-1]


def _glob_regex(glob: str) -> str | None:
    """A gitignore glob (no leading `/`, no trailing `/`) as a regex over a relative path; None
    for one with more than one `**` before its last component (each can start at every `/`:
    the matching cost grows as the path's depth to that power)."""
    parts = glob.split("/")
    out: list[str] = []
    stars = 0
    for k, part in enumerate(parts):
        last = k == len(parts) - 1
        if part == "**":
            if last:
                out.append(".*")
                break
            stars += 1
            out.append("(?:.*/)?")
            continue
        out.append(_component_regex(part) + ("" if last else "/"))
    return None if stars > 1 else "".join(out)


def parse_ignore(text: str) -> list[_Rule]:
    """The rules of one gitignore-syntax file, in order (the last match wins)."""
    rules: list[_Rule] = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        while line.endswith(" ") and not line.endswith("\\ "):
            line = line[:-1]
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated or line.startswith(("\\!", "\\#")):  # a backslash escapes ! or #
            line = line[1:]
        line = line.rstrip("/")  # directory-only: we only ever ask about directories
        if not line:
            continue
        anchored = "/" in line
        glob = line.lstrip("/")
        if not anchored and not glob.startswith("**/"):
            glob = "**/" + glob
        regex = _glob_regex(glob)
        if regex is None:  # too costly to match: decide for "not ignored" (we descend more)
            regex = ".*" if negated else "(?!)"
        try:
            rules.append((re.compile(regex + r"\Z", re.DOTALL), negated))
        except re.error:
            continue  # a pattern we cannot read: it ignores nothing (we then descend more)
    return rules


@functools.lru_cache(maxsize=1)
def _global_excludes() -> Path | None:
    """Git's global excludes file (`core.excludesFile`, else `$XDG_CONFIG_HOME/git/ignore`)."""
    found = run_git(None, "config", "--global", "--path", "--get", "core.excludesFile",
                    timeout=10)  # fmt: skip
    out = found.decode(errors="replace").strip() if found is not None else ""
    if out:
        return Path(out).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path("~/.config").expanduser())
    return Path(xdg) / "git" / "ignore"


class IgnoreRules:
    """Is a directory ignored? The walker's precedence (ripgrep's `ignore` crate):
    `.maguyvaignore` files, then `.gitignore` files (in each, the deepest directory with a
    matching rule decides, and within a file the last matching rule), then
    `.git/info/exclude`, then git's global excludes. A whitelist (`!dir`) un-ignores.

    Used only to decide which directories the stat pass records: a wrong "not ignored" costs
    a few extra directories; ignore files above the repository root are not read."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._files: dict[str, list[_Rule]] = {}
        self._has_git: dict[str, bool] = {}

    def _rules(self, rel: str, path: Path | None = None) -> list[_Rule]:
        found = self._files.get(rel)
        if found is None:
            try:
                # the global excludes file is the user's own; the rest are the repository's
                data = read_regular(path) if path is not None else read_bytes(self.root, rel)
                found = parse_ignore(data.decode("utf-8", errors="replace"))
            except OSError:
                found = []
            self._files[rel] = found
        return found

    @staticmethod
    def _match(rules: list[_Rule], rel: str) -> bool | None:
        for pattern, negated in reversed(rules):
            if pattern.match(rel):
                return not negated
        return None

    def _git_here(self, d: str) -> bool:
        if d not in self._has_git:
            self._has_git[d] = (self.root / d / ".git" if d else self.root / ".git").exists()
        return self._has_git[d]

    def ignored_dir(self, d: str) -> bool:
        """Would the walker skip directory `d` (relative to the root)? Its parent is assumed
        not ignored (the stat pass only descends through directories the walker enters)."""
        bases = []
        parent = d.rpartition("/")[0] if "/" in d else ""
        while True:
            bases.append(parent)
            if not parent:
                break
            parent = parent.rpartition("/")[0]
        for name in (".maguyvaignore", ".gitignore"):
            for base in bases:
                rules = self._rules(f"{base}/{name}" if base else name)
                if rules:
                    decided = self._match(rules, d[len(base) + 1 :] if base else d)
                    if decided is not None:
                        return decided
                if name == ".gitignore" and self._git_here(base):
                    break  # a repository's root: parents' .gitignore files do not apply
        if self._git_here(""):
            decided = self._match(self._rules(".git/info/exclude"), d)
            if decided is not None:
                return decided
        excludes = _global_excludes()
        if excludes is not None:
            decided = self._match(self._rules("\0global", excludes), d)
            if decided is not None:
                return decided
        return False
