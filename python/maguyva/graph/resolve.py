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

import builtins
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..extract_types import Definition, FileExtraction
from .modules import ModuleIndex, family_of
from .schema import (
    CONF_CANDIDATE,
    CONF_EXTERNAL,
    CONF_GLOBAL_UNIQUE,
    CONF_IMPORT,
    CONF_LOCAL,
    CONF_PACKAGE,
    CONF_QUALIFIED,
    CONF_SELF,
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
# Families whose bare names are visible across files without an import (linker / package scope).
GLOBAL_SCOPE_FAMILIES = frozenset({"c", "x", "jvm", "cs"})

# A binding: ("def", node) | ("unit", unit key) | ("ext", dotted name)
Binding = tuple[str, object]


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
    """Accumulates nodes and merged edges; `resolve_all` fills them from extractions."""

    def __init__(self, extraction: dict[str, FileExtraction]) -> None:
        self.paths = sorted(extraction)
        self.ex = [extraction[p] for p in self.paths]
        self.index = ModuleIndex(
            [(p, e.language) for p, e in zip(self.paths, self.ex, strict=True)]
        )
        self.nodes: list[Node] = []
        self.edges: dict[tuple[int, int, int], list] = {}  # (src, dst, kind) -> [conf, lines]
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
        self._memo_unit: dict[tuple[str, str], Binding | None] = {}
        self._memo_import: dict[tuple[int, str], Binding | None] = {}
        self._busy: set[tuple] = set()
        self._memo_member: dict[tuple[int, str], int | None] = {}
        self._memo_bases: dict[int, list[int]] = {}
        self.stats = {"calls": 0, "resolved": 0, "candidate": 0, "external": 0, "dropped": 0}

    # -- nodes and edges --------------------------------------------------------------------

    def _node(self, node: Node) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def edge(self, src: int, dst: int, kind: EdgeKind, conf: float, line: int) -> None:
        if src == dst and kind != EdgeKind.CALLS:
            return
        slot = self.edges.get((src, dst, int(kind)))
        if slot is None:
            self.edges[(src, dst, int(kind))] = [conf, {line}]
        else:
            slot[0] = max(slot[0], conf)
            slot[1].add(line)

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
                self.edge(node, self.file_nodes[fid], EdgeKind.CONTAINS, 1.0, 0)
        return node

    # -- phase 1: definitions -----------------------------------------------------------------

    def declare(self) -> None:
        for fid, (path, ex) in enumerate(zip(self.paths, self.ex, strict=True)):
            fnode = self._node(Node(NodeKind.FILE, path.rsplit("/", 1)[-1], path, fid, 1, 0))
            self.file_nodes.append(fnode)
            unit = self.index.unit_of_file[fid]
            scope = FileScope(fid, unit, unit.split(":", 1)[0])
            self.scopes.append(scope)
            defs = sorted(ex.definitions, key=lambda d: (d.start_line, -d.end_line))
            for d in defs:
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
                scope.defs.setdefault(d.qualified_name, node)
                self.by_name.setdefault(d.name, []).append(node)
                if d.bases:
                    self.bases[node] = list(d.bases)
            for d in defs:
                node = scope.defs[d.qualified_name]
                owner = d.parent or _qualifier(d.qualified_name, d.name)
                parent = scope.defs.get(owner) if owner else None
                if owner:
                    self.owner_name[node] = owner.rsplit(".", 1)[-1]
                if parent is None and owner is None:
                    scope.top.setdefault(d.name, node)
                    self.edge(fnode, node, EdgeKind.CONTAINS, 1.0, d.start_line)
                else:
                    owner = parent if parent is not None else fnode
                    self.edge(owner, node, EdgeKind.CONTAINS, 1.0, d.start_line)
                    if parent is not None:
                        self.parent[node] = parent
                        self.children.setdefault(parent, {}).setdefault(d.name, node)
                if self._is_method(d, parent) or (owner and parent is None):
                    self.methods.setdefault(d.name, []).append(node)
            for imp in ex.imports:
                if imp.name == "*" and not imp.alias:
                    unit_key, _ = self.index.resolve(fid, imp.module, imp.level)
                    scope.stars.append((unit_key, imp.line))
                    continue
                local = imp.alias or imp.name or self._default_binding(scope.family, imp.module)
                if local:
                    scope.imports.setdefault(local, []).append((imp.line, imp))
        for fid in range(len(self.paths)):
            self.scopes[fid].imports = {
                k: sorted(v, key=lambda x: x[0]) for k, v in self.scopes[fid].imports.items()
            }

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

    # -- lookups --------------------------------------------------------------------------

    def lookup_in_unit(self, unit: str, name: str) -> Binding | None:
        """What `name` means inside module `unit` (definitions, submodules, re-exports)."""
        key = (unit, name)
        if key in self._memo_unit:
            return self._memo_unit[key]
        if key in self._busy:
            return None  # an import cycle: stop here, the other end resolves it
        self._busy.add(key)
        result: Binding | None = None
        files = self.index.units.get(unit, [])
        for fid in files:
            node = self.scopes[fid].top.get(name)
            if node is not None:
                result = ("def", node)
                break
        if result is None:
            child = self.index.child(unit, name)
            if child is not None:
                result = ("unit", child)
        if result is None:
            for fid in files:
                if name in self.scopes[fid].imports:
                    result = self.import_binding(fid, name)
                    if result is not None:
                        break
        if result is None:
            for fid in files:
                for star_unit, _ in self.scopes[fid].stars:
                    if star_unit is not None and star_unit != unit:
                        result = self.lookup_in_unit(star_unit, name)
                        if result is not None:
                            break
                if result is not None:
                    break
        self._busy.discard(key)
        self._memo_unit[key] = result
        return result

    def import_binding(self, fid: int, local: str) -> Binding | None:
        """The binding of `local` by the last import of file `fid` that binds it."""
        key = (fid, local)
        if key in self._memo_import:
            return self._memo_import[key]
        if key in self._busy:
            return None
        self._busy.add(key)
        imp = self.scopes[fid].imports[local][-1][1]
        result = self._resolve_import(fid, imp, local)
        self._busy.discard(key)
        self._memo_import[key] = result
        return result

    def _resolve_import(self, fid: int, imp, local: str) -> Binding | None:
        family = self.scopes[fid].family
        module = imp.module
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

    def method_of(self, cls: int, name: str, seen: set[int] | None = None) -> int | None:
        """A member `name` of class `cls` or of its bases (depth-first, like a simple MRO)."""
        member = self.children.get(cls, {}).get(name)
        if member is not None:
            return member
        if seen is None:
            key = (cls, name)
            if key not in self._memo_member:
                self._memo_member[key] = self.method_of(cls, name, set())
            return self._memo_member[key]
        if cls in seen or len(seen) > 12:
            return None
        seen.add(cls)
        for base in self.resolved_bases(cls):
            found = self.method_of(base, name, seen)
            if found is not None:
                return found
        # impl blocks / receivers in other files: a method whose parent has the class's name
        cname = self.nodes[cls].name
        for cand in self.methods.get(name, []):
            parent = self.parent.get(cand)
            if parent != cls and self.owner_name.get(cand) == cname:
                return cand
        return None

    def resolved_bases(self, cls: int) -> list[int]:
        if cls in self._memo_bases:
            return self._memo_bases[cls]
        self._memo_bases[cls] = []  # an inheritance cycle resolves to no bases
        out = []
        for base in self.bases.get(cls, []):
            res = self.resolve_name(self.nodes[cls].file, self._enclosing_qname(cls), base)
            if res is None or not res[1]:
                continue
            kind, value = res[0][0][0]
            if kind == "def" and value != cls:
                out.append(int(value))  # type: ignore[call-overload]
        self._memo_bases[cls] = out
        return out

    def _enclosing_qname(self, node: int) -> str | None:
        parent = self.parent.get(node)
        return self.nodes[parent].qname if parent is not None else None

    def scope_lookup(self, fid: int, caller: str | None, name: str) -> tuple[Binding, float] | None:
        """Resolve a bare name as seen from `caller` (a qualified name) in file `fid`."""
        scope = self.scopes[fid]
        while caller:
            node = scope.defs.get(f"{caller}.{name}")
            if node is not None:
                return ("def", node), CONF_LOCAL
            caller = caller.rpartition(".")[0]
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
            tops = [n for n in self.by_name.get(name, []) if n not in self.parent]
            if len(tops) == 1:
                return ("def", tops[0]), CONF_GLOBAL_UNIQUE
        return None

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
                else:
                    return None, 0.0
        return b, conf

    def resolve_name(
        self, fid: int, caller: str | None, written: str
    ) -> tuple[list[tuple[Binding, float]], bool] | None:
        """Resolve a name or attribute chain as written. Returns ([(binding, conf)], exact)
        or None; `exact` is False for candidate sets."""
        parts = split_chain(written)
        if not parts:
            return None
        head, attrs = parts[0], parts[1:]
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
            return self._candidates(attrs[-1]) if attrs else None
        if "(" in head or "[" in head:
            return self._candidates(attrs[-1]) if attrs else None
        found = self.scope_lookup(fid, caller, head)
        if found is None:
            if attrs and self.scopes[fid].family == "go":
                cls = self._class_of(fid, caller)
                if cls is not None and len(attrs) == 1:
                    member = self.method_of(cls, attrs[0])
                    if member is not None:
                        return [(("def", member), CONF_SELF * 0.9)], True
            return self._candidates(attrs[-1]) if attrs else None
        b, conf = found
        if any("(" in a or "[" in a for a in attrs):
            return self._candidates(attrs[-1].split("(")[0])
        walked, wconf = self._walk(b, attrs)
        if walked is None:
            return self._candidates(attrs[-1]) if attrs else None
        return [(walked, min(conf, wconf))], True

    def _candidates(self, name: str) -> tuple[list[tuple[Binding, float]], bool] | None:
        cands = self.methods.get(name, [])
        if not cands or len(cands) > MAX_CANDIDATES:
            return None
        conf = CONF_CANDIDATE / (len(cands) ** 0.5)
        return [(("def", c), conf) for c in cands], False

    # -- phase 2: edges -------------------------------------------------------------------

    def caller_node(self, fid: int, caller: str | None) -> int:
        scope = self.scopes[fid]
        while caller:
            node = scope.defs.get(caller)
            if node is not None:
                return node
            caller = caller.rpartition(".")[0]
        return self.file_nodes[fid]

    def _target(self, b: Binding) -> int:
        kind, value = b
        if kind == "def":
            return int(value)  # type: ignore[call-overload]
        if kind == "unit":
            return self.unit_node(str(value))
        return self.external(str(value))

    def resolve_all(self) -> None:
        self.declare()
        bases_by_file: dict[int, list[int]] = {}
        for node in self.bases:
            bases_by_file.setdefault(self.nodes[node].file, []).append(node)
        for fid, ex in enumerate(self.ex):
            fnode = self.file_nodes[fid]
            for local, specs in self.scopes[fid].imports.items():
                b = self.import_binding(fid, local)
                if b is not None:
                    for line, _ in specs:
                        self.edge(
                            fnode,
                            self._target(b),
                            EdgeKind.IMPORTS,
                            CONF_EXTERNAL if b[0] == "ext" else CONF_IMPORT,
                            line,
                        )
            for star_unit, line in self.scopes[fid].stars:
                if star_unit is not None:
                    self.edge(fnode, self.unit_node(star_unit), EdgeKind.IMPORTS, CONF_IMPORT, line)
            for node in bases_by_file.get(fid, []):
                for base in self.bases[node]:
                    res = self.resolve_name(fid, self._enclosing_qname(node), base)
                    if res is None:
                        continue
                    for b, conf in res[0]:
                        if res[1]:
                            self.edge(
                                node,
                                self._target(b),
                                EdgeKind.INHERITS,
                                conf,
                                self.nodes[node].start,
                            )
            for call in ex.calls:
                self.stats["calls"] += 1
                src = self.caller_node(fid, call.caller)
                res = self.resolve_name(fid, call.caller, call.callee)
                if res is None:
                    self.stats["dropped"] += 1
                    continue
                bindings, exact = res
                if not exact:
                    self.stats["candidate"] += 1
                elif bindings[0][0][0] == "ext":
                    self.stats["external"] += 1
                else:
                    self.stats["resolved"] += 1
                for b, conf in bindings:
                    self.edge(src, self._target(b), EdgeKind.CALLS, conf, call.line)
            for ref in ex.references:
                res = self.resolve_name(fid, ref.context, ref.name)
                if res is None or not res[1] or res[0][0][0][0] == "ext":
                    continue
                src = self.caller_node(fid, ref.context)
                for b, conf in res[0]:
                    self.edge(
                        src, self._target(b), EdgeKind.REFERENCES, conf * REFERENCE_FACTOR, ref.line
                    )


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


def family_for(language: str | None) -> str:
    return family_of(language)


def iter_edges(builder: GraphBuilder) -> Iterable[tuple[int, int, int, float, list[int]]]:
    for (src, dst, kind), (conf, lines) in builder.edges.items():
        yield src, dst, kind, conf, sorted(lines)
