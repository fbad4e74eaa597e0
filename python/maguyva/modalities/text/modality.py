"""The text modality: literal, regex and lexical (BM25) search over a Rust trigram index.

Build writes `text/trigram.idx` (posting lists with follow masks) and `text/content.bin` (each
file's bytes, LZ4-compressed) into the new generation, or, for an incremental update, one small
segment of the changed files plus tombstones (`text/segments.json`, see `TextModality`):
matches are verified against exactly the content that was indexed, so results never disagree
with the generation they come from.

Search has two modes. Literal questions (exact_match, definitions, references, or an explicit
regex) search `query.target` and rank the chunks that contain it: definition lines and
whole-word matches first, then match density, then shorter paths, with tests, vendored and
generated files after the implementation (`literal.py`; the best k are chosen in Rust).
Natural-language questions rank chunks by BM25 over the question's salient terms,
identifiers split into sub-words.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from maguyva import _core
from maguyva.errors import BadQueryError, CorruptIndexError, MaguyvaError, ModalityUnavailable
from maguyva.modalities.protocol import BuildContext, RetrieverQuery
from maguyva.modalities.text.literal import CASES, IDENT, demoted_flags, literal_hits
from maguyva.modalities.text.stopwords import STOP_WORDS
from maguyva.model import Hit
from maguyva.store import blocks, spans
from maguyva.store.chunks import CHUNKS_DIR, ChunkStore, segment_of
from maguyva.store.extraction import extractor_fingerprint
from maguyva.store.spans import SEGMENTS_FILE, SEGMENTS_KIND, open_index, read_segments
from maguyva.store.spans import spec_tuples as _spec_tuples
from maguyva.support import sealed

log = logging.getLogger(__name__)

DIR_NAME = "text"
# Below this many updated documents, segments are never merged (a small repository would
# otherwise rebuild on every update, which is cheap there but leaves no segments to test).
MIN_MERGE_DOCS = 64
LITERAL_INTENTS = frozenset(
    {"exact_match", "find_definition", "find_references", "impact_analysis"}
)
MAX_TERMS = 24

_SUBWORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


@dataclass(frozen=True, slots=True)
class LineMatch:
    """One matching line, ripgrep style: byte columns `[start, end)` of each match."""

    path: str
    line: int
    columns: list[tuple[int, int]]
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "columns": [list(c) for c in self.columns],
            "text": self.text,
        }


def split_terms(terms: list[str]) -> list[str]:
    """Lower-cased search terms: stop words dropped, identifiers split into sub-words
    (`parseConfig` -> `parseconfig`, `parse`, `config`), duplicates removed, order kept."""
    out: list[str] = []
    seen: set[str] = set()

    def add(word: str) -> None:
        low = word.lower()
        if len(low) >= 2 and low not in STOP_WORDS and low not in seen:
            seen.add(low)
            out.append(low)

    for term in terms:
        for ident in IDENT.findall(term):
            parts = [p for piece in ident.split("_") for p in _SUBWORD.findall(piece)]
            if len(parts) > 1:
                add(ident)
            for part in parts:
                add(part)
    return out[:MAX_TERMS]


class TextSearcher:
    """The read side: one loaded index, shared by every thread (the Rust index is immutable
    and each call releases the GIL)."""

    modality: ClassVar[str] = "text"

    def __init__(self, text_dir: Path, chunks: ChunkStore | None = None) -> None:
        # Enclosing chunks come from the index itself (each document keeps its chunk spans),
        # so opening a generation does not load its whole chunk store a second time (the
        # engine has one; loading it took ~4 s on an 11k-file repository). `chunks` is kept
        # for callers that pass one; it is not used.
        self._index = open_index(text_dir)
        spans.adopt(text_dir, self._index)  # the chunk store cuts its spans from it
        self._demoted: bytes | None = None
        if not self._index.has_bm25_postings:
            log.warning(
                "text: %s has no BM25 postings (built by an older Maguyva): questions scan "
                "the stored content; the next index update rebuilds it",
                text_dir,
            )

    def stats(self) -> dict[str, int]:
        return dict(self._index.stats())

    def _raw(self, pattern: str, **kwargs: Any) -> tuple[list[Any], int, bool]:
        case = kwargs.get("case", "smart")
        if case not in CASES:
            raise BadQueryError(f"case must be one of {', '.join(CASES)}, got {case!r}")
        try:
            return self._index.search(pattern, **kwargs)
        except BadQueryError:
            raise
        except ValueError as exc:
            raise BadQueryError(str(exc)) from exc

    def grep(
        self,
        pattern: str,
        *,
        regex: bool = False,
        case: str = "smart",
        whole_word: bool = False,
        path_glob: str | None = None,
        max_results: int = 1000,
    ) -> list[LineMatch]:
        """ripgrep-like search: matching lines in path order, at most `max_results`."""
        if max_results < 0:
            raise BadQueryError(f"max_results must be >= 0, got {max_results}")
        files, _, _ = self._raw(
            pattern,
            regex=regex,
            case=case,
            whole_word=whole_word,
            path_glob=path_glob,
            max_lines=max_results,
        )
        return [
            LineMatch(path, line, [tuple(c) for c in cols], text)
            for path, _n, _nl, lines in files
            for line, text, cols in lines
        ]

    def search(self, query: RetrieverQuery, k: int) -> list[Hit]:
        if k <= 0:
            return []
        literal = query.regex or (query.intent in LITERAL_INTENTS and query.target.strip())
        if literal:
            hits = self._literal(query, k)
            if hits or query.intent == "exact_match" or query.regex:
                return hits
        return self._bm25(query, k)

    def _literal(self, query: RetrieverQuery, k: int) -> list[Hit]:
        return literal_hits(self._index, query, k, self._demoted_flags())

    def _demoted_flags(self) -> bytes:
        """`literal.demoted_flags` of the index's paths, made on the first literal question
        (the index is immutable; two threads racing make the same bytes)."""
        if self._demoted is None:
            self._demoted = demoted_flags(self._index.paths())
        return self._demoted

    def _bm25(self, query: RetrieverQuery, k: int) -> list[Hit]:
        source = list(query.terms) or [query.target or query.text]
        if query.snippet and not query.terms:
            source = [query.snippet]
        terms = split_terms(source)
        if not terms:
            return []
        hits: list[Hit] = []
        for path, start, end, chunk_id, score, lines, term_ids in self._index.bm25(terms, k):
            if chunk_id is None and lines:
                chunk = self._index.enclosing(path, [lines[0]])[0]
                if chunk is not None:
                    start, end, chunk_id = chunk
            hits.append(
                Hit(
                    path=path,
                    start_line=start,
                    end_line=end,
                    key=chunk_id,
                    score=round(score, 4),
                    lines=list(lines),
                    extra={"terms": [terms[i] for i in term_ids], "bm25": True},
                )
            )
        return hits


class TextModality:
    """Build and open the text index of a generation.

    The index is a list of immutable segments (`segments.json`, sealed): a base built from
    scratch (`trigram.idx`, `content.bin`) and small segments (`seg-NNNNNN.idx/.bin`), each
    holding the files one incremental update added or changed, with per segment the local ids
    of documents deleted or changed since (tombstones). An update hard-links the previous
    generation's segments (generations are immutable), writes one new segment and the new
    list; searching shows the live documents of every segment as one path-ordered index, so
    answers equal a from-scratch build's. The segments are merged back into one base (a
    from-scratch build) when the updated documents exceed `text_merge_ratio` (default 0.1)
    of the base, and the small segments are compacted into one when there are more than
    `text_max_segments` (default 8) of them.
    """

    name: ClassVar[str] = "text"

    def build(self, ctx: BuildContext) -> dict[str, Any]:
        started = time.perf_counter()
        # 0: LZ4 (fast to verify against); 1..22: zstd (smaller, ~3x slower to decompress).
        level = int(ctx.config.get("text_zstd_level", 0))
        out = ctx.out_dir / DIR_NAME
        extractor = _extractor_fingerprint()
        report = None
        try:
            report = _update(ctx, out, level, extractor)
        except OSError:
            raise  # disk full or an I/O error: the generation is aborted
        except (MaguyvaError, ValueError, KeyError, TypeError) as exc:
            log.warning("text: incremental update failed (%s); rebuilding", exc)
            shutil.rmtree(out, ignore_errors=True)
        if report is None:
            report = _build_from_scratch(ctx, out, level, extractor)
        seconds = time.perf_counter() - started
        skipped: dict[str, int] = {}
        for _, reason in report["skipped_files"]:
            skipped[reason] = skipped.get(reason, 0) + 1
        report["skipped"] = skipped
        report["skipped_files"] = [list(p) for p in report["skipped_files"][:100]]
        report["seconds"] = round(seconds, 3)
        report["mb_per_s"] = round(report["content_bytes"] / 1e6 / max(seconds, 1e-9), 1)
        return report

    def open(self, gen_dir: Path, manifest: dict[str, Any]) -> TextSearcher:
        text_dir = Path(gen_dir) / DIR_NAME
        if not text_dir.is_dir():
            raise ModalityUnavailable(f"the text index was not built in {gen_dir}")
        return TextSearcher(text_dir)

    def verify(self, directory: Path) -> list[str]:
        """Problems of the text index in `directory`: the segment list and every segment's
        header, sections and checksums (as a reader checks them when it opens the index)."""
        try:
            open_index(Path(directory))
        except MaguyvaError as exc:
            return [str(exc)]
        except OSError as exc:
            return [f"{exc.filename or directory}: {exc.strerror or exc}"]
        return []


BASE_FILES = ("trigram.idx", "content.bin")


def postings_file(index_file: str) -> str:
    """The BM25 postings beside a segment's trigram index (`_core` reads them by this
    name): `trigram.idx` -> `trigram.bm25`."""
    return index_file.removesuffix(".idx") + ".bm25"


def _extractor_fingerprint() -> str:
    """Chunks of unchanged files are reused from earlier segments, which is right only while
    the extractor that made them is the same."""
    return extractor_fingerprint()


def _chunk_spans(ctx: BuildContext, paths: set[str] | None) -> Iterator[tuple[str, int, int, str]]:
    """`(path, start_line, end_line, id)` of the chunks of `paths` (None: every file). A
    segment-backed chunk view (`indexer.SegmentChunks`) is decoded only in the segments that
    hold `paths`: an update of one file must not decode every chunk of the repository."""
    chunks = ctx.chunks
    spans_of = getattr(chunks, "spans_of", None)
    if paths is not None and callable(spans_of):  # only these files' rows (segment or delta)
        yield from spans_of(paths)
        return
    segment = getattr(chunks, "segment", None)
    if paths is not None and callable(segment):
        for n in sorted({segment_of(p) for p in paths}):
            try:
                yield from _segment_spans(
                    Path(chunks.gen_dir) / CHUNKS_DIR / f"{n:02d}.jsonl", paths
                )
            except (AttributeError, OSError, MaguyvaError, ValueError, KeyError, TypeError):
                for c in segment(n):
                    yield (c.path, c.start_line, c.end_line, c.id)
        return
    spans = getattr(chunks, "spans", None)
    if callable(spans):
        yield from spans()
        return
    for c in chunks:
        yield (c.path, c.start_line, c.end_line, c.id)


def _segment_spans(file: Path, paths: set[str]) -> list[tuple[str, int, int, str]]:
    """The chunks of `paths` in one of the indexer's chunk segments (JSON Lines): only the
    lines that contain one of the paths' JSON forms are decoded (a segment holds ~1/64 of the
    repository's chunks; decoding all of them was most of a one-file update)."""
    keys = {
        k
        for p in paths
        for k in (json.dumps(p).encode(), json.dumps(p, ensure_ascii=False).encode())
    }
    payload = blocks.rows_of(sealed.read_sealed(file, "chunks", blocks.ROWS_VERSION), file, paths,
                             texts=False)  # fmt: skip
    starts: set[int] = set()
    for key in keys:
        at = payload.find(key)
        while at >= 0:
            line_start = payload.rfind(b"\n", 0, at) + 1
            starts.add(line_start)
            end = payload.find(b"\n", at)
            at = payload.find(key, end) if end >= 0 else -1
    out = []
    for line_start in sorted(starts):
        end = payload.find(b"\n", line_start)
        c = json.loads(payload[line_start : end if end >= 0 else len(payload)])
        if c["path"] in paths:
            out.append((c["path"], c["start_line"], c["end_line"], c["id"]))
    return out


def _chunk_lists(
    ctx: BuildContext, paths: set[str] | None
) -> dict[str, list[tuple[int, int, str]]]:
    by_path: dict[str, list[tuple[int, int, str]]] = {}
    for path, start, end, chunk_id in _chunk_spans(ctx, paths):
        if paths is None or path in paths:
            by_path.setdefault(path, []).append((start, end, chunk_id))
    return by_path


def _build_segment(
    ctx: BuildContext, out: Path, paths: list[str], level: int, files: tuple[str, str]
) -> dict[str, Any]:
    chunks = _chunk_lists(ctx, set(paths) if len(paths) < len(ctx.files) else None)
    inputs = [(p, chunks.get(p, [])) for p in paths]
    ctx.progress("text", 0, len(inputs))
    report = dict(
        _core.build_text_index(
            str(ctx.root), str(out), inputs, zstd_level=level,
            index_file=files[0], content_file=files[1],
        )
    )  # fmt: skip
    ctx.progress("text", len(inputs), len(inputs))
    return report


def _write_segments(out: Path, data: dict[str, Any]) -> None:
    from maguyva.store.generations import write_sealed

    write_sealed(out / SEGMENTS_FILE, SEGMENTS_KIND, sealed.dumps_json(data))


def _build_from_scratch(ctx: BuildContext, out: Path, level: int, extractor: str) -> dict[str, Any]:
    paths = sorted(f.path for f in ctx.files)
    report = _build_segment(ctx, out, paths, level, BASE_FILES)
    segment = {"index": BASE_FILES[0], "content": BASE_FILES[1], "build_id": report["build_id"],
               "docs": report["docs"], "deleted": []}  # fmt: skip
    _write_segments(out, {"version": 1, "zstd_level": level, "extractor": extractor,
                          "next": 1, "segments": [segment]})  # fmt: skip
    report["mode"] = "full"
    report["segments"] = 1
    return report


def _link(src: Path, dst: Path) -> None:
    """Share an immutable segment file with the previous generation (copy if links fail)."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def _update(ctx: BuildContext, out: Path, level: int, extractor: str) -> dict[str, Any] | None:
    """Update the previous generation's segments with `ctx.changes`; None when a
    from-scratch build is due (no usable previous index, other settings, or too many
    changes accumulated)."""
    changes = ctx.changes
    if changes is None or ctx.previous_dir is None:
        return None
    prev_dir = Path(ctx.previous_dir) / DIR_NAME
    try:
        data = read_segments(prev_dir) if prev_dir.is_dir() else None
        if data is None or data.get("zstd_level") != level or data.get("extractor") != extractor:
            return None
        previous = _core.TextIndex(str(prev_dir), segments=_spec_tuples(data))
    except (MaguyvaError, OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("text: previous index unusable (%s); rebuilding", exc)
        return None
    if not previous.has_bm25_postings:
        log.warning("text: previous index has no BM25 postings (older Maguyva); rebuilding")
        return None
    segments = [dict(s, deleted=list(s["deleted"])) for s in data["segments"]]
    # Membership from the file lists, content changes from the change set: a file is
    # re-indexed when it is new to the index or its content changed, and tombstoned when it
    # left the file set or changed.
    live = previous.paths()
    live_set = set(live)
    wanted = {f.path for f in ctx.files}
    modified = set(changes.modified) & live_set
    gone = [p for p in live if p not in wanted or p in modified]
    new = (wanted - live_set) | (modified & wanted)
    for path, where in zip(gone, previous.locate(gone), strict=True):
        if where is None:
            raise CorruptIndexError(f"{prev_dir}: {path} listed but not found")
        segments[where[0]]["deleted"].append(where[1])
    for seg in segments:
        seg["deleted"].sort()

    base = segments[0]
    small = [s for s in segments[1:] if len(s["deleted"]) < s["docs"]]
    ratio = float(ctx.config.get("text_merge_ratio", 0.1))
    max_segments = max(2, int(ctx.config.get("text_max_segments", 8)))
    pending = sum(s["docs"] - len(s["deleted"]) for s in small) + len(new) + len(base["deleted"])
    min_docs = int(ctx.config.get("text_merge_min_docs", MIN_MERGE_DOCS))
    if pending > max(ratio * base["docs"], min_docs):
        return None  # merge: one base segment again
    mode = "incremental"
    if new and len(small) + 1 >= max_segments:
        # Compact the small segments into the new one (their live files are unchanged).
        for seg_index, seg in enumerate(segments):
            if seg in small:
                new.update(previous.segment_paths(seg_index))
        small = []
        mode = "compacted"

    out.mkdir(parents=True, exist_ok=True)
    kept = [base, *small]
    for seg in kept:
        for name in (seg["index"], seg["content"], postings_file(seg["index"])):
            _link(prev_dir / name, out / name)
    number = int(data.get("next", 1))
    report: dict[str, Any] = {"build_id": 0, "docs": 0, "trigrams": 0, "chunks": 0,
                              "content_bytes": 0, "stored_bytes": 0, "index_bytes": 0, "bm25_bytes": 0,
                              "skipped_files": []}  # fmt: skip
    if new:
        files = (f"seg-{number:06d}.idx", f"seg-{number:06d}.bin")
        number += 1
        report = _build_segment(ctx, out, sorted(new), level, files)
        if report["docs"]:
            kept.append({"index": files[0], "content": files[1], "build_id": report["build_id"],
                         "docs": report["docs"], "deleted": []})  # fmt: skip
        else:
            for name in (*files, postings_file(files[0])):
                (out / name).unlink(missing_ok=True)
    _write_segments(out, {"version": 1, "zstd_level": level, "extractor": extractor,
                          "next": number, "segments": kept})  # fmt: skip
    report["mode"] = mode
    report["segments"] = len(kept)
    report["segment_docs"] = report["docs"]
    report["docs"] = sum(s["docs"] - len(s["deleted"]) for s in kept)
    report["tombstones"] = sum(len(s["deleted"]) for s in kept)
    return report


MODALITY = TextModality()
