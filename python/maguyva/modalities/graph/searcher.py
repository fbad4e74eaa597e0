"""GraphSearcher: the graph modality's answers as `Hit`s, one per file with every call site.

Ranking (documented in docs/graph.md):
- references / callers: best edge confidence, then number of sites, then the file's c;
- impact: distance first, then path confidence (product of edge confidences along the best
  path) times the centrality boost of the dependent; tests are listed after non-tests and
  flagged `extra["is_test"]`;
- other intents: definitions whose name matches a query term, by c.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from maguyva.errors import BadQueryError
from maguyva.modalities import followups as follow
from maguyva.modalities.graph import store
from maguyva.modalities.graph.centrality import boost
from maguyva.modalities.graph.query import GraphIndex, Site
from maguyva.modalities.graph.schema import DEFAULT_MIN_CONFIDENCE, EdgeKind, NodeKind
from maguyva.modalities.graph.uselines import named_lines
from maguyva.modalities.protocol import RetrieverQuery
from maguyva.model import Hit
from maguyva.store.chunks import ChunkStore, SegmentedChunkStore
from maguyva.support.gcpause import paused_gc

MAX_CANDIDATES_SHOWN = 12


class GraphSearcher:
    """Read side of the graph modality for one generation. Thread-safe."""

    modality: ClassVar[str] = "graph"

    def __init__(
        self, gen_dir: Path, index: GraphIndex, min_confidence: float = DEFAULT_MIN_CONFIDENCE
    ) -> None:
        self.gen_dir = gen_dir
        self.graph = index
        self.min_confidence = min_confidence
        self._chunks: ChunkStore | SegmentedChunkStore | None = None
        self._lock = threading.Lock()
        # the graph of an earlier generation, linked into this one (`maguyva.build.follow`): the
        # generation it reflects and the paths changed since, whose hits say so
        self.behind: dict[str, Any] | None = None
        self._behind_paths: frozenset[str] = frozenset()

    @classmethod
    def open(cls, gen_dir: Path, manifest: dict[str, Any] | None = None) -> GraphSearcher:
        sections, meta = store.read(Path(gen_dir) / "graph")
        config = (manifest or {}).get("config") or {}
        conf = float(config.get("graph_min_confidence", DEFAULT_MIN_CONFIDENCE))
        with paused_gc():  # the name tables are many long-lived objects (gcpause.py)
            index = GraphIndex(sections, meta)
        searcher = cls(Path(gen_dir), index, conf)
        searcher.behind = follow.behind(manifest or {})
        if searcher.behind is not None:
            searcher._behind_paths = frozenset(searcher.behind.get("paths") or ())
        return searcher

    def behind_note(self) -> str | None:
        """A response note when this graph is an earlier generation's (None: it is current)."""
        if self.behind is None:
            return None
        paths = sorted(self._behind_paths)
        shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        return (f"graph answers reflect generation {self.behind.get('generation')}: "
                f"{shown or 'no file'} changed since (the next generation brings it up to date)")  # fmt: skip

    def _mark(self, path: str, extra: dict[str, Any]) -> dict[str, Any]:
        if path in self._behind_paths:
            extra["graph_behind"] = True
        return extra

    # -- helpers --------------------------------------------------------------------------

    @property
    def chunks(self) -> ChunkStore | SegmentedChunkStore:
        with self._lock:
            if self._chunks is None:
                self._chunks = ChunkStore.lazy(self.gen_dir)
            return self._chunks

    def _file_hit(
        self, path: str, lines: list[int], score: float, anchor: int | None = None, **extra: Any
    ) -> Hit:
        """A hit on `path` listing `lines`, spanning the chunk that encloses `anchor` (the
        first use; default the first line)."""
        first = anchor if anchor is not None else (lines[0] if lines else 1)
        chunk = self.chunks.enclosing(path, first)
        if chunk is not None:
            start, end, key = chunk.start_line, chunk.end_line, chunk.id
        else:
            start, end, key = first, lines[-1] if lines else first, None
        return Hit(path=path, start_line=start, end_line=end, key=key, score=score, lines=lines,
                   extra=self._mark(path, extra))  # fmt: skip

    def _def_hit(self, node: int, score: float, **extra: Any) -> Hit:
        g = self.graph
        path = g.path_of(node)
        start, end = int(g.start[node]), int(g.end[node])
        chunk = self.chunks.enclosing(path, start) if path else None
        return Hit(
            path=path, start_line=max(start, 1), end_line=max(end, start, 1),
            key=chunk.id if chunk is not None else None, score=score,
            lines=[start] if start else [], symbol=g.full_name(node), kind=g.def_kind(node),
            extra=self._mark(path, {"is_test": g.is_test(node), "centrality": float(g.c[node]),
                                    **extra}),
        )  # fmt: skip

    def _describe(self, node: int) -> dict[str, Any]:
        g = self.graph
        return {"name": g.full_name(node), "path": g.path_of(node), "line": int(g.start[node]),
                "kind": g.def_kind(node)}  # fmt: skip

    def _targets(self, symbol: str) -> tuple[list[int], dict[str, Any]]:
        nodes = self.graph.find(symbol)
        extra: dict[str, Any] = {}
        if not nodes:
            return [], extra
        defs = [n for n in nodes if self.graph.kind[n] == NodeKind.DEFINITION]
        if len(defs) > 1:
            extra["ambiguous"] = True
            extra["candidates"] = [self._describe(n) for n in defs[:MAX_CANDIDATES_SHOWN]]
            extra["candidate_count"] = len(defs)
        extra["target"] = [self.graph.full_name(n) for n in nodes[:MAX_CANDIDATES_SHOWN]]
        return nodes, extra

    def _names(self, nodes: list[int]) -> frozenset[str]:
        return frozenset(n for n in (self.graph.names[m] for m in nodes) if n.isidentifier())

    @staticmethod
    def _check_depth(depth: int) -> int:
        if not isinstance(depth, int) or depth < 1:
            raise BadQueryError(f"graph depth must be a positive integer, got {depth!r}")
        return depth

    def _named_lines(self, path: str, names: frozenset[str], skip: set[int]) -> set[int]:
        """Lines of `path` (outside `skip`, comments and imports) that name one of `names` as
        a word: the uses of an imported binding that the extraction records no edge for (a
        TypeScript enum member read `ZodIssueCode.custom`, a namespace's
        `errorUtil.errToObj(...)`, a type position)."""
        return named_lines(self.chunks.by_path(path), names, skip)

    def _group_by_file(
        self, sites: dict[int, Site], common: dict[str, Any], names: frozenset[str] = frozenset()
    ) -> list[Hit]:
        """One hit per file: all lines of all dependents in that file, ranked. `names`: the
        target's names, looked for in the text of a file that only imports it."""
        g = self.graph
        files: dict[str, dict[str, Any]] = {}
        for site in sites.values():
            path = g.path_of(site.node)
            if not path:
                continue
            slot = files.setdefault(
                path, {"lines": set(), "dist": site.distance, "conf": 0.0, "symbols": [],
                       "kinds": set(), "test": g.is_test(site.node), "cycle": False,
                       "owner": {}},
            )  # fmt: skip
            slot["lines"].update(site.lines)
            # uses of the nearest dependents only: the span shows why the file is listed first
            slot.setdefault("uses_at", {}).setdefault(site.distance, set()).update(site.use_lines)
            for line in site.lines:  # the enclosing definition of each use
                slot["owner"].setdefault(line, site.node)
            slot["kinds"].update(site.edge_kinds)
            slot["cycle"] |= g.in_cycle(site.node)
            if site.distance < slot["dist"]:
                slot["dist"], slot["conf"] = site.distance, site.confidence
            elif site.distance == slot["dist"]:
                slot["conf"] = max(slot["conf"], site.confidence)
            if g.kind[site.node] == NodeKind.DEFINITION:
                slot["symbols"].append(g.qnames[site.node])
        hits = []
        for path, slot in files.items():
            c = float(g.path_c[g.path_index[path]])
            score = slot["conf"] * float(boost(c)) / slot["dist"]
            slot["uses"] = slot["uses_at"].get(slot["dist"], set())
            if not slot["uses"] and names and slot["dist"] == 1:
                slot["uses"] = self._named_lines(path, names, slot["lines"])
                if slot["uses"]:
                    slot["lines"] |= slot["uses"]
                    common_text = True
                else:
                    common_text = False
            else:
                common_text = False
            lines = sorted(slot["lines"])
            # the span is the first use's chunk; an import line only when nothing else uses it
            anchor = min(slot["uses"], default=lines[0] if lines else None)
            hit = self._file_hit(
                path, lines, score, anchor, distance=slot["dist"], confidence=round(slot["conf"], 3),
                is_test=slot["test"], dependents=sorted(set(slot["symbols"]))[:20],
                edge_kinds=sorted(slot["kinds"]), in_cycle=slot["cycle"], **common,
            )  # fmt: skip
            # labelled by the definition enclosing its first use, not by the target (whose
            # first candidate may live in another file)
            if not slot["uses"]:  # an import or re-export (`pub use`) only: listed last
                hit.extra["import_only"] = True
            elif common_text:  # the use lines are the text's, not the graph's
                hit.extra["text_uses"] = True
            owner = slot["owner"].get(anchor) if anchor is not None else None
            is_def = owner is not None and g.kind[owner] == NodeKind.DEFINITION
            hit.symbol = g.full_name(owner) if is_def else None  # module level: no label
            # a file that only imports or re-exports the target after every file that uses it
            hits.append((slot["test"], not slot["uses"], slot["dist"], -score, -len(lines), path,
                         hit))  # fmt: skip
        hits.sort(key=lambda x: x[:6])
        return [h[-1] for h in hits]

    # -- public queries (also used by the MCP tools) ----------------------------------------

    def references(self, symbol: str) -> list[Hit]:
        """Every file that calls, imports, subclasses or otherwise references `symbol`, with
        all the lines of that file (direct references only)."""
        nodes, common = self._targets(symbol)
        sites, _ = self.graph.walk_dependents(nodes, 1, min_confidence=self.min_confidence)
        hits = self._group_by_file(sites, common, self._names(nodes))
        hits.sort(key=lambda h: (bool(h.extra.get("import_only")), -(h.extra["confidence"]),
                                 -len(h.lines), h.path))  # fmt: skip
        return hits

    def callers(self, symbol: str, depth: int = 1) -> list[Hit]:
        """Files whose code calls `symbol`, directly (depth 1) or transitively."""
        nodes, common = self._targets(symbol)
        sites, truncated = self.graph.walk_dependents(
            nodes, self._check_depth(depth), frozenset({EdgeKind.CALLS}), self.min_confidence
        )
        if truncated:
            common["truncated"] = True
        return self._group_by_file(sites, common)

    def impact(self, symbol: str, depth: int = 2) -> list[Hit]:
        """Blast radius: everything that depends on `symbol` up to `depth` hops, nearest and
        most certain first; test files after the others, flagged `is_test`."""
        nodes, common = self._targets(symbol)
        sites, truncated = self.graph.walk_dependents(
            nodes, self._check_depth(depth), min_confidence=self.min_confidence
        )
        if truncated:
            common["truncated"] = True
        cycle = sorted({m for n in nodes for m in self.graph.cycle_members(n)} - set(nodes))
        if cycle:
            common["cycle_with"] = [self.graph.full_name(m) for m in cycle[:20]]
        return self._group_by_file(sites, common, self._names(nodes))

    def callees(self, symbol: str) -> list[Hit]:
        """What `symbol` calls: repository definitions (with their spans) and external
        libraries (`extra["external"]`, empty path)."""
        nodes, common = self._targets(symbol)
        g = self.graph
        best: dict[int, tuple[float, list[int]]] = {}
        for node in nodes[:1] if len(nodes) > 1 else nodes:
            for callee, conf, lines in g.callees(node):
                if conf >= self.min_confidence and conf > best.get(callee, (-1.0, []))[0]:
                    best[callee] = (conf, lines)
        hits = []
        for callee, (conf, lines) in sorted(best.items(), key=lambda x: (-x[1][0], x[1][1][:1])):
            if g.kind[callee] == NodeKind.EXTERNAL:
                hit = Hit(path="", start_line=0, end_line=0, score=conf, symbol=g.qnames[callee],
                          kind="external", extra={"external": True, "call_lines": lines, **common})  # fmt: skip
            else:
                hit = self._def_hit(callee, conf, call_lines=lines, **common)
            hits.append(hit)
        return hits

    def definition(self, symbol: str) -> list[Hit]:
        """The definition(s) of `symbol` first, then its neighbourhood (direct callees and the
        definitions of direct callers), by centrality."""
        nodes, common = self._targets(symbol)
        g = self.graph
        defs = [n for n in nodes if g.kind[n] == NodeKind.DEFINITION]
        hits = [self._def_hit(n, 1.0 + float(g.c[n]), role="definition", **common) for n in defs]
        near: dict[int, str] = {}
        for n in defs[:3]:
            for callee, _, _ in g.callees(n)[:10]:
                near.setdefault(callee, "callee")
            sites, _ = g.walk_dependents([n], 1, frozenset({EdgeKind.CALLS}))
            for s in sites:
                near.setdefault(s, "caller")
        ranked = sorted((m for m in near if g.kind[m] == NodeKind.DEFINITION and m not in defs),
                        key=lambda m: -float(g.c[m]))  # fmt: skip
        hits += [self._def_hit(m, float(g.c[m]) / 10, role=near[m]) for m in ranked[:20]]
        return hits

    def central_matching(self, terms: list[str], k: int) -> list[Hit]:
        """Definitions whose name matches a term, most central first."""
        g = self.graph
        found: set[int] = set()
        for term in terms:
            for t in (term, term.lower()):
                found.update(g.by_name.get(t, []))
                found.update(g.by_lower.get(t, []))
        defs = [n for n in found if g.kind[n] == NodeKind.DEFINITION]
        defs.sort(key=lambda n: (g.is_test(n), -float(g.c[n]), -int(g.indegree[n]), n))
        return [self._def_hit(n, float(g.c[n])) for n in defs[:k]]

    # -- the Searcher protocol --------------------------------------------------------------

    def search(self, query: RetrieverQuery, k: int) -> list[Hit]:
        if k <= 0:
            return []
        target = query.target or (query.terms[0] if query.terms else "")
        if query.intent == "find_references":
            hits = self.references(target) if target else []
        elif query.intent == "impact_analysis":
            hits = self.impact(target, self._check_depth(query.depth)) if target else []
        elif query.intent == "find_definition":
            hits = self.definition(target) if target else []
        else:
            terms = list(query.terms) or ([target] if target else [])
            hits = self.central_matching(terms, k)
        return _one_per_file(hits)[:k] if query.intent != "find_definition" else hits[:k]

    def centrality(self, keys: list[str], paths: list[str]) -> dict[str, float]:
        """The scaled centrality `c` (0 .. e^(5/3)-1) of chunk ids and/or paths."""
        g = self.graph
        out: dict[str, float] = {}
        for key in keys:
            if key in g.chunk_c:
                out[key] = g.chunk_c[key]
        for path in paths:
            fid = g.path_index.get(path)
            if fid is not None:
                out[path] = float(g.path_c[fid])
        return out

    def stats(self) -> dict[str, Any]:
        g = self.graph
        return {"nodes": len(g), "edges": len(g.e_kind), "files": len(g.paths),
                "boost_median": float(np.median(boost(g.path_c))) if len(g.paths) else 1.0}  # fmt: skip


def _one_per_file(hits: list[Hit]) -> list[Hit]:
    seen: set[str] = set()
    out = []
    for h in hits:
        if h.path and h.path not in seen:
            seen.add(h.path)
            out.append(h)
    return out
