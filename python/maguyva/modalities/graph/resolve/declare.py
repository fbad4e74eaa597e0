"""Phase 1: each file's definitions, members and imports become nodes, scopes and name tables."""

from __future__ import annotations

import bisect
from collections.abc import Callable

from maguyva.extract.types import Definition, FileExtraction, Import
from maguyva.modalities.graph.resolve.names import (
    CLASS_KINDS,
    _decorated,
    _is_property,
    _qualifier,
    alias_of,
    instance_of,
)
from maguyva.modalities.graph.resolve.rows import CONTAINS, Body, FileScope, Node
from maguyva.modalities.graph.resolve.state import BuilderState
from maguyva.modalities.graph.schema import NodeKind


class Declarations(BuilderState):
    """`declare`: read every extraction once, in path order."""

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
            self.scopes[fid].stars.append((self.star_unit(fid, module, level, line), line))

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
        self._declare_definitions(scope, ex, defs, ids)
        self._declare_members(scope, fnode, defs)
        self._declare_imports(scope, ex, stars)
        if ids is not None:
            self._note_classes(self.nodes[i] for i in ids)

    def _declare_definitions(
        self, scope: FileScope, ex: FileExtraction, defs: list[Definition], ids: list[int] | None
    ) -> None:
        """A node per definition (or the kept ones, `ids`), in the name tables; a name defined
        twice in one scope keeps its first node, the later ones as its `alts`."""
        fid = scope.fid
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

    def _declare_members(self, scope: FileScope, fnode: int, defs: list[Definition]) -> None:
        """Each definition's container (its class, or the file: a `contains` edge), the file's
        top-level names and the method table."""
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

    def _declare_imports(
        self, scope: FileScope, ex: FileExtraction, stars: list[tuple[int, str, int, int]]
    ) -> None:
        """The names the file's imports bind, each with its imports in line order; `import *`
        goes to `stars`, resolved once every module is known."""
        fid = scope.fid
        for imp in ex.imports:
            if imp.name == "*" and not imp.alias:
                stars.append((fid, imp.module, imp.level, imp.line))  # resolved in `declare`
                continue
            local = self._local_name(scope.family, imp)
            if local:
                scope.imports.setdefault(local, []).append((imp.line, imp))
        scope.imports = {k: sorted(v, key=lambda x: x[0]) for k, v in scope.imports.items()}

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

    @classmethod
    def _local_name(cls, family: str, imp: Import) -> str:
        """The name an import binds: its alias, the imported name, or the module's own name
        (a whole-module import; Rust `use super::hs::{self}` binds `hs`)."""
        if family == "rs" and imp.name == "self" and not imp.alias:
            return cls._default_binding(family, imp.module)
        return imp.alias or imp.name or cls._default_binding(family, imp.module)

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
