"""Node and edge vocabulary of the graph, and the confidence given to each way of resolving a name.

Edges point from the dependent to the dependency (`caller -> callee`, `importer -> imported`,
`subclass -> base`), so PageRank flows towards what many things rely on, and "who depends on X"
is a walk over reverse edges.
"""

from __future__ import annotations

from enum import IntEnum


class NodeKind(IntEnum):
    FILE = 0
    MODULE = 1
    DEFINITION = 2
    EXTERNAL = 3


class EdgeKind(IntEnum):
    CALLS = 0
    IMPORTS = 1
    INHERITS = 2
    REFERENCES = 3
    CONTAINS = 4


EDGE_NAMES: dict[int, str] = {k.value: k.name.lower() for k in EdgeKind}

# Edges a change propagates along (contains is structure, not dependency).
DEPENDENCY_KINDS: frozenset[int] = frozenset(
    {EdgeKind.CALLS, EdgeKind.IMPORTS, EdgeKind.INHERITS, EdgeKind.REFERENCES}
)
REFERENCE_KINDS = DEPENDENCY_KINDS

# Confidence of an edge by how its target was found (see docs/graph.md, "Name resolution").
CONF_LOCAL = 1.0  # a definition of the same file / enclosing scope
CONF_IMPORT = 0.95  # bound by an explicit import (`from x import y as z`, `use a::b`)
CONF_PACKAGE = 0.95  # same Go package, other file
CONF_QUALIFIED = 0.9  # attribute chain through an imported module or a known class
CONF_SELF = 0.9  # `self.m()` / `this.m()` resolved in the enclosing class or its bases
CONF_GLOBAL_UNIQUE = 0.6  # no import binds it, but exactly one definition has that name
CONF_EXTERNAL = 0.9  # a call into a library outside the repository (kept as an external node)
CONF_TYPED = 0.85  # receiver typed by local evidence: `x = C()`, `x: C`, isinstance, `self.x = C()`
CONF_NAMED = 0.6  # unknown receiver whose own name names the candidate's class (`formset` ->
# BaseFormSet) and whose class the caller can see; divided by the square root of their number
CONF_CANDIDATE = 0.5  # unknown receiver, the caller can see the candidate's class (import, same
# file, subclass): one such candidate; divided by the square root of their number
CONF_CANDIDATE_WEAK = 0.2  # unknown receiver, no evidence: divided by sqrt(all candidates)
# Edges below this confidence are not followed by queries unless the manifest's config sets
# `graph_min_confidence`: chosen on the tuning half of the Django sample against Jedi (the highest
# threshold that loses none of the tuning half's caller-file recall; docs/graph.md). It drops
# candidates without evidence when there are several, and keeps a lone candidate.
DEFAULT_MIN_CONFIDENCE = 0.2
# Candidate edges below this confidence are not stored at all (counted as `below_floor` in the
# build report): many same-named methods and no evidence. On the Django sample against Jedi
# such files were right about 1 time in 70 (docs/graph.md), and they were 35 % of all edges.
# A build can keep them with the config `graph_edge_floor` (0 keeps everything).
CONF_FLOOR = 0.1
MAX_CANDIDATES = 24  # beyond this many same-named methods, a candidate edge is pure noise
REFERENCE_FACTOR = 0.85  # a bare use of a name (not a call) is weaker evidence of dependency

# Paths that hold tests, listed separately by impact analysis.
TEST_DIR_NAMES = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs", "testdata"})


def is_test_path(path: str) -> bool:
    """True for test files: under a test directory, or named like a test by convention."""
    parts = path.split("/")
    if any(p in TEST_DIR_NAMES for p in parts[:-1]):
        return True
    name = parts[-1]
    stem = name.rsplit(".", 1)[0]
    return (
        stem.startswith("test_")
        or stem.endswith(("_test", "_tests", ".test", ".spec", "Test", "Tests"))
        or stem == "conftest"
    )
