"""The builder's state and its memo: every table resolution fills (see `BuilderState`), read by
the mixins of `builder.GraphBuilder` (declare, imports, lookup, hierarchy, candidates)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from maguyva.extract.types import FileExtraction
from maguyva.modalities.graph.modules import ModuleIndex
from maguyva.modalities.graph.receivers import ReceiverTypes
from maguyva.modalities.graph.resolve.rows import (
    _MISSING,
    CALLS,
    STAT_KEYS,
    Body,
    Columns,
    FileScope,
    Node,
)
from maguyva.modalities.graph.schema import CONF_FLOOR


class BuilderState:
    """The tables declaration fills and lookups read, and the memo every lookup goes through.

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
