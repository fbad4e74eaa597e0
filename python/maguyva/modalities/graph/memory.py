"""What a long-running writer keeps of the graph it built last (`Memory`), and the words
through which one file's resolution can depend on another's declarations (`file_tokens`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from maguyva.extract.types import FileExtraction
from maguyva.modalities.graph import store
from maguyva.modalities.graph.columns import node_columns
from maguyva.modalities.graph.receivers import scan
from maguyva.modalities.graph.resolve.builder import GraphBuilder
from maguyva.modalities.graph.resolve.names import (
    _receiver_word,
    _split_cached,
    alias_of,
    instance_of,
)

# -- a long-running writer: patching the previous build in memory ---------------------------


class Memory:
    """What a writer that stays up keeps of the graph it built last, so that the next update
    is a patch instead of a build: the resolved `GraphBuilder` (declarations, scopes and
    memos: never released), the declaration-phase edge rows, the packed edge log, the
    generation directory they were written to, and which files use which words (to find the
    files a declaration change can reach).

    Node numbers: the kept builder's nodes keep their numbers across patches (a definition
    removed stays a dead node, one added is appended); `order` lists the graph's nodes (the
    numbering a from-scratch build gives: each file's node, then its definitions) by their
    builder number, `canon` is its inverse (-1 for dead and lazily made nodes)."""

    def __init__(self) -> None:
        self.builder: GraphBuilder | None = None
        self.declared_nodes = 0
        self.decl: tuple[np.ndarray, ...] = ()  # declaration-phase rows, graph numbering
        self.decl_file = np.zeros(0, dtype=np.int32)  # the file of each row's source node
        self.log: tuple | None = None  # pack()'s (arrays, strings, meta)
        self.out_dir: Path | None = None
        self.key: tuple = ()
        self.stamp: tuple = ()  # (inode, size, mtime) of the graph.bin written
        self.spans: Any = None  # every chunk's span (`build.Spans`), in order
        self.columns: dict[str, Any] | None = None  # the declared nodes' `node_columns`
        self.packed: dict[str, tuple[np.ndarray, np.ndarray]] | None = None  # their names
        # PageRank and cycles with the edges they were computed from (build._same_input)
        self.global_cache: dict[str, Any] = {}
        self.order: np.ndarray | None = None  # graph number -> builder number (declared)
        self.canon: np.ndarray | None = None  # builder number -> graph number, or -1
        self.fstart: np.ndarray | None = None  # graph number of each file's node
        self.ndefs: np.ndarray | None = None  # number of definitions of each file
        self.tokens: list[np.ndarray] | None = None  # each file's word hashes (`file_tokens`)
        self.tok_hash = np.zeros(0, dtype=np.int64)  # every (hash, file), sorted by hash
        self.tok_file = np.zeros(0, dtype=np.int32)
        self.tok_changed: set[int] = set()  # files whose words changed since that index
        self.part: dict[str, np.ndarray] | None = None  # the names part last written
        self.part_linked = False  # ... hard-linked from the generation before
        # word -> {name: count}: names that take their meaning from the word (`_close_names`)
        self.follows: dict[str, dict[str, int]] | None = None
        # the last patch's edge rows in merged order, as `_edge_tags` (the next one's hint)
        self.edge_tags: np.ndarray | None = None
        self.edge_files = -1
        # the builder's resolution memo indexed by what invalidates an entry (`_index_memo`):
        # the oldest `memo_seen` entries of `memo_of` are indexed, the newer ones not yet
        self.memo_of: dict | None = None
        self.memo_seen = 0
        self.memo_refs = 0  # keys held by the index (some already dropped through another)
        self.memo_by_name: dict[str, list[tuple]] = {}
        self.memo_by_file: dict[int, list[tuple]] = {}
        self.memo_by_class: dict[int, list[tuple]] = {}
        self.memo_other: list[tuple] = []  # entries of kinds the index does not know

    def path_numbers(self, paths: list[str]) -> dict[str, int]:
        """path -> file number of the kept builder's `paths` (a patch adds or removes no
        file), made once per list rather than on every patch."""
        got = getattr(self, "_path_numbers", None)
        if got is None or got[0] is not paths or len(got[1]) != len(paths):
            got = (paths, {p: i for i, p in enumerate(paths)})
            self._path_numbers = got
        return got[1]

    def fits(self, previous: Path | None, key: tuple) -> bool:
        """Is the remembered build the graph of `previous` (the same file, not another
        writer's generation of the same name) under the same rules?"""
        # the generation was written in a temporary directory and renamed: the file is the same
        if self.builder is None or previous is None or key != self.key:
            return False
        try:
            st = (previous / store.FILE_NAME).stat()
        except OSError:
            return False
        return self.stamp == (st.st_ino, st.st_size, st.st_mtime_ns)

    def remember(self, log: tuple, out_dir: Path, key: tuple) -> None:
        arrays, strings, meta = log  # copied: `pack` views the builder's growable log
        arrays = {k: np.array(v) for k, v in arrays.items()}
        self.log, self.out_dir, self.key = (arrays, strings, meta), out_dir, key
        st = (out_dir / store.FILE_NAME).stat()
        self.stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        if self.columns is None and self.builder is not None:
            self.columns = node_columns(self.builder.nodes[: self.declared_nodes])
        if len(self.decl_file) != len(self.decl[0]) and self.columns is not None:
            self.decl_file = self.columns["file"][self.decl[0]].astype(np.int32)

    # -- numbering ------------------------------------------------------------------------

    def numbering(self) -> None:
        """Start keeping the builder's and the graph's numbering apart (both the same so far)."""
        b = self.builder
        if self.order is not None or b is None:
            return
        d = self.declared_nodes
        self.order = np.arange(d, dtype=np.int64)
        self.canon = np.full(len(b.nodes), -1, dtype=np.int64)
        self.canon[:d] = self.order
        self.fstart = np.array(b.file_nodes, dtype=np.int64)
        self.ndefs = np.diff(np.r_[self.fstart, d]) - 1
        files = np.repeat(np.arange(len(self.fstart), dtype=np.int64), self.ndefs + 1)
        b.okey = (files * _RANK + (self.order - self.fstart[files])).tolist()

    def defs_of(self, fid: int) -> list[int]:
        """Builder numbers of file `fid`'s definitions, in the graph's order."""
        b = self.builder
        assert b is not None
        if self.order is None:
            end = b.file_nodes[fid + 1] if fid + 1 < len(b.file_nodes) else self.declared_nodes
            return list(range(b.file_nodes[fid] + 1, end))
        assert self.fstart is not None and self.ndefs is not None
        at = int(self.fstart[fid]) + 1
        return self.order[at : at + int(self.ndefs[fid])].tolist()

    def graph_number(self, ids: np.ndarray) -> np.ndarray:
        """Builder numbers -> graph numbers (-1: a dead or lazily made node)."""
        if self.order is None:
            return ids
        assert self.canon is not None
        if len(self.canon) < len(self.builder.nodes):  # type: ignore[union-attr]
            grow = len(self.builder.nodes) - len(self.canon)  # type: ignore[union-attr]
            self.canon = np.r_[self.canon, np.full(grow, -1, dtype=np.int64)]
        return self.canon[ids]

    # -- words ----------------------------------------------------------------------------

    def set_tokens(self, fid: int, tokens: np.ndarray) -> None:
        assert self.tokens is not None
        if fid == len(self.tokens):
            self.tokens.append(tokens)
        else:
            self.tokens[fid] = tokens
            self.tok_changed.add(fid)

    def files_using(self, words: set[str]) -> set[int]:
        """The files whose words (`file_tokens`) include one of `words`."""
        assert self.tokens is not None
        if len(self.tok_changed) > 256 or (len(self.tok_hash) == 0 and self.tokens):
            lens = np.fromiter(map(len, self.tokens), dtype=np.int64, count=len(self.tokens))
            allh = np.concatenate(self.tokens) if self.tokens else np.zeros(0, dtype=np.int64)
            allf = np.repeat(np.arange(len(self.tokens), dtype=np.int32), lens)
            order = np.argsort(allh, kind="stable")
            self.tok_hash, self.tok_file = allh[order], allf[order]
            self.tok_changed = set()
        hs = np.unique(np.array([_hash(w) for w in words], dtype=np.int64))
        lo = np.searchsorted(self.tok_hash, hs, side="left")
        hi = np.searchsorted(self.tok_hash, hs, side="right")
        out: set[int] = set()
        for a, z in zip(lo.tolist(), hi.tolist(), strict=True):
            if z > a:
                out.update(self.tok_file[a:z].tolist())
        out -= self.tok_changed
        out.update(f for f in self.tok_changed if np.isin(self.tokens[f], hs).any())
        return out


MAX_DECLARED = 64  # more files with declaration changes than this: a build (replay) instead
_RANK = 1 << 24  # okey: file * _RANK + rank of the node in its file (0: the file's node)
_HASH_MASK = (1 << 63) - 1
_WORD = re.compile(r"[A-Za-z_$][\w$]*")


def _hash(word: str) -> int:
    return hash(word) & _HASH_MASK


def file_tokens(ex: FileExtraction, family: str, text: str | None = None) -> np.ndarray:
    """The words through which file `ex`'s resolution can depend on another file's
    declarations: every identifier of its calls, references, imports, bases, aliases and
    instances (and, for Python with source text, the receiver type names `receivers.scan`
    finds), plus each call receiver's own name (`\\0w` + word, and `\\0s` + each suffix of 4+
    letters: what `_names_class` compares with class names). As sorted unique hashes."""
    words: set[str] = set()
    find = _WORD.findall
    recv: set[str] = set()
    for c in ex.calls:
        words.update(find(c.callee))
        parts = _split_cached(c.callee)
        if len(parts) > 1:
            w = _receiver_word(parts[:-1])
            if w:
                recv.add(w)
    for r in ex.references:
        words.update(find(r.name))
    for i in ex.imports:
        words.update(find(i.module))
        if i.name:
            words.update(find(i.name))
        if i.alias:
            words.add(i.alias)
    for d in ex.definitions:
        for base in d.bases:
            words.update(find(base))
        for rhs in (alias_of(d, family), instance_of(d, family)):
            if rhs:
                words.update(find(rhs))
    if text and family == "py":
        for names in scan(text).values():
            for n in names:
                words.update(find(n))
    for w in recv:
        words.add("\0w" + w)
        words.update("\0s" + w[i:] for i in range(len(w) - 3))
    return np.unique(np.fromiter(map(_hash, words), dtype=np.int64, count=len(words)))


_DTYPES = (np.int32, np.int32, np.uint8, np.float64, np.int32)
