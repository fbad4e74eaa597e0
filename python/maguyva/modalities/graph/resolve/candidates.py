"""A method on a receiver of unknown type (`obj.m()`): the receiver's type from local evidence,
else every method of the name, ranked by what the calling file can see and what the
receiver's name names, with duck typing over the other methods called on it."""

from __future__ import annotations

from collections.abc import Iterable

from maguyva.modalities.graph.resolve.names import (
    CLASS_KINDS,
    SELF_NAMES,
    _class_words,
    _looks_like_class,
    _receiver_word,
    _split_cached,
)
from maguyva.modalities.graph.resolve.rows import Binding, Node
from maguyva.modalities.graph.resolve.state import BuilderState
from maguyva.modalities.graph.schema import (
    CONF_CANDIDATE,
    CONF_CANDIDATE_WEAK,
    CONF_NAMED,
    CONF_TYPED,
    MAX_CANDIDATES,
    NodeKind,
)


class Candidates(BuilderState):
    """`_candidates` and its evidence."""

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
