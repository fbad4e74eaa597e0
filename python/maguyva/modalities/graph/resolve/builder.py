"""Phase 2: the edges. `GraphBuilder` joins the declaration and lookup mixins, emits each
file's import, inheritance, call and reference edges (or replays a previous build's log)."""

from __future__ import annotations

from collections.abc import Iterable

from maguyva.modalities.graph.resolve.candidates import Candidates
from maguyva.modalities.graph.resolve.declare import Declarations
from maguyva.modalities.graph.resolve.hierarchy import Hierarchy
from maguyva.modalities.graph.resolve.imports import Imports
from maguyva.modalities.graph.resolve.lookup import Lookups
from maguyva.modalities.graph.resolve.names import SELF_NAMES, _split_cached
from maguyva.modalities.graph.resolve.rows import (
    _MISSING,
    CALLS,
    CONTAINS,
    IMPORTS,
    INHERITS,
    REFERENCES,
    STAT_KEYS,
    Binding,
    Body,
    Node,
    Reuse,
)
from maguyva.modalities.graph.schema import (
    CONF_EXTERNAL,
    CONF_IMPORT,
    CONF_TYPED,
    REFERENCE_FACTOR,
    NodeKind,
)


class GraphBuilder(Declarations, Imports, Lookups, Hierarchy, Candidates):
    """Accumulates nodes and merged edges; `resolve_all` fills them from extractions.

    One class made of mixins, one job each (`declare`, `imports`, `lookup`, `hierarchy`,
    `candidates`), over the tables of `state.BuilderState`: the lookups call one another
    across the mixins, as the methods of one class did.
    """

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
