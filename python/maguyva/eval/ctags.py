"""Universal Ctags as an independent source of definitions (ground truth nobody here wrote).

Used by the query generator (definition queries) and to turn the hand-written query sets'
answer symbols ("sessions.py: SessionRedirectMixin.rebuild_auth") into line ranges.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from maguyva.errors import MaguyvaError

CTAGS_KINDS = ("class", "function", "member")


@dataclass(frozen=True, slots=True)
class Tag:
    """One definition: path relative to the root, 1-based inclusive lines."""

    name: str
    path: str
    line: int
    end: int
    kind: str
    scope: str = ""

    @property
    def qualified(self) -> str:
        return f"{self.scope}.{self.name}" if self.scope else self.name


def ctags_binary() -> str:
    found = shutil.which("ctags")
    if not found:
        raise MaguyvaError("Universal Ctags is not installed (apt-get install universal-ctags)")
    return found


def run_ctags(root: Path, languages: str = "Python") -> list[Tag]:
    """Every class, function and method under `root` that ctags knows the end line of."""
    proc = subprocess.run(
        [ctags_binary(), "--output-format=json", "--fields=+nKeZ", "-R", "--sort=no",
         f"--languages={languages}", "-f", "-", "."],
        cwd=root, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    if proc.returncode != 0:
        raise MaguyvaError(f"ctags failed: {proc.stderr.strip()[-300:]}")
    tags: list[Tag] = []
    for line in proc.stdout.splitlines():
        try:
            raw = json.loads(line)
        except ValueError:
            continue
        if raw.get("_type") != "tag" or raw.get("kind") not in CTAGS_KINDS or "end" not in raw:
            continue
        tags.append(Tag(raw["name"], raw["path"].removeprefix("./"), int(raw["line"]),
                        int(raw["end"]), raw["kind"], raw.get("scope", "")))  # fmt: skip
    return tags


def resolve_symbol(tags: list[Tag], path: str, symbol: str) -> list[Tag]:
    """The tags of `symbol` (qualified as Scope.name, or a bare name) in `path`."""
    found = [t for t in tags if t.path == path and t.qualified == symbol]
    if not found:
        raise MaguyvaError(f"{path}: ctags knows no definition {symbol!r}")
    return found
