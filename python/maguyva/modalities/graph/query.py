"""Read-side graph: name lookup, callers, callees, references and impact over the stored CSR
arrays. Everything heavy was done at build time; a query is a few array slices and a bounded
breadth-first walk, so it holds the GIL only briefly."""

from __future__ import annotations

import heapq
import re
import threading
from collections import ChainMap
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from maguyva.errors import CorruptIndexError
from maguyva.modalities.graph import store, store_pack
from maguyva.modalities.graph.build import FLAG_CYCLE, FLAG_TEST
from maguyva.modalities.graph.resolve.names import split_chain
from maguyva.modalities.graph.schema import DEPENDENCY_KINDS, EdgeKind, NodeKind
from maguyva.support.gcpause import paused_gc

MAX_DEPTH = 10
MAX_VISITED = 20000  # a walk that reaches this many nodes stops (and says so)


@dataclass(slots=True)
class Site:
    """One dependent reached by a walk: the node, its distance and best path confidence, and
    the lines in its file where it uses what it depends on."""

    node: int
    distance: int
    confidence: float
    lines: set[int] = field(default_factory=set)
    via: int = -1  # the node it depends on (one step closer to the target)
    edge_kinds: set[str] = field(default_factory=set)
    # the lines of its non-import edges (calls, references, bases): a hit's span is the first
    # line that uses what it depends on, not the import block (`import {X} from`, `use a::X;`)
    use_lines: set[int] = field(default_factory=set)


class NameLookup:
    """`by_name` / `by_lower` of a graph: name -> the lookup nodes (definitions, modules,
    externals) with that name (`lower`: whose `str.lower()` is that name), in ascending node
    order, like a dict of lists that holds only non-empty lists. Answered from the sorted
    name hashes of the lookup sections (`store.name_lookup`): a binary search, then each
    candidate's name is decoded and compared, so a hash collision never changes an answer.
    Nothing is decoded when the graph is opened."""

    __slots__ = ("_hashes", "_lower", "_names", "_nodes")

    def __init__(
        self, hashes: np.ndarray, nodes: np.ndarray, names: store.StringTable, lower: bool
    ) -> None:
        self._hashes, self._nodes, self._names, self._lower = hashes, nodes, names, lower

    def get(self, key: str, default=None):
        if not isinstance(key, str):
            return default
        h = store.name_hash(key)
        if self._hashes.dtype == np.uint32:  # format 4: the hash's top 32 bits
            h >>= 64 - store.LOOKUP_BITS
        h = self._hashes.dtype.type(h)
        lo = int(np.searchsorted(self._hashes, h, "left"))
        hi = int(np.searchsorted(self._hashes, h, "right"))
        if lo == hi:
            return default
        names = self._names
        if self._lower:
            found = [n for n in self._nodes[lo:hi].tolist() if names[n].lower() == key]
        else:
            found = [n for n in self._nodes[lo:hi].tolist() if names[n] == key]
        return found or default

    def __getitem__(self, key: str) -> list[int]:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None


def _lookups(
    s: Mapping[str, np.ndarray], names: store.StringTable
) -> tuple[NameLookup, NameLookup]:
    """The name lookups from the stored sections (format 3), or computed from the names
    (an older file, or sections built in memory)."""
    n = len(s["node_kind"])
    if not all(k in s for k in store.LOOKUP_SECTIONS):
        # a ChainMap, not `{**s}`: that would read (decompress) every section of `s`
        s = ChainMap(store.name_lookup(s["node_kind"], s["node_name.blob"], s["node_name.off"]), s)
    out = []
    for prefix, lower in (("lookup_name", False), ("lookup_lower", True)):
        hashes, nodes = s[f"{prefix}.hash"], s[f"{prefix}.node"]
        if len(hashes) != len(nodes) or (
            len(nodes) and not 0 <= int(nodes.min()) <= int(nodes.max()) < n
        ):
            raise CorruptIndexError(f"graph: the {prefix} sections do not fit the nodes")
        out.append(NameLookup(hashes, nodes, names, lower))
    return out[0], out[1]


def _length(s: Mapping[str, np.ndarray], name: str) -> int:
    """A section's length, without decompressing it."""
    return s.length(name) if isinstance(s, store.Sections) else len(s[name])


class GraphIndex:
    """The loaded graph of one generation. Immutable and safe to share between threads."""

    def __init__(self, sections: Mapping[str, np.ndarray], meta: dict) -> None:
        s = sections
        self.meta = meta
        self.kind = s["node_kind"]
        self.file = s["node_file"]
        self.start = s["node_start"]
        self.end = s["node_end"]
        self.dkind = s["node_dkind"]
        self.flags = s["node_flags"]
        self.indegree = s["node_indeg"]
        self.c = s["node_c"]
        self._sections = s  # the sections no question reads are decompressed when first asked
        # format 4 packs the edges' ends, pointers, confidences and line pointers;
        # `store_pack` rebuilds them on the first walk (`_edge_arrays`: a question to another
        # modality never pays for them; a format-3 file holds them)
        self.e_kind, self.e_lines = s["edge_kind"], s["edge_lines"]
        self._edges: tuple[np.ndarray, ...] | None = None
        self.file_node = s["file_node"]
        self.module_of_file = s["module_of_file"]
        self.file_cycle = s["file_cycle"]
        self.path_c = s["path_c"]
        self.names = store.strings(s, "node_name")
        self.qnames = store_pack.qualified_names(s, self.names)
        if not len(self.names) == len(self.qnames) == len(self.kind):
            raise CorruptIndexError("graph: node names, qualified names and kinds differ in length")
        self.paths = store.strings(s, "paths").all()
        self.def_kinds = store.strings(s, "def_kinds").all()
        self.module_names = store.strings(s, "module_names")
        self.path_index = {p: i for i, p in enumerate(self.paths)}
        self.by_name, self.by_lower = _lookups(s, self.names)
        if _length(s, "chunk_ids.off") - 1 != _length(s, "chunk_c"):
            raise CorruptIndexError("graph: chunk_ids and chunk_c differ in length")
        self._chunk_c: dict[str, float] | None = None
        self._chunk_lock = threading.Lock()
        self._defs_by_file: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def chunk_c(self) -> dict[str, float]:
        """Chunk id -> `c`, decoded on first use: only fused questions need it, and a reader
        reopening after every edit need not pay for it before a direct question (~70 ms for
        the 158k chunks of a 10k-file tree)."""
        found = self._chunk_c
        if found is None:
            with self._chunk_lock:
                found = self._chunk_c
                if found is None:
                    ids = store.strings(self._sections, "chunk_ids")
                    values = self._sections["chunk_c"]
                    with paused_gc():
                        found = dict(zip(ids.all(), values.tolist(), strict=True))
                    self._chunk_c = found
        return found

    def _edge_arrays(self) -> tuple[np.ndarray, ...]:
        """(e_src, e_dst, fwd_ptr, fwd_idx, rev_ptr, rev_idx, e_conf, e_lptr), rebuilt once
        (two threads may both rebuild them: equal arrays)."""
        found = self._edges
        if found is None:
            s, m = self._sections, len(self.e_kind)
            found = (*store_pack.edges(s, len(self.kind)), store_pack.confidences(s, m),
                     store_pack.line_pointers(s, m))  # fmt: skip
            self._edges = found
        return found

    e_src = property(lambda self: self._edge_arrays()[0])
    e_dst = property(lambda self: self._edge_arrays()[1])
    fwd_ptr = property(lambda self: self._edge_arrays()[2])
    fwd_idx = property(lambda self: self._edge_arrays()[3])
    rev_ptr = property(lambda self: self._edge_arrays()[4])
    rev_idx = property(lambda self: self._edge_arrays()[5])
    e_conf = property(lambda self: self._edge_arrays()[6])
    e_lptr = property(lambda self: self._edge_arrays()[7])

    @property
    def pagerank(self) -> np.ndarray:
        return self._sections["node_pr"]

    @property
    def scc(self) -> np.ndarray:
        return self._sections["node_scc"]

    # -- identity ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.kind)

    def path_of(self, node: int) -> str:
        f = int(self.file[node])
        return self.paths[f] if f >= 0 else ""

    def full_name(self, node: int) -> str:
        """Module-qualified name: `json.decoder.JSONDecoder.decode`; externals as written."""
        kind = self.kind[node]
        if kind == NodeKind.DEFINITION:
            raw = self.module_names[int(self.file[node])]
            module = ".".join(p for p in re.split(r"::|/|\.", raw) if p)
            return f"{module}.{self.qnames[node]}" if module else self.qnames[node]
        return self.qnames[node]

    def def_kind(self, node: int) -> str:
        return self.def_kinds[int(self.dkind[node])] or NodeKind(int(self.kind[node])).name.lower()

    def is_test(self, node: int) -> bool:
        return bool(self.flags[node] & FLAG_TEST)

    def in_cycle(self, node: int) -> bool:
        return bool(self.flags[node] & FLAG_CYCLE)

    def edge_lines(self, edge: int) -> list[int]:
        lptr = self._edge_arrays()[7]
        return self.e_lines[lptr[edge] : lptr[edge + 1]].tolist()

    # -- lookup ---------------------------------------------------------------------------

    def find(self, target: str) -> list[int]:
        """Definitions (else modules, else external nodes) named by `target`: a bare name, a
        qualified name (`Session.request`), a module-qualified one (`pkg.mod.func`), or a
        path (`pkg/mod.py`). Best candidates first (non-test, most central)."""
        target = target.strip().strip("`'\"").removesuffix("()")
        if not target:
            return []
        if target in self.path_index:
            return [int(self.file_node[self.path_index[target]])]
        parts = [p for p in split_chain(target) if p and "(" not in p]
        if not parts:
            return []
        last, dotted = parts[-1], ".".join(parts)
        cands = self.by_name.get(last, [])
        if not cands:
            cands = self.by_lower.get(last.lower(), [])
        if len(parts) > 1:
            cands = [
                n
                for n in cands
                if self.full_name(n) == dotted
                or self.full_name(n).endswith("." + dotted)
                or self.qnames[n].replace("::", ".") == dotted
            ]
        if not cands:
            return []
        # vectorised over the candidates (a common name, `__init__`, has thousands): best
        # first by (test, -c, node), as `sorted` with that key would order them
        nodes = np.asarray(cands, dtype=np.int64)
        kinds = self.kind[nodes]
        for kind in (NodeKind.DEFINITION, NodeKind.MODULE, NodeKind.EXTERNAL):
            chosen = nodes[kinds == kind]
            if len(chosen):
                break
        order = np.lexsort((chosen, -self.c[chosen], (self.flags[chosen] & FLAG_TEST) != 0))
        return chosen[order].tolist()

    def definitions_in(self, path: str) -> list[int]:
        """The definition nodes of `path`, by start line (an index of every file's
        definitions, built on first use: only a question that carries evidence asks)."""
        fid = self.path_index.get(path)
        if fid is None:
            return []
        found = self._defs_by_file
        if found is None:
            with self._chunk_lock:
                found = self._defs_by_file
                if found is None:
                    defs = np.flatnonzero(self.kind == NodeKind.DEFINITION)
                    defs = defs[np.lexsort((self.start[defs], self.file[defs]))]
                    found = self._defs_by_file = (defs, np.asarray(self.file[defs]))
        defs, files = found
        lo, hi = np.searchsorted(files, [fid, fid + 1])
        return defs[lo:hi].tolist()

    # -- walks ------------------------------------------------------------------------------

    def _neighbours(self, node: int, reverse: bool):
        e_src, e_dst, fwd_ptr, fwd_idx, rev_ptr, rev_idx, e_conf, _ = self._edge_arrays()
        ptr, idx = (rev_ptr, rev_idx) if reverse else (fwd_ptr, fwd_idx)
        for edge in idx[ptr[node] : ptr[node + 1]].tolist():
            other = int(e_src[edge] if reverse else e_dst[edge])
            yield edge, other, int(self.e_kind[edge]), float(e_conf[edge])

    def walk_dependents(
        self,
        seeds: list[int],
        depth: int,
        kinds: frozenset[int] = DEPENDENCY_KINDS,
        min_confidence: float = 0.0,
        through_files: bool = False,
    ) -> tuple[dict[int, Site], bool]:
        """Reverse reachability from `seeds` up to `depth` hops over edges of `kinds`, best
        confidence first (a Dijkstra on -log confidence within each distance). Module-level
        code (file nodes) is reported but not walked through unless `through_files`: a file
        that imports or calls X does not make every importer of that file depend on X.
        Returns (sites by node, truncated). Cycles terminate: each node is reported once."""
        depth = max(1, min(depth, MAX_DEPTH))
        seen: dict[int, Site] = {}
        seed_set = set(seeds)
        truncated = False
        expanded: set[int] = set()
        # Expand in order of (distance, -confidence) so each node keeps its best path.
        queue = [(0, -1.0, s) for s in seeds]
        heapq.heapify(queue)
        while queue:
            dist, negconf, node = heapq.heappop(queue)
            if node in expanded or dist >= depth:
                continue
            expanded.add(node)
            if node in seen:
                negconf = -seen[node].confidence
            if (
                node not in seed_set
                and not through_files
                and self.kind[node] != NodeKind.DEFINITION
            ):
                continue
            starts = [node]
            if self.kind[node] == NodeKind.FILE and through_files:
                mod = int(self.module_of_file[int(self.file[node])])
                if mod >= 0:
                    starts.append(mod)
            for start in starts:
                for edge, other, kind, conf in self._neighbours(start, reverse=True):
                    if kind not in kinds or conf < min_confidence or other in seed_set:
                        continue
                    pconf = -negconf * conf
                    site = seen.get(other)
                    if site is None:
                        if len(seen) >= MAX_VISITED:
                            truncated = True
                            continue
                        site = Site(other, dist + 1, pconf, via=start)
                        seen[other] = site
                        heapq.heappush(queue, (dist + 1, -pconf, other))
                    elif site.distance == dist + 1 and pconf > site.confidence:
                        site.confidence, site.via = pconf, start
                    if site.distance == dist + 1:
                        lines = self.edge_lines(edge)
                        site.lines.update(lines)
                        site.edge_kinds.add(EdgeKind(kind).name.lower())
                        if kind != EdgeKind.IMPORTS:
                            site.use_lines.update(lines)
        return seen, truncated

    def callees(self, node: int) -> list[tuple[int, float, list[int]]]:
        """Direct callees of `node`: (callee, confidence, call lines), best first."""
        out = [
            (other, conf, self.edge_lines(edge))
            for edge, other, kind, conf in self._neighbours(node, reverse=False)
            if kind == EdgeKind.CALLS
        ]
        return sorted(out, key=lambda x: (-x[1], x[2][:1], x[0]))

    def cycle_members(self, node: int) -> list[int]:
        if not self.in_cycle(node) or self.scc[node] < 0:  # the flag: no cycle numbers read
            return []
        return np.flatnonzero(self.scc == self.scc[node]).tolist()
