"""Place words in a question: "on Linux", "on macOS", "in the tests", "in the C code".

A question that names a platform, a directory, a language or a kind of file asks about the
files there: "how does psutil read per-process memory on Linux" is answered by `_pslinux.py`,
not by the public wrapper in `__init__.py` that the centrality boost would otherwise put first.
So does a question whose subject is a component laid out as a directory: "how does the server
pick a cipher suite" in a crate with `src/client/` and `src/server/` is about `server/`, while
its embedding is as close to the client's code of the same protocol step (a fragment that is
no directory of the repository matches no path, and changes nothing).
`place_of` reads those words; `Place.matches` says whether a result's path is in that place.
Test files are kept after the implementation for "how does X work" questions unless the
question asks about tests. Pure string work, a few regular expressions per question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from maguyva.repo.languages import detect_language
from maguyva.support.lazyre import lazy_compile

# platform word -> path fragments that mark its files (`_pslinux.py`, `arch/osx/`, `win32/`)
_PLATFORMS: dict[str, tuple[str, ...]] = {
    "linux": ("linux",),
    "macos": ("osx", "darwin", "macos"),
    "windows": ("windows", "win32", "winapi", "_psw"),
    "bsd": ("bsd",),
    "sunos": ("sunos", "solaris"),
    "aix": ("aix",),
    "android": ("android",),
}
_PLATFORM_WORDS = lazy_compile(
    r"\b(?:on|for|under|in)\s+(?:the\s+)?(?P<p>linux|mac\s?os(?:\s?x)?|os\s?x|darwin|mac|"
    r"windows|win32|(?:free|open|net)?bsd|sunos|solaris|aix|android)\b",
    re.IGNORECASE,
)
_LANGUAGES: dict[str, str] = {
    "c": "c", "c++": "cpp", "cpp": "cpp", "rust": "rust", "go": "go", "golang": "go",
    "java": "java", "javascript": "javascript", "js": "javascript", "typescript": "typescript",
    "ts": "typescript", "python": "python", "ruby": "ruby", "kotlin": "kotlin", "swift": "swift",
}  # fmt: skip
_LANGUAGE_WORDS = lazy_compile(
    r"\bin\s+(?:the\s+)?(?P<l>c\+\+|cpp|c|rust|golang|go|java|javascript|js|typescript|ts|"
    r"python|ruby|kotlin|swift)\s+(?:code|sources?|files?|extensions?|modules?|implementation|"
    r"parts?|layer|side)\b",
    re.IGNORECASE,
)
_DIRECTORY_WORDS = lazy_compile(
    r"\bin\s+(?:the\s+)?(?P<d>[\w.\-/]+)\s+(?:directory|folder|dir|package|subpackage)\b",
    re.IGNORECASE,
)
_SUBJECT_WORDS = lazy_compile(
    r"^\s*(?:how|what|where|when|why)\s+(?:does|do|is|are|can|should|will)\s+the\s+"
    r"(?P<s>[a-z][a-z0-9_\-]*)\b",
    re.IGNORECASE,
)
_KIND_WORDS = lazy_compile(
    r"\bin\s+(?:the\s+)?(?P<k>tests?|test\s+suite|unit\s+tests|docs|documentation|examples?|"
    r"benchmarks?|scripts)\b",
    re.IGNORECASE,
)
_KIND_FRAGMENTS: dict[str, tuple[str, ...]] = {
    "test": ("test",), "doc": ("doc",), "example": ("example",), "benchmark": ("bench",),
    "script": ("script",),
}  # fmt: skip
_ASKS_ABOUT_TESTS = lazy_compile(r"\btest(?:s|ed|ing|\s+suite)?\b", re.IGNORECASE)
_HOW_WORKS = lazy_compile(
    r"^\s*(?:how\s+(?:does|do|is|are|can|should)|what\s+(?:does|do|is|are)|explain|why\s+"
    r"(?:does|do|is|are))\b",
    re.IGNORECASE,
)
_TEST_PATH = lazy_compile(
    r"(^|/)(tests?|testing|spec|__tests__)(/|$)|(^|/)test_[^/]*$|_tests?\.\w+$|(^|/)conftest\.py$"
)


@dataclass(frozen=True, slots=True)
class Place:
    """Where a question asks to look: path fragments (lower case) and languages; either may
    be empty. `words` are the phrases found, for `--explain`."""

    fragments: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    words: tuple[str, ...] = ()

    def matches(self, path: str) -> bool:
        low = "/" + path.lower()  # a fragment "/server/" is a whole directory name
        if any(fragment in low for fragment in self.fragments):
            return True
        return bool(self.languages) and detect_language(path) in self.languages


def place_of(question: str, subject: bool = True) -> Place | None:
    """The place a question names, or None; with `subject`, its definite subject too (the
    engine asks for it on understand_code questions only)."""
    fragments: list[str] = []
    languages: list[str] = []
    words: list[str] = []
    for match in _PLATFORM_WORDS.finditer(question):
        word = re.sub(r"\s+", "", match.group("p").lower())
        key = "macos" if word.startswith(("mac", "osx", "darwin")) else word
        key = "bsd" if key.endswith("bsd") else ("sunos" if key == "solaris" else key)
        key = "windows" if key == "win32" else key
        fragments.extend(_PLATFORMS.get(key, (word,)))
        words.append(match.group(0))
    for match in _LANGUAGE_WORDS.finditer(question):
        languages.append(_LANGUAGES[match.group("l").lower()])
        words.append(match.group(0))
    for match in _DIRECTORY_WORDS.finditer(question):
        fragments.append(match.group("d").lower().strip("/") + "/")
        words.append(match.group(0))
    for match in _SUBJECT_WORDS.finditer(question) if subject else ():  # "how does the server"
        fragments.append(f"/{match.group('s').lower()}/")
        words.append(match.group(0).strip())
    for match in _KIND_WORDS.finditer(question):
        kind = match.group("k").lower()
        key = next((k for k in _KIND_FRAGMENTS if k in kind), None)
        if key:
            fragments.extend(_KIND_FRAGMENTS[key])
            words.append(match.group(0))
    if not fragments and not languages:
        return None
    return Place(tuple(dict.fromkeys(fragments)), tuple(dict.fromkeys(languages)), tuple(words))


def demotes_tests(question: str) -> bool:
    """True for a "how does X work" question that does not ask about tests: its answers are
    the implementation, and test files come after it."""
    return bool(_HOW_WORKS.search(question)) and not _ASKS_ABOUT_TESTS.search(question)


def is_test_path(path: str) -> bool:
    return bool(_TEST_PATH.search(path))
