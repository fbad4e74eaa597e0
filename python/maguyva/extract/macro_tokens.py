"""Calls and paths written inside Rust macro invocations.

Tree-sitter leaves a macro's arguments as an opaque `token_tree`, so `assert!(f(x).is_err())`,
`debug!("{}", g(y))`, `vec![Foo::new()]` and `matches!(m, Enum::V)` gave no call or reference.
Most invocations hold Rust expressions, so their token trees are parsed again as such: one
buffer per nesting level, the file's bytes with everything outside the level's token trees
blanked (newlines kept) and each tree followed by `;`, inside `fn _(){ ... }`. `(a, b)` reads
as a tuple, `[a, b]` as an array, `{ .. }` as a block; what is not Rust (`target: "x"`, a DSL's
`A => 0x01`) is an error node tree-sitter recovers around. The prefix holds no newline, so
lines are the file's and byte offsets are the file's plus `SHIFT`. Invocations inside the
trees parsed are taken on the next level, down to `MAX_DEPTH`."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import tree_sitter as ts

from maguyva.extract.grammars import Grammar, cursor

PREFIX = b"fn _(){"
SHIFT = len(PREFIX)
SUFFIX = b";}"
MAX_DEPTH = 4
"""`assert_eq!(v, vec![format!("{}", f(x))])` is three levels; deeper ones are rare."""

_QUERIES: dict[str, ts.Query] = {}
_BLANK = bytes(b if b in (9, 10, 13) else 32 for b in range(256))
_SEMICOLON = ord(";")

Parse = Callable[[Grammar, bytes, float], ts.Tree]


def expression_roots(grammar: Grammar, data: bytes, root: ts.Node, parse: Parse,
                     deadline: float) -> Iterator[ts.Node]:  # fmt: skip
    """The root of each level's parse of the macro token trees of `root` (the file's tree);
    a node's offsets there are the file's plus `SHIFT`."""
    spans = _token_trees(grammar, root, 0)
    for _level in range(MAX_DEPTH):
        if not spans:
            return
        end = max(stop for _start, stop in spans)
        buffer = bytearray(data[:end].translate(_BLANK))
        for start, stop in spans:
            buffer[start:stop] = data[start:stop]
            if stop < end:
                buffer[stop] = _SEMICOLON
        tree = parse(grammar, PREFIX + bytes(buffer) + SUFFIX, deadline)
        yield tree.root_node
        spans = _token_trees(grammar, tree.root_node, SHIFT)


def _token_trees(grammar: Grammar, root: ts.Node, shift: int) -> list[tuple[int, int]]:
    """The byte spans (in the file) of the token trees of the macro invocations under `root`:
    never nested in one another, since an invocation inside a token tree is no node."""
    query = _QUERIES.get(grammar.name)
    if query is None:
        query = _QUERIES[grammar.name] = ts.Query(
            grammar.language, "(macro_invocation (token_tree) @body)"
        )
    return [
        (node.start_byte - shift, node.end_byte - shift)
        for node in cursor(query).captures(root).get("body", ())
        if node.end_byte - node.start_byte > 2  # `()`, `[]`: nothing inside
    ]
