"""A note for a tree whose own ignore rules leave most of it out: a source tarball that
carries a packager's `.gitignore` (Debian's kernel source ends with `/*` and `!/debian/`)
outside any git repository. The walker follows `.gitignore` files there too, so such a tree
indexes almost nothing, and without this note it would do so silently."""

from __future__ import annotations

from pathlib import Path

from maguyva.repo.ignore import IgnoreRules

_SHOWN = 5  # directory names named in the note


def ignored_root_note(root: Path) -> str | None:
    """One line when the root is not a git repository and its ignore rules leave out more
    than half of its top-level directories (at least two), else None."""
    if (root / ".git").exists():
        return None  # git would leave them out too: the rules are the repository's intent
    try:
        dirs = sorted(e.name for e in root.iterdir() if not e.name.startswith(".") and e.is_dir())
    except OSError:
        return None
    rules = IgnoreRules(root)
    ignored = [d for d in dirs if rules.ignored_dir(d)]
    if len(ignored) < 2 or 2 * len(ignored) <= len(dirs):
        return None
    names = ", ".join(ignored[:_SHOWN]) + (", ..." if len(ignored) > _SHOWN else "")
    return (
        f"note: ignore rules leave out {len(ignored)} of {len(dirs)} top-level directories "
        f"({names}) and {root} is not a git repository; a `!` rule in .maguyvaignore "
        "(e.g. `!/*/`) brings them back"
    )
