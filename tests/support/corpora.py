"""Real corpora for the tests: files of this interpreter's standard library, copied."""

from __future__ import annotations

import shutil
import sysconfig
from collections.abc import Iterable
from pathlib import Path

STDLIB = Path(sysconfig.get_paths()["stdlib"])


def copy_stdlib(root: Path, files: Iterable[str]) -> Path:
    """Copy the standard library's `files` (relative paths, `json/decoder.py`) under `root`,
    keeping their paths; returns `root`."""
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(STDLIB / rel, root / rel)
    return root
