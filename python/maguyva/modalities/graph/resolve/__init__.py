"""Name resolution: turn each file's imports, calls, bases and references into edges.

Order of lookup for a name written in a file (see docs/graph.md for the confidences):
1. the enclosing scopes (nested definitions of the enclosing functions), then the file's own
   top-level definitions;
2. the file's imports (aliases, `from x import y as z`, relative imports, JS/TS `import` and
   `require`, Go packages, Rust `use`), following re-exports through `__init__` files;
3. same-package definitions (Go: other files of the package; C/C++: the header's source;
   Java/C#: classes of the same directory);
4. qualified names: an attribute chain is walked through modules, classes and their bases;
5. a method on an unknown receiver (`obj.m()`) becomes candidate edges to every method of that
   name, each with a confidence divided among the candidates.
Anything still unresolved that names a library (an import that is not in the repository, a
builtin) becomes an external node; nothing is silently dropped.

The modules, in the order a build runs them: `rows` (what is read and written), `names` (what a
written name says), `state` (the tables and the memo), `declare` (phase 1), `imports`,
`lookup`, `hierarchy` and `candidates` (the lookups), `builder` (phase 2, `GraphBuilder`).
The names below are re-exported for the graph's other modules.
"""

from __future__ import annotations

from maguyva.modalities.graph.resolve.builder import GraphBuilder, iter_edges
from maguyva.modalities.graph.resolve.names import split_chain
from maguyva.modalities.graph.resolve.rows import STAT_KEYS, Body, Columns, Node, Reuse

__all__ = [
    "STAT_KEYS",
    "Body",
    "Columns",
    "GraphBuilder",
    "Node",
    "Reuse",
    "iter_edges",
    "split_chain",
]
