"""Which chunks to embed first: implementation before tests, vendored and generated code.

Semantic follows the other modalities (`maguyva.build.follow`), so partial coverage is the
normal state of a large repository for minutes or hours; the order of the queue decides which
questions it answers meanwhile. Questions by meaning are mostly about the code itself: a test,
a vendored copy or generated code rarely is the answer (fusion demotes the last two anyway).
"""

from __future__ import annotations

import re

TEST_DIRS = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs", "testcases"})
VENDOR_DIRS = frozenset({"vendor", "vendored", "_vendor", "third_party", "thirdparty",
                         "node_modules", "extern", "external", "site-packages"})  # fmt: skip
GENERATED_DIRS = frozenset({"migrations", "generated", "__generated__", "gen"})
_TEST_FILE = re.compile(
    r"(^test_.*\.py$|.*_tests?\.py$|^conftest\.py$|.*_test\.(go|rs|c|cc|cpp)$"
    r"|.*\.(test|spec)\.[jt]sx?$|.*Tests?\.(java|kt|cs|swift|scala)$|.*_spec\.rb$)"
)
_GENERATED_FILE = re.compile(
    r"(.*_pb2(_grpc)?\.pyi?$|.*\.pb\.(go|cc|h)$|.*[._]generated\.[a-z]+$|.*\.min\.(js|css)$)"
)


def peripheral(path: str) -> bool:
    """Is `path` a test, vendored or generated file (embedded after the implementation)?"""
    parts = path.split("/")
    name = parts[-1]
    dirs = {p.lower() for p in parts[:-1]}
    return bool(
        dirs & TEST_DIRS or dirs & VENDOR_DIRS or dirs & GENERATED_DIRS
        or _TEST_FILE.match(name) or _GENERATED_FILE.match(name)
    )  # fmt: skip


def rank(path: str, lines: bool) -> int:
    """The chunk's place in the queue before its length: implementation definitions (0), then
    implementation line windows (1), then the same for peripheral files (2, 3)."""
    return 2 * peripheral(path) + bool(lines)
