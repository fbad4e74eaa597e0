"""Evidence carried from a declaration to the code that does the work (understand_code).

A question in words finds the chunk whose prose matches it: a trait's or an interface's doc
comment, or a documented public method that only delegates. The implementation, often
undocumented and in another file, is what the question is about (docs/eval-rust-ts.md,
"understand_code diagnosis"). Before fusion, each of the first `TOP` hits of the semantic
and text lists passes its rank to:

- the implementations of a trait or interface (a hit on the trait, or on one of its method
  declarations): the `impl Trait for Type` blocks (Rust) or `implements Interface` classes
  (TypeScript) the text index finds, tests left out, when they are in at most
  `MAX_IMPL_FILES` files (a trait many types implement is what the question is about); for
  a method, the method of the same name in each block, counted by the files that define
  it (pydantic-core's `Validator::default_value` has a default body that one of the 42
  validators overrides: that one is what "how is a field's default value produced" means);
- the namesake a thin wrapper calls: a definition of at most `WRAPPER_LINES` lines that calls
  a definition of its own name in another file (`ServerConnection::reject_early_data` ->
  `ConnectionCore::reject_early_data`), as the graph resolved the call.

The carried hit is inserted just after the hit it comes from (one rank lower), labelled
`extra["carried_from"]`, so RRF gives it almost the declaration's contribution and the
response says why it is there. A file the list already holds above gets no carried hit (its
best rank counts, and the files below would only lose a rank).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from maguyva.errors import BadQueryError, CorruptIndexError, IndexVersionError, ModalityUnavailable
from maguyva.modalities.graph.schema import NodeKind, is_test_path
from maguyva.model import Hit

if TYPE_CHECKING:  # numpy: a literal question's process never imports it
    from maguyva.modalities.graph.query import GraphIndex
    from maguyva.query.routing import Plan
    from maguyva.store.chunks import Chunk

TOP = 20
MAX_IMPL_FILES = 4
WRAPPER_LINES = 6
CARRIED_FROM = ("semantic", "text")
MAX_IMPL_LINES = 400  # `impl .. Trait .. for` lines read (50 cut pydantic-core's `Validator`: 52)
_TRAITS = frozenset({"trait", "interface"})


class _Chunks(Protocol):
    def get(self, chunk_id: str, path: str | None = None) -> Chunk | None: ...
    def enclosing(self, path: str, line: int) -> Chunk | None: ...


class _Grep(Protocol):
    def grep(self, pattern: str, **kwargs: Any) -> list[Any]: ...


class _Engine(Protocol):
    @property
    def chunks(self) -> Any: ...
    def searcher(self, name: str) -> Any: ...


def carried(engine: _Engine, plan: Plan, lists: dict[str, list[Hit]]) -> dict[str, list[Hit]]:
    """`lists`, with evidence carried (in place) when `plan` fuses on file evidence (the
    understand_code fusion); unchanged without a graph, or when it is damaged (the
    centrality look-up that follows reports the damage)."""
    if not plan.by_file or plan.strategy != "rrf":
        return lists
    try:
        graph = getattr(engine.searcher("graph"), "graph", None)
    except ModalityUnavailable:
        return lists
    if graph is None:
        return lists
    try:
        text = engine.searcher("text")
    except ModalityUnavailable:
        text = None
    try:
        return carry_lists(lists, graph, engine.chunks, text)
    except (CorruptIndexError, IndexVersionError):
        return lists


def carry_lists(lists: dict[str, list[Hit]], graph: GraphIndex, chunks: _Chunks,
                text: _Grep | None) -> dict[str, list[Hit]]:  # fmt: skip
    """`lists` with the carried hits inserted into its semantic and text lists (in place)."""
    impls: dict[tuple[str, bool], list[tuple[str, int]]] = {}
    for name in CARRIED_FROM:
        hits = lists.get(name)
        if not hits:
            continue
        out: list[Hit] = []
        listed: set[str] = set()  # a file already listed gains nothing from a carried hit
        for rank, hit in enumerate(hits):
            out.append(hit)
            listed.add(hit.path)
            for extra in _carried(hit, graph, chunks, text, impls) if rank < TOP else ():
                if extra.path not in listed:
                    out.append(extra)
                    listed.add(extra.path)
        lists[name] = out
    return lists


def _carried(hit: Hit, g: GraphIndex, chunks: _Chunks, text: _Grep | None,
             impls: dict[tuple[str, bool], list[tuple[str, int]]]) -> Iterator[Hit]:  # fmt: skip
    node = _own_definition(g, hit.path, hit.start_line, hit.end_line)  # a chunk's span
    if node is None:
        return
    for target in _delegates(g, node):
        yield _hit(chunks, g.path_of(target), int(g.start[target]), hit, g.full_name(target))
    if text is None:
        return
    owner, member = _trait_of(g, node)
    if owner is None:
        return
    rust = hit.path.endswith(".rs")
    blocks = [(path, block) for path, line in _impl_blocks(text, owner, rust, impls)
              if path != hit.path and not is_test_path(path)
              and (block := chunks.enclosing(path, line)) is not None]  # fmt: skip
    if member is None:
        found = [(path, block.start_line, None) for path, block in blocks]
    else:  # only the blocks that define the member: a default body few types override
        found = [(path, int(g.start[m]), g.full_name(m)) for path, block in blocks
                 for m in g.definitions_in(path)
                 if g.names[m] == member and block.start_line <= int(g.start[m]) <= block.end_line]  # fmt: skip
    if len({path for path, _, _ in found}) > MAX_IMPL_FILES:
        return  # a trait many types implement: the question is about the trait
    for path, line, symbol in found:
        yield _hit(chunks, path, line, hit, symbol)


def _own_definition(g: GraphIndex, path: str, start: int, end: int) -> int | None:
    """The definition a chunk is about: the first (outermost) one that starts inside it."""
    for node in g.definitions_in(path):
        if start <= int(g.start[node]) <= end:
            return node
    return None


def _delegates(g: GraphIndex, node: int) -> list[int]:
    """What a thin wrapper hands its work to: definitions of its own name in other files."""
    if int(g.end[node]) - int(g.start[node]) + 1 > WRAPPER_LINES:
        return []
    name, path = g.names[node], g.path_of(node)
    out = []
    for callee, _, _ in g.callees(node):
        if (callee != node and g.kind[callee] == NodeKind.DEFINITION and g.names[callee] == name
                and g.path_of(callee) not in (path, "")):  # fmt: skip
            out.append(callee)
    return out[:2]


def _trait_of(g: GraphIndex, node: int) -> tuple[str | None, str | None]:
    """(trait or interface name, member name or None) when `node` is a trait / interface or
    one of its members; (None, None) otherwise."""
    if g.def_kind(node) in _TRAITS:
        return g.names[node], None
    start, end = int(g.start[node]), int(g.end[node])
    for other in g.definitions_in(g.path_of(node)):  # the trait around it, in its file
        if int(g.start[other]) > start:
            break
        if other != node and int(g.end[other]) >= end and g.def_kind(other) in _TRAITS:
            return g.names[other], g.names[node]
    return None, None


def _impl_blocks(text: _Grep, owner: str, rust: bool,
                 memo: dict[tuple[str, bool], list[tuple[str, int]]]) -> list[tuple[str, int]]:  # fmt: skip
    """(path, line) of each `impl .. Owner .. for` (Rust) or `implements .. Owner` line."""
    key = (owner, rust)
    if key not in memo:
        name = re.escape(owner)
        pattern = rf"\bimpl\b.*\b{name}\b.*\bfor\b" if rust else rf"\bimplements\b.*\b{name}\b"
        try:
            found = text.grep(pattern, regex=True, case="sensitive", max_results=MAX_IMPL_LINES)
        except (BadQueryError, CorruptIndexError, IndexVersionError, ModalityUnavailable):
            found = []
        memo[key] = [(m.path, m.line) for m in found]
    return memo[key]


def _hit(chunks: _Chunks, path: str, line: int, source: Hit, symbol: str | None) -> Hit:
    chunk = chunks.enclosing(path, line)
    start, end = (chunk.start_line, chunk.end_line) if chunk is not None else (line, line)
    return Hit(path=path, start_line=start, end_line=end, key=chunk.id if chunk else None,
               symbol=symbol, extra={"carried_from": source.symbol or f"{source.path}:{source.start_line}"})  # fmt: skip
