"""Classes and their bases: members through the bases (`method_of`), the resolved bases, the
direct-subclass table (and its update by the incremental build), a method's inheritors."""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from maguyva.modalities.graph.resolve.names import CLOSED_BASES
from maguyva.modalities.graph.resolve.rows import _MISSING
from maguyva.modalities.graph.resolve.state import BuilderState


class Hierarchy(BuilderState):
    """Lookups along the inheritance graph, memoised (see `BuilderState._memoized`)."""

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
