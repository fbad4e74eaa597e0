"""What a module exports and what an import binds (re-exports, `import *`, Rust `use`, JVM
classes), memoised per (unit, name) and per (file, local name)."""

from __future__ import annotations

from maguyva.modalities.graph.resolve.names import rust_relative
from maguyva.modalities.graph.resolve.rows import _MISSING, Binding
from maguyva.modalities.graph.resolve.state import BuilderState


class Imports(BuilderState):
    """Module-level lookups: `lookup_in_unit` and `import_binding`."""

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

    def star_unit(self, fid: int, module: str, level: int, line: int) -> str | None:
        """The module a glob import (`import *`, `use x::*`) at `line` of file `fid` names;
        None when it is not in the repository, or (Rust) when it is the file's own module,
        whose names are in scope already (`mod tests { use super::*; }`)."""
        if self.scopes[fid].family == "rs":
            module = self._rust_spec_at(fid, module, line)
        unit, rest = self.index.resolve(fid, module, level)
        if self.scopes[fid].family == "rs" and unit == self.scopes[fid].unit and not rest:
            return None
        return unit

    def _rust_spec_at(self, fid: int, module: str, line: int) -> str:
        """A `use self::..`/`use super::..` path at `line` as a path from the file's module:
        inside inline `mod` blocks it counts from the innermost block around the line."""
        segs = module.split("::")
        if segs[0] not in ("self", "super"):
            return module
        nodes = self.nodes
        around = sorted(
            (n for n in self.scopes[fid].defs.values()
             if nodes[n].def_kind == "module" and nodes[n].start < line <= nodes[n].end),
            key=lambda n: nodes[n].start,
        )  # fmt: skip
        return "::".join(rust_relative([nodes[n].name for n in around], segs)) if around else module

    def _resolve_import(self, fid: int, imp, local: str) -> Binding | None:
        family = self.scopes[fid].family
        module = self._rust_spec_at(fid, imp.module, imp.line) if family == "rs" else imp.module
        if family == "rs" and imp.name == "self":
            # `use super::hs::{self, X};` binds the module `hs` itself
            unit, rest = self.index.resolve(fid, module)
            if unit is None:
                return ("ext", module.replace("::", "."))
            return self._walk(("unit", unit), rest)[0] if rest else ("unit", unit)
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
