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
"""

from __future__ import annotations

import bisect
import builtins
import functools
import re
from array import array
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from maguyva.extract.types import Definition, FileExtraction
from maguyva.modalities.graph.modules import ModuleIndex, family_of
from maguyva.modalities.graph.receivers import ReceiverTypes
from maguyva.modalities.graph.schema import (
    CONF_CANDIDATE,
    CONF_CANDIDATE_WEAK,
    CONF_EXTERNAL,
    CONF_FLOOR,
    CONF_GLOBAL_UNIQUE,
    CONF_IMPORT,
    CONF_LOCAL,
    CONF_NAMED,
    CONF_PACKAGE,
    CONF_QUALIFIED,
    CONF_SELF,
    CONF_TYPED,
    MAX_CANDIDATES,
    REFERENCE_FACTOR,
    EdgeKind,
    NodeKind,
)

CLASS_KINDS = frozenset(
    {"class", "struct", "interface", "trait", "enum", "impl", "type", "object", "record",
     "module", "protocol", "union", "namespace"}
)  # fmt: skip
_BRACKETS = re.compile(r"[()\[\]{}<>]")
SELF_NAMES = frozenset({"self", "cls", "this", "Self", "@"})
PY_BUILTINS = frozenset(dir(builtins))
BUILTIN_TYPES = frozenset(f"builtins.{n}" for n in ("dict", "list", "set", "frozenset", "tuple",
                          "str", "bytes", "bytearray", "int", "float", "complex", "bool"))  # fmt: skip
# Families whose bare names are visible across files without an import (linker / package scope).
GLOBAL_SCOPE_FAMILIES = frozenset({"c", "x", "jvm", "cs"})

CALLS, IMPORTS, INHERITS, REFERENCES, CONTAINS = (int(k) for k in EdgeKind)
STAT_KEYS = ("calls", "resolved", "typed", "candidate", "external", "dropped", "below_floor")
PROPERTY_DECORATORS = frozenset({"property", "cached_property", "functools.cached_property",
                                 "abc.abstractproperty", "classproperty"})  # fmt: skip

# Attributes every Python function or class has: `f.__doc__` is a use of `f`.
DEF_ATTRIBUTES = frozenset({"__doc__", "__name__", "__qualname__", "__module__", "__wrapped__",
                            "__func__", "__code__", "__defaults__", "__kwdefaults__",
                            "__annotations__", "__dict__"})  # fmt: skip
# Bases that add no methods a call on an instance could reach (for duck typing).
CLOSED_BASES = frozenset({"object", "Generic", "Protocol", "ABC", "abc.ABC", "typing.Generic",
                          "typing.Protocol", "Exception", "BaseException"})  # fmt: skip
# Calls whose result is not an instance of the called name.
NOT_CONSTRUCTORS = frozenset({"type", "super", "object", "getattr", "vars", "iter", "next"})

# A binding: ("def", node) | ("unit", unit key) | ("ext", dotted name)
Binding = tuple[str, object]


@dataclass(slots=True)
class Reuse:
    """A previous build's edge log (columns, names) and, per reusable file, (lo, hi, counts)."""

    cols: tuple[list, ...]
    names: list[str]
    files: dict[int, tuple[int, int, list[int]]]


_MISSING = object()


class Columns:
    """Append-only rows `(src, dst or target, kind, conf, line)` stored as five flat arrays
    (about 21 bytes a row instead of a tuple and its objects): the edge log, and the edges as
    emitted (one row per `edge` call, duplicates included; `build.merge_edges` merges them)."""

    __slots__ = ("conf", "dst", "kind", "line", "src")

    def __init__(self) -> None:
        self.src = array("i")
        self.dst = array("i")
        self.kind = array("B")
        self.conf = array("d")
        self.line = array("i")

    def append(self, row: tuple[int, int, int, float, int]) -> None:
        src, dst, kind, conf, line = row
        self.src.append(src)
        self.dst.append(dst)
        self.kind.append(kind)
        self.conf.append(conf)
        self.line.append(line)

    def __len__(self) -> int:
        return len(self.src)


@dataclass(slots=True)
class Body:
    """What resolution reads of a file after its declarations: its calls `(callee, line,
    caller)` and references `(name, line, context)`, as flat tuples of the (shared) strings
    and line numbers of the extraction, not one object per call."""

    calls: tuple = ()
    references: tuple = ()

    @staticmethod
    def of(ex: FileExtraction) -> Body:
        return Body(_flat(ex.calls, "callee", "caller"), _flat(ex.references, "name", "context"))

    def iter_calls(self) -> Iterable[tuple[str, int, str | None]]:
        it = iter(self.calls)
        return zip(it, it, it, strict=True)

    def iter_references(self) -> Iterable[tuple[str, int, str | None]]:
        it = iter(self.references)
        return zip(it, it, it, strict=True)


def _flat(items: list, name: str, context: str) -> tuple:
    if not items:
        return ()
    out: list[Any] = [None] * (3 * len(items))
    out[0::3] = [getattr(i, name) for i in items]
    out[1::3] = [i.line for i in items]
    out[2::3] = [getattr(i, context) for i in items]
    return tuple(out)


@dataclass(slots=True)
class Node:
    kind: NodeKind
    name: str
    qname: str
    file: int = -1
    start: int = 0
    end: int = 0
    def_kind: str = ""


@dataclass(slots=True)
class FileScope:
    fid: int
    unit: str
    family: str
    defs: dict[str, int] = field(default_factory=dict)  # qualified name -> node
    top: dict[str, int] = field(default_factory=dict)  # top-level name -> node
    imports: dict[str, list[tuple[int, object]]] = field(
        default_factory=dict
    )  # name -> [(line, spec)]
    stars: list[tuple[str | None, int]] = field(default_factory=list)  # (unit, line)


class GraphBuilder:
    """Accumulates nodes and merged edges; `resolve_all` fills them from extractions.

    Memoisation is order-independent on purpose (the incremental build re-resolves only the
    changed files and must give what a full build gives): a lookup that runs into a cycle (an
    import cycle, an inheritance cycle) depends on what is on the lookup stack, so its value is
    kept only until the outermost lookup returns; values computed without meeting a cycle are
    pure functions of the declarations and are kept for the whole build.
    """

    def __init__(
        self,
        extraction: Mapping[str, FileExtraction],
        read_text: Callable[[str], str] | None = None,
        floor: float = CONF_FLOOR,
    ) -> None:
        self.floor = floor  # candidate edges below this confidence are counted, not stored
        # Read once, file by file, by `declare` (a lazy view decodes one file per access);
        # no file's extraction is kept: its declarations become nodes and scopes, its calls
        # and references a compact `Body` until the file is resolved.
        self._source: Mapping[str, FileExtraction] | None = extraction
        self.paths: list[str] = []
        self.languages: list[str | None] = []
        self.bodies: list[Body | None] = []
        self.index = ModuleIndex()
        self.nodes: list[Node] = []
        self.edges = Columns()  # every edge as added, merged by (src, dst, kind) when built
        self.ext_nodes: dict[str, int] = {}
        self.unit_nodes: dict[str, int] = {}
        self.file_nodes: list[int] = []
        self.scopes: list[FileScope] = []
        self.by_name: dict[str, list[int]] = {}
        self.methods: dict[str, list[int]] = {}
        self.children: dict[int, dict[str, int]] = {}  # class node -> member name -> node
        self.parent: dict[int, int] = {}
        self.bases: dict[int, list[str]] = {}
        self.owner_name: dict[int, str] = {}  # method -> name of its class / receiver type
        self.props: set[int] = set()  # methods read as attributes (@property, @cached_property)
        self.alts: dict[int, list[int]] = {}  # first definition -> later ones of the same name
        self.aliases: dict[int, str] = {}  # variable -> the name it renames (`x = mod.f`)
        self.instances: dict[int, str] = {}  # module variable -> its class (`_inst = Random()`)
        self.types = ReceiverTypes(read_text)
        self._memo: dict[tuple, object] = {}
        # the memos that read the subclass sets ("s", "fu", "cw"): a declaration change that
        # may alter them drops them all at once (`incremental._declaration_patch`)
        self._sub_memo: dict[tuple, object] = {}
        self._trans: dict[tuple, object] = {}
        self._busy: set[tuple] = set()
        self._depth = 0
        self._cuts = 0
        self._subclasses: dict[int, list[int]] | None = None  # class -> direct subclasses
        self._supers: dict[int, list[int]] = {}  # class -> its resolved bases, as in the table
        self._bases_cut: set[int] = set()  # classes whose bases met a cycle (not memoised)
        self._touched: dict[int, frozenset[str]] = {}
        self._resolved: dict[tuple, object] = {}  # per file: (caller, written, ref) -> result
        self._cand_sets: dict[tuple, list] = {}  # per file: ranked candidates of a method name
        self._cocalls: tuple[Body, dict[tuple, frozenset[str]]] | None = None
        self._class_suffixes: tuple[set[str], set[str]] | None = None  # see `_could_name`
        self._caller_free: set[str] | None = None
        self._unique_top: dict[str, int | None] = {}
        # a node's place in the graph's numbering when a kept builder's differs (see
        # `incremental.patch`: definitions added or removed keep the other nodes' numbers)
        self.okey: list[int] | None = None
        self.stats = dict.fromkeys(STAT_KEYS, 0)
        # the edge log (see incremental.py): columns of every `emit`, a pointer per file;
        # a target is a node id, or -1 - i for log_names[i] ("u:<unit>" or "x:<external>")
        self.log = Columns()  # rows (src, target, kind, conf, line)
        self.log_ptr: list[int] = [0]
        self.log_names: dict[str, int] = {}
        self.file_stats: list[list[int]] = []

    # what the graph's arrays and the edge log are built from, once every file is resolved
    KEEP_AFTER_RESOLVE = frozenset({
        "floor", "paths", "languages", "index", "nodes", "edges", "ext_nodes", "unit_nodes",
        "file_nodes", "stats", "log", "log_ptr", "log_names", "file_stats",
    })  # fmt: skip

    def release(self) -> None:
        """Drop what only resolution reads (scopes, name tables, memos) after `resolve_all`,
        so that building and writing the arrays does not hold it too."""
        for name in list(vars(self)):
            if name not in self.KEEP_AFTER_RESOLVE:
                setattr(self, name, None)

    # -- nodes and edges --------------------------------------------------------------------

    def _node(self, node: Node) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def edge(self, src: int, dst: int, kind: int, conf: float, line: int) -> None:
        if src == dst and kind != CALLS:
            return
        e = self.edges
        e.src.append(src)
        e.dst.append(dst)
        e.kind.append(kind)
        e.conf.append(conf)
        e.line.append(line)

    def emit(
        self, src: int, b: Binding, kind: int, conf: float, line: int, follow: bool = True
    ) -> None:
        """Add a resolved edge and record it in the edge log (for reuse by the next build);
        `follow`: also to the other definitions of the name and what an alias renames."""
        bkind, value = b
        if bkind == "def" and not follow:
            dst = int(value)  # type: ignore[call-overload]
            self.log.append((src, dst, kind, conf, line))
            self.edge(src, dst, kind, conf, line)
            return
        if bkind == "def":
            dst = target = int(value)  # type: ignore[call-overload]
            for alt in self.alts.get(dst, ()):
                # a name defined twice in one scope: either definition may be the one that runs
                self.log.append((src, alt, kind, conf, line))
                self.edge(src, alt, kind, conf, line)
            if dst in self.aliases:
                # `isfuture = base_futures.isfuture`: a use of the alias uses what it renames
                seen = {dst}
                nxt = self.alias_target(dst)
                while nxt is not None and nxt not in seen and len(seen) < 8:
                    seen.add(nxt)
                    self.emit(src, ("def", nxt) if isinstance(nxt, int) else ("ext", nxt),
                              kind, conf, line, follow=False)  # fmt: skip
                    nxt = self.alias_target(nxt) if isinstance(nxt, int) else None
        else:
            tag = ("u:" if bkind == "unit" else "x:") + str(value)
            target = -1 - self.log_names.setdefault(tag, len(self.log_names))
            dst = self.unit_node(str(value)) if bkind == "unit" else self.external(str(value))
        self.log.append((src, target, kind, conf, line))
        self.edge(src, dst, kind, conf, line)

    def replay(self, cols: tuple[list, ...], lo: int, hi: int, names: list[str]) -> None:
        """Re-add logged edges [lo, hi) of a previous build, in their order."""
        srcs, targets, kinds, confs, lines = cols
        for i in range(lo, hi):
            target = targets[i]
            if target >= 0:
                dst = target
            else:
                tag = names[-1 - target]
                dst = self.unit_node(tag[2:]) if tag[0] == "u" else self.external(tag[2:])
                target = -1 - self.log_names.setdefault(tag, len(self.log_names))
            self.log.append((srcs[i], target, kinds[i], confs[i], lines[i]))
            self.edge(srcs[i], dst, kinds[i], confs[i], lines[i])

    def external(self, name: str) -> int:
        node = self.ext_nodes.get(name)
        if node is None:
            short = name.rsplit(".", 1)[-1]
            node = self._node(Node(NodeKind.EXTERNAL, short, name))
            self.ext_nodes[name] = node
        return node

    def unit_node(self, unit: str) -> int:
        node = self.unit_nodes.get(unit)
        if node is None:
            name = unit.split(":", 1)[1]
            node = self._node(
                Node(
                    NodeKind.MODULE,
                    name.replace("::", ".").rsplit(".", 1)[-1],
                    name,
                    self.index.units[unit][0],
                )
            )
            self.unit_nodes[unit] = node
            for fid in self.index.units[unit]:
                self.edge(node, self.file_nodes[fid], CONTAINS, 1.0, 0)
        return node

    # -- phase 1: definitions -----------------------------------------------------------------

    def declare(self, on_file: Callable[[int, FileExtraction], None] | None = None) -> None:
        """Read every file's extraction once, in path order: its nodes and scope, and its calls
        and references as a `Body`; `on_file(fid, extraction)` sees each extraction too.
        Idempotent (`resolve_all` calls it)."""
        source, self._source = self._source, None
        if source is None:
            return
        stars: list[tuple[int, str, int, int]] = []
        for path in sorted(source):
            ex = source[path]
            if not isinstance(ex, FileExtraction):
                continue
            fid = len(self.paths)
            self.paths.append(path)
            self.languages.append(ex.language)
            self.index.add(path, ex.language)
            self._declare_file(fid, path, ex, stars)
            self.bodies.append(Body.of(ex))
            if on_file is not None:
                on_file(fid, ex)
        self.index.finish()
        for fid, module, level, line in stars:
            unit_key, _ = self.index.resolve(fid, module, level)
            self.scopes[fid].stars.append((unit_key, line))

    def _declare_file(
        self,
        fid: int,
        path: str,
        ex: FileExtraction,
        stars: list[tuple[int, str, int, int]],
        ids: list[int] | None = None,
    ) -> None:
        """Declare file `fid`'s definitions and imports. `ids`: the file is declared again in
        a kept builder (`incremental.patch`), its definitions' nodes already made (their
        numbers, in order of (start, -end)); lists of nodes stay in the order of `okey`."""
        unit = self.index.unit_of_file[fid]
        scope = FileScope(fid, unit, unit.split(":", 1)[0])
        if ids is None:
            fnode = self._node(Node(NodeKind.FILE, path.rsplit("/", 1)[-1], path, fid, 1, 0))
            self.file_nodes.append(fnode)
            self.scopes.append(scope)
        else:
            fnode = self.file_nodes[fid]
            self.scopes[fid] = scope
        defs = sorted(ex.definitions, key=lambda d: (d.start_line, -d.end_line))
        decorated = _decorated(ex, scope.family)
        for i, d in enumerate(defs):
            if ids is None:
                node = self._node(
                    Node(
                        NodeKind.DEFINITION,
                        d.name,
                        d.qualified_name,
                        fid,
                        d.start_line,
                        d.end_line,
                        d.kind,
                    )
                )
            else:
                node = ids[i]
            first = scope.defs.setdefault(d.qualified_name, node)
            if first != node:  # redefined (if/else, try/except, a getter and its setter)
                self.alts.setdefault(first, []).append(node)
            self._add_ordered(self.by_name.setdefault(d.name, []), node)
            if d.bases:
                self.bases[node] = list(d.bases)
            rhs = alias_of(d, scope.family)
            if rhs:
                self.aliases[node] = rhs
            made = instance_of(d, scope.family)
            if made:
                self.instances[node] = made
            if _is_property(decorated.get(d.qualified_name, frozenset()), d.name):
                self.props.add(first)
        for d in defs:
            node = scope.defs[d.qualified_name]
            owner = d.parent or _qualifier(d.qualified_name, d.name)
            parent = scope.defs.get(owner) if owner else None
            if owner:
                self.owner_name[node] = owner.rsplit(".", 1)[-1]
            if parent is None and owner is None:
                scope.top.setdefault(d.name, node)
                self.edge(fnode, node, CONTAINS, 1.0, d.start_line)
            else:
                owner = parent if parent is not None else fnode
                self.edge(owner, node, CONTAINS, 1.0, d.start_line)
                if parent is not None:
                    self.parent[node] = parent
                    self.children.setdefault(parent, {}).setdefault(d.name, node)
            if (self._is_method(d, parent) or (owner and parent is None)) and (
                node not in self.methods.get(d.name, ())
            ):  # a redefinition (a property's setter) is one candidate, not two
                self._add_ordered(self.methods.setdefault(d.name, []), node)
        for imp in ex.imports:
            if imp.name == "*" and not imp.alias:
                stars.append((fid, imp.module, imp.level, imp.line))  # resolved in `declare`
                continue
            local = imp.alias or imp.name or self._default_binding(scope.family, imp.module)
            if local:
                scope.imports.setdefault(local, []).append((imp.line, imp))
        scope.imports = {k: sorted(v, key=lambda x: x[0]) for k, v in scope.imports.items()}
        if ids is not None:
            self._note_classes(self.nodes[i] for i in ids)

    def _add_ordered(self, nodes: list[int], node: int) -> None:
        """Append `node`; in a kept builder whose numbering is no longer the graph's
        (`okey`: a node's (file, rank) as one number), insert it where the graph's order puts it."""
        okey = self.okey
        if okey is None or not nodes or okey[nodes[-1]] < okey[node]:
            nodes.append(node)
        else:
            bisect.insort(nodes, node, key=okey.__getitem__)

    def _is_method(self, d: Definition, parent: int | None) -> bool:
        if d.kind == "method":
            return True
        return parent is not None and self.nodes[parent].def_kind in CLASS_KINDS

    @staticmethod
    def _default_binding(family: str, module: str) -> str:
        """The name a whole-module import binds when no alias is given."""
        if family == "py":
            return module.lstrip(".").split(".", 1)[0]
        if family == "go":
            return module.strip('"').rsplit("/", 1)[-1]
        if family == "rs":
            return module.replace(".", "::").rsplit("::", 1)[-1]
        if family in ("jvm", "cs"):
            return module.rsplit(".", 1)[-1]
        return ""

    # -- memoisation ------------------------------------------------------------------------

    def _memoized(
        self,
        key: tuple,
        compute: Callable[[], Any],
        cut_value: Any = None,
        store: dict[tuple, object] | None = None,
    ) -> Any:
        memo = self._memo if store is None else store
        value = memo.get(key, _MISSING)
        if value is not _MISSING:
            return value
        value = self._trans.get(key, _MISSING)
        if value is not _MISSING:
            self._cuts += 1  # the reader now depends on a stack-dependent value too
            return value
        if key in self._busy:
            self._cuts += 1  # a cycle: stop here, the other end resolves it
            return cut_value
        self._busy.add(key)
        cuts = self._cuts
        self._depth += 1
        try:
            value = compute()
        finally:
            self._depth -= 1
            self._busy.discard(key)
        if self._cuts == cuts:
            memo[key] = value
        else:
            self._trans[key] = value
        if self._depth == 0:
            self._trans.clear()
        return value

    # -- lookups --------------------------------------------------------------------------

    def lookup_in_unit(self, unit: str, name: str) -> Binding | None:
        """What `name` means inside module `unit` (definitions, submodules, re-exports)."""
        key = ("u", unit, name)
        value = self._memo.get(key, _MISSING)
        if value is not _MISSING:
            return value  # type: ignore[return-value]
        return self._memoized(key, lambda: self._lookup_in_unit(unit, name))

    def _lookup_in_unit(self, unit: str, name: str) -> Binding | None:
        files = self.index.units.get(unit, [])
        for fid in files:
            node = self.scopes[fid].top.get(name)
            if node is not None:
                return ("def", node)
        child = self.index.child(unit, name)
        if child is not None:
            return ("unit", child)
        for fid in files:
            if name in self.scopes[fid].imports:
                result = self.import_binding(fid, name)
                if result is not None:
                    return result
        for fid in files:
            for star_unit, _ in self.scopes[fid].stars:
                if star_unit is not None and star_unit != unit:
                    result = self.lookup_in_unit(star_unit, name)
                    if result is not None:
                        return result
        return None

    def import_binding(self, fid: int, local: str) -> Binding | None:
        """The binding of `local` by the last import of file `fid` that binds it."""
        key = ("i", fid, local)
        value = self._memo.get(key, _MISSING)
        if value is not _MISSING:
            return value  # type: ignore[return-value]
        imp = self.scopes[fid].imports[local][-1][1]
        return self._memoized(key, lambda: self._resolve_import(fid, imp, local))

    def _resolve_import(self, fid: int, imp, local: str) -> Binding | None:
        family = self.scopes[fid].family
        module = imp.module
        if family == "rs" and imp.name not in (None, "*", "self"):
            # `use crate::client::tls13;` binds the module `tls13` when that is a file's module
            whole, more = self.index.resolve(fid, f"{module}::{imp.name}")
            if whole is not None and not more:
                return ("unit", whole)
        unit, rest = self.index.resolve(fid, module, imp.level)
        ext_name = module.lstrip(".").replace("::", ".").replace("/", ".")
        if imp.name is None or imp.name == "*":
            if unit is None:
                return ("ext", ext_name or local)
            if family == "py" and not imp.alias and "." in module.lstrip("."):
                # `import a.b` binds `a`, not `a.b`
                top, _ = self.index.resolve(fid, module.lstrip(".").split(".")[0], imp.level)
                return ("unit", top) if top else ("ext", local)
            if rest:
                return self._walk(("unit", unit), rest)[0]
            return ("unit", unit)
        if unit is None and family in ("jvm", "cs") and imp.name != "*":
            cls_unit, _ = self.index.resolve(fid, f"{module}.{imp.name}")
            if cls_unit is not None:
                return self._member_anywhere(cls_unit, imp.name) or ("unit", cls_unit)
        if unit is None:
            if imp.name == "default" or not ext_name:
                return ("ext", ext_name or imp.name)
            return ("ext", f"{ext_name}.{imp.name}")
        target = self._walk(("unit", unit), rest)[0] if rest else ("unit", unit)
        if target is None or target[0] != "unit":
            return self._walk(target, [imp.name])[0] if target else None
        found = self.lookup_in_unit(str(target[1]), imp.name)
        if found is None and imp.name == "default":
            found = self.lookup_in_unit(str(target[1]), local)
            if found is None:
                tops = [
                    n for f in self.index.units[str(target[1])] for n in self.scopes[f].top.values()
                ]
                found = ("def", tops[0]) if len(tops) == 1 else ("unit", target[1])
        if found is None and family in ("rs", "jvm", "cs"):
            found = self._member_anywhere(str(target[1]), imp.name)
        return (
            found if found is not None else ("ext", f"{str(target[1]).split(':', 1)[1]}.{imp.name}")
        )

    def _member_anywhere(self, unit: str, name: str) -> Binding | None:
        for node in self.by_name.get(name, []):
            if self.index.unit_of_file[self.nodes[node].file] == unit:
                return ("def", node)
        return None

    def alias_target(self, node: int) -> int | str | None:
        """What alias variable `node` renames: a definition node, an external name, or None."""
        if node not in self.aliases:
            return None
        return self._memoized(("al", node), lambda: self._alias_target(node))

    def _alias_target(self, node: int) -> int | str | None:
        res = self.resolve_name(
            self.nodes[node].file, self._enclosing_qname(node), self.aliases[node], typed=False
        )
        if res is None or not res[1]:
            return None
        kind, value = res[0][0][0]
        if kind == "def" and value != node:
            return int(value)  # type: ignore[call-overload]
        return str(value) if kind == "ext" else None

    def instance_class(self, node: int) -> int | str | None:
        """The class a module-level `var = Cls(...)` makes: a class node, a library class's
        dotted name, or None (a factory function, an unknown name)."""
        return self._memoized(("in", node), lambda: self._instance_class(node))

    def _instance_class(self, node: int) -> int | str | None:
        res = self.resolve_name(self.nodes[node].file, None, self.instances[node], typed=False)
        if res is None or not res[1]:
            return None
        kind, value = res[0][0][0]
        if kind == "def" and self.nodes[int(value)].def_kind in CLASS_KINDS:  # type: ignore[call-overload]
            return int(value)  # type: ignore[call-overload]
        return str(value) if kind == "ext" and _looks_like_class(str(value)) else None

    def method_of(self, cls: int, name: str) -> int | None:
        """A member `name` of class `cls` or of its bases (depth-first, like a simple MRO)."""
        member = self.children.get(cls, {}).get(name)
        if member is not None:
            return member
        key = ("m", cls, name)
        value = self._memo.get(key, _MISSING)
        if value is not _MISSING:
            return value  # type: ignore[return-value]
        return self._memoized(key, lambda: self._method_in_bases(cls, name, set()))

    def _method_in_bases(self, cls: int, name: str, seen: set[int]) -> int | None:
        member = self.children.get(cls, {}).get(name)
        if member is not None:
            return member
        if cls in seen or len(seen) > 12:
            return None
        seen.add(cls)
        for base in self.resolved_bases(cls):
            found = self._method_in_bases(base, name, seen)
            if found is not None:
                return found
        # impl blocks / receivers in other files: a method whose parent has the class's name
        # (not in Python, where a class's methods are in its body)
        if self.scopes[self.nodes[cls].file].family == "py":
            return None
        cname = self.nodes[cls].name
        for cand in self.methods.get(name, []):
            parent = self.parent.get(cand)
            if parent != cls and self.owner_name.get(cand) == cname:
                return cand
        return None

    def resolved_bases(self, cls: int) -> list[int]:
        return self._memoized(("b", cls), lambda: self._resolve_bases(cls), [])

    def _resolve_bases(self, cls: int) -> list[int]:
        out = []
        for base in self.bases.get(cls, []):
            res = self.resolve_name(self.nodes[cls].file, self._enclosing_qname(cls), base)
            if res is None or not res[1]:
                continue
            kind, value = res[0][0][0]
            if kind == "def" and value != cls:
                out.append(int(value))  # type: ignore[call-overload]
        return out

    def _enclosing_qname(self, node: int) -> str | None:
        parent = self.parent.get(node)
        return self.nodes[parent].qname if parent is not None else None

    def scope_lookup(self, fid: int, caller: str | None, name: str) -> tuple[Binding, float] | None:
        """Resolve a bare name as seen from `caller` (a qualified name) in file `fid`."""
        scope = self.scopes[fid]
        inner = True
        while caller:
            node = scope.defs.get(f"{caller}.{name}")
            if node is not None and (inner or not self._py_class_scope(scope, caller)):
                # Python: a class body's names are not visible in the functions nested in it
                # (`def socket(self)` in a class does not hide the module `socket` in its methods)
                return ("def", node), CONF_LOCAL
            caller = caller.rpartition(".")[0]
            inner = False
        node = scope.top.get(name)
        imported = scope.imports.get(name)
        if node is not None and not (
            imported
            and (
                imported[-1][0] > self.nodes[node].start or self.nodes[node].def_kind == "variable"
            )
        ):
            return ("def", node), CONF_LOCAL
        if imported:
            b = self.import_binding(fid, name)
            if b is not None:
                return b, (CONF_EXTERNAL if b[0] == "ext" else CONF_IMPORT)
        for star_unit, _ in scope.stars:
            if star_unit is not None:
                b = self.lookup_in_unit(star_unit, name)
                if b is not None:
                    return b, CONF_IMPORT * 0.95
        if scope.family in ("go", "c", "jvm", "cs", "rs"):
            for other in self.index.units.get(scope.unit, []):
                if other != fid and name in self.scopes[other].top:
                    return ("def", self.scopes[other].top[name]), CONF_PACKAGE
        if scope.family == "py" and name in PY_BUILTINS:
            return ("ext", f"builtins.{name}"), CONF_EXTERNAL
        if scope.family in GLOBAL_SCOPE_FAMILIES:
            unique = self._unique_top.get(name, _MISSING)
            if unique is _MISSING:
                tops = [n for n in self.by_name.get(name, []) if n not in self.parent]
                unique = self._unique_top[name] = tops[0] if len(tops) == 1 else None
            if unique is not None:
                return ("def", unique), CONF_GLOBAL_UNIQUE
        return None

    def _py_class_scope(self, scope: FileScope, qname: str) -> bool:
        node = scope.defs.get(qname)
        return (
            scope.family == "py" and node is not None and self.nodes[node].def_kind in CLASS_KINDS
        )

    def _class_of(self, fid: int, caller: str | None) -> int | None:
        scope = self.scopes[fid]
        while caller:
            node = scope.defs.get(caller)
            if node is not None and self.nodes[node].def_kind in CLASS_KINDS:
                return node
            caller = caller.rpartition(".")[0]
        return None

    def _walk(self, b: Binding | None, attrs: list[str]) -> tuple[Binding | None, float]:
        """Follow an attribute chain from a binding; (None, 0) when it leaves known ground."""
        conf = 1.0
        for attr in attrs:
            if b is None:
                return None, 0.0
            kind, value = b
            if kind == "ext":
                b = ("ext", f"{value}.{attr}")
            elif kind == "unit":
                b = self.lookup_in_unit(str(value), attr)
                if b is None:
                    return None, 0.0
                conf = min(conf, CONF_QUALIFIED)
            else:
                node = int(value)  # type: ignore[call-overload]
                if self.nodes[node].def_kind in CLASS_KINDS or node in self.children:
                    member = self.method_of(node, attr)
                    if member is None:
                        return None, 0.0
                    b = ("def", member)
                    conf = min(conf, CONF_QUALIFIED)
                elif node in self.instances:
                    # `_inst = Random()` at module level: `_inst.seed` is `Random.seed`
                    cls = self.instance_class(node)
                    if isinstance(cls, int):
                        member = self.method_of(cls, attr)
                        if member is None:
                            return None, 0.0
                        b = ("def", member)
                    elif cls is not None:
                        b = ("ext", f"{cls}.{attr}")
                    else:
                        return None, 0.0
                    conf = min(conf, CONF_TYPED)
                else:
                    return None, 0.0
        return b, conf

    def resolve_name(
        self, fid: int, caller: str | None, written: str, ref: bool = False, typed: bool = True
    ) -> tuple[list[tuple[Binding, float]], bool] | None:
        """Resolve a name or attribute chain as written. Returns ([(binding, conf)], exact)
        or None; `exact` is False for candidate sets. `ref`: a bare use (not a call), whose
        unknown-receiver candidates are limited to properties."""
        parts = _split_cached(written)
        if not parts:
            return None
        head, attrs = parts[0], parts[1:]
        if attrs and parts[-1] in DEF_ATTRIBUTES and self.scopes[fid].family == "py":
            # `Executor.shutdown.__doc__`, `cls.__name__`: an attribute every function and class
            # has, read off a definition, is a use of that definition
            res = self.resolve_name(fid, caller, ".".join(parts[:-1]), True, typed)
            return res if res is not None and res[1] else None
        if len(parts) >= 2 and self.scopes[fid].family == "py":
            made = self._constructed(fid, caller, parts)
            if made is not None:
                return made, True
        if head in SELF_NAMES or head == "super()":
            cls = self._class_of(fid, caller)
            if cls is not None and len(attrs) == 1:
                if head == "super()":
                    for base in self.resolved_bases(cls):
                        found = self.method_of(base, attrs[0])
                        if found is not None:
                            return [(("def", found), CONF_SELF)], True
                else:
                    found = self.method_of(cls, attrs[0])
                    if found is not None:
                        return [(("def", found), CONF_SELF)], True
            return self._candidates(fid, caller, parts, ref, typed, cls) if attrs else None
        if "(" in head or "[" in head:
            return self._candidates(fid, caller, parts, ref, False) if attrs else None
        if head in ("crate", "super") and attrs and self.scopes[fid].family == "rs":
            # a path from the crate root or a parent module: `crate::x509::wrap_in_sequence`
            unit, rest = self.index.resolve(fid, "::".join(parts))
            walked, wconf = self._walk(("unit", unit), rest) if unit else (None, 0.0)
            return ([(walked, min(CONF_IMPORT, wconf))], True) if walked else None
        found = self.scope_lookup(fid, caller, head)
        if "::" in written and self.scopes[fid].family == "rs" and self._declared_mod(found):
            # a module this file declares (`mod x509;` in lib.rs, then `x509::f()`) is its
            # file's module; by path only, since `x509.f()` is a method of a local of that name
            child = self.index.child(self.scopes[fid].unit, head)
            found = (("unit", child), CONF_IMPORT) if child is not None else found
        if found is not None and caller and self._is_parameter(fid, caller, head):
            # a parameter hides the module or function of that name (`def f(concurrent):
            # concurrent.cancel()` is not the module `concurrent`)
            found = None
        if found is None:
            if attrs and self.scopes[fid].family == "go":
                cls = self._class_of(fid, caller)
                if cls is not None and len(attrs) == 1:
                    member = self.method_of(cls, attrs[0])
                    if member is not None:
                        return [(("def", member), CONF_SELF * 0.9)], True
            return self._candidates(fid, caller, parts, ref, typed) if attrs else None
        b, conf = found
        if any("(" in a or "[" in a for a in attrs):
            return self._candidates(fid, caller, parts, ref, False)
        walked, wconf = self._walk(b, attrs)
        if walked is None:
            return self._candidates(fid, caller, parts, ref, typed) if attrs else None
        return [(walked, min(conf, wconf))], True

    def _declared_mod(self, found: tuple[Binding, float] | None) -> bool:
        """True for nothing found, or for a `mod x;` declaration (a module definition)."""
        if found is None:
            return True
        kind, value = found[0]
        return kind == "def" and self.nodes[int(value)].def_kind == "module"  # type: ignore[call-overload]

    def _is_parameter(self, fid: int, caller: str, name: str) -> bool:
        """Python: `name` is a parameter of the calling function or of a function enclosing
        it (and no nearer nested definition has the name)."""
        scope = self.scopes[fid]
        if scope.family != "py" or not self.types.enabled:
            return False
        while caller:
            if f"{caller}.{name}" in scope.defs:
                return False
            node = scope.defs.get(caller)
            if node is None or self.nodes[node].def_kind in CLASS_KINDS:
                return False
            n = self.nodes[node]
            if name in self.types.params(node, self.paths[fid], n.start, n.end):
                return True
            caller = caller.rpartition(".")[0]
        return False

    def _constructed(
        self, fid: int, caller: str | None, parts: tuple[str, ...]
    ) -> list[tuple[Binding, float]] | None:
        """`Foo(...).m` / `mod.Foo(...).m`: a method on the instance a class constructs (the
        receiver is a call of a name that resolves to a class), with a typed receiver's
        confidence; a library class gives an external node (`pathlib.Path.exists`)."""
        recv = parts[-2]
        if not recv.endswith("()") or any("(" in p or "[" in p for p in parts[:-2]):
            return None
        ctor = recv[:-2]
        if not ctor.isidentifier() or ctor in NOT_CONSTRUCTORS:
            return None
        res = self.resolve_name(fid, caller, ".".join((*parts[:-2], ctor)), False, False)
        if res is None or not res[1]:
            return None
        name = parts[-1]
        out: list[tuple[Binding, float]] = []
        for (kind, value), _conf in res[0]:
            if kind == "ext" and _looks_like_class(str(value)):
                out.append((("ext", f"{value}.{name}"), CONF_TYPED))
            elif kind == "def" and self.nodes[int(value)].def_kind in CLASS_KINDS:  # type: ignore[call-overload]
                member = self.method_of(int(value), name)  # type: ignore[call-overload]
                if member is not None:
                    out.append((("def", member), CONF_TYPED))
        return out or None

    # -- methods on receivers of unknown type -----------------------------------------------

    def _candidates(
        self,
        fid: int,
        caller: str | None,
        parts: tuple[str, ...],
        ref: bool,
        typed: bool,
        self_cls: int | None = None,
    ) -> tuple[list[tuple[Binding, float]], bool] | None:
        """`recv.m()` where `recv`'s type is not known from imports or scopes. First, the
        receiver's type from cheap local evidence (assignment from a constructor, annotation,
        isinstance, `self.x = C()`); then every method `m`, ranked by evidence that the calling
        file can see the candidate's class (same file, an import of its module or of a module
        that defines it or a subclass, a subclass of the caller's own class) and that the
        receiver's name names it; when other methods are called on the same receiver, only the
        classes that have them all compete (duck typing)."""
        name = parts[-1].split("(")[0]
        if typed:
            found = self._typed(fid, caller, parts[:-1], name)
            if found is not None:
                return found, True
        cands = self.methods.get(name, [])
        picked: tuple[int, ...] = ()
        if ref:
            # a read: properties, and methods whose class the receiver's name names (a bound
            # method kept for later: `command=text.xview`, `add = result.addSuccess`)
            word = _receiver_word(parts[:-1]) if len(cands) <= MAX_CANDIDATES else ""
            if word and not self._could_name(word):
                word = ""
            cands = [c for c in cands if c in self.props or (word and self._names_class(c, word))]
            picked = tuple(cands)
        if not cands or len(cands) > MAX_CANDIDATES:
            return None
        recv = _receiver_word(parts[:-1]) if len(cands) > 1 else ""
        also = self._cocalled(fid, caller, parts[:-1], name) if len(cands) > 1 else frozenset()
        key = (fid, name, ref, self_cls, recv, picked, also)
        got = self._cand_sets.get(key)
        if got is None:
            # duck typing: a class without the other methods called on the same receiver is
            # no candidate with evidence (`t.done(); t.cancel()` is not Handle.cancel)
            fits = [c for c in cands if self._has_members(c, also)] if also else cands
            got = self._rank_candidates(fid, fits or cands, self_cls, recv, len(fits or cands))
            if fits and len(fits) < len(cands):
                weak = CONF_CANDIDATE_WEAK / len(cands) ** 0.5
                got += [(("def", c), weak) for c in cands if c not in fits]
            self._cand_sets[key] = got
        return got, False

    def _cocalled(
        self, fid: int, caller: str | None, recv: tuple[str, ...], name: str
    ) -> frozenset[str]:
        """The other methods called on the same receiver: a variable in the same function, or
        `self.x` anywhere in the same class (read from the file's calls)."""
        body = self.bodies[fid] if fid < len(self.bodies) else None
        if body is None or self.scopes[fid].family != "py":
            return frozenset()
        if self._cocalls is None or self._cocalls[0] is not body:
            table: dict[tuple, set[str]] = {}
            for callee, _line, site in body.iter_calls():
                key = self._cocall_key(fid, site, _split_cached(callee)[:-1])
                if key is not None:
                    table.setdefault(key, set()).add(_split_cached(callee)[-1])
            self._cocalls = (body, {k: frozenset(v) for k, v in table.items()})
        key = self._cocall_key(fid, caller, recv)
        got = self._cocalls[1].get(key, frozenset()) if key is not None else frozenset()
        got = got - {name}
        if got and len(recv) == 1:
            bound = self.scope_lookup(fid, caller, recv[0])
            if (
                bound is not None
                and bound[0][0] != "def"
                and not (caller and self._is_parameter(fid, caller, recv[0]))
            ):
                return frozenset()  # a module (`os.stat(); os.chmod()`), not an object
        return got

    def _cocall_key(self, fid: int, caller: str | None, recv: tuple[str, ...]) -> tuple | None:
        if len(recv) == 1 and recv[0].isidentifier() and recv[0] not in SELF_NAMES:
            return (caller, recv[0])
        if len(recv) == 2 and recv[0] == "self" and recv[1].isidentifier():
            cls = self._class_of(fid, caller)
            return (cls, recv[1]) if cls is not None else None
        return None

    def _has_members(self, cand: int, names: frozenset[str]) -> bool:
        """Whether the candidate's class, or a subclass that inherits the candidate, has
        (itself or through its bases) a member of every name: a mixin's method is called on
        the classes that mix it in (`widget.pack(); widget.cget()` is `Misc.cget` on a
        `Widget(Misc, Pack)`). A class with a base outside the repository, or a
        `__getattr__`, may have any."""
        if cand not in self.parent:
            return True
        # per file (as the candidate sets): built from memoised lookups (`method_of`,
        # `resolved_bases`, the inheritors), whose invalidation the incremental build knows
        key = ("hm", cand, names)
        got = self._cand_sets.get(key)
        if got is None:
            got = self._cand_sets[key] = any(  # type: ignore[assignment]
                self._open_class(sub) or all(self.method_of(sub, n) is not None for n in names)
                for sub in self._inheritors(cand)
            )
        return bool(got)

    def _inheritors(self, cand: int) -> tuple[int, ...]:
        """The method's class and its subclasses that inherit it without overriding it."""
        # keyed as the receiver-name words ("cw"), which have the same dependencies
        return self._memoized(
            ("cw", cand, "ih"), lambda: self._inheritors_of(cand), (), self._sub_memo
        )

    def _inheritors_of(self, cand: int) -> tuple[int, ...]:
        # top down from the class: a subclass defining the name overrides it (and so do its
        # subclasses, unless another path brings it back: `method_of` decides with several
        # bases); one with the parent as its only base inherits what the parent has
        cls, method = self.parent[cand], self.nodes[cand].name
        self.subclasses_of(cls)  # builds the direct-subclass table
        direct = self._subclasses or {}
        out, todo, seen = {cls: None}, [cls], {cls}
        while todo and len(seen) < 2000:
            parent = todo.pop()
            for sub in direct.get(parent, []):
                if sub in seen:
                    continue
                seen.add(sub)
                if method in self.children.get(sub, {}):
                    continue
                only = parent in out and self.resolved_bases(sub) == [parent]
                if only or self.method_of(sub, method) == cand:
                    out[sub] = None
                todo.append(sub)
        return tuple(out)

    def _open_class(self, cls: int, depth: int = 0) -> bool:
        """A class that may have any member: a base outside the repository, or `__getattr__`
        (per file, like `_has_members`)."""
        key = ("oc", cls)
        got = self._cand_sets.get(key)
        if got is None:
            got = self._cand_sets[key] = self._open_class_of(cls, depth)  # type: ignore[assignment]
        return bool(got)

    def _open_class_of(self, cls: int, depth: int) -> bool:
        if self.method_of(cls, "__getattr__") is not None or depth > 12:
            return True
        resolved = self.resolved_bases(cls)
        written = [b for b in self.bases.get(cls, []) if b not in CLOSED_BASES]
        if len(resolved) < len(written):
            return True
        return any(self._open_class(b, depth + 1) for b in resolved)

    def _rank_candidates(
        self, fid: int, cands: list[int], self_cls: int | None, recv: str, n_all: int
    ) -> list[tuple[Binding, float]]:
        seen = {c for c in cands if self._evidence(fid, c, self_cls)}
        named = (
            {c for c in cands if self._names_class(c, recv)} if self._could_name(recv) else set()
        )
        # evidence per candidate: the caller can see its class (`seen`), the receiver's own name
        # names its class (`named`: `formset.is_valid()` -> BaseFormSet, not BaseForm). A name
        # outweighs mere visibility (`self._transport.kill()` in a file importing `subprocess`
        # is SubprocessTransport.kill, not Popen.kill). The candidates with the best evidence
        # share its confidence; all others are weak.
        score = {c: (c in seen) + 2 * (c in named) for c in cands}
        best = max(score.values())
        top = [c for c in cands if score[c] == best] if best else []
        conf_top = (CONF_NAMED if best == 3 else CONF_CANDIDATE) / len(top) ** 0.5 if top else 0.0
        weak = CONF_CANDIDATE_WEAK / n_all**0.5
        return [(("def", c), conf_top if score[c] == best and best else weak) for c in cands]

    def _could_name(self, word: str) -> bool:
        """Whether `word` could name any class of the repository (see `_names_class`): a
        cheap test on the suffixes of every class word, before testing each candidate."""
        if not word:
            return False
        if self._class_suffixes is None:
            # a prefilter only (a superset is harmless): made once, and a file declared again
            # in a kept builder adds its classes' words (`_note_classes`; a class that goes
            # keeps its words)
            self._class_suffixes = (set(), set())
            self._note_classes(self.nodes)
        suffixes, words = self._class_suffixes
        return word in suffixes or any(word[i:] in words for i in range(len(word) - 3))

    def _note_classes(self, nodes: Iterable[Node]) -> None:
        if self._class_suffixes is None:
            return
        suffixes, words = self._class_suffixes
        new = {w for n in nodes if n.def_kind in CLASS_KINDS for w in _class_words(n.name)}
        new -= words
        words |= new
        suffixes.update(w[i:] for w in new for i in range(len(w)))

    def _names_class(self, cand: int, word: str) -> bool:
        """True when the receiver's name `word` (normalised) names the candidate's class or a
        subclass that inherits the candidate: the class name ends with it once a
        `Base`/`Mixin`/... affix is removed (`formset` -> BaseFormSet, `creation` ->
        DatabaseCreation, `geometry` -> GEOSGeometryBase, `text` -> Text(Misc) for
        `Misc.configure`), or the name ends with a class name of 4+ letters
        (`main_task` -> Task, `timeout_handle` -> Handle)."""
        cls = self.parent.get(cand)
        if cls is None:
            return False
        key = ("cw", cand)
        names = self._sub_memo.get(key)
        if names is None:
            # the candidate's class and every subclass that inherits the method without
            # overriding it: `text.configure()` names tkinter's `Text`, whose `configure` is
            # `Misc.configure`, and not `ttk.Style`
            words = {
                w for sub in self._inheritors(cand) for w in _class_words(self.nodes[sub].name)
            }
            names = self._sub_memo[key] = tuple(sorted(words))
        return any(n.endswith(word) or (len(n) >= 4 and word.endswith(n)) for n in names)  # type: ignore[attr-defined]

    def _typed(
        self, fid: int, caller: str | None, recv: tuple[str, ...], name: str
    ) -> list[tuple[Binding, float]] | None:
        if self.scopes[fid].family != "py" or not self.types.enabled or not recv:
            return None
        if len(recv) == 1 and recv[0] not in SELF_NAMES and recv[0].isidentifier():
            scope_node, keys = self.caller_node(fid, caller), (recv[0],)
        elif len(recv) == 2 and recv[0] in ("self", "cls") and recv[1].isidentifier():
            scope_node, keys = self._class_of(fid, caller), (f"self.{recv[1]}", recv[1])
        else:
            return None
        if scope_node is None:
            return None
        out: list[tuple[Binding, float]] = []
        for names in self._type_scopes(fid, scope_node, len(keys) == 1):
            for key in keys:
                for type_name in names.get(key, ()):
                    res = self.resolve_name(fid, caller, type_name, typed=False)
                    if res is None or not res[1]:
                        continue
                    b = res[0][0][0]
                    if b[0] == "ext" and _looks_like_class(str(b[1])):
                        out.append((("ext", f"{b[1]}.{name}"), CONF_TYPED))
                    elif b[0] == "def" and self.nodes[int(b[1])].def_kind in CLASS_KINDS:  # type: ignore[call-overload]
                        member = self.method_of(int(b[1]), name)  # type: ignore[call-overload]
                        if member is not None:
                            out.append((("def", member), CONF_TYPED))
                if out:
                    return list(dict.fromkeys(out))
        return None

    def _type_scopes(self, fid: int, scope_node: int, variable: bool) -> Iterable[dict]:
        """The receiver-type evidence that applies to a variable (or a `self.x`) used in
        `scope_node`, nearest first: the definition's own text, then (a variable of a closure)
        the enclosing functions' (`fut = Future()` in `f`, `fut.set_result()` in a function
        nested in `f`); module-level code reads the file's text outside its top-level
        functions and classes. Only the file's own text: the incremental build relies on it."""
        node = self.nodes[scope_node]
        path = self.paths[fid]
        if node.kind == NodeKind.FILE:
            if variable:
                skip = [(self.nodes[n].start, self.nodes[n].end)
                        for n in self.scopes[fid].top.values()
                        if self.nodes[n].def_kind != "variable"]  # fmt: skip
                yield self.types.of_module(scope_node, path, skip)
            return
        if node.kind != NodeKind.DEFINITION:
            return
        yield self.types.of(scope_node, path, node.start, node.end)
        parent = self.parent.get(scope_node)
        while variable and parent is not None and self.nodes[parent].def_kind not in CLASS_KINDS:
            outer = self.nodes[parent]
            yield self.types.of(parent, path, outer.start, outer.end)
            parent = self.parent.get(parent)

    def _evidence(self, fid: int, cand: int, self_cls: int | None) -> bool:
        cfile = self.nodes[cand].file
        if cfile == fid:
            return True
        touched = self.touched_units(fid)
        if self.index.unit_of_file[cfile] in touched:
            return True
        cls = self.parent.get(cand)
        if cls is None:
            return False
        if self_cls is not None and self_cls != cls and cls in self.subclasses_of(self_cls):
            return True
        return not touched.isdisjoint(self.family_units(cls))

    def family_units(self, cls: int) -> frozenset[str]:
        """The modules that define `cls` or one of its subclasses."""
        key = ("fu", cls)
        got = self._sub_memo.get(key)
        if got is None:
            unit_of = self.index.unit_of_file
            got = self._sub_memo[key] = frozenset(
                unit_of[self.nodes[d].file] for d in self.subclasses_of(cls)
            )
        return got  # type: ignore[return-value]

    def touched_units(self, fid: int) -> frozenset[str]:
        """The modules file `fid` imports from (what its imports bind, and `import *`)."""
        got = self._touched.get(fid)
        if got is None:
            units = {self.scopes[fid].unit}
            for local in self.scopes[fid].imports:
                b = self.import_binding(fid, local)
                if b is None or b[0] == "ext":
                    continue
                if b[0] == "unit":
                    units.add(str(b[1]))
                else:
                    units.add(self.index.unit_of_file[self.nodes[int(b[1])].file])  # type: ignore[call-overload]
            units.update(u for u, _ in self.scopes[fid].stars if u is not None)
            got = self._touched[fid] = frozenset(units)
        return got

    def subclasses_of(self, cls: int) -> list[int]:
        """`cls` and its transitive subclasses in the repository (bounded)."""
        if self._subclasses is None:
            self.direct_subclasses()
        assert self._subclasses is not None
        key = ("s", cls)
        got = self._sub_memo.get(key)
        if got is None:
            out, todo = [cls], [cls]
            seen = {cls}
            while todo and len(out) < 2000:
                for sub in self._subclasses.get(todo.pop(), []):
                    if sub not in seen:
                        seen.add(sub)
                        out.append(sub)
                        todo.append(sub)
            self._sub_memo[key] = got = out
        return got  # type: ignore[return-value]

    def direct_subclasses(self) -> dict[int, list[int]]:
        """Class -> the classes whose resolved bases name it, in the graph's order (a class
        twice when two of its bases resolve to one class)."""
        if self._subclasses is None:
            direct: dict[int, list[int]] = {}
            self._supers = {}
            self._bases_cut = set()
            for node in sorted(self.bases, key=self.okey.__getitem__ if self.okey else None):
                supers = self._supers[node] = self.resolved_bases(node)
                if ("b", node) not in self._memo:
                    self._bases_cut.add(node)
                for base in supers:
                    direct.setdefault(base, []).append(node)
            self._subclasses = direct
        return self._subclasses

    def update_subclasses(self, classes: Iterable[int]) -> tuple[dict[int, list[int]], bool]:
        """Resolve the bases of `classes` again (their memo entries dropped by a declaration
        change, or the class made, removed or declared again) and move them in the
        direct-subclass table; returns their resolved bases before, and whether any class's
        list of direct subclasses changed (members or order)."""
        direct = self.direct_subclasses()
        okey = self.okey.__getitem__ if self.okey else None
        before: dict[int, list[int]] = {}
        lists: dict[int, list[int]] = {}  # the lists taken from, as they were
        for node in classes:
            old = before[node] = self._supers.pop(node, [])
            for base in set(old):
                subs = direct[base]
                lists.setdefault(base, list(subs))
                subs[:] = [s for s in subs if s != node]
                if not subs:
                    del direct[base]
        moved = False
        for node in before:
            self._bases_cut.discard(node)
            if node not in self.bases:
                continue
            supers = self._supers[node] = self.resolved_bases(node)
            if ("b", node) not in self._memo:
                self._bases_cut.add(node)
            for base in supers:
                moved = moved or base not in lists
                bisect.insort(direct.setdefault(base, []), node, key=okey)
        moved = moved or any(direct.get(p, []) != subs for p, subs in lists.items())
        return before, moved

    # -- phase 2: edges -------------------------------------------------------------------

    def caller_node(self, fid: int, caller: str | None) -> int:
        scope = self.scopes[fid]
        while caller:
            node = scope.defs.get(caller)
            if node is not None:
                return node
            caller = caller.rpartition(".")[0]
        return self.file_nodes[fid]

    def resolve_all(self, reuse: Reuse | None = None) -> None:
        """Declare every file, then resolve each file's edges in path order. `reuse` holds the
        edge log of a previous build whose declarations were identical and, per unchanged
        file, its log range and counters: those edges are replayed instead of resolved (same
        order, hence the same node and edge numbers as a full build)."""
        self.declare()
        bases_by_file: dict[int, list[int]] = {}
        for node in self.bases:
            bases_by_file.setdefault(self.nodes[node].file, []).append(node)
        for fid in range(len(self.paths)):
            old = reuse.files.get(fid) if reuse else None
            if old is not None and reuse is not None:
                lo, hi, counts = old
                self.replay(reuse.cols, lo, hi, reuse.names)
                for k, v in zip(STAT_KEYS, counts, strict=True):
                    self.stats[k] += v
                self.file_stats.append(list(counts))
            else:
                before = [self.stats[k] for k in STAT_KEYS]
                self._resolve_file(fid, bases_by_file.get(fid, []))
                self.file_stats.append(
                    [self.stats[k] - b for k, b in zip(STAT_KEYS, before, strict=True)]
                )
            self.bodies[fid] = None  # resolved: its calls and references are not read again
            self.log_ptr.append(len(self.log))

    def _resolve_file(self, fid: int, class_nodes: list[int]) -> None:
        body = self.bodies[fid] or Body()
        fnode = self.file_nodes[fid]
        self._resolved = {}
        self._cand_sets = {}
        # C/C++: a name's meaning depends on the calling function only through the names of
        # nested definitions (members) of this file; other names are resolved once per file
        self._caller_free = (
            {self.nodes[n].name for n in self.scopes[fid].defs.values() if n in self.parent}
            if self.scopes[fid].family == "c"
            else None
        )
        for local, specs in self.scopes[fid].imports.items():
            b = self.import_binding(fid, local)
            if b is not None:
                conf = CONF_EXTERNAL if b[0] == "ext" else CONF_IMPORT
                for line, _ in specs:
                    self.emit(fnode, b, IMPORTS, conf, line)
        for star_unit, line in self.scopes[fid].stars:
            if star_unit is not None:
                self.emit(fnode, ("unit", star_unit), IMPORTS, CONF_IMPORT, line)
        for node in class_nodes:
            for base in self.bases[node]:
                res = self.resolve_name(fid, self._enclosing_qname(node), base)
                if res is None or not res[1]:
                    continue
                for b, conf in res[0]:
                    self.emit(node, b, INHERITS, conf, self.nodes[node].start)
        stats, floor = self.stats, self.floor
        for callee, line, caller in body.iter_calls():
            stats["calls"] += 1
            src = self.caller_node(fid, caller)
            res = self._resolve_cached(fid, caller, callee, False)
            if res is None:
                stats["dropped"] += 1
                continue
            bindings, exact = res
            if not exact:
                stats["candidate"] += 1
            elif bindings[0][1] == CONF_TYPED:
                stats["typed"] += 1
            elif bindings[0][0][0] == "ext":
                stats["external"] += 1
            else:
                stats["resolved"] += 1
            for b, conf in bindings:
                if conf < floor:
                    stats["below_floor"] += 1
                else:
                    self.emit(src, b, CALLS, conf, line)
        for name, line, context in body.iter_references():
            res = self._resolve_cached(fid, context, name, True)
            if res is None or res[0][0][0][0] == "ext":
                continue
            src = self.caller_node(fid, context)
            for b, conf in res[0]:
                conf *= REFERENCE_FACTOR
                if conf < floor:
                    stats["below_floor"] += 1
                else:
                    self.emit(src, b, REFERENCES, conf, line)

    def _resolve_cached(self, fid: int, caller: str | None, written: str, ref: bool):
        if self._caller_free is not None and caller is not None:
            head = _split_cached(written)[:1]
            if head and head[0] not in self._caller_free and head[0] not in SELF_NAMES:
                caller_key = None  # C: no nested scope names it, so the caller cannot matter
                key = (caller_key, written, ref)
                got = self._resolved.get(key, _MISSING)
                if got is _MISSING:
                    got = self._resolved[key] = self.resolve_name(fid, caller, written, ref)
                return got
        key = (caller, written, ref)
        got = self._resolved.get(key, _MISSING)
        if got is _MISSING:
            got = self._resolved[key] = self.resolve_name(fid, caller, written, ref)
        return got


def _qualifier(qualified_name: str, name: str) -> str | None:
    """`Store.Get` (a Go method, no parent recorded) -> `Store`."""
    if qualified_name.endswith("." + name):
        return qualified_name[: -len(name) - 1]
    return None


def split_chain(written: str) -> list[str]:
    """`self.a.b` -> [self, a, b]; `pkg::f` -> [pkg, f]; `$this->m` -> [this, m];
    `super().m` -> [super(), m]; `a.b().c` -> [a, b(), c]."""
    text = written.strip().replace("?.", ".").replace("::", ".").replace("->", ".")
    text = text.replace("$", "").replace("new ", "")
    if not _BRACKETS.search(text):
        return [p for p in (x.strip() for x in text.split(".")) if p]
    parts: list[str] = []
    depth = 0
    cur = []
    for ch in text:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth = max(0, depth - 1)
            if depth == 0:
                cur.append("()" if ch == ")" else "[]")
                continue
        if depth:
            continue
        if ch == ".":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    parts = [p.strip() for p in parts]
    if parts and parts[0] == "super()":
        return parts
    return [p for p in parts if p]


_ALIAS = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]+)?=\s*([A-Za-z_][\w.]*)\s*$")


def alias_of(d: Definition, family: str) -> str:
    """`isfuture = base_futures.isfuture` -> "base_futures.isfuture": a Python variable that
    only renames another name (a re-export or an alias); "" for anything else."""
    if family != "py" or d.kind != "variable" or not d.signature:
        return ""
    m = _ALIAS.match(d.signature)
    return m.group(2) if m and m.group(1) == d.name and m.group(2) != d.name else ""


_INSTANCE = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]+)?=\s*([A-Za-z_][\w.]*)\s*\(")


def instance_of(d: Definition, family: str) -> str:
    """`_inst = Random()` (a module-level Python variable made by a call) -> "Random": the
    name called, which resolution then checks is a class; "" for anything else."""
    if family != "py" or d.kind != "variable" or d.parent or not d.signature:
        return ""
    m = _INSTANCE.match(d.signature)
    return m.group(2) if m and m.group(1) == d.name and m.group(2) not in NOT_CONSTRUCTORS else ""


_CLASS_AFFIXES = ("base", "mixin", "impl", "abc", "abstract", "generic", "default")
_MIN_RECEIVER_WORD = 3


def _receiver_word(recv: tuple[str, ...]) -> str:
    """The receiver's own name, normalised (`self._form_set` -> `formset`; `obj2` -> `obj`);
    "" when it is a call, a subscript, `self` or too short to say anything."""
    if not recv:
        return ""
    last = recv[-1]
    if not last.isidentifier() or last in SELF_NAMES:
        return ""
    word = last.lower().replace("_", "").rstrip("0123456789")
    return word if len(word) >= _MIN_RECEIVER_WORD else ""


def _class_words(name: str) -> tuple[str, ...]:
    """A class name and its forms without a Base/Mixin/... prefix or suffix, lowercased."""
    low = name.lower().replace("_", "")
    out = {low}
    for affix in _CLASS_AFFIXES:
        if low.endswith(affix) and len(low) > len(affix):
            out.add(low[: -len(affix)])
        if low.startswith(affix) and len(low) > len(affix):
            out.add(low[len(affix) :])
    return tuple(sorted(out))


def _looks_like_class(dotted: str) -> bool:
    """A library name that is probably a class (so `x = Name()` makes an instance of it)."""
    last = dotted.rsplit(".", 1)[-1]
    return last[:1].isupper() or dotted in BUILTIN_TYPES


@functools.lru_cache(maxsize=1 << 16)
def _split_cached(written: str) -> tuple[str, ...]:
    return tuple(split_chain(written))


def _decorated(ex: FileExtraction, family: str) -> dict[str, frozenset[str]]:
    """Python decorators by definition: the names referenced between a definition's first
    line (its decorators) and the line of its name."""
    if family != "py":
        return {}
    spans: dict[str, list[tuple[int, int]]] = {}
    for d in ex.definitions:  # a name defined twice (a getter and its setter): every span
        if d.name_line > d.start_line:
            spans.setdefault(d.qualified_name, []).append((d.start_line, d.name_line))
    out: dict[str, set[str]] = {}
    for ref in ex.references:
        for lo, hi in spans.get(ref.context or "", ()):
            if lo <= ref.line < hi:
                out.setdefault(ref.context or "", set()).add(ref.name)
    return {k: frozenset(v) for k, v in out.items()}


def _is_property(decorators: frozenset[str], name: str) -> bool:
    """`@property`, `@cached_property`, ... or `@name.setter` / `.getter` / `.deleter` (a
    property defined again with its setter: the name is read as an attribute)."""
    return bool(decorators & PROPERTY_DECORATORS) or any(
        d in decorators for d in (f"{name}.setter", f"{name}.getter", f"{name}.deleter")
    )


def family_for(language: str | None) -> str:
    return family_of(language)


def iter_edges(builder: GraphBuilder) -> Iterable[tuple[int, int, int, float, list[int]]]:
    """Merged edges `(src, dst, kind, best conf, sorted lines)` in order of first appearance
    (what `build.merge_edges` computes with numpy)."""
    merged: dict[tuple[int, int, int], list] = {}
    e = builder.edges
    for src, dst, kind, conf, line in zip(e.src, e.dst, e.kind, e.conf, e.line, strict=True):
        slot = merged.get((src, dst, kind))
        if slot is None:
            merged[(src, dst, kind)] = [conf, {line}]
        else:
            slot[0] = max(slot[0], conf)
            slot[1].add(line)
    for (src, dst, kind), (conf, lines) in merged.items():
        yield src, dst, kind, conf, sorted(lines)
