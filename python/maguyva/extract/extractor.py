"""Extract definitions, imports, calls and references from one file with tree-sitter queries.

One compiled query per language (`queries/<language>.scm`) is run once over the tree; each match
is dispatched on its capture names. Only the parts that a query cannot express are Python:
nesting (qualified names, enclosing callers), signatures, doc comments and import shapes. No
recursion over the tree happens in Python, so a 100,000-deep nesting cannot overflow the stack.
"""

from __future__ import annotations

import bisect
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import tree_sitter as ts

from maguyva.extract import imports as import_shapes
from maguyva.extract import macro_tokens
from maguyva.extract.grammars import Grammar, cursor
from maguyva.extract.recovery import shell_blocks
from maguyva.extract.signatures import _SPACE, _doc, _outer, _signature, _statement_starts, _text
from maguyva.extract.types import Call, Definition, FileExtraction, Import, Reference

MAX_CALLEE = 160
MAX_NESTING = 64
"""Definitions nested deeper than this are not recorded (their text stays in the chunk of the
deepest one that is): each qualified name repeats its parents', so 100,000 nested functions
(`function f(){` on one line, a hostile or generated file) cost time and memory quadratic in
the depth, 20,000 of them 74 s. Hand-written code nests a few levels."""
CHECK_EVERY = 512  # matches between deadline checks


def clock() -> float:
    """The budget clock: this thread's CPU time, so that a loaded machine (or a worker waiting
    for a core) does not make big files miss their budget; a pathological parse still burns
    CPU and is stopped."""
    return time.thread_time()


class BudgetExceeded(Exception):
    """The per-file time budget ran out."""


@dataclass(slots=True)
class _Def:
    """A definition being assembled (byte range for nesting; the public record comes later)."""

    kind: str
    name: str
    start_byte: int
    end_byte: int
    start_line: int
    end_line: int
    name_line: int
    node: ts.Node
    declaration: bool
    prefix: list[str] = field(default_factory=list)  # qualifiers written in the name (C++ A::f)
    receiver: str | None = None  # Go receiver type
    bases: list[str] = field(default_factory=list)
    is_scope: bool = False  # contributes to qualified names, not a definition (Rust impl)
    qualified: str = ""
    parent: _Def | None = None


@dataclass(slots=True)
class Parsed:
    """What the chunker needs beyond the extraction: statement starts and doc comment starts."""

    breaks: set[int]
    doc_starts: list[int]
    # Rust `impl` and Swift `extension` blocks: not symbols, but each gets a skeleton chunk.
    # start_line already includes the doc comment above the block.
    scopes: list[Definition] = field(default_factory=list)


_PARENS = re.compile(r"\([^()]*\)")
_ANGLES = re.compile(r"<[^<>()]*>")


def normalize_callee(text: str) -> str:
    """`a.b(x, y).c` -> `a.b().c`; whitespace removed; long chains cut."""
    text = _SPACE.sub("", text)
    for _ in range(8):
        reduced = _ANGLES.sub("", _PARENS.sub("()", text))
        if reduced == text:
            break
        text = reduced
    return text[:MAX_CALLEE]


def parse(grammar: Grammar, data: bytes, deadline: float) -> ts.Tree:
    """Parse `data`, giving up (BudgetExceeded) when the deadline passes."""
    parser = grammar.parser()
    step = 1 << 18
    expired = False

    def read(offset: int, _point: tuple[int, int]) -> bytes:
        nonlocal expired
        if clock() > deadline:
            expired = True
            return b""
        return data[offset : offset + step]

    tree = parser.parse(read)
    if expired or tree is None:
        raise BudgetExceeded("parse")
    return tree


REFERENCES_BELOW = 512 << 10
"""Files at least this large get definitions, imports and calls but no references (they are
generated tables or vendored bundles far more often than code anyone reads)."""


def extract(
    grammar: Grammar, path: str, data: bytes, deadline: float
) -> tuple[FileExtraction, Parsed]:
    """Run the language's queries over `data` and assemble the file's extraction."""
    tree = parse(grammar, data, deadline)
    root = tree.root_node
    defs, sites, import_matches, refs = _run_queries(grammar, data, root, deadline)

    ordered = _nest(sorted(defs.values(), key=lambda d: (d.start_byte, -d.end_byte)),
                    grammar.spec.class_kinds)  # fmt: skip
    real = [d for d in ordered if not d.is_scope]

    extraction = FileExtraction(path=path, language=grammar.name)
    doc_starts = _definitions(grammar, data, real, extraction)
    if clock() > deadline:
        raise BudgetExceeded("definitions")

    at = _Enclosing([d for d in real if d.kind not in _NON_SCOPES]).at
    sites.sort()
    _calls(data, sites, at, extraction)
    _references(grammar, data, refs, sites, at, extraction)
    _imports(grammar, data, import_matches, extraction)
    breaks, scopes = _breaks_and_scopes(grammar, data, root, ordered, real)
    return extraction, Parsed(breaks, doc_starts, scopes)


Sites = list[tuple[int, int, int, int]]


def _run_queries(
    grammar: Grammar, data: bytes, root: ts.Node, deadline: float
) -> tuple[dict[int, _Def], Sites, list[dict[str, list[ts.Node]]], Refs]:
    """One pass of the grouped query (definitions, call sites with a receiver, imports) and
    one of the flat one (callees, references): the raw matches, before any assembly."""
    matches = cursor(grammar.grouped).matches(root)
    if clock() > deadline:
        raise BudgetExceeded("query")

    defs: dict[int, _Def] = {}  # keyed by the name node's start byte: keeps the widest match
    # Call sites as plain tuples, sorted as written (outer call first on ties):
    # (callee start, -callee end, first byte of the callee text, line).
    sites: Sites = []
    import_matches: list[dict[str, list[ts.Node]]] = []
    for number, (_pattern, caps) in enumerate(matches):
        if number % CHECK_EVERY == 0 and clock() > deadline:
            raise BudgetExceeded("matches")
        main = None
        for key in caps:
            if key.startswith(("definition.", "declaration.", "scope")):
                main = key
                break
        if main is not None:
            _add_def(defs, data, main, caps)
        elif "callee" in caps:  # a call with a receiver (`callee.object`)
            callee = caps["callee"][0]
            first = caps["callee.object"][0].start_byte if "callee.object" in caps else None
            start = callee.start_byte
            sites.append((start, -callee.end_byte, start if first is None else first,
                          callee.start_point[0] + 1))  # fmt: skip
        elif "import" in caps:
            import_matches.append(caps)
    if grammar.name == "rust" and _MACRO_HINT.search(data):
        _macro_items(grammar, data, root, defs, deadline)
    if grammar.name == "bash":
        for block in shell_blocks(grammar, data, root):
            if clock() > deadline:
                raise BudgetExceeded("shell blocks")
            _block_definitions(grammar, data, block, defs)
    # Callees and references need no grouping: `captures` builds no per-match dictionaries.
    flat_query = grammar.flat if len(data) < REFERENCES_BELOW else grammar.flat_calls
    flat = cursor(flat_query).captures(root)
    if clock() > deadline:
        raise BudgetExceeded("calls")
    for callee in flat.get("callee", ()):
        start = callee.start_byte
        sites.append((start, -callee.end_byte, start, callee.start_point[0] + 1))
    refs = Refs([], [])
    _add_refs(data, flat, 0, refs)
    if grammar.name == "rust" and _MACRO_CALL.search(data):
        _macro_expressions(grammar, data, root, flat_query, sites, refs, deadline)
    return defs, sites, import_matches, refs


RefSpan = tuple[int, int, int]  # start byte, end byte, line


@dataclass(slots=True)
class Refs:
    """The reference captures as spans of the file, and those marked `@reference.not`."""

    spans: list[RefSpan]
    not_spans: list[RefSpan]


def _add_refs(data: bytes, found: dict[str, list[ts.Node]], shift: int, refs: Refs,
              macro: bool = False) -> None:  # fmt: skip
    """The reference captures of `found` (offsets the file's plus `shift`) into `refs`. In a
    macro's tokens a capture that spans a recovered error is no name (`Key: super::a::B`)."""
    for name, spans in (("reference", refs.spans), ("reference.not", refs.not_spans)):
        for node in found.get(name, ()):
            if not (macro and node.has_error):
                spans.append((node.start_byte - shift, node.end_byte - shift,
                              node.start_point[0] + 1))  # fmt: skip
    for node in found.get("reference.path", ()):  # Rust: `module::Item`
        start, end = node.start_byte - shift, node.end_byte - shift
        if _MODULE_ITEM.search(data[start:end]) and not (macro and node.has_error):
            refs.spans.append((start, end, node.start_point[0] + 1))


_MODULE_ITEM = re.compile(rb"(?:^|::)(?:[a-z_][A-Za-z0-9_]*|crate)::[A-Z]\w*$")


# `name!(`, `name![`, `name! {` with something inside: an invocation worth a second parse.
_MACRO_CALL = re.compile(rb"\w!\s*[(\[{]\s*[^\s)\]}]")


def _macro_expressions(grammar: Grammar, data: bytes, root: ts.Node, flat_query: ts.Query,
                       sites: Sites, refs: Refs, deadline: float) -> None:  # fmt: skip
    """Add the calls and references written inside macro invocations (`macro_tokens`)."""
    shift = macro_tokens.SHIFT
    for level in macro_tokens.expression_roots(grammar, data, root, parse, deadline):
        found = cursor(flat_query).captures(level)
        if clock() > deadline:
            raise BudgetExceeded("macro calls")
        for callee in found.get("callee", ()):
            if not callee.has_error:  # as for references (`_add_refs`)
                start = callee.start_byte - shift
                sites.append((start, shift - callee.end_byte, start, callee.start_point[0] + 1))
        _add_refs(data, found, shift, refs, macro=True)


def _definitions(
    grammar: Grammar, data: bytes, real: list[_Def], extraction: FileExtraction
) -> list[int]:
    """Append the public records of `real` (nested, in order); their doc comment starts."""
    doc_starts: list[int] = []
    for d in real:
        doc, doc_start = _doc(grammar, data, d.node)
        doc_starts.append(doc_start or d.start_line)
        extraction.definitions.append(
            Definition(
                kind=d.kind,
                name=d.name,
                qualified_name=d.qualified,
                start_line=d.start_line,
                end_line=d.end_line,
                signature=_signature(data, d.node),
                doc=doc,
                parent=d.parent.qualified if d.parent is not None else None,
                bases=d.bases,
                name_line=d.name_line,
                declaration=d.declaration,
            )
        )
    return doc_starts


def _calls(
    data: bytes, sites: Sites, at: Callable[[int], str | None], extraction: FileExtraction
) -> None:
    """Append one call per distinct callee span of `sites` (sorted), with its enclosing caller."""
    calls = extraction.calls
    seen_calls: set[tuple[int, int]] = set()
    for start, neg_end, first, line in sites:
        end = -neg_end
        key = (first, end)
        if key in seen_calls:
            continue
        seen_calls.add(key)
        raw = data[first:end]
        name = (
            normalize_callee(raw.decode("utf-8", "replace"))
            if _IRREGULAR.search(raw)
            else raw.decode("utf-8", "replace")[:MAX_CALLEE]
        )
        if name:
            calls.append(Call(name, line, at(start)))


def _references(grammar: Grammar, data: bytes, refs: Refs, sites: Sites,
                at: Callable[[int], str | None], extraction: FileExtraction) -> None:  # fmt: skip
    """Append the references: every `@reference` capture that is not a call site, not marked
    `@reference.not`, not `self` and not already seen on its line."""
    references = extraction.references
    seen_refs: set[tuple[str, int]] = set()
    # A reference is not recorded where a call starts, nor where the query says it is no read
    # of its own (`@reference.not`: Python's `a.b` of `a.b.c`, an assignment target). Python
    # compares spans, not start bytes: `a.b().c` starts where the callee `a.b` does.
    # Rust too: the `Foo` of `Foo::new()` starts where its call does and is a use of `Foo`.
    by_span = bool(refs.not_spans) or grammar.name in ("python", "rust")
    if by_span:
        skipped = {(site[0], -site[1]) for site in sites}
        skipped.update((start, end) for start, end, _line in refs.not_spans)
    else:
        called = {site[0] for site in sites}
    # `captures` lists nodes pattern by pattern, not in document order, and nested captures
    # starting at one byte (`a[i].b` and `a`) in an order that differs between processes: the
    # span decides, the outer first (as for call sites), so every run extracts the same list.
    for start, end, line in sorted(refs.spans, key=_span):
        if (start, end) in skipped if by_span else start in called:
            continue
        raw = data[start:end]
        if _WHITESPACE.search(raw):
            raw = _WHITESPACE.sub(b"", raw)
        name = raw.decode("utf-8", "replace")[:MAX_CALLEE]
        if not name or name in _SELF or (name, line) in seen_refs:
            continue
        seen_refs.add((name, line))
        references.append(Reference(name, line, at(start)))


def _imports(grammar: Grammar, data: bytes, import_matches: list[dict[str, list[ts.Node]]],
             extraction: FileExtraction) -> None:  # fmt: skip
    """Append the imports, one per distinct shape of each import statement, sorted by line."""
    by_statement: dict[int, list[Import]] = {}
    for caps in import_matches:
        found = import_shapes.build(grammar.name, data, caps)
        by_statement.setdefault(caps["import"][0].start_byte, []).extend(found)
    for found in by_statement.values():
        if any(i.name == "*" for i in found):  # `import a.*` also matches the plain pattern
            found = [i for i in found if i.name == "*"]
        unique = dict.fromkeys((i.module, i.name, i.alias, i.line, i.level) for i in found)
        extraction.imports.extend(Import(*fields) for fields in unique)
    extraction.imports.sort(key=lambda i: (i.line, i.module, i.name or ""))


def _breaks_and_scopes(grammar: Grammar, data: bytes, root: ts.Node, ordered: list[_Def],
                       real: list[_Def]) -> tuple[set[int], list[Definition]]:  # fmt: skip
    """What the chunker needs: the lines where statements start (top level, and inside long
    definitions), and the `impl` / `extension` blocks that get skeleton chunks."""
    breaks = {child.start_point[0] + 1 for child in root.named_children}
    for d in real:
        if d.end_line - d.start_line > 40:
            breaks.update(_statement_starts(d.node))
    scopes = []
    for d in ordered:
        if d.is_scope:
            _doc_text, doc_start = _doc(grammar, data, d.node)
            scopes.append(Definition(
                kind=_SCOPE_KINDS.get(d.node.type, "impl"), name=d.name, qualified_name=d.qualified,
                start_line=min(doc_start or d.start_line, d.start_line), end_line=d.end_line,
                signature=_signature(data, d.node), name_line=d.name_line,
            ))  # fmt: skip
    return breaks, scopes


_SCOPE_KINDS = {"impl_item": "impl", "class_declaration": "extension"}

_MACRO_BODIES: dict[str, ts.Query] = {}
# A cheap test before the query: an invocation whose body opens, on its next line, with a doc
# comment, an attribute or an item (most files with macros have none: `vec![..]`, `println!`).
_MACRO_HINT = re.compile(
    rb"!\s*[({\[][ \t]*\r?\n[ \t]*(?:///|#\[|(?:pub(?:\([\w: ]+\))?[ \t]+)?"
    rb"(?:enum|struct|union|fn|trait|type|mod|const|static|impl)\b)"
)
# An item at the start of a line of the body (`pub(crate) enum X`), not a keyword inside an
# expression (`matches!(x, ..)`, `assert!(..)`), which would only cost a parse for nothing.
_ITEM_KEYWORD = re.compile(
    rb"(?m)^[ \t]*(?:pub(?:\([\w: ]+\))?[ \t]+)?(?:unsafe[ \t]+)?"
    rb"(?:enum|struct|union|fn|trait|type|mod|const|static|impl)\b"
)


def _macro_items(
    grammar: Grammar, data: bytes, root: ts.Node, defs: dict[int, _Def], deadline: float
) -> None:
    """Definitions written inside macro invocations (`enum_builder! { pub enum X { .. } }`).

    A token tree is opaque to the grammar, so the bodies that contain an item keyword are
    parsed again as Rust, all in one buffer the size of the file where every byte outside the
    bodies is a space (newlines kept): offsets and lines are the file's own, and the items'
    doc comments and attributes come with them. Tree-sitter recovers from what is not Rust
    (`CloseNotify => 0x00,` still reads as a variant), so a DSL that wraps items yields them."""
    query = _MACRO_BODIES.get(grammar.name)
    if query is None:
        query = _MACRO_BODIES[grammar.name] = ts.Query(
            grammar.language, "(macro_invocation (token_tree) @body)"
        )
    bodies = [
        node
        for node in cursor(query).captures(root).get("body", ())
        if _ITEM_KEYWORD.search(data, node.start_byte, node.end_byte)
    ]
    if not bodies:
        return
    # Up to the end of the last body: the blank tail would be parsed for nothing.
    padded = bytearray(data[: max(node.end_byte for node in bodies)].translate(_BLANK))
    for node in bodies:
        padded[node.start_byte + 1 : node.end_byte - 1] = data[
            node.start_byte + 1 : node.end_byte - 1
        ]
    tree = parse(grammar, bytes(padded), deadline)
    for number, (_pattern, caps) in enumerate(cursor(grammar.grouped).matches(tree.root_node)):
        if number % CHECK_EVERY == 0 and clock() > deadline:
            raise BudgetExceeded("macro items")
        main = next(
            (k for k in caps if k.startswith(("definition.", "declaration.", "scope"))), None
        )
        if main is not None:
            _add_def(defs, data, main, caps)


def _block_definitions(grammar: Grammar, data: bytes, root: ts.Node, defs: dict[int, _Def]) -> None:
    """The definitions of a region parsed again (its positions are the file's)."""
    for _pattern, caps in cursor(grammar.grouped).matches(root):
        main = next((k for k in caps if k.startswith(("definition.", "declaration."))), None)
        if main is not None:
            _add_def(defs, data, main, caps)


_BLANK = bytes(b if b in (9, 10, 13) else 32 for b in range(256))


def _span(ref: RefSpan) -> tuple[int, int]:
    return ref[0], -ref[1]


# Callee text that `normalize_callee` would change: whitespace, arguments or generics.
_IRREGULAR = re.compile(rb"[\s(<]")
_WHITESPACE = re.compile(rb"\s+")


_NON_SCOPES = frozenset({"variable", "field", "constant"})
_SELF = frozenset({"self", "this", "cls", "Self", "super", "$this"})


def _add_def(defs: dict[int, _Def], data: bytes, main: str, caps: dict[str, list[ts.Node]]) -> None:
    node = _outer(caps[main][0])
    name_nodes = caps.get("name") or caps.get("scope.name")
    if not name_nodes:
        return
    name_node = name_nodes[0]
    key = name_node.start_byte
    old = defs.get(key)
    if old is not None and (old.end_byte - old.start_byte) >= (node.end_byte - node.start_byte):
        if old.node == node and old.kind == "field" and main.endswith(".method"):
            old.kind = "method"  # a member whose value or type is a function (`f = () => ...`)
            old.declaration = main.startswith("declaration.")
        if old.node == node:  # the same definition matched again (one match per base)
            for base in caps.get("base", []):
                text = _strip_generics(_SPACE.sub("", _text(data, base)))
                if text not in old.bases:
                    old.bases.append(text)
        return
    raw = _UNNAMED.get(name_node.type) or _text(data, name_node)
    if _NEEDS_SPLIT.search(raw):  # qualified or spread over lines: `A::f`, `a.b`, `A<T>`
        raw = _SPACE.sub("", raw)
        parts = [p for p in _QUALIFIER.split(raw) if p] or [raw]
    else:
        parts = [raw]
    is_scope = main.startswith("scope")
    kind = "scope" if is_scope else main.split(".", 1)[1]
    d = _Def(
        kind=kind,
        name=_strip_generics(parts[-1]),
        start_byte=node.start_byte,
        end_byte=node.end_byte,
        start_line=node.start_point[0] + 1,
        end_line=node.end_point[0]
        + 1
        - (1 if node.end_point[1] == 0 and node.end_point[0] > node.start_point[0] else 0),
        name_line=name_node.start_point[0] + 1,
        node=node,
        declaration=main.startswith("declaration."),
        prefix=[_strip_generics(p) for p in parts[:-1]],
        is_scope=is_scope,
    )
    if "receiver" in caps:
        d.receiver = _strip_generics(_SPACE.sub("", _text(data, caps["receiver"][0])).lstrip("*&"))
    for base in caps.get("base", []):
        d.bases.append(_SPACE.sub("", _text(data, base)))
    for container in caps.get("bases", []):
        children = list(container.named_children)
        while children:
            child = children.pop(0)
            if child.type.endswith(("_clause", "_list", "superclass", "interfaces", "specifier")):
                children[:0] = child.named_children  # extends/implements clauses: one level in
            elif child.type not in ("keyword_argument", "comment", "type_arguments"):
                d.bases.append(_strip_generics(_SPACE.sub("", _text(data, child))))
    defs[key] = d


# Definitions without a name token, named by the node the query captures as their name: a
# TypeScript call signature `(x: T): R` (its parameters) is the interface's `call`.
_UNNAMED = {"formal_parameters": "call"}
_GENERICS = re.compile(r"<.*>$|\[.*\]$")
_NEEDS_SPLIT = re.compile(r"[\s:.]")
_QUALIFIER = re.compile(r"::|\.")


def _strip_generics(name: str) -> str:
    if name.endswith((">", "]")):
        return _GENERICS.sub("", name) or name
    return name


def _nest(ordered: list[_Def], class_kinds: frozenset[str]) -> list[_Def]:
    """Set parents and qualified names by byte-range containment (a sweep with a stack); the
    definitions kept (at most `MAX_NESTING` deep), in order."""
    stack: list[_Def] = []
    kept: list[_Def] = []
    for d in ordered:
        while stack and stack[-1].end_byte <= d.start_byte:
            stack.pop()
        if len(stack) >= MAX_NESTING:
            continue
        # A definition nested in a variable/field is scoped by the variable's container.
        parent = next((s for s in reversed(stack) if s.kind not in _NON_SCOPES), None)
        if d.receiver:
            qualifier = d.receiver
            d.parent = parent if parent is not None and parent.name == d.receiver else None
        elif d.prefix:
            qualifier = ".".join(([parent.qualified] if parent else []) + d.prefix)
            d.parent = parent
        else:
            qualifier = parent.qualified if parent is not None else ""
            d.parent = parent
        d.qualified = f"{qualifier}.{d.name}" if qualifier else d.name
        if d.kind == "function" and (
            d.receiver
            or d.prefix
            or (parent is not None and parent.kind in class_kinds | {"scope"})
        ):
            d.kind = "method"
        if d.kind == "scope" and d.parent is None and not d.prefix:
            d.qualified = d.name
        stack.append(d)
        kept.append(d)
    for d in kept:
        if d.parent is not None and d.parent.is_scope:
            # Scopes (Rust impl blocks) qualify names but are not definitions themselves.
            scope = d.parent
            d.parent = scope.parent
            while d.parent is not None and d.parent.is_scope:
                d.parent = d.parent.parent
    return kept


class _Enclosing:
    """The innermost definition around a byte offset (definitions are properly nested).

    The nesting is flattened once into segments (start offset, innermost owner) so that each
    look-up is one C-level bisect instead of a Python stack walk."""

    def __init__(self, defs: list[_Def]) -> None:
        starts: list[int] = [-1]
        owners: list[str | None] = [None]
        stack: list[_Def] = []

        def close_until(offset: int) -> None:
            while stack and stack[-1].end_byte <= offset:
                done = stack.pop()
                starts.append(done.end_byte)
                owners.append(stack[-1].qualified if stack else None)

        for d in sorted(defs, key=lambda d: (d.start_byte, -d.end_byte)):
            close_until(d.start_byte)
            stack.append(d)
            starts.append(d.start_byte)
            owners.append(d.qualified)
        close_until(1 << 62)
        self._starts = starts
        self._owners = owners

    def at(self, offset: int) -> str | None:
        return self._owners[bisect.bisect_right(self._starts, offset) - 1]
