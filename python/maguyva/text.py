"""The text modality: literal, regex and lexical (BM25) search over a Rust trigram index.

Build writes `text/trigram.idx` (posting lists with follow masks) and `text/content.bin` (each
file's bytes, LZ4-compressed) into the new generation: matches are verified against exactly the content
that was indexed, so results never disagree with the generation they come from.

Search has two modes. Literal questions (exact_match, definitions, references, or an explicit
regex) search `query.target` and rank the chunks that contain it: definition lines and
whole-word matches first, then match density, then shorter paths, with tests, vendored and
generated files after the implementation. Natural-language questions rank chunks by BM25 over
the question's salient terms, identifiers split into sub-words.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from . import _core
from .chunkstore import ChunkStore
from .errors import BadQueryError, ModalityUnavailable
from .model import Hit
from .retriever import BuildContext, RetrieverQuery
from .stopwords import STOP_WORDS

DIR_NAME = "text"
LITERAL_INTENTS = frozenset(
    {"exact_match", "find_definition", "find_references", "impact_analysis"}
)
MAX_FILES_RANKED = 2000
MAX_LINES_PER_FILE = 200
MAX_TERMS = 24
CASES = ("sensitive", "insensitive", "smart")

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SUBWORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_DEF_WORDS = (
    r"def|class|fn|func|function|struct|enum|trait|interface|type|impl|const|let|var|static|"
    r"module|object|record|namespace|macro_rules!|#\s*define|typedef|val|package"
)
_TESTISH = re.compile(
    r"(^|/)(tests?|testing|spec|__tests__|fixtures?)(/|$)|(^|/)test_[^/]*$|_test\.\w+$"
)


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
        for ident in _IDENT.findall(term):
            parts = [p for piece in ident.split("_") for p in _SUBWORD.findall(piece)]
            if len(parts) > 1:
                add(ident)
            for part in parts:
                add(part)
    return out[:MAX_TERMS]


def _is_demoted(path: str) -> bool:
    return bool(_core.is_demoted_path(path) or _TESTISH.search(path))


def _definition_pattern(target: str) -> re.Pattern[str] | None:
    name = target.rsplit(".", 1)[-1].strip()
    if not _IDENT.fullmatch(name):
        return None
    return re.compile(
        rf"^\s*(?:(?:export|pub(?:\([\w:]+\))?|public|private|protected|static|async|abstract"
        rf"|final|default|inline|virtual|override)\s+)*(?:{_DEF_WORDS})\b[^\n]*?\b{re.escape(name)}\b"
    )


def _whole_word(text: str, start: int, end: int) -> bool:
    raw = text.encode("utf-8", "surrogateescape")
    before = raw[start - 1 : start].decode("latin-1") if start > 0 else ""
    after = raw[end : end + 1].decode("latin-1")
    return not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_")


class TextSearcher:
    """The read side: one loaded index, shared by every thread (the Rust index is immutable
    and each call releases the GIL)."""

    modality: ClassVar[str] = "text"

    def __init__(self, text_dir: Path, chunks: ChunkStore) -> None:
        self._index = _core.TextIndex(str(text_dir))
        self._chunks = chunks

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
        target = query.target if query.regex else query.target.strip()
        files, _, _ = self._raw(
            target,
            regex=query.regex,
            case=query.case,
            whole_word=query.whole_word,
            path_glob=query.path_glob,
            max_lines=MAX_FILES_RANKED * MAX_LINES_PER_FILE,
            max_files=MAX_FILES_RANKED,
            max_lines_per_file=MAX_LINES_PER_FILE,
            count_all=False,
        )
        definition = None if query.regex else _definition_pattern(target)
        ranked: list[tuple[tuple[Any, ...], Hit]] = []
        for path, _n_matches, _n_lines, lines in files:
            groups: dict[Any, list[tuple[int, str, list[tuple[int, int]]]]] = {}
            spans: dict[Any, tuple[int, int, str | None]] = {}
            for line, text, cols in lines:
                chunk = self._chunks.enclosing(path, line)
                key = chunk.id if chunk else ("line", line)
                spans[key] = (
                    (chunk.start_line, chunk.end_line, chunk.id) if chunk else (line, line, None)
                )
                groups.setdefault(key, []).append((line, text, cols))
            demoted = _is_demoted(path)
            for key, group in groups.items():
                start, end, chunk_id = spans[key]
                is_def = definition is not None and any(definition.search(t) for _, t, _ in group)
                whole = any(_whole_word(t, s, e) for _, t, cols in group for s, e in cols)
                n = sum(len(cols) for _, _, cols in group)
                density = n / max(1, end - start + 1)
                score = 2.0 * is_def + 1.0 * whole + min(density, 1.0)
                hit = Hit(
                    path=path,
                    start_line=start,
                    end_line=end,
                    key=chunk_id,
                    score=round(score, 4),
                    snippet=group[0][1],
                    lines=[line for line, _, _ in group],
                    extra={
                        "columns": [[line, s, e] for line, _, cols in group for s, e in cols],
                        "definition": is_def,
                        "whole_word": whole,
                    },
                )
                sort_key = (not is_def, demoted, not whole, -density, len(path), path, start)
                ranked.append((sort_key, hit))
        ranked.sort(key=lambda pair: pair[0])
        return [hit for _, hit in ranked[:k]]

    def _bm25(self, query: RetrieverQuery, k: int) -> list[Hit]:
        source = list(query.terms) or [query.target or query.text]
        if query.snippet and not query.terms:
            source = [query.snippet]
        terms = split_terms(source)
        if not terms:
            return []
        hits: list[Hit] = []
        for path, start, end, chunk_id, score, lines, term_ids in self._index.bm25(terms, k):
            if chunk_id is None:
                chunk = self._chunks.enclosing(path, lines[0]) if lines else None
                if chunk is not None:
                    start, end, chunk_id = chunk.start_line, chunk.end_line, chunk.id
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
    """Build and open the text index of a generation."""

    name: ClassVar[str] = "text"

    def build(self, ctx: BuildContext) -> dict[str, Any]:
        started = time.perf_counter()
        by_path: dict[str, list[tuple[int, int, str]]] = {}
        for chunk in ctx.chunks:
            by_path.setdefault(chunk.path, []).append((chunk.start_line, chunk.end_line, chunk.id))
        files = [(f.path, by_path.get(f.path, [])) for f in sorted(ctx.files, key=lambda f: f.path)]
        # 0: LZ4 (fast to verify against); 1..22: zstd (smaller, ~3x slower to decompress).
        level = int(ctx.config.get("text_zstd_level", 0))
        ctx.progress("text", 0, len(files))
        report = dict(
            _core.build_text_index(
                str(ctx.root), str(ctx.out_dir / DIR_NAME), files, zstd_level=level
            )
        )
        ctx.progress("text", len(files), len(files))
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
        return TextSearcher(text_dir, ChunkStore.open(Path(gen_dir)))


MODALITY = TextModality()
