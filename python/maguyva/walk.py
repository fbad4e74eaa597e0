"""Select the files of a repository to index. (Interim pure-Python walker; the text-modality
work replaces its internals with the Rust `ignore`-based walker. The interface stays.)"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .languages import detect_language
from .model import SourceFile

DEFAULT_MAX_FILE_BYTES = 1 << 20


@dataclass(slots=True)
class WalkResult:
    """The selected files (sorted by path) and the skipped ones, counted by reason."""

    files: list[SourceFile]
    skipped: dict[str, int] = field(default_factory=dict)
    skipped_files: list[tuple[str, str]] = field(default_factory=list)


def walk_repository(root: Path, config: dict | None = None) -> WalkResult:
    """List indexable files under `root`: git's view when it is a git work tree."""
    config = config or {}
    max_bytes = int(config.get("max_file_bytes", DEFAULT_MAX_FILE_BYTES))
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-co", "--exclude-standard", "-z"],
            capture_output=True,
            check=True,
        ).stdout
        candidates = [p for p in out.decode("utf-8", "replace").split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        candidates = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in filenames:
                if not name.startswith("."):
                    rel = os.path.relpath(os.path.join(dirpath, name), root)
                    candidates.append(rel.replace(os.sep, "/"))
    result = WalkResult(files=[])
    for rel in sorted(candidates):
        full = root / rel

        def skip(reason: str, rel: str = rel) -> None:
            result.skipped[reason] = result.skipped.get(reason, 0) + 1
            result.skipped_files.append((rel, reason))

        try:
            if full.is_symlink() or not full.is_file():
                skip("not_regular")
                continue
            st = full.stat()
            if st.st_size > max_bytes:
                skip("too_large")
                continue
            with open(full, "rb") as fh:
                head = fh.read(8192)
        except OSError:
            skip("unreadable")
            continue
        if b"\0" in head:
            skip("binary")
            continue
        result.files.append(SourceFile(rel, st.st_size, st.st_mtime_ns, detect_language(rel)))
    return result
