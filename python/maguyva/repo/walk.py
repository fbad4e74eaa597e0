"""Select the files of a repository to index, with the Rust walker (ripgrep's `ignore` crate).

Rules, in the order a file meets them: `.gitignore` at every level, `.git/info/exclude`, git's
global excludes file and `.maguyvaignore` (gitignore syntax) exclude it; hidden files and
directories are skipped; symlinks are not followed unless `follow_symlinks` (loops are then
detected and reported; a link whose real path leaves the root is never followed out of it:
`outside_root`); FIFOs, sockets and devices are never opened (`not_regular`); files over
`max_file_bytes` are skipped unless an `allow_large` glob matches or they are source files
within `hard_max_file_bytes` (`large.py`); binary files (a NUL byte) and files with an implausible number of distinct trigrams
(minified bundles, encoded blobs) are skipped. Every skipped file is counted by reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from maguyva import _core
from maguyva.errors import ConfigError, MaguyvaError
from maguyva.model import SourceFile
from maguyva.repo import large, reader
from maguyva.repo.languages import detect_language

DEFAULT_MAX_FILE_BYTES = 1 << 20
DEFAULT_MAX_TRIGRAMS: int = _core.DEFAULT_MAX_TRIGRAMS
SKIP_REASONS = (
    "too_large",
    "binary",
    "too_many_trigrams",
    "unreadable",
    "not_regular",
    "symlink_loop",
    "outside_root",
)


@dataclass(slots=True)
class WalkResult:
    """The selected files (sorted by path) and the skipped ones, counted by reason."""

    files: list[SourceFile]
    skipped: dict[str, int] = field(default_factory=dict)
    skipped_files: list[tuple[str, str]] = field(default_factory=list)


def _config_value(config: dict[str, Any], key: str, kind: type, default: Any) -> Any:
    value = config.get(key, default)
    if kind is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"walk config {key!r} must be true or false, got {value!r}")
        return value
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"walk config {key!r} must be an integer >= 0, got {value!r}")
        return value
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"walk config {key!r} must be a list of glob strings, got {value!r}")
    return list(value)


def walk_repository(root: Path, config: dict | None = None) -> WalkResult:
    """List the indexable files under `root`.

    Config keys: `max_file_bytes` (default 1 MiB), `allow_large` (globs exempt from the size
    cap), `hard_max_file_bytes` (16 MiB: source files over the cap are indexed up to it),
    `follow_symlinks` (default False), `max_trigrams` (default 20,000 distinct).
    """
    config = config or {}
    root = Path(root)
    if not root.is_dir():
        raise ConfigError(f"{root} is not a directory")
    max_bytes = _config_value(config, "max_file_bytes", int, DEFAULT_MAX_FILE_BYTES)
    allow = _config_value(config, "allow_large", list, [])
    follow = _config_value(config, "follow_symlinks", bool, False)
    max_trigrams = _config_value(config, "max_trigrams", int, DEFAULT_MAX_TRIGRAMS)
    try:
        files, skipped = _core.walk_files(
            str(root),
            max_file_bytes=max_bytes,
            allow_large=allow,
            follow_symlinks=follow,
            max_trigrams=max_trigrams,
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    skipped, admitted = _admit_large(root, skipped, config)
    files = sorted([*files, *admitted])
    result = WalkResult(
        files=[SourceFile(p, size, mtime, detect_language(p)) for p, size, mtime in files],
        skipped_files=list(skipped),
    )
    for _, reason in skipped:
        result.skipped[reason] = result.skipped.get(reason, 0) + 1
    return result


def _admit_large(
    root: Path, skipped: list[tuple[str, str]], config: dict[str, Any]
) -> tuple[list[tuple[str, str]], list[tuple[str, int, int]]]:
    """Source files the walker refused for their size only, taken back up to the hard limit
    (`repo/large.py`); the same rule as `changes.classify`."""
    if not any(reason == "too_large" for _, reason in skipped):
        return skipped, []
    _config_value(config, "hard_max_file_bytes", int, large.DEFAULT_HARD_MAX_FILE_BYTES)
    kept: list[tuple[str, str]] = []
    admitted: list[tuple[str, int, int]] = []
    for path, reason in skipped:
        if reason == "too_large":
            try:
                st = (root / path).stat()
                ok = large.admits(path, st.st_size, config)
                follow = bool(config.get("follow_symlinks", False))
                data = reader.read_bytes(root, path, follow_symlinks=follow) if ok else b""
            except (OSError, MaguyvaError):  # special file, a link out of the root, gone
                ok, data = False, b""
            if ok and b"\0" not in data:
                admitted.append((path, len(data), st.st_mtime_ns))
                continue
        kept.append((path, reason))
    return kept, admitted
