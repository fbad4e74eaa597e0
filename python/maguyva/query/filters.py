"""Filter values checked before a search: a language, a path glob or a definition kind that
no file or definition can match is refused in one sentence instead of answered with nothing
(ripgrep refuses an unknown type and a bad glob the same way). The Python API checks every
filter it is given (arguments and query syntax alike), so the CLI and MCP refuse the same
values; the CLI's flags keep their own wording (`-t 'x': unknown type`)."""

from __future__ import annotations

from maguyva.errors import BadQueryError
from maguyva.query.syntax import check_glob
from maguyva.repo.languages import EXTENSIONS

LANGUAGE_ALIASES = {
    "py": "python", "js": "javascript", "ts": "typescript", "rs": "rust", "rb": "ruby",
    "cs": "csharp", "c#": "csharp", "kt": "kotlin", "sh": "bash", "shell": "bash",
    "c++": "cpp", "cxx": "cpp", "golang": "go",
}  # fmt: skip


def normalize_language(name: str) -> str:
    """A language as `repo.languages` names it (`py` -> `python`), lower-cased."""
    word = name.strip().lower()
    return LANGUAGE_ALIASES.get(word, word)


def known_languages() -> list[str]:
    """Every language a file can be detected as (what a language filter can match)."""
    return sorted(set(EXTENSIONS.values()))


def check_language(name: str, label: str = "language", what: str = "language") -> str:
    """`name` normalized; BadQueryError naming the known ones when no file can be in it."""
    language = normalize_language(name)
    known = known_languages()
    if language not in known:
        raise BadQueryError(f"{label} {name!r}: unknown {what} (known: {', '.join(known)})")
    return language


def check_path_glob(glob: str, label: str = "path_glob") -> None:
    """Refuse a glob that is malformed (an unclosed character class) or can never match a
    root-relative path (empty, absolute, or with a `..` component)."""
    if not glob.strip():
        raise BadQueryError(f"{label}: empty glob")
    try:
        check_glob(glob)
    except BadQueryError as exc:
        raise BadQueryError(f"{label}: {exc}") from None
    if glob.startswith("/") or ".." in glob.split("/"):
        raise BadQueryError(f"{label} {glob!r}: globs match paths relative to the repository "
                            "root, which never start with '/' nor contain '..'")  # fmt: skip


def check_kind(kind: str, label: str = "kind") -> None:
    """Refuse a definition kind no extracted definition has (the families, their members
    and the aliases `def`, `fn`, `struct` ... are known)."""
    from maguyva.modalities.structural.symbols import KIND_ALIASES, KIND_FAMILIES

    kinds = {*KIND_FAMILIES, *KIND_ALIASES, *(k for f in KIND_FAMILIES.values() for k in f)}
    if kind.strip().lower() not in kinds:
        raise BadQueryError(f"{label} {kind!r}: unknown kind (known: "
                            f"{', '.join(sorted(KIND_FAMILIES))})")  # fmt: skip
