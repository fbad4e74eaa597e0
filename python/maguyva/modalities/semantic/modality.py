"""The semantic modality: code by meaning, as binary embeddings searched by Hamming distance.

Build: embed `chunk.header + "\\n" + chunk.text` for every chunk with the configured provider
(through the content-addressed cache, so unchanged chunks are never re-embedded), pack the sign
bits, and write `semantic/` in the generation as segments (format 2): a base (`codes.npy`
uint8 n x dim/8, `floats.npy` float16 for rescoring when the provider gives floats, `ids.json`
chunk ids in row order, `hashes.json` the content hash of each row's embedded text,
`paths.json` each file's rows) and, after small updates of a long-running writer, delta
segments (`delta-NNNNNN.codes.npy`, ...) holding only the changed files' rows, with the rows
they replace tombstoned in `meta.json` (`segments`). Unchanged segments are hard-linked from
the previous generation; past `FOLD_RATIO` the deltas are folded into a new base, past
`MAX_DELTAS` compacted into one. `centre.npy` (providers whose codes are centred: always one
base) and `meta.json` (provider identity, build report, segments). Chunks left out by the
cap, the time budget or a provider failure are listed as pending and embedded by the next
build; text and structural search never wait for them.

Search: embed the query (input_type "query"), take the exact Hamming top candidates of every
segment from the memory-mapped codes in Rust (tombstoned rows left out), merge them in a
from-scratch build's row order (file, then position: ties break as they would in one base),
rescore them with float vectors when present. The answers equal a from-scratch build's
(tests/test_semantic_segments.py). The model is loaded on the first search, never when the
index is opened (an exact-match query never pays for it), once per process.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import logging
import os
import shutil
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from maguyva import _core
from maguyva.config import load_config
from maguyva.errors import (
    ConfigError,
    CorruptIndexError,
    IndexVersionError,
    MaguyvaError,
    ModalityUnavailable,
    ModelMismatchError,
    ProviderError,
)
from maguyva.modalities import followups as follow
from maguyva.modalities.protocol import BuildContext, RetrieverQuery
from maguyva.modalities.semantic.coverage import coverage, describe
from maguyva.modalities.semantic.embed import (
    EmbeddingCache,
    EmbeddingProvider,
    ProviderIdentity,
    binarize,
    content_hash,
    file_secret_reason,
    make_provider,
    secret_reason,
)
from maguyva.modalities.semantic.priority import central_files, rank
from maguyva.model import Chunk, Hit
from maguyva.store.chunks import ChunkStore

log = logging.getLogger("maguyva.modalities.semantic.modality")

FORMAT_VERSION = 2
"""1: codes.npy + floats.npy (float16) + ids.json + meta.json; later additions that older
readers ignore: hashes.json (content hash of each row's embedded text, for reuse by the next
build), meta `partial_ids` (rows holding a head vector, body pending).
2: segments (meta `segments`: [{name, rows, deleted, floats}], the base first): the base's
files are named as in format 1, a delta's `delta-NNNNNN.codes.npy` ...; every segment has a
path table (`paths.json`: [path, first row, rows]) and may have tombstoned rows. A format-1
reader would miss the deltas and the tombstones, so it refuses format 2 (unknown format);
format 1 is read as one base segment without tombstones."""
READ_FORMATS = (1, 2)
BASE = "base"
MAX_DELTAS = 8
"""Delta segments kept; one more and they are compacted into the new delta."""
META_LIST_MAX = 1000
"""`meta.json` lists the pending and partial chunk ids (format 1 did, always) only when there
are at most this many: a reader never needs them and a large list made every update rewrite
(and every reader parse) megabytes; `pending_of` reads them from the path tables."""
FOLD_RATIO = 0.05
FOLD_MIN_ROWS = 512
"""The deltas are folded into a new base when their live rows plus the base's tombstones
exceed FOLD_RATIO of the base's rows (and FOLD_MIN_ROWS)."""
RESCORE_DEPTH = 100
"""Hamming candidates rescored with float vectors (measured: top-100 rescoring recovers the
float ranking's MRR on the standard-library set; see docs/semantic.md)."""
EMBED_GROUP = 64  # texts per provider call: progress, cache commits and budget checks
PHASES = ("auto", "full", "heads-first", "heads")
HEADS_FIRST_MIN = 2000
"""With more chunks than this to embed, "auto" embeds every chunk's head before any body."""

# its configuration keys (`semantic_phases`, `semantic_time_budget_s`, `embedding_*`) are
# declared in `maguyva.config.SCHEMA`

ProviderFactory = Callable[[dict[str, Any]], EmbeddingProvider]


HEAD_CHARS = 200
"""Phase one embeds a chunk's head: its header and the first lines of its text up to this many
characters (signature, start of the docstring), about 50 tokens: cheaper than a full
window (measured in docs/semantic.md)."""


def head_text(chunk: Chunk) -> str:
    """The head of a chunk (phase one): header, then whole lines of the text while they fit in
    `HEAD_CHARS` (at least the first line, cut)."""
    lines = chunk.text.split("\n")
    taken, size = [], 0
    for line in lines:
        if taken and size + len(line) + 1 > HEAD_CHARS:
            break
        taken.append(line[:HEAD_CHARS])
        size += len(line) + 1
    body = "\n".join(taken)
    return f"{chunk.header}\n{body}" if chunk.header else body


def embed_text(chunk: Chunk, identity: ProviderIdentity) -> str:
    """What is embedded for a chunk: header (path, name, signature) first, so a token window
    truncates the tail of the body, not the identity; cut long bodies before tokenising."""
    text = f"{chunk.header}\n{chunk.text}" if chunk.header else chunk.text
    limit = (identity.max_tokens or 8192) * 8
    return text[:limit]


@dataclass(frozen=True, slots=True)
class Planned:
    """A chunk to embed: the full text and its head (phase one), each with its content hash.
    `head is text` when the whole chunk is short enough to be its own head. Only the chunk's
    id and whether it is a line window are kept, not the chunk (with its text)."""

    id: str
    lines: bool  # a line window (no definition), embedded after definitions
    text: str
    hash: str
    head: str
    head_hash: str


def _phases(config: dict[str, Any], missing: int) -> str:
    """ "full", "heads-first" or "heads" (config `semantic_phases`; "auto" picks heads-first when
    more than `HEADS_FIRST_MIN` chunks lack a full vector)."""
    mode = str(config.get("semantic_phases") or "auto")
    if mode not in PHASES:
        raise ConfigError(f"semantic_phases must be one of {', '.join(PHASES)}, got {mode!r}")
    if mode == "auto":
        return "heads-first" if missing > HEADS_FIRST_MIN else "full"
    return mode


_Entry = tuple[str, int, int, str, int, str, str, int, int, str, str | None]
"""What the build keeps of an eligible chunk between updates (no text): path, start and end
line, chunk id, its queue rank (`priority.rank`), the hashes of its full and head texts and
their lengths (the queue's order), its kind and (qualified) name (what a hit shows). A plain tuple of atoms, so the cyclic collector stops tracking it
(and the candidates holding it): a writer keeps one per chunk, and a full collection would
otherwise walk them all (a tuple subclass, even a NamedTuple, stays tracked)."""
PATH, START, END, ID, LINES, HASH, HEAD_HASH, TEXT_LEN, HEAD_LEN, KIND, NAME = range(11)


def _entry(chunk: Chunk, p: Planned, central: frozenset[str] | None = None) -> _Entry:
    # the LINES slot holds the queue rank (`priority.rank`): what to embed first
    return (chunk.path, chunk.start_line, chunk.end_line, p.id,
            rank(chunk.path, p.lines, central),
            p.hash, p.head_hash, len(p.text), len(p.head), chunk.kind,
            chunk.qualified_name or chunk.name)  # fmt: skip


Candidate = tuple[int, int, str, int, int, str, str, _Entry]
"""A vector a chunk lacks, in queue order: (rank, length of the text, path, start, end, chunk
id, hash to embed, entry). The rank (`priority.rank`) puts implementation before tests,
vendored and generated code, and within each definitions before line windows (they are what
semantic questions are about); then shortest first (similar lengths share a batch, and a
budget covers the most chunks), then row order: a from-scratch build's stable sort."""


def _candidates(entries: list[_Entry], have: set[str]) -> tuple[list[Candidate], list[Candidate]]:
    """Heads of chunks with no vector at all, and full texts of chunks without theirs."""
    heads = [(e[LINES], e[HEAD_LEN], e[PATH], e[START], e[END], e[ID], e[HEAD_HASH], e)
             for e in entries if e[HASH] not in have and e[HEAD_HASH] not in have]  # fmt: skip
    bodies = [(e[LINES], e[TEXT_LEN], e[PATH], e[START], e[END], e[ID], e[HASH], e)
              for e in entries if e[HASH] not in have]  # fmt: skip
    return heads, bodies


def _sort(candidates: list[Candidate]) -> list[Candidate]:
    return sorted(candidates, key=lambda c: c[:6])


def _merge(ordered: list[Candidate], more: list[Candidate]) -> list[Candidate]:
    """`ordered` (sorted) with `more` inserted in their places."""
    if len(more) > len(ordered) // 8:
        return _sort(ordered + more)
    for c in more:
        ordered.insert(bisect.bisect_left(ordered, c[:6], key=_key), c)
    return ordered


def _key(c: Candidate) -> tuple[bool, int, str, int, int, str]:
    return c[:6]


def _remove(ordered: list[Candidate], e: _Entry, head: bool) -> bool:
    """Take `e`'s head (or body) candidate out of `ordered` if it is there."""
    key = (e[LINES], e[HEAD_LEN] if head else e[TEXT_LEN], e[PATH], e[START], e[END], e[ID])
    i = bisect.bisect_left(ordered, key, key=_key)
    while i < len(ordered) and ordered[i][:6] == key:
        if ordered[i][7] is e:
            del ordered[i]
            return True
        i += 1
    return False


def _central(ctx: BuildContext) -> frozenset[str] | None:
    """The central files by the graph of the generation being replaced (committed, so never
    being written by a build running beside this one), else, in a first build, by the graph
    this generation built before semantic (`BUILD_ORDER`)."""
    for base in (ctx.previous_dir, None if ctx.previous_dir else ctx.out_dir):
        if base is not None:
            found = central_files(Path(base) / "graph")
            if found is not None:
                return found
    return None


def embed_phase(phases: str) -> str:
    """The progress phase of the embedding, named for what its count counts: with heads
    first, a chunk is embedded twice (its head, then its body)."""
    return {"heads-first": "embed heads+bodies", "heads": "embed heads"}.get(phases, "embed")


def _left(candidates: _Candidates, phases: str) -> int:
    """Texts still to embed after this build: bodies (unless "heads") and the heads that are
    not their whole chunk (unless "full"; a short chunk's head is its body)."""
    if phases == "heads":
        return len(candidates.heads)
    if phases == "full":
        return len(candidates.bodies)
    return len(candidates.bodies) + sum(1 for c in candidates.heads if c[6] != c[7][HASH])


def _touched(changes: Any) -> set[str]:
    """The files an update changed (added, modified, renamed to); none for a first build or
    a build without a change set."""
    if changes is None or getattr(changes, "reason", ""):
        return set()
    return set(changes.touched_paths())


class _Have:
    """The hashes that have a vector: those of the previous generation's rows (`previous`:
    a mapping by hash) and those found in the cache or embedded by this build."""

    def __init__(self, previous: Any) -> None:
        self.previous, self.got = previous, set()

    def __contains__(self, h: object) -> bool:
        return h in self.got or h in self.previous


class _Candidates:
    """Chunks lacking a vector, sorted in queue order (`heads`: no vector at all; `bodies`:
    no full vector), and those chunks by each of their two hashes, kept up to date one entry
    at a time (an update touches a handful)."""

    def __init__(self, heads: list[Candidate], bodies: list[Candidate]) -> None:
        self.heads, self.bodies = heads, bodies
        self.by_hash: dict[str, tuple[_Entry, ...]] = {}  # tuples: untracked by the collector
        for c in bodies:
            self._index(c[7])

    def _index(self, e: _Entry) -> None:
        self.by_hash[e[HASH]] = (*self.by_hash.get(e[HASH], ()), e)
        if e[HEAD_HASH] != e[HASH]:
            self.by_hash[e[HEAD_HASH]] = (*self.by_hash.get(e[HEAD_HASH], ()), e)

    def _unindex(self, e: _Entry) -> None:
        for h in {e[HASH], e[HEAD_HASH]}:
            got = tuple(x for x in self.by_hash.get(h, ()) if x is not e)
            if got:
                self.by_hash[h] = got
            else:
                self.by_hash.pop(h, None)

    def drop(self, e: _Entry) -> None:
        """`e` left the repository (its file changed or went away)."""
        if _remove(self.bodies, e, False):
            _remove(self.heads, e, True)
            self._unindex(e)

    def add(self, entries: list[_Entry], have: _Have) -> None:
        heads, bodies = _candidates(entries, have)  # type: ignore[arg-type]
        self.heads = _merge(self.heads, heads)
        self.bodies = _merge(self.bodies, bodies)
        for c in bodies:
            self._index(c[7])

    def settle(self, hashes: set[str], have: _Have) -> set[str]:
        """Hashes that just got a vector: take the chunks they complete out of the lists;
        return those chunks' paths (their rows change)."""
        paths: set[str] = set()
        for h in hashes:
            for e in self.by_hash.get(h, ()):
                paths.add(e[PATH])
                if e[HASH] in have:
                    _remove(self.bodies, e, False)
                    _remove(self.heads, e, True)
                    self._unindex(e)
                elif e[HEAD_HASH] in have:
                    _remove(self.heads, e, True)
        return paths


def _queue(
    heads: list[Candidate],
    bodies: list[Candidate],
    have: set[str],
    phases: str,
    cap: int | None,
    urgent: tuple[list[Candidate], list[Candidate]] = ([], []),
) -> list[tuple[str, _Entry, bool]]:
    """(hash, chunk, is its head) to embed, in order: the `urgent` ones (the chunks of the
    files this update changed: what was just edited is searched for first), then heads of
    chunks with no vector at all (unless "full"), then full texts (unless "heads"); each hash
    once; at most `cap`."""
    stages = []
    for h, b in (urgent, (heads, bodies)):
        stages += ([(h, True)] if phases != "full" else []) + (
            [(b, False)] if phases != "heads" else []
        )
    queue: dict[str, tuple[str, _Entry, bool]] = {}
    for stage, is_head in stages:
        for c in stage:
            if cap is not None and len(queue) >= cap:
                return list(queue.values())
            h = c[6]
            if h not in have and h not in queue:
                queue[h] = (h, c[7], is_head)
    return list(queue.values())


class _State:
    """What this process wrote last (a long-running writer: `maguyva watch`, `mcp --watch`):
    every eligible chunk's entry by path, where each path's rows are in that generation
    (segment and first row), which paths hold each vector hash, the generation's segments
    and the sorted candidates (chunks still lacking a vector). The next build, when its
    previous generation is that one (same `meta.json` file) and `ctx.changes` says which files
    changed, plans only those files' chunks and writes only their rows (a delta segment; the
    other segments are hard-linked) instead of planning every chunk. A build consumes the
    state (it updates it in place) and leaves a new one when it ends."""

    def __init__(
        self,
        key: str,
        sig: tuple[int, int, int],
        by_path: dict[str, list[_Entry]],
        path_rows: dict[str, _PathRows],
        where: dict[str, tuple[str, ...]],
        segments: list[dict[str, Any]],
        rescore: bool,
        candidates: _Candidates,
    ) -> None:
        self.key, self.sig, self.by_path, self.path_rows = key, sig, by_path, path_rows
        self.where, self.segments, self.rescore = where, segments, rescore
        self.candidates = candidates
        self.cache_sig: tuple[tuple[str, int, int], ...] = ()
        self.next = 1  # number of the next delta segment

    def row_of(self, h: str) -> tuple[str, int]:
        """A row (segment, row) of the generation holding the vector of hash `h`."""
        pr = self.path_rows[self.where[h][0]]
        return pr.seg, pr.first + pr.hashes.index(h)


@dataclass(slots=True)
class _PathRows:
    """One file's part of a generation: the segment holding its rows and its first row there,
    its rows' chunk ids and vector hashes, the ids of its partial and pending chunks, each
    row's [start line, end line, kind, name]. `seg` is "" while the rows are not placed yet (a
    changed file's, during a build)."""

    seg: str
    first: int
    ids: list[str]
    hashes: list[str]
    partial: list[str]
    pending: list[str]
    info: list[tuple[int, int, str, str | None]]


def _path_rows(entries: list[_Entry], have: _Have) -> _PathRows:
    """Each chunk takes its full vector, else its head's (body pending), else nothing."""
    ids: list[str] = []
    hashes: list[str] = []
    partial, pending = [], []
    info = []
    for e in entries:
        if e[HASH] in have:
            ids.append(e[ID])
            hashes.append(e[HASH])
        elif e[HEAD_HASH] in have:
            ids.append(e[ID])
            hashes.append(e[HEAD_HASH])
            partial.append(e[ID])
        else:
            pending.append(e[ID])
            continue
        info.append((e[START], e[END], e[KIND], e[NAME]))
    return _PathRows("", 0, ids, hashes, partial, pending, info)


_Run = list  # [dst, segment, src, count]: rows dst.. <- the previous generation's rows src..


def _run(runs: list[_Run], dst: int, seg: str, src: int, count: int) -> None:
    """Append rows dst.. <- previous rows src.. of segment `seg` to `runs`, extending the
    last run when contiguous."""
    if (
        runs
        and runs[-1][1] == seg
        and runs[-1][0] + runs[-1][3] == dst
        and (runs[-1][2] + runs[-1][3] == src)
    ):
        runs[-1][3] += count
    elif count:
        runs.append([dst, seg, src, count])


def _cache_sig(directory: Path) -> tuple[tuple[str, int, int], ...]:
    """The embedding cache's files as they are (name, size, mtime): equal after this
    process's last build means nobody else has added vectors since."""
    try:
        entries = sorted(os.scandir(directory), key=lambda d: d.name)
        return tuple((d.name, d.stat().st_size, d.stat().st_mtime_ns) for d in entries)
    except OSError:
        return ()


def _sig(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def seg_file(seg: str, name: str) -> str:
    """A segment's file name: the base's are `codes.npy`, `ids.json`, ... (as in format 1),
    a delta's `delta-000003.codes.npy`, ..."""
    return name if seg == BASE else f"{seg}.{name}"


SEGMENT_FILES = (
    "codes.npy", "floats.npy", "ids.json", "hashes.json", "paths.json", "pending.json",
    "chunks.json",
)  # fmt: skip


def segments_of(meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The segments a semantic `meta.json` lists ([{name, rows, deleted}]); format 1 has one,
    the base, without tombstones."""
    if meta.get("format") == 1:
        return [{"name": BASE, "rows": int(meta.get("embedded", 0)), "deleted": [],
                 "entries": 0, "gone": [], "floats": bool(meta.get("rescore"))}]  # fmt: skip
    segments = meta.get("segments")
    if not isinstance(segments, list) or not segments or segments[0].get("name") != BASE:
        raise CorruptIndexError("semantic meta.json: no segment list starting with the base")
    return segments


def check_format(d: Path, meta: dict[str, Any]) -> None:
    """Refuse a semantic part this code cannot read, clearly."""
    fmt = meta.get("format")
    if isinstance(fmt, int) and fmt > FORMAT_VERSION:
        raise IndexVersionError(
            f"{d}: semantic format {fmt} was written by a newer Maguyva (this one reads "
            f"{', '.join(map(str, READ_FORMATS))}); upgrade Maguyva or rebuild the index"
        )
    if fmt not in READ_FORMATS:
        raise CorruptIndexError(f"{d}: unknown semantic format {fmt!r}")


QUERY_CACHE_SIZE = 256
"""Query embeddings kept per process (an agent repeats questions; ~14 ms CPU each)."""
_QUERY_CACHE: OrderedDict[tuple[Any, str], Any] = OrderedDict()
_query_lock = threading.Lock()


def query_embedding(provider: Any, text: str) -> Any:
    """`provider.embed([text], "query")`, remembered by (provider identity, text) in an LRU
    of QUERY_CACHE_SIZE; the arrays are made read-only, as they are shared."""
    key = (provider.identity, text)
    with _query_lock:
        found = _QUERY_CACHE.get(key)
        if found is not None:
            _QUERY_CACHE.move_to_end(key)
            return found
    result = provider.embed([text], "query")
    for array in (result.codes, result.floats):
        if isinstance(array, np.ndarray):
            array.setflags(write=False)
    with _query_lock:
        _QUERY_CACHE[key] = result
        while len(_QUERY_CACHE) > QUERY_CACHE_SIZE:
            _QUERY_CACHE.popitem(last=False)
    return result


_READ_CACHE: OrderedDict[tuple[str, int, int, int, int], Any] = OrderedDict()
_READ_CACHE_SIZE = 64  # files: a base and up to 8 deltas of a few indexes, 3 files each
_read_lock = threading.Lock()


def _read_json(path: Path) -> Any:
    """A segment's JSON file, decoded once per file (segment files are immutable and shared
    by hard links between generations: a reader reopening a new generation decodes only the
    new delta's, not the base's ids again)."""
    st = os.stat(path)
    key = (path.name, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    with _read_lock:
        if key in _READ_CACHE:
            _READ_CACHE.move_to_end(key)
            return _READ_CACHE[key]
    value = json.loads(path.read_bytes())
    with _read_lock:
        _READ_CACHE[key] = value
        while len(_READ_CACHE) > _READ_CACHE_SIZE:
            _READ_CACHE.popitem(last=False)
    return value


class _PreviousVectors:
    """The codes and floats of the generation being replaced (every segment, memory-mapped)
    and, for a full plan, its live rows by content hash: a build copies their rows instead of
    reading every vector back from the cache."""

    def __init__(
        self,
        rows: dict[str, tuple[str, int]],
        sources: dict[str, tuple[np.ndarray, np.ndarray | None]],
    ) -> None:
        self.rows, self.sources = rows, sources

    @classmethod
    def load(cls, previous_dir: Path | None, identity: ProviderIdentity) -> _PreviousVectors:
        empty = cls({}, {})
        d = Path(previous_dir) / "semantic" if previous_dir else None
        if d is None or identity.centred or not (d / "hashes.json").exists():
            return empty
        try:
            meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
            built = ProviderIdentity.from_dict(meta["provider"])
            if built.cache_key != identity.cache_key or meta.get("format") not in READ_FORMATS:
                return empty
            rows: dict[str, tuple[str, int]] = {}
            sources = _open_sources(d, segments_of(meta), identity, bool(meta.get("rescore")))
            for s in segments_of(meta):
                hashes = _read_json(d / seg_file(s["name"], "hashes.json"))
                if len(hashes) != int(s["rows"]):
                    return empty
                deleted = set(s["deleted"])
                for i, h in enumerate(hashes):
                    if i not in deleted:
                        rows[h] = (s["name"], i)
        except (OSError, ValueError, KeyError, TypeError, MaguyvaError) as exc:
            log.info("semantic: previous generation not reused: %s", exc)
            return empty
        return cls(rows, sources)


def _open_sources(
    d: Path, segments: list[dict[str, Any]], identity: ProviderIdentity, rescore: bool
) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    """Each segment's codes and floats, memory-mapped; ValueError when a shape is wrong."""
    sources: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
    for s in segments:
        name, rows = s["name"], int(s["rows"])
        codes = np.load(d / seg_file(name, "codes.npy"), mmap_mode="r")
        floats = np.load(d / seg_file(name, "floats.npy"), mmap_mode="r") if rescore else None
        if codes.shape != (rows, identity.width) or (
            floats is not None and floats.shape != (rows, identity.dim)
        ):
            raise ValueError(f"segment {name!r}: shape {codes.shape}, expected {rows} rows")
        sources[name] = (codes, floats)
    return sources


def _assemble(
    n: int,
    runs: list[_Run],
    fresh: list[tuple[int, str]],
    identity: ProviderIdentity,
    vectors: dict[str, tuple[np.ndarray, np.ndarray | None]],
    sources: dict[str, tuple[np.ndarray, np.ndarray | None]],
    float_dtype: type = np.float16,
) -> tuple[np.ndarray, np.ndarray | None]:
    """The code matrix (and float matrix when every row has floats) of one segment in row
    order: runs of the previous generation's rows copied as slices ([dst, segment, src,
    count]), and the rows in `fresh` ((row, hash)) from `vectors`. Floats are assembled in the
    stored dtype (float16: previous rows are copied as they are, new ones rounded once, as
    `astype` of a float32 matrix would)."""
    codes = np.zeros((n, identity.width), dtype=np.uint8)
    have_floats = n > 0 and all(sources[r[1]][1] is not None for r in runs)
    have_floats = have_floats and all(vectors[h][1] is not None for _, h in fresh)
    floats = np.zeros((n, identity.dim), float_dtype) if have_floats else None
    for dst, seg, src, count in sorted(runs, key=lambda r: (r[1], r[2])):  # file order
        prev_codes, prev_floats = sources[seg]
        codes[dst : dst + count] = prev_codes[src : src + count]
        if floats is not None and prev_floats is not None:
            floats[dst : dst + count] = prev_floats[src : src + count]
    for i, h in fresh:
        code, vec = vectors[h]
        codes[i] = code
        if floats is not None and vec is not None:
            floats[i] = vec
    return codes, floats


def _write_segment(
    out: Path,
    seg: str,
    codes: np.ndarray,
    floats: np.ndarray | None,
    ordered: list[tuple[str, _PathRows]],
) -> int:
    """A segment's files: codes, floats, chunk ids, vector hashes, the path table in path
    order ([path, first row, rows]: what orders rows across segments and names a hit's file)
    the partial and pending chunk ids of its files that have any ([path, partial, pending]:
    read by tools, never by a search) and each row's [start line, end line, kind, name] (what
    a hit shows: a search reads no chunk); returns the table's length."""
    np.save(out / seg_file(seg, "codes.npy"), codes)
    if floats is not None:
        np.save(out / seg_file(seg, "floats.npy"), floats.astype(np.float16, copy=False))
    ids = list(chain.from_iterable(pr.ids for _, pr in ordered))
    hashes = list(chain.from_iterable(pr.hashes for _, pr in ordered))
    table = [[p, pr.first, len(pr.ids)] for p, pr in ordered if pr.ids or pr.pending]
    waiting = [[p, pr.partial, pr.pending] for p, pr in ordered if pr.partial or pr.pending]
    info = list(chain.from_iterable(pr.info for _, pr in ordered))
    for name, value in (("ids.json", ids), ("hashes.json", hashes), ("paths.json", table),
                        ("pending.json", waiting), ("chunks.json", info)):  # fmt: skip
        (out / seg_file(seg, name)).write_text(json.dumps(value), encoding="utf-8")
    return len(table)


def _link(src: Path, dst: Path) -> None:
    """Share an immutable segment file with the previous generation (copy if links fail)."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


class _Clock:
    """Records the time since the previous mark under each name (a build's phases)."""

    def __init__(self, started: float, into: dict[str, float]) -> None:
        self.last, self.into = started, into

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.into[name] = now - self.last
        self.last = now


KEEP_STATES = 4
"""Repositories whose last build a process remembers (one writer per repository; a process
serving several keeps each one's state)."""
LOCAL_PROVIDER_KEYS = ("embedding_max_length", "embedding_batch_size", "embedding_threads")


def _planned(chunk: Chunk, identity: ProviderIdentity) -> Planned:
    text = embed_text(chunk, identity)
    head = head_text(chunk)
    head = text if len(head) >= len(text) else head
    return Planned(chunk.id, chunk.kind == "lines", text, content_hash(text), head,
                   content_hash(head))  # fmt: skip


def _text_of(
    ctx: BuildContext, texts: dict[str, Planned], item: tuple[str, _Entry, bool],
    identity: ProviderIdentity,
) -> str:  # fmt: skip
    """The text to embed for a queued chunk: planned in this build, or (a pending chunk of an
    unchanged file, in an update) read back from the generation's chunks."""
    h, e, head = item
    p = texts.get(e[ID])
    if p is None:
        for chunk in ctx.chunks.of_paths([e[PATH]]):  # type: ignore[attr-defined]
            texts.setdefault(chunk.id, _planned(chunk, identity))
        p = texts.get(e[ID])
    if p is None or (p.head_hash if head else p.hash) != h:
        raise CorruptIndexError(f"semantic: chunk {e[ID]} of {e[PATH]} is not what was planned")
    return p.head if head else p.text


def _file_text(ctx: BuildContext, path: str) -> str | None:
    """The whole file a chunk came from, for the per-file secret decision (None: unreadable
    now, so the name and the chunks decide)."""
    try:
        return ctx.read_text(path)
    except (OSError, MaguyvaError):
        return None


class SemanticModality:
    """Build side and loader of the semantic modality."""

    name: ClassVar[str] = "semantic"

    def __init__(self, provider_factory: ProviderFactory = make_provider) -> None:
        self.provider_factory = provider_factory
        self._kept: tuple[str, EmbeddingProvider] | None = None
        self._states: OrderedDict[str, _State] = OrderedDict()  # by repository root
        # open embedding caches of the repositories whose state is kept (a long-running writer
        # does not reconnect, and checkpoint on close, on every update)
        self._caches: OrderedDict[tuple[str, str], tuple[EmbeddingCache, int]] = OrderedDict()
        self._lock = threading.Lock()

    # -- build ---------------------------------------------------------------------------------

    def plan(
        self, ctx: BuildContext, provider: EmbeddingProvider, chunks: Any = None,
        central: frozenset[str] | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        """Which chunks are eligible (with their full and head texts and hashes), which are
        excluded as secrets (remote providers only). `chunks` (default: every chunk of the
        build) narrows it, e.g. to the changed files' chunks of an update."""
        identity = provider.identity
        # in the views' order (one segment of chunks at a time), then sorted by position
        keyed: list[tuple[tuple[str, int, int, str], Planned, _Entry]] = []
        # per file, not per chunk: a file with a secret anywhere sends none of its chunks
        secret_files: dict[str, str | None] = {}
        for chunk in ctx.chunks if chunks is None else chunks:
            if provider.remote:
                if chunk.path not in secret_files:
                    secret_files[chunk.path] = file_secret_reason(
                        chunk.path, _file_text(ctx, chunk.path)
                    )
                if secret_files[chunk.path] is None:  # the file changed since: its chunks too
                    secret_files[chunk.path] = secret_reason(embed_text(chunk, identity))
            planned = _planned(chunk, identity)
            keyed.append(((chunk.path, chunk.start_line, chunk.end_line, chunk.id), planned,
                          _entry(chunk, planned, central)))  # fmt: skip
        excluded: dict[str, int] = {}
        for (path, *_), _p, _e in keyed:
            if reason := secret_files.get(path):
                excluded[reason] = excluded.get(reason, 0) + 1
        keyed = [k for k in keyed if not secret_files.get(k[0][0])]
        keyed.sort(key=lambda e: e[0])
        eligible = [p for _, p, _ in keyed]
        files = {path: reason for path, reason in sorted(secret_files.items()) if reason}
        return {"eligible": eligible, "entries": [e for _, _, e in keyed], "excluded": excluded,
                "excluded_files": files}  # fmt: skip

    def dry_run(self, ctx: BuildContext) -> dict[str, Any]:
        """What a build would send: chunk and token counts, cache hits, secret exclusions.
        Loads no model for a remote provider (tokens are estimated)."""
        provider = self.provider_factory(ctx.config)
        planned = self.plan(ctx, provider)
        eligible: list[Planned] = planned["eligible"]
        with EmbeddingCache(ctx.cache_dir / "embeddings", provider.identity) as cache:
            wanted = {p.hash for p in eligible} | {p.head_hash for p in eligible}
            cached = cache.get_many(sorted(wanted))
        todo = {p.hash: p.text for p in eligible if p.hash not in cached}
        phases = _phases(ctx.config, len(todo))
        heads = {p.head_hash: p.head for p in eligible
                 if p.hash not in cached and p.head_hash not in cached and p.head_hash != p.hash}  # fmt: skip
        texts = list(todo.values()) if phases != "heads" else []
        if phases != "full":
            texts += list(heads.values())
        return {
            "provider": provider.identity.to_dict(),
            "remote": provider.remote,
            "chunks": len(ctx.chunks),
            "eligible": len(eligible),
            "cached": len(eligible) - sum(1 for p in eligible if p.hash in todo),
            "to_embed": len(todo),
            "phases": phases,
            "heads_to_embed": len(heads) if phases != "full" else 0,
            "tokens_to_send": provider.count_tokens(texts) if texts else 0,
            "excluded": planned["excluded"],
            "excluded_files": planned["excluded_files"],
        }

    @contextlib.contextmanager
    def _cache(
        self, directory: Path, identity: ProviderIdentity, keep: bool
    ) -> Iterator[EmbeddingCache]:
        """The embedding cache of `directory`: kept open between builds of this process when
        `keep` (the last KEEP_STATES repositories), else opened and closed around the build.
        Builds of one modality object run one at a time per repository (the writer lock)."""
        if not keep:
            with EmbeddingCache(directory, identity) as cache:
                yield cache
            return
        key = (str(directory), identity.cache_key)
        with self._lock:
            kept = self._caches.pop(key, None)
        cache = None
        if kept is not None:
            now = _sig(Path(kept[0].path))
            if now is not None and now[0] == kept[1]:
                cache = kept[0]
            else:  # the file was deleted or replaced: open the one there now
                kept[0].close()
        if cache is None:
            cache = EmbeddingCache(directory, identity)
        ino = (_sig(Path(cache.path)) or (0,))[0]
        try:
            yield cache
        except BaseException:
            cache.close()
            raise
        with self._lock:
            self._caches[key] = (cache, ino)
            while len(self._caches) > KEEP_STATES:
                self._caches.popitem(last=False)[1][0].close()

    def prepare(self, config: dict[str, Any]) -> bool:
        """Load the writer's model now (a watcher starting: `Indexer.update(prepare=True)`),
        one text and a batch, as the first edit's build would embed them. A remote provider
        is not called; a missing model is left to the build to report. False when nothing
        was loaded."""
        try:
            provider = self._provider(config)
        except ProviderError:
            return False
        if provider.remote:
            return False
        provider.embed(["warm up"], "document")
        provider.embed(["warm", "up"], "document")
        return True

    def _provider(self, config: dict[str, Any]) -> EmbeddingProvider:
        """The configured provider; the default local one is kept between builds of this
        process (a long-running writer loads the model once, not once per update)."""
        if (
            self.provider_factory is not make_provider
            or (config.get("embedding_provider") or "local") != "local"
        ):
            return self.provider_factory(config)
        key = json.dumps([config.get(k) for k in LOCAL_PROVIDER_KEYS], default=str)
        with self._lock:
            if self._kept is None or self._kept[0] != key:
                self._kept = (key, self.provider_factory(config))
            return self._kept[1]

    def _incremental(
        self, ctx: BuildContext, provider: EmbeddingProvider, state: _State | None
    ) -> tuple[_State, set[str], dict[str, Any], _PreviousVectors] | None:
        """What this process wrote last, the changed paths, their planned chunks and the
        previous segments (memory-mapped), from `ctx.changes`; None when a full plan is due."""
        changes = ctx.changes
        if (
            state is None
            or changes is None
            or getattr(changes, "reason", "")
            or ctx.previous_dir is None
            or provider.remote
            or provider.identity.centred
            or state.key != provider.identity.cache_key
            or not callable(getattr(ctx.chunks, "of_paths", None))
        ):
            return None
        d = Path(ctx.previous_dir) / self.name
        if _sig(d / "meta.json") != state.sig:
            return None
        try:
            sources = _open_sources(d, state.segments, provider.identity, state.rescore)
        except (OSError, ValueError) as exc:
            log.info("semantic: previous generation not reused: %s", exc)
            return None
        touched = set(changes.touched_paths())
        changed = set(changes.deleted) | {old for old, _new in changes.renamed} | touched
        planned = self.plan(ctx, provider, ctx.chunks.of_paths(sorted(touched)), _central(ctx))
        return state, changed, planned, _PreviousVectors({}, sources)

    def build(self, ctx: BuildContext) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            provider = self._provider(ctx.config)
        except ProviderError as exc:
            raise ModalityUnavailable(str(exc)) from None
        identity = provider.identity
        out = ctx.out_dir / self.name
        out.mkdir(parents=True, exist_ok=True)
        cap = ctx.config.get("semantic_max_chunks")
        budget = ctx.config.get("semantic_time_budget_s")
        timings: dict[str, float] = {}
        mark = _Clock(started, timings)
        slot = str(ctx.root)
        with self._lock:  # consumed (updated in place): put back when this build completes
            state = self._states.pop(slot, None)
        update = self._incremental(ctx, provider, state)
        row_of: Callable[[str], tuple[str, int]]
        if update is not None:
            prev, changed, planned, previous = update
            mode = "incremental"
            by_path = prev.by_path  # consumed: updated in place
            candidates, old_rows, where = prev.candidates, prev.path_rows, prev.where
            for path in changed:
                for e in by_path.pop(path, ()):
                    candidates.drop(e)
            have = _Have(where)
            row_of = prev.row_of
        else:
            mode, changed = "full", set()
            planned = self.plan(ctx, provider, central=_central(ctx))
            previous = _PreviousVectors.load(ctx.previous_dir, identity)
            by_path, old_rows, where = {}, {}, {}
            candidates = _Candidates([], [])
            have = _Have(previous.rows)
            row_of = previous.rows.__getitem__
        excluded = planned["excluded"]
        texts = {p.id: p for p in planned["eligible"]}
        fresh_entries: list[_Entry] = planned["entries"]
        for e in fresh_entries:
            by_path.setdefault(e[PATH], []).append(e)
            changed.add(e[PATH])
        paths = sorted(by_path)
        mark("plan")

        # before opening it (opening may touch its files)
        cache_changed = update is not None and (
            _cache_sig(ctx.cache_dir / "embeddings") != prev.cache_sig
        )
        with self._cache(ctx.cache_dir / "embeddings", identity, keep=not provider.remote) as cache:
            # Vectors of the generation being replaced first (no cache read), then the cache.
            # An update asks the cache only for the changed files' hashes: the others were
            # asked by the build that wrote the previous generation (a hash it did not find
            # is embedded when its turn comes).
            wanted = {e[HASH] for e in fresh_entries} | {e[HEAD_HASH] for e in fresh_entries}
            reused = {h for h in wanted if h in have}
            ask = wanted - reused
            if cache_changed:
                # someone else wrote to the cache (e.g. distributed embedding workers): ask
                # for every vector-less chunk's hashes, as a full plan does
                ask |= {h for h in candidates.by_hash if h not in have}
            vectors: dict[str, tuple[np.ndarray, np.ndarray | None]] = cache.get_many(sorted(ask))
            asked = len(ask)
            have.got |= set(vectors)
            affected = candidates.settle(set(vectors), have) | changed
            candidates.add(fresh_entries, have)
            from_cache = sum(1 for e in fresh_entries if e[HASH] in have or e[HEAD_HASH] in have)
            from_cache += sum(len(r.ids) for p, r in old_rows.items() if p not in changed)
            mark("cache")
            phases = _phases(ctx.config, len(candidates.bodies))
            touched = _touched(ctx.changes)
            urgent = _candidates([e for p in sorted(touched) for e in by_path.get(p, ())], have)  # type: ignore[arg-type]
            # without the backlog (`maguyva.build.follow`: a build of its own embeds it right after)
            backlog = ctx.config.get(follow.BACKLOG) is not False
            heads, bodies = (candidates.heads, candidates.bodies) if backlog else ([], [])
            queue = _queue(heads, bodies, have, phases,  # type: ignore[arg-type]
                           None if cap is None else max(0, int(cap)),
                           (_sort(urgent[0]), _sort(urgent[1])))  # fmt: skip
            mark("queue")
            error, embedded_new, tokens = None, 0, 0
            embed_started = time.perf_counter()
            # smaller groups check the budget more often (`maguyva.build.follow`'s first generation)
            group_size = max(1, int(ctx.config.get(follow.EMBED_GROUP_KEY) or EMBED_GROUP))
            for start in range(0, len(queue), group_size):
                if budget is not None and time.perf_counter() - embed_started > float(budget):
                    break
                group = [(item[0], _text_of(ctx, texts, item, identity))
                         for item in queue[start : start + group_size]]  # fmt: skip
                try:
                    result = provider.check_result(
                        provider.embed([t for _, t in group], "document"), len(group)
                    )
                except ProviderError as exc:
                    error = str(exc)
                    log.warning("semantic: embedding stopped: %s", exc)
                    break
                hashes = [h for h, _ in group]
                cache.put_many(hashes, result)
                for i, h in enumerate(hashes):
                    floats = None if result.floats is None else result.floats[i]
                    vectors[h] = (result.codes[i], floats)
                    have.got.add(h)
                affected |= candidates.settle(set(hashes), have)
                embedded_new += len(group)
                tokens += result.tokens
                ctx.progress(embed_phase(phases), embedded_new, len(queue))
            embed_seconds = time.perf_counter() - embed_started
            # a backlog left out that a build of its own would embed (`maguyva.build.follow`)
            backlog_left = (
                not backlog and error is None
                and bool(_queue(candidates.heads, candidates.bodies, have, phases, 1))  # type: ignore[arg-type]
            )  # fmt: skip
            left = _left(candidates, phases)
            mark("embed")

        # A file's rows change when it changed or one of its chunks got a vector now: those
        # files' rows are written (a delta segment), the others stay where they are.
        path_rows: dict[str, _PathRows]
        if update is not None:  # only the affected files are looked at (not every file)
            path_rows = dict(old_rows)
            for path in affected:
                if path in by_path:
                    path_rows[path] = _path_rows(by_path[path], have)
                else:
                    path_rows.pop(path, None)
            fresh_paths = sorted(p for p in affected if p in by_path)
        else:
            path_rows = {path: _path_rows(by_path[path], have) for path in paths}
            fresh_paths = paths
        n = sum(len(pr.ids) for pr in path_rows.values())
        if n == 0 and error is not None:
            raise ModalityUnavailable(f"no chunk could be embedded: {error}")
        segments, layout, next_delta, moving = self._layout(
            prev if update is not None and not identity.centred else None,
            old_rows, path_rows, by_path, affected, fresh_paths,
        )  # fmt: skip
        written = sorted({*fresh_paths, *moving}) if layout == "delta" else paths
        if layout != "delta" or written:
            name = BASE if layout != "delta" else f"delta-{next_delta:06d}"
            next_delta += layout == "delta"
            runs: list[_Run] = []
            fresh: list[tuple[int, str]] = []
            placed: list[tuple[str, _PathRows]] = []
            rows = 0
            for path in written:
                pr = path_rows[path]
                if pr.seg:  # rows unchanged, moved (a fold or a compaction)
                    _run(runs, rows, pr.seg, pr.first, len(pr.ids))
                else:
                    for i, h in enumerate(pr.hashes):
                        if h in vectors:
                            fresh.append((rows + i, h))
                        else:
                            _run(runs, rows + i, *row_of(h), 1)
                placed.append((path, _PathRows(name, rows, pr.ids, pr.hashes, pr.partial,
                                               pr.pending, pr.info)))  # fmt: skip
                rows += len(pr.ids)
            codes, floats = _assemble(rows, runs, fresh, identity, vectors, previous.sources,
                                      np.float32 if identity.centred else np.float16)  # fmt: skip
            mark("assemble")
            if identity.centred and floats is not None and rows:
                centre = floats.mean(axis=0).astype(np.float32)
                codes = binarize(floats, centre)
                np.save(out / "centre.npy", centre)
            entries = _write_segment(out, name, codes, floats, placed)
            path_rows.update(placed)
            segments.append({"name": name, "rows": rows, "deleted": [], "entries": entries,
                             "gone": [], "floats": floats is not None})  # fmt: skip
        else:
            mark("assemble")
        if layout == "delta":
            prev_dir = Path(ctx.previous_dir or ".") / self.name
            for seg in segments[:-1] if written else segments:
                for file in SEGMENT_FILES:
                    src = prev_dir / seg_file(seg["name"], file)
                    if src.exists():
                        _link(src, out / seg_file(seg["name"], file))
        rescore = n > 0 and all(seg["floats"] for seg in segments if seg["rows"])
        n_pending = sum(len(pr.pending) for pr in path_rows.values())
        n_partial = sum(len(pr.partial) for pr in path_rows.values())
        mark("write")
        if mode == "incremental":
            reused_rows = len(reused) + sum(len(r.ids) for p, r in old_rows.items()
                                            if p not in changed)  # fmt: skip
        else:
            reused_rows = len(reused)
        report = {
            "provider": identity.to_dict(),
            "format": FORMAT_VERSION,
            "mode": mode,
            "layout": layout,
            "segments": len(segments),
            "delta_rows": sum(s["rows"] - len(s["deleted"]) for s in segments[1:]),
            "tombstones": sum(len(s["deleted"]) for s in segments),
            "compacted": bool(moving),
            "phases": phases,
            "chunks": len(ctx.chunks),
            "embedded": n,
            "from_cache": min(from_cache, n),
            "reused_rows": reused_rows,
            "cache_asked": asked,
            "new": embedded_new,
            "pending": n_pending,
            "partial": n_partial,
            "backlog_left": backlog_left,
            "left": left,
            "excluded": excluded,
            "tokens": tokens,
            "embed_seconds": round(embed_seconds, 3),
            "chunks_per_s": round(embedded_new / embed_seconds, 2) if embedded_new else None,
            "error": error,
            "seconds": round(time.perf_counter() - started, 3),
            "timings_ms": {k: round(v * 1000, 1) for k, v in timings.items()},
        }
        meta = dict(report, rescore=rescore, segments=segments, next=next_delta)
        if n_pending + n_partial <= META_LIST_MAX:
            ordered = [path_rows[p] for p in paths]
            meta.update(pending_ids=list(chain.from_iterable(pr.pending for pr in ordered)),
                        partial_ids=list(chain.from_iterable(pr.partial for pr in ordered)))  # fmt: skip
        (out / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
        sig = _sig(out / "meta.json")
        if sig is not None and not provider.remote and not identity.centred:
            # which paths hold each hash: updated for the files whose rows changed
            if mode == "full":
                where = {}
                affected = set(paths)
            for path in affected:
                old = old_rows.get(path)
                for h in old.hashes if old is not None else ():
                    holders = tuple(x for x in where.get(h, ()) if x != path)
                    if holders:
                        where[h] = holders
                    else:
                        where.pop(h, None)
                new = path_rows.get(path)
                for h in new.hashes if new is not None else ():
                    where[h] = (*where.get(h, ()), path)
            state = _State(identity.cache_key, sig, by_path, path_rows, where, segments,
                           rescore, candidates)  # fmt: skip
            state.next = next_delta
            state.cache_sig = _cache_sig(ctx.cache_dir / "embeddings")
            with self._lock:
                self._states[slot] = state
                while len(self._states) > KEEP_STATES:
                    self._states.popitem(last=False)
        return report

    @staticmethod
    def _layout(
        prev: _State | None,
        old_rows: dict[str, _PathRows],
        path_rows: dict[str, _PathRows],
        by_path: dict[str, list[_Entry]],
        affected: set[str],
        fresh: list[str],
    ) -> tuple[list[dict[str, Any]], str, int, set[str]]:
        """How this build writes: "full" (one base; no previous generation of this writer to
        extend), "fold" (every row into a new base: the deltas and tombstones passed
        `FOLD_RATIO` of the base) or "delta" (the rows of the files that changed, or got a
        vector, in a new delta segment; the others stay where they are). Returns the segments
        kept from the previous generation with their new tombstones (the rows of files that
        changed or left), the layout, the next delta's number and the files whose unchanged
        rows move into the new delta (all the deltas', when there would be more than
        `MAX_DELTAS`: they are compacted into one). `affected`: the files whose rows were
        planned again (changed, left, or got a vector); `fresh`: those still present."""
        if prev is None:
            return [], "full", 1, set()
        segments = [dict(s, deleted=set(s["deleted"]), gone=set(s["gone"])) for s in prev.segments]
        by_name = {s["name"]: s for s in segments}

        def bury(path: str, old: _PathRows) -> None:
            if old.ids or old.pending:  # listed in its segment's path table
                by_name[old.seg]["deleted"].update(range(old.first, old.first + len(old.ids)))
                by_name[old.seg]["gone"].add(path)

        for path in affected:
            old = old_rows.get(path)
            if old is not None and (path not in by_path or path_rows.get(path) is not old):
                bury(path, old)
        live = [s for s in segments[1:] if len(s["gone"]) < s["entries"]]
        new_rows = sum(len(path_rows[p].ids) for p in fresh)
        moving: set[str] = set()
        if len(live) + bool(fresh) > MAX_DELTAS:
            for path, pr in path_rows.items():
                if pr.seg and pr.seg != BASE:
                    moving.add(path)
                    bury(path, pr)
                    new_rows += len(pr.ids)
            live = []
        base = segments[0]
        delta_rows = sum(s["rows"] - len(s["deleted"]) for s in live) + new_rows
        if delta_rows + len(base["deleted"]) > max(FOLD_MIN_ROWS, FOLD_RATIO * base["rows"]):
            return [], "fold", prev.next, set()
        kept = [base, *live]
        kept = [dict(s, deleted=sorted(s["deleted"]), gone=sorted(s["gone"])) for s in kept]
        return kept, "delta", prev.next, moving

    # -- open ----------------------------------------------------------------------------------

    def open(
        self,
        gen_dir: Path,
        manifest: dict[str, Any],
        provider: EmbeddingProvider | None = None,
    ) -> SemanticSearcher:
        """Load read-only. The configured provider must match the one that built the index."""
        d = Path(gen_dir) / self.name
        try:
            meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ModalityUnavailable("semantic index not built in this generation") from None
        except ValueError as exc:
            raise CorruptIndexError(f"{d / 'meta.json'}: {exc}") from None
        check_format(d, meta)
        built_with = ProviderIdentity.from_dict(meta["provider"])
        if provider is None:
            root = manifest.get("root")
            config = load_config(Path(root)) if root else {}
            try:
                # the default local model is kept by the process (loaded once, not once per
                # generation a long-running reader reopens)
                provider = self._provider(config)
            except ProviderError as exc:
                raise ModalityUnavailable(str(exc)) from None
        built_with.check_same(provider.identity, "search this index")
        segments = []
        try:
            rescore = bool(meta.get("rescore"))
            for s in segments_of(meta):
                name, rows = s["name"], int(s["rows"])
                codes = np.load(d / seg_file(name, "codes.npy"), mmap_mode="r")
                ids = _read_json(d / seg_file(name, "ids.json"))
                floats = None
                if rescore and rows:
                    floats = np.load(d / seg_file(name, "floats.npy"), mmap_mode="r")
                if (
                    codes.dtype != np.uint8
                    or codes.ndim != 2
                    or codes.shape != (len(ids), built_with.width)
                    or len(ids) != rows
                ):
                    raise CorruptIndexError(
                        f"{d}: segment {name!r}: codes shape {codes.shape} does not match "
                        f"{len(ids)} ids and {rows} rows"
                    )
                if floats is not None and floats.shape != (rows, built_with.dim):
                    raise CorruptIndexError(f"{d}: segment {name!r}: floats shape {floats.shape}")
                table = None
                if meta["format"] >= 2:
                    table = _read_json(d / seg_file(name, "paths.json"))
                info = None
                if table is not None and (d / seg_file(name, "chunks.json")).exists():
                    info = _read_json(d / seg_file(name, "chunks.json"))
                    if len(info) != rows:
                        raise CorruptIndexError(f"{d}: segment {name!r}: {len(info)} chunk "
                                                f"entries for {rows} rows")  # fmt: skip
                segments.append(_Segment(name, codes, floats, ids, s["deleted"], table, info))
            centre = np.load(d / "centre.npy") if (d / "centre.npy").exists() else None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CorruptIndexError(f"{d}: {exc}") from None
        return SemanticSearcher(Path(gen_dir), provider, segments, centre, meta)

    def verify(self, directory: Path) -> list[str]:
        """Problems of a generation's semantic part (fsck): the segment list, every segment's
        files and shapes, the tombstones (in range, sorted, unique), the path tables (each
        live file's rows in one segment, the rows of every segment covered once) and the live
        row count against the build report."""
        d = Path(directory)
        try:
            meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
            check_format(d, meta)
            identity = ProviderIdentity.from_dict(meta["provider"])
            segments = segments_of(meta)
        except (OSError, ValueError, KeyError, TypeError, MaguyvaError) as exc:
            return [f"{d / 'meta.json'}: {exc}"]
        problems: list[str] = []
        live_paths: dict[str, str] = {}
        live = pending = partial = 0
        rescore = bool(meta.get("rescore"))
        names = [s.get("name") for s in segments]
        if len(set(names)) != len(names):
            problems.append(f"{d}: segment names repeat: {names}")
        for s in segments:
            name = s.get("name")
            try:
                rows, deleted = int(s["rows"]), list(s["deleted"])
                codes = np.load(d / seg_file(name, "codes.npy"), mmap_mode="r")
                ids = json.loads((d / seg_file(name, "ids.json")).read_bytes())
                hashes = json.loads((d / seg_file(name, "hashes.json")).read_bytes())
                floats = None
                if rescore and rows:
                    floats = np.load(d / seg_file(name, "floats.npy"), mmap_mode="r")
                table = waiting = None
                if meta["format"] >= 2:
                    table = json.loads((d / seg_file(name, "paths.json")).read_bytes())
                    waiting = json.loads((d / seg_file(name, "pending.json")).read_bytes())
                    info = json.loads((d / seg_file(name, "chunks.json")).read_bytes())
                    if len(info) != rows:
                        problems.append(f"{d}: segment {name!r}: {len(info)} chunk entries, "
                                        f"{rows} rows")  # fmt: skip
            except (OSError, ValueError, KeyError, TypeError) as exc:
                problems.append(f"{d}: segment {name!r}: {exc}")
                continue
            if codes.dtype != np.uint8 or codes.shape != (rows, identity.width):
                problems.append(f"{d}: segment {name!r}: codes {codes.dtype} {codes.shape}, "
                                f"expected ({rows}, {identity.width}) uint8")  # fmt: skip
            if floats is not None and floats.shape != (rows, identity.dim):
                problems.append(f"{d}: segment {name!r}: floats {floats.shape}, expected "
                                f"({rows}, {identity.dim})")  # fmt: skip
            if len(ids) != rows or len(hashes) != rows:
                problems.append(f"{d}: segment {name!r}: {len(ids)} ids, {len(hashes)} hashes, "
                                f"{rows} rows")  # fmt: skip
            if deleted != sorted(set(deleted)) or any(not 0 <= r < rows for r in deleted):
                problems.append(f"{d}: segment {name!r}: tombstones unsorted, repeated or out "
                                "of range")  # fmt: skip
            gone = set(deleted)
            live += rows - len(gone)
            if table is None:
                continue
            dead = set(s.get("gone", ()))
            at, tombstoned = 0, set()
            for entry in table:
                path, first, count = entry[0], int(entry[1]), int(entry[2])
                if first != at or count < 0:
                    problems.append(f"{d}: segment {name!r}: path table gap or overlap at "
                                    f"{path!r}")  # fmt: skip
                    break
                at = first + count
                span = set(range(first, first + count))
                if path in dead:
                    tombstoned |= span
                    continue
                if path in live_paths:
                    problems.append(f"{d}: {path!r} live in segments {live_paths[path]!r} and "
                                    f"{name!r}")  # fmt: skip
                live_paths[path] = name
            listed = {e[0] for e in table}
            for path, partial_ids, pending_ids in waiting or ():
                if path not in listed:
                    problems.append(f"{d}: segment {name!r}: {path!r} pending but not listed")
                elif path not in dead:
                    pending += len(pending_ids)
                    partial += len(partial_ids)
            if at != rows:
                problems.append(f"{d}: segment {name!r}: path table covers {at} of {rows} rows")
            elif tombstoned != gone:
                problems.append(f"{d}: segment {name!r}: tombstoned rows are not those of its "
                                "removed files")  # fmt: skip
            if len(table) != int(s.get("entries", len(table))) or not dead <= {e[0] for e in table}:
                problems.append(f"{d}: segment {name!r}: path table does not match meta.json")
        if meta["format"] >= 2 and (pending, partial) != (meta.get("pending"), meta.get("partial")):
            problems.append(f"{d}: {pending} pending and {partial} partial chunks in the path "
                            f"tables, the build report says {meta.get('pending')} and "
                            f"{meta.get('partial')}")  # fmt: skip
        if live != int(meta.get("embedded", live)):
            problems.append(f"{d}: {live} live rows, the build report says {meta['embedded']}")
        return problems


@dataclass(slots=True)
class _Segment:
    """One segment as a reader holds it: codes and floats memory-mapped, chunk ids, the
    tombstoned rows, and (with several segments) the path table ordering rows across them."""

    name: str
    codes: np.ndarray
    floats: np.ndarray | None
    ids: list[str]
    deleted: list[int]
    table: list[list[Any]] | None
    info: list[list[Any]] | None = None  # per row: start line, end line, kind, name
    gone: frozenset[int] = frozenset()
    firsts: list[int] | None = None

    def __post_init__(self) -> None:
        self.gone = frozenset(self.deleted)
        if self.table is not None:
            self.table = [t for t in self.table if t[2]]  # files with rows
            self.firsts = [int(t[1]) for t in self.table]

    def order(self, row: int) -> tuple[str, int]:
        """The row's place in the logical order (a from-scratch build's row order): its file
        and its position among that file's rows."""
        assert self.table is not None and self.firsts is not None
        t = self.table[bisect.bisect_right(self.firsts, row) - 1]
        return t[0], row - int(t[1])

    def topk(self, qcode: np.ndarray, depth: int) -> list[tuple[int, int]]:
        """(distance, row) of the `depth` nearest live rows, by distance then row."""
        n = len(self.ids)
        if n == 0 or depth <= 0:
            return []
        rows, dists = _core.hamming_topk(qcode, self.codes, min(n, depth + len(self.gone)))
        gone = self.gone
        found = [(d, r) for r, d in zip(rows.tolist(), dists.tolist(), strict=True)
                 if r not in gone]  # fmt: skip
        return found[:depth]


class SemanticSearcher:
    """Answers `search(query, k)` over one generation's segments (a base and deltas, each
    searched exactly, tombstoned rows left out, merged in a from-scratch build's row order).
    Thread-safe."""

    modality: ClassVar[str] = "semantic"
    chunk_keys: ClassVar[bool] = True
    """Every hit's key is a chunk id of this generation (its rows are built from its chunks):
    the engine need not look each one up in the chunk store (~0.15 s after a reopen on a
    158k-chunk tree: the 50 hits' files spread over a dozen chunk segments)."""

    def __init__(
        self,
        gen_dir: Path,
        provider: EmbeddingProvider,
        segments: list[_Segment],
        centre: np.ndarray | None,
        meta: dict[str, Any],
    ) -> None:
        self.gen_dir = gen_dir
        self.provider = provider
        self.segments = segments
        self.live = sum(len(s.ids) - len(s.gone) for s in segments)
        self.centre = centre
        self.meta = meta
        self._chunks: Any = None
        self._lock = threading.Lock()

    @property
    def pending(self) -> int:
        """Chunks with no vector yet (not searchable by meaning until a later build)."""
        return int(self.meta.get("pending", 0))

    @property
    def partial(self) -> int:
        """Chunks searchable by their head only (header, signature, docstring); body pending."""
        return int(self.meta.get("partial", 0))

    def coverage(self) -> dict[str, Any]:
        """How much of the repository this generation's vectors cover (`coverage.coverage`)."""
        return coverage(self.meta)

    def coverage_note(self) -> str | None:
        """A response note when some chunk is not searchable by its full text (None: all are)."""
        cov = self.coverage()
        return describe(cov) if cov["embedded"] < cov["chunks"] else None

    def chunks(self) -> Any:
        """The generation's chunks: decoded per file as hits name them (format 2 gives each
        row's file), all at once for format 1 (ids only)."""
        with self._lock:
            if self._chunks is None:
                if all(seg.table is not None for seg in self.segments):
                    self._chunks = ChunkStore.lazy(self.gen_dir)
                else:
                    self._chunks = ChunkStore.open(self.gen_dir)
            return self._chunks

    def warm(self) -> None:
        """Load the query model now (`Engine.warm`: a server's idle time), so that the first
        question by meaning does not wait for it (~0.3 s). A remote provider is not called:
        that would cost a request."""
        if not self.provider.remote:
            self.provider.embed(["warm up"], "query")

    def candidates(self, qcode: np.ndarray, depth: int) -> list[tuple[int, Any, int, int]]:
        """The `depth` nearest live rows over every segment: (distance, order key, segment,
        row), sorted as a from-scratch build's single segment would be (distance, then row
        order: file, then position in the file)."""
        if len(self.segments) == 1:  # row order is the logical order
            return [(d, r, 0, r) for d, r in self.segments[0].topk(qcode, depth)]
        merged = []
        for i, seg in enumerate(self.segments):
            merged += [(d, seg.order(r), i, r) for d, r in seg.topk(qcode, depth)]
        merged.sort(key=lambda c: (c[0], c[1]))
        return merged[:depth]

    def search(self, query: RetrieverQuery, k: int) -> list[Hit]:
        text = (query.snippet or query.text or "").strip()
        if not text or k <= 0 or not self.live:
            return []
        result = query_embedding(self.provider, text)
        qfloat = None if result.floats is None else result.floats[0]
        if self.centre is not None and qfloat is not None:
            qcode = binarize(qfloat, self.centre)
        else:
            qcode = np.ascontiguousarray(result.codes[0])
        rescore = qfloat is not None and all(
            s.floats is not None for s in self.segments if len(s.ids)
        )
        depth = max(k, RESCORE_DEPTH) if rescore else k
        found = self.candidates(qcode, depth)
        order: list[tuple[_Segment, int, int, float | None]]
        if rescore and found:
            assert qfloat is not None
            # one matrix of the candidates' floats in candidate order, as a single segment
            # gives it (the same product, bit for bit, whatever the segments)
            if len(self.segments) == 1:
                block = self.segments[0].floats[[c[3] for c in found]]  # type: ignore[index]
            else:
                block = np.stack([self.segments[c[2]].floats[c[3]] for c in found])  # type: ignore[index]
            values = np.asarray(block, dtype=np.float32) @ qfloat.astype(np.float32)
            sims = sorted(zip(values.tolist(), found, strict=True),
                          key=lambda x: (-x[0], x[1][0], x[1][1]))  # fmt: skip
            order = [(self.segments[c[2]], c[3], c[0], s) for s, c in sims[:k]]
        else:
            order = [(self.segments[c[2]], c[3], c[0], None) for c in found[:k]]
        hits: list[Hit] = []
        for seg, row, dist, sim in order:
            if seg.info is not None:  # what a hit shows is stored with the row
                start, end, kind, name = seg.info[row]
                hits.append(Hit(path=seg.order(row)[0], start_line=start, end_line=end,
                                key=seg.ids[row], symbol=name, kind=kind,
                                score=round(sim, 6) if sim is not None else float(dist),
                                extra={"hamming": dist, "similarity": sim}))  # fmt: skip
                continue
            path = seg.order(row)[0] if seg.table is not None else None
            chunk = self.chunks().get(seg.ids[row], path)
            if chunk is None:
                continue
            hits.append(
                Hit(
                    path=chunk.path,
                    start_line=chunk.start_line,
                    end_line=chunk.end_line,
                    key=chunk.id,
                    score=round(sim, 6) if sim is not None else float(dist),
                    symbol=chunk.qualified_name or chunk.name,
                    kind=chunk.kind,
                    extra={"hamming": dist, "similarity": sim},
                )
            )
        return hits


def pending_of(sem_dir: Path) -> tuple[list[str], list[str]]:
    """The pending and the partial chunk ids of a generation's semantic part, in row order
    (from the path tables of format 2, from meta.json in format 1)."""
    d = Path(sem_dir)
    meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
    check_format(d, meta)
    if meta["format"] < 2:
        return list(meta.get("pending_ids", [])), list(meta.get("partial_ids", []))
    entries = []
    for s in segments_of(meta):
        dead = set(s["gone"])
        waiting = json.loads((d / seg_file(s["name"], "pending.json")).read_bytes())
        entries += [t for t in waiting if t[0] not in dead]
    entries.sort(key=lambda t: t[0])
    return (list(chain.from_iterable(t[2] for t in entries)),
            list(chain.from_iterable(t[1] for t in entries)))  # fmt: skip


def read_rows(sem_dir: Path) -> dict[str, Any]:
    """A generation's live rows in logical order (a from-scratch build's row order: by file,
    then position), whatever its segments: ids, hashes, codes, floats, [start, end, kind,
    name] (for tests and tools)."""
    d = Path(sem_dir)
    meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
    check_format(d, meta)
    keyed = []
    for s in segments_of(meta):
        name, gone, dead = s["name"], set(s["deleted"]), set(s.get("gone", ()))
        ids = json.loads((d / seg_file(name, "ids.json")).read_bytes())
        hashes = json.loads((d / seg_file(name, "hashes.json")).read_bytes())
        codes = np.load(d / seg_file(name, "codes.npy"))
        floats = (
            np.load(d / seg_file(name, "floats.npy")) if meta.get("rescore") and len(ids) else None
        )
        info: list[Any] = [None] * len(ids)
        if meta["format"] >= 2:
            table = json.loads((d / seg_file(name, "paths.json")).read_bytes())
            spans = [(t[0], t[1], t[2]) for t in table if t[0] not in dead]
            info = json.loads((d / seg_file(name, "chunks.json")).read_bytes())
        else:
            spans = [("", 0, len(ids))]
        for path, first, count in spans:
            for r in range(first, first + count):
                if r not in gone:
                    f = None if floats is None else floats[r].tobytes()
                    keyed.append(((path, r - first), ids[r], hashes[r], codes[r].tobytes(), f,
                                  info[r]))  # fmt: skip
    keyed.sort(key=lambda x: x[0])
    return {
        "paths": [x[0][0] for x in keyed],
        "info": [x[5] for x in keyed],
        "ids": [x[1] for x in keyed],
        "hashes": [x[2] for x in keyed],
        "codes": b"".join(x[3] for x in keyed),
        "floats": b"".join(x[4] for x in keyed) if meta.get("rescore") else None,
    }


MODALITY = SemanticModality()

__all__ = [
    "MODALITY",
    "RESCORE_DEPTH",
    "MaguyvaError",
    "ModelMismatchError",
    "SemanticModality",
    "SemanticSearcher",
    "embed_text",
]
