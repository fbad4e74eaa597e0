"""A name as written in a file: enclosing scopes, the file's own and imported names, the package
(`scope_lookup`), then the attribute chain (`_walk`); `resolve_name` is the entry point."""

from __future__ import annotations

from maguyva.modalities.graph.resolve.names import (
    CLASS_KINDS,
    DEF_ATTRIBUTES,
    GLOBAL_SCOPE_FAMILIES,
    NOT_CONSTRUCTORS,
    PY_BUILTINS,
    SELF_NAMES,
    _looks_like_class,
    _split_cached,
    rust_relative,
)
from maguyva.modalities.graph.resolve.rows import _MISSING, Binding, FileScope
from maguyva.modalities.graph.resolve.state import BuilderState
from maguyva.modalities.graph.schema import (
    CONF_EXTERNAL,
    CONF_GLOBAL_UNIQUE,
    CONF_IMPORT,
    CONF_LOCAL,
    CONF_PACKAGE,
    CONF_QUALIFIED,
    CONF_SELF,
    CONF_TYPED,
)


class Lookups(BuilderState):
    """`resolve_name` and what it reads: scopes, aliases, instances, attribute chains."""

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
                    # Rust `mod m { pub use a::B; }`: `m::B` is what the `use` binds
                    b = ("def", member) if member is not None else self._used_in_mod(node, attr)
                    if b is None:
                        return None, 0.0
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

    def _used_in_mod(self, node: int, name: str) -> Binding | None:
        """What a `use` inside the block of inline module `node` binds as `name`: rustls's
        `pub mod sign { pub use crate::crypto::signer::{SigningKey, ..}; }` in `lib.rs` makes
        `sign::SigningKey` the trait. The file's imports are the block's (the file's last
        import of the name is the one its binding memo holds)."""
        n = self.nodes[node]
        if n.def_kind != "module" or self._family(n.file) != "rs":
            return None
        imported = self.scopes[n.file].imports.get(name, ())
        inside = [imp for line, imp in imported if n.start < line <= n.end]
        if not inside:
            return None
        if imported[-1][1] is inside[-1]:
            return self.import_binding(n.file, name)
        return self._resolve_import(n.file, inside[-1], name)

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
        if written.startswith(("self::", "super::")) and attrs and self._family(fid) == "rs":
            # `self::f()` / `super::f()`: relative to the inline `mod` blocks around the caller
            return self._rust_path(fid, rust_relative(self._inline_mods(fid, caller), parts))
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
        if head == "crate" and attrs and self.scopes[fid].family == "rs":
            # a path from the crate root: `crate::x509::wrap_in_sequence`
            return self._rust_path(fid, list(parts))
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

    def _family(self, fid: int) -> str:
        return self.scopes[fid].family

    def _rust_path(
        self, fid: int, path: list[str]
    ) -> tuple[list[tuple[Binding, float]], bool] | None:
        """A Rust path from the crate root or the file's module (`crate::`, `self::`,
        `super::`): the longest module with a file, then its items, inline `mod`s and members."""
        unit, rest = self.index.resolve(fid, "::".join(path))
        walked, wconf = self._walk(("unit", unit), rest) if unit else (None, 0.0)
        return ([(walked, min(CONF_IMPORT, wconf))], True) if walked else None

    def _inline_mods(self, fid: int, caller: str | None) -> list[str]:
        """The inline `mod` blocks enclosing `caller` in its file, outermost first (a `mod`
        that encloses code has a body: it is inline, not a `mod x;` naming a file)."""
        scope = self.scopes[fid]
        mods: list[str] = []
        while caller:
            node = scope.defs.get(caller)
            if node is not None and self.nodes[node].def_kind == "module":
                mods.append(self.nodes[node].name)
            caller = caller.rpartition(".")[0]
        return mods[::-1]

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
