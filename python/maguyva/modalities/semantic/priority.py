"""Which chunks to embed first: implementation before tests, vendored and generated code,
central files (the graph's centrality, known before embedding starts) before leaves.

Semantic follows the other modalities (`maguyva.build.follow`), so partial coverage is the
normal state of a large repository for minutes or hours; the order of the queue decides which
questions it answers meanwhile. Questions by meaning are mostly about the code itself: a test,
a vendored copy or generated code rarely is the answer (fusion demotes the last two anyway).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from maguyva.errors import MaguyvaError
from maguyva.modalities.graph import store

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


def rank(path: str, lines: bool, central: frozenset[str] | None = None) -> int:
    """The chunk's place in the queue before its length: implementation before peripheral
    files, definitions before line windows, and within each central files before the others
    (`central`: None when the graph is not known)."""
    leaf = central is not None and path not in central
    return 4 * peripheral(path) + 2 * bool(lines) + leaf


def central_files(graph_dir: Path) -> frozenset[str] | None:
    """The files whose graph centrality is above the median of all files (None: no graph
    there, or unreadable: the order is then by kind and length only)."""
    if not (graph_dir / store.FILE_NAME).exists():
        return None
    try:
        sections, _meta = store.read(graph_dir)
        paths = store.strings(sections, "paths").all()
        c = np.asarray(sections["path_c"], dtype=np.float64)
    except (MaguyvaError, OSError, KeyError, ValueError):
        return None
    if not len(paths) or len(paths) != len(c):
        return None
    median = float(np.median(c))
    return frozenset(p for p, v in zip(paths, c, strict=True) if v > median)
