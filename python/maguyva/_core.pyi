"""Type stubs of Maguyva's native module (`maguyva._core`). Users import from `maguyva`;
this module is private. Every function here releases the GIL while it computes."""

from array import array as _array
from collections.abc import Callable
from typing import Self, final

from typing_extensions import Buffer as _Buffer

__all__ = [
    "DEFAULT_MAX_TRIGRAMS",
    "DEMOTION_FACTOR",
    "FusedIds",
    "HammingIndex",
    "NumberedEntries",
    "StaticTokenizer",
    "TextIndex",
    "__version__",
    "build_text_index",
    "centrality_boost",
    "conf_ranks",
    "crc32_buffer",
    "crc32_file",
    "csr_by_rank",
    "fuse",
    "fuse_ids",
    "hamming_distances",
    "hamming_kernels",
    "hamming_topk",
    "is_demoted_path",
    "lstat_states",
    "name_hash",
    "name_lookup",
    "non_ascii_strings",
    "number_entries",
    "plain_paths",
    "print_lines",
    "print_results",
    "static_pool",
    "walk_files",
    "zstd_compress",
    "zstd_decompress",
]

__version__: str

# -- fusion -------------------------------------------------------------------------------------

DEMOTION_FACTOR: float

def fuse(
    lists: list[tuple[float, list[tuple[str, str]]]],
    centrality: dict[str, float],
    k: float,
    limit: int,
    *,
    by_file: bool = False,
) -> list[tuple[str, str, float, float, bool, list[tuple[int, int, float]], list[str]]]:
    """Weighted Reciprocal Rank Fusion.

    `lists` holds one `(weight, [(key, path), ...])` per modality, best first. An item at 0-based
    `rank` contributes `weight / (k + rank + 1)`; contributions are summed per key, multiplied
    by `centrality_boost(centrality[key] or centrality[path] or 0)` and by `DEMOTION_FACTOR`
    when `is_demoted_path(path)`. Only the best key per path is kept. Returns at most `limit`
    tuples `(key, path, score, boost, demoted, [(list, rank, contribution)], folded_keys)`,
    best first, ties broken by path then key. Raises ValueError if `k` is negative or not finite.

    With `by_file`, a file's score counts each list once, at the rank of its best-ranked chunk
    of that file (agreement on different chunks of one file counts); the file is shown by its
    best chunk with that chunk's boost, and the contributions are the file's ranks.
    """

def fuse_ids(
    items: _Buffer,
    paths: _Buffer,
    lengths: _Buffer,
    weights: _Buffer,
    keys: list[str],
    path_names: list[str],
    k: float,
    limit: int,
    *,
    key_centrality: _Buffer | None = None,
    path_centrality: _Buffer | None = None,
    demote: _Buffer | None = None,
) -> FusedIds:
    """Weighted Reciprocal Rank Fusion over numbered items (see `maguyva.query.fusion`).

    The ranked lists arrive concatenated as int64 buffers (numpy or `array.array("q")`):
    entry `j` is item `items[j]` (a number into `keys`) of file `paths[j]` (a number into
    `path_names`); list `i` holds `lengths[i]` consecutive entries, best first, weighted by
    `weights[i]` (float64). Same formula, ties, demotion and best chunk per file as `fuse`;
    centrality is `key_centrality[item]`, else (NaN) `path_centrality[file]`, else 0; files
    with a non-zero `demote[file]` (uint8) are demoted too. Raises ValueError for a number out
    of range, lengths that do not add up, a table of the wrong length or a bad `k`. Releases
    the GIL while it fuses."""

@final
class FusedIds:
    """`fuse_ids`' results as columns: result `i` is item `items[i]` of file `paths[i]`; its
    contributions, folded items and member entries (`(list, rank)` of every entry in the
    file) are the ranges `*_offsets[i] .. *_offsets[i + 1]` of the flat columns."""

    @property
    def items(self) -> list[int]: ...
    @property
    def paths(self) -> list[int]: ...
    @property
    def scores(self) -> list[float]: ...
    @property
    def boosts(self) -> list[float]: ...
    @property
    def demoted(self) -> list[bool]: ...
    @property
    def contribution_offsets(self) -> list[int]: ...
    @property
    def contribution_lists(self) -> list[int]: ...
    @property
    def contribution_ranks(self) -> list[int]: ...
    @property
    def contributions(self) -> list[float]: ...
    @property
    def folded_offsets(self) -> list[int]: ...
    @property
    def folded_items(self) -> list[int]: ...
    @property
    def member_offsets(self) -> list[int]: ...
    @property
    def member_lists(self) -> list[int]: ...
    @property
    def member_ranks(self) -> list[int]: ...

def number_entries(keys: list[str], paths: list[str]) -> NumberedEntries:
    """Number parallel lists of chunk keys and paths by first appearance (in Rust)."""

@final
class NumberedEntries:
    """Entry `j` is `keys[items[j]]` of `paths[files[j]]`; `items`, `files` are
    `array.array("q")`, `keys`, `paths` each distinct string once, by first appearance."""

    @property
    def items(self) -> _array[int]: ...
    @property
    def files(self) -> _array[int]: ...
    @property
    def keys(self) -> list[str]: ...
    @property
    def paths(self) -> list[str]: ...

def centrality_boost(c: float) -> float:
    """`min(1 + 0.3 * ln(1 + c), 1.5)`; negative or NaN centrality counts as 0."""

def is_demoted_path(path: str) -> bool:
    """True for vendored, built, archived, minified or generated paths."""

# -- walker and text index (text modality) ------------------------------------------------------

DEFAULT_MAX_TRIGRAMS: int

def walk_files(
    root: str,
    *,
    max_file_bytes: int,
    allow_large: list[str],
    follow_symlinks: bool,
    max_trigrams: int,
    threads: int = 2,
) -> tuple[list[tuple[str, int, int]], list[tuple[str, str]]]:
    """Walk `root` with ripgrep's `ignore` crate: `([(path, size, mtime_ns)], [(path, reason)])`,
    both sorted by path. Reasons: too_large, binary, too_many_trigrams, unreadable,
    not_regular, symlink_loop, outside_root. Raises ValueError for a bad `allow_large` glob, OSError when
    `root` cannot be read."""

def build_text_index(
    root: str,
    out_dir: str,
    files: list[tuple[str, list[tuple[int, int, str]]]],
    *,
    zstd_level: int = 0,
    index_file: str | None = None,
    content_file: str | None = None,
) -> dict[str, object]:
    """Index `files` (`(path, [(start_line, end_line, chunk_id)])`, read from `root`, sorted
    by path) into `out_dir` as one segment: `index_file` and `content_file` (default
    `trigram.idx` and `content.bin`). Content is stored as LZ4 blocks with `zstd_level=0`
    (the default), as zstd frames of that level otherwise. Returns counts and sizes (docs,
    trigrams, chunks, content_bytes, stored_bytes, index_bytes), the segment's `build_id` and
    `skipped_files` `[(path, reason)]`. The segment's BM25 postings are written beside it
    (`trigram.idx` -> `trigram.bm25`; report keys `bm25_bytes`, `bm25_words`, `bm25_seconds`)."""

@final
class TextIndex:
    """A loaded text index; immutable and safe to share between threads."""

    def __new__(
        cls,
        dir: str,
        segments: list[tuple[str, str, int, int, list[int]]] | None = None,
        *,
        bm25: bool = True,
    ) -> Self:
        """Open and validate (raises CorruptIndexError on a bad header, size or checksum).
        Without `segments`, the single segment `trigram.idx` + `content.bin`; otherwise the
        listed segments `(index_file, content_file, build_id, n_docs, deleted_local_ids)`,
        base first, whose live documents are searched as one index in path order. Each
        segment's BM25 postings are opened and validated too when present, unless `bm25` is
        False (the chunk store's reader of spans: `bm25` then scans the content)."""
    @property
    def has_bm25_postings(self) -> bool:
        """Whether every segment has BM25 postings (an index built before them has none:
        `bm25` then scans the stored content)."""
    def locate(self, paths: list[str]) -> list[tuple[int, int] | None]:
        """`(segment, local id)` of each live path, None for a path not in the index."""
    def enclosing(self, path: str, lines: list[int]) -> list[tuple[int, int, str] | None]:
        """For each line of `path`, its smallest enclosing chunk `(start_line, end_line, id)`
        (ties: the earlier start, then the smaller id); None when no chunk holds it."""
    def segment_sizes(self) -> list[tuple[int, int]]:
        """Per segment: `(documents, live documents)`."""
    def segment_paths(self, segment: int) -> list[str]:
        """The live paths of one segment, in order."""
    def search(
        self,
        pattern: str,
        *,
        regex: bool = False,
        case: str = "smart",
        whole_word: bool = False,
        path_glob: str | None = None,
        max_lines: int = 1000,
        max_files: int = ...,
        max_lines_per_file: int = ...,
        count_all: bool = True,
    ) -> tuple[list[tuple[str, int, int, list[tuple[int, str, list[tuple[int, int]]]]]], int, bool]:
        """`([(path, n_matches, n_lines, [(line, text, [(start, end)])])], candidates, truncated)`
        in path order; columns are byte offsets in the line. With `count_all=False` a file's
        scan stops once `max_lines_per_file` lines are found with all their matches (its counts
        are then those of the reported lines), and for many candidates and a bounded pattern
        (a literal) each file is decoded only up to there.
        Raises BadQueryError for a bad or oversized regex, ValueError for a bad glob or case."""
    def content_cache_size(self) -> tuple[int, int, int]:
        """The documents that `search` and `literal_top` decoded, kept for the next
        questions: `(documents, bytes, budget in bytes)`; the budget is
        `MAGUYVA_TEXT_CACHE_MB` when set at open (0: off), else 64 MiB, and a document over
        an eighth of it is not kept."""
    def literal_top(
        self,
        pattern: str,
        *,
        definition: str | None,
        word: bytes,
        demoted: bytes,
        k: int,
        regex: bool = False,
        case: str = "smart",
        whole_word: bool = False,
        path_glob: str | None = None,
        max_lines: int = 1000,
        max_files: int = ...,
        max_lines_per_file: int = ...,
    ) -> tuple[
        list[tuple[str, list[int], bool]],
        list[
            tuple[
                int,
                int,
                int,
                str | None,
                str,
                list[int],
                list[list[int]],
                bool,
                bool | None,
                list[str] | None,
            ]
        ],
        int,
    ]:
        """The best `k` chunks holding the pattern (`search` with `count_all=False`), for the
        text modality's literal ranking: each file's lines grouped by smallest enclosing
        chunk, ranked in Rust (definition, not demoted, whole word, density, path length,
        path, start line), and only the best `k` groups returned, plus every group with
        `is_definition` None (a line that is not ASCII, decided by Python's `re` from its
        `texts`; `definition`, in the `regex` crate's dialect, decides the others). Returns
        `([(path, matching_lines, demoted)], [(file_slot, start, end, chunk_id,
        first_line_text, lines, [[line, start, end]], whole_word, is_definition, texts)],
        n_groups)`, the groups in search order (path, then group), `n_groups` counting all
        of them. `word`: 256 flags, the bytes that glue a match into a word; `demoted`: one
        flag per document in `paths()` order. The compiled pattern and definition are kept
        (bounded LRU) for the next question."""

    def literal_ranked(
        self,
        pattern: str,
        *,
        definition: str | None,
        word: bytes,
        demoted: bytes,
        k: int,
        regex: bool = False,
        case: str = "smart",
        whole_word: bool = False,
        path_glob: str | None = None,
        max_lines: int = 1000,
        max_files: int = ...,
        max_lines_per_file: int = ...,
        decide: Callable[[list[str]], bool] | None = None,
    ) -> (
        tuple[
            list[tuple[str, list[int], bool]],
            list[
                tuple[int, int, str | None, int, bool, bool, tuple[str, list[int], list[list[int]]]]
            ],
            list[int],
        ]
        | None
    ):
        """`literal_top`'s best `k` groups already ranked (the order the text modality's
        sort gives them), for a direct answer that shows each file by its first group:
        `([(path, matching_lines, demoted)], [(start, end, chunk_id, n_matches, whole_word,
        is_definition, (first_line_text, lines, [[line, start, end]]))], [file_slot])`: each
        file's first group in ranked order (files numbered in that order), then the file slot
        of every ranked group. A group whose definition flag the `regex` crate cannot decide
        (a line that is not ASCII) is decided by `decide(texts)`, called with the GIL held;
        None when there is such a group and no `decide`."""
    def bm25(
        self, terms: list[str], k: int, *, max_docs: int = 4000, method: str = "auto"
    ) -> list[tuple[str, int, int, str | None, float, list[int], list[int]]]:
        """The best `k` chunks for lower-cased `terms`: `(path, start_line, end_line, chunk_id,
        score, matching_lines, term_indices)`. `method`: "auto" (the postings when present
        and able to answer, else the content scan), "postings" (ValueError when they cannot
        answer), "scan" (the content of at most `max_docs` nominated documents) or
        "scan_all" (every candidate document: what the postings compute)."""
    def stats(self) -> dict[str, int]: ...
    def spans(self, path: str, ranges: list[tuple[int, int]]) -> tuple[int, list[bytes]] | None:
        """`(CRC-32 of the stored bytes of path, [text of lines start..end of each range])`,
        lines numbered as the chunker numbers them (split on `\\n` only, a trailing `\\r`
        dropped), decoded as UTF-8 with replacement, each text as a JSON string
        (`json.dumps(text, ensure_ascii=False)`); None when `path` is not a live document:
        the texts of a file's chunks stored as spans (`store.spans`)."""
    def paths(self) -> list[str]: ...

# -- per-answer path checks (maguyva.repo.paths, maguyva.query.engine) ------------------------

def lstat_states(root: str, paths: list[str]) -> list[tuple[int, int] | None]:
    """`(size, mtime_ns)` of each path joined to `root` (`os.path.join`), a final symbolic
    link not followed (`os.stat(..., follow_symlinks=False)`); None where it cannot be
    stat'ed (gone, unreadable, a NUL byte)."""

def plain_paths(below: str, paths: list[str]) -> list[bool]:
    """Per root-relative path: True when it has no empty, `.` or `..` component and every
    component under `below` (the real root and `/`) exists and is no symbolic link (its real
    path is then `below + path`); False means undecided (resolve it with `realpath`)."""

# -- printing matching lines (maguyva.interfaces.output) ---------------------------------------

def print_lines(
    data: bytes,
    start: int,
    end: int,
    lines: list[int],
    *,
    every: bool,
    cap: int,
    context: int = 0,
    literal: bytes | None = None,
    insensitive: bool = False,
    color: bool = False,
    json_path: str | None = None,
    json_match: str | None = None,
) -> tuple[bytes, int, int, int]:
    """One result's lines as `Renderer.lines_of` picks them from the file's content `data`
    (its recorded `lines`, else those of `start..=end` holding `literal`, else its first),
    printed as `Renderer.text` (UTF-8) or, with `json_path` (the `"path"` value) and
    `json_match` (the `"maguyva"` value of a match line), as `Renderer.json_lines` prints
    them. Returns `(bytes, matched_lines, matches, bytes_of_the_lines)`."""

def print_results(
    root: str,
    results: list[tuple[bytes, str, int, int, list[int]]],
    *,
    every: bool,
    cap: int,
    context: int = 0,
    literal: bytes | None = None,
    insensitive: bool = False,
    color: bool = False,
) -> bytes:
    """Every result of a text answer as `Renderer.text` prints them, in one buffer: each
    `(heading, path, start, end, lines)` is its heading line (UTF-8, no newline), then
    `print_lines` over the file `path` under the real path `root` as it is now, read as
    `read_bytes` reads it (a regular file whose real path is inside `root`; otherwise the
    heading alone). Results apart by an empty line; files read and printed in parallel, with
    the GIL released."""

# -- hamming (semantic modality) ---------------------------------------------------------------
# Codes are C-contiguous uint8 arrays of shape (n, dim/8) (or (dim/8,) for one code), bit order
# of np.packbits / Voyage ubinary. Wrong dtype, shape or width raises ValueError naming the
# expected shape. Memory-mapped arrays (np.load(..., mmap_mode="r")) work without copying.

import os as _os  # noqa: E402

import numpy as _np  # noqa: E402

def crc32_file(path: str | _os.PathLike[str]) -> tuple[int, int]:
    """(size, CRC-32) of a whole file, the CRC equal to `zlib.crc32` (crc32fast, GIL released);
    OSError naming the file when it cannot be read."""

def crc32_buffer(data: _np.ndarray, initial: int = 0) -> int:
    """CRC-32 (equal to `zlib.crc32`) of a contiguous uint8 array, continuing from `initial`
    (GIL released)."""

def zstd_compress(data: bytes, level: int, dictionary: str | None = None) -> bytes:
    """`data` as one zstd frame at `level` (GIL released), with the built-in `dictionary`
    (`"chunks"`, `"extract"`) when named; ValueError on failure or an unknown name."""

def zstd_decompress(data: bytes, size: int) -> bytes:
    """The zstd frame `data` decompressed (GIL released; with the built-in dictionary its
    header names); ValueError unless it is a sound frame of exactly `size` bytes."""

def name_hash(data: bytes) -> int:
    """The graph's 64-bit name lookup hash of one UTF-8 name (part of graph format 3)."""

def non_ascii_strings(blob: _np.ndarray, offsets: _np.ndarray, nodes: _np.ndarray) -> _np.ndarray:
    """Positions i (int64) whose string `nodes[i]` of a packed table is not ASCII."""

def name_lookup(
    blob: _np.ndarray,
    offsets: _np.ndarray,
    nodes: _np.ndarray,
    fix_at: _np.ndarray,
    fix_hash: _np.ndarray,
) -> tuple[_np.ndarray, _np.ndarray, _np.ndarray, _np.ndarray]:
    """The graph's name lookup sections of strings `nodes` of a packed table: (uint64 name
    hashes, int32 nodes, uint64 lowercased-name hashes, int32 nodes), each sorted by (hash,
    node); the lowercased hash of position `fix_at[j]` is `fix_hash[j]` (non-ASCII names)."""

# -- graph writer: adjacency (maguyva.modalities.graph.build) ----------------------------------------------

def conf_ranks(conf: _np.ndarray, values: _np.ndarray) -> _np.ndarray | None:
    """Each float32 confidence's rank (int64) among the sorted distinct float32 `values`,
    highest first (`len(values) - 1 - searchsorted`), or None when one is not among them."""

def csr_by_rank(
    n: int, keys: _np.ndarray, rank: _np.ndarray, levels: int
) -> tuple[_np.ndarray, _np.ndarray]:
    """The adjacency of int32 `keys` (each edge's node, below `n`) as (int64 pointers, int32
    edge numbers), a node's edges by int64 `rank` (below `levels`), ties in edge order (two
    stable counting sorts). ValueError for a node or a rank out of range."""

def hamming_kernels() -> list[str]:
    """Supported distance kernels, fastest first: a subset of avx512, avx2, neon, words, scalar."""

def hamming_distances(
    query: _np.ndarray, codes: _np.ndarray, *, kernel: str | None = None
) -> _np.ndarray:
    """Hamming distance (uint32, shape (n,)) from one code to every row of `codes`."""

def static_pool(
    table: _np.ndarray,
    scales: _np.ndarray,
    weights: _np.ndarray,
    ids: _np.ndarray,
    offsets: _np.ndarray,
    *,
    reference: bool = False,
) -> _np.ndarray:
    """Weighted mean of int8 table rows per text (the static embedding tier's pooling).

    `table` is int8 (vocab, dim), `scales` and `weights` float32 (vocab,), `ids` uint32 token
    ids of every text concatenated, `offsets` int64 (texts + 1,) cutting `ids` into texts.
    Row `r` counts as `weights[r] * scales[r] * table[r]`; the sum is divided by the text's
    total weight (a text with none gets zeros). Returns float32 (texts, dim). `reference`
    runs the f64 scalar oracle. ValueError on bad shapes or ids outside the table; the GIL
    is released.
    """

@final
class StaticTokenizer:
    """The MiniLM WordPiece (uncased BERT normaliser and pre-tokenizer, `##` continuations)
    for ASCII texts, with the static tier's pooling in the same call.

    `vocab[id]` is each id's token, `unk` the id of a word with no split, `specials` the ids
    of the added tokens split out of the raw text first (`[CLS]`, `[SEP]`, ...). The ids equal
    the `tokenizers` pipeline of the vendored `tokenizer.json` (no special tokens added,
    truncated at `max_tokens`). A text that is not ASCII raises ValueError: send it to
    `tokenizers`. The GIL is released.
    """

    def __new__(
        cls, vocab: list[str], unk: int, specials: list[int], max_word_chars: int = 100
    ) -> StaticTokenizer: ...
    def encode(self, text: str, max_tokens: int) -> list[int]:
        """The ids of one ASCII text, at most `max_tokens`."""
    def pool(
        self,
        table: _np.ndarray,
        scales: _np.ndarray,
        weights: _np.ndarray,
        texts: list[str],
        max_tokens: int,
    ) -> tuple[_np.ndarray, int]:
        """Tokenize each ASCII text and pool it as `static_pool` pools its ids, on every
        core: float32 (texts, dim) and the number of tokens pooled."""
    def pool_spans(
        self,
        table: _np.ndarray,
        scales: _np.ndarray,
        weights: _np.ndarray,
        root: str,
        paths: list[str],
        crcs: list[int],
        spans: list[tuple[int, int, int]],
        heads: list[str],
        max_tokens: int,
        max_bytes: int,
    ) -> tuple[_np.ndarray, int, list[int]]:
        """`pool` of texts cut from files, never built as Python strings: span `i`
        `(file, start_line, end_line)` is `heads[i]` (none when empty), a newline, then
        lines `start..=end` (split on `\n`) of `paths[file]` under `root`, read here on
        every core as `repo.reader.read_bytes` reads (a regular file inside the root), cut
        at `max_bytes`. A span whose file cannot be read, whose bytes do not have the CRC-32
        `crcs[file]` or hold a `\r`, that lacks its lines, or whose cut is not ASCII gets a
        zero row and is listed in the third result (the caller embeds it the general way).
        Float32 (spans, dim), tokens pooled, spans left out."""

def hamming_topk(
    queries: _np.ndarray,
    codes: _np.ndarray,
    k: int,
    *,
    threads: int | None = None,
    kernel: str | None = None,
    selector: str = "auto",
) -> tuple[_np.ndarray, _np.ndarray]:
    """Exact top-k by Hamming distance: `(ids int64, distances int32)`, each of shape
    (q, min(k, n)) for a (q, w) batch or (min(k, n),) for a single (w,) query. Sorted by
    distance, ties by the smaller id; identical for any thread count. `threads` caps the
    rayon pool share (None: all, used only for scans large enough to pay off); `kernel` and
    `selector` ("auto" | "counting" | "heap") are for tests and benchmarks."""

@final
class HammingIndex:
    """An owned, growable code store with tombstones (thread-safe; ids are row numbers)."""

    def __new__(cls, width: int) -> Self: ...
    @property
    def width(self) -> int: ...
    @property
    def live(self) -> int:
        """Ids not deleted."""
    def __len__(self) -> int:
        """Ids ever assigned (live and deleted)."""
    def add(self, codes: _np.ndarray) -> int:
        """Append rows of `width` bytes; returns the first new id."""
    def delete(self, ids: list[int]) -> int:
        """Tombstone ids; returns how many were live. ValueError for an unknown id."""
    def is_deleted(self, id: int) -> bool: ...
    def search(
        self,
        queries: _np.ndarray,
        k: int,
        *,
        threads: int | None = None,
        kernel: str | None = None,
        selector: str = "auto",
    ) -> tuple[_np.ndarray, _np.ndarray]:
        """Like `hamming_topk` over the live rows."""
    def codes(self) -> _np.ndarray:
        """A copy of every code (deleted rows included), shape (len, width)."""
