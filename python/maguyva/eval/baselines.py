"""The two external baselines every evaluation runs beside Maguyva.

- `RipgrepBaseline`: what an agent with only grep does. It runs `rg` once per query over the
  query's keywords (the quoted literal when there is one), and ranks files by how many distinct
  keywords they contain, then by matching lines. Its result span is the 21 lines around the
  line that holds the most keywords.
- `BM25Baseline`: Okapi BM25 (the `bm25s` library) over the same chunks the index holds, with
  a code-aware tokenizer (identifiers are kept whole and also split into their sub-words).

Neither uses anything Maguyva computes except the list of indexed chunks, so that all systems
see the same files.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from maguyva.errors import MaguyvaError
from maguyva.eval.metrics import Ranked
from maguyva.store.chunks import ChunkStore

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")
_SUBWORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_QUOTED = re.compile(r"\"([^\"]+)\"|'([^']{2,})'|`([^`]+)`")
STOP_WORDS = frozenset(
    """a an and are as at be by can code do does for from get gets how i if in into is it its
    me of on or show that the their them then there these this to use used uses what when where
    which who why with would find defined definition calls called call usages references where's
    similar like function method class happen happens does done should could my our one any all
    not no so than way will you your""".split()  # noqa: SIM905
)
SPAN_RADIUS = 10


def keywords(query: str, limit: int = 8) -> tuple[list[str], bool]:
    """The query's keywords and whether they are literal phrases (a quoted string)."""
    quoted = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(query)]
    if quoted:
        return quoted[:limit], True
    seen: dict[str, None] = {}
    for word in _WORD.findall(query):
        if len(word) >= 3 and word.lower() not in STOP_WORDS and not word.isdigit():
            seen.setdefault(word, None)
    words = list(seen)
    if len(words) > limit:  # a pasted snippet: keep the longest, most specific words
        words = sorted(words, key=len, reverse=True)[:limit]
    return words, False


def tokenize(text: str) -> list[str]:
    """Lower-cased identifiers plus their sub-words (snake_case and CamelCase split)."""
    tokens: list[str] = []
    for word in _WORD.findall(text):
        low = word.lower()
        if low not in STOP_WORDS and len(low) > 1:
            tokens.append(low)
        parts = [p.lower() for piece in word.split("_") for p in _SUBWORD.findall(piece)]
        if len(parts) > 1:
            tokens.extend(p for p in parts if len(p) > 1 and p not in STOP_WORDS)
    return tokens


class RipgrepBaseline:
    """`rg` over the query's keywords, restricted to the indexed files."""

    name = "baseline:ripgrep"

    def __init__(self, root: Path, indexed_paths: Sequence[str], rg: str | None = None) -> None:
        self.root = root
        self.paths = set(indexed_paths)
        found = rg or shutil.which("rg")
        if not found:
            raise MaguyvaError("ripgrep (rg) is not installed; install it or pass --no-baselines")
        self.rg = found

    def search(self, query: str, limit: int) -> list[Ranked]:
        words, literal = keywords(query)
        if not words:
            return []
        cmd = [self.rg, "--no-heading", "--with-filename", "-n", "--no-messages",
               "--max-columns", "500", "-F", "-i"]  # fmt: skip
        if not literal:
            cmd.append("-w")
        for word in words:
            cmd += ["-e", word]
        proc = subprocess.run(
            [*cmd, "--", "."], cwd=self.root, capture_output=True, check=False, timeout=120
        )
        lowered = [w.lower() for w in words]
        per_file: dict[str, dict[int, frozenset[int]]] = {}
        for raw in proc.stdout.decode("utf-8", errors="replace").splitlines():
            path, _, rest = raw.partition(":")
            number, _, text = rest.partition(":")
            path = path.removeprefix("./")
            if path not in self.paths or not number.isdigit():
                continue
            low = text.lower()
            found = frozenset(i for i, w in enumerate(lowered) if w in low)
            per_file.setdefault(path, {})[int(number)] = found
        ranked = []
        for path, lines in per_file.items():
            distinct = len(frozenset().union(*lines.values()))
            best = max(lines, key=lambda n: (len(lines[n]), -n))
            ranked.append(((-distinct, -len(lines), path), path, best, sorted(lines)))
        ranked.sort()
        return [
            Ranked(path, max(1, best - SPAN_RADIUS), best + SPAN_RADIUS, tuple(lines[:50]))
            for _, path, best, lines in ranked[:limit]
        ]


class BM25Baseline:
    """BM25 over the index's chunks (the same units Maguyva returns), best chunk per file."""

    name = "baseline:bm25"

    def __init__(self, chunks: ChunkStore) -> None:
        try:
            import bm25s
        except ImportError:
            raise MaguyvaError("the BM25 baseline needs `pip install bm25s`") from None
        started = time.perf_counter()
        self._chunks = [c for path in chunks.paths() for c in chunks.by_path(path)]
        corpus = [tokenize(f"{c.path} {c.header} {c.text}") or ["_empty_"] for c in self._chunks]
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        self._model = bm25s.BM25()
        self._model.index(corpus, show_progress=False)
        self.build_s = time.perf_counter() - started

    def search(self, query: str, limit: int) -> list[Ranked]:
        tokens = tokenize(query)
        if not tokens or not self._chunks:
            return []
        depth = min(len(self._chunks), max(limit * 5, 50))
        docs, scores = self._model.retrieve([tokens], k=depth, show_progress=False)
        out: list[Ranked] = []
        seen: set[str] = set()
        for index, score in zip(docs[0], scores[0], strict=True):
            chunk = self._chunks[int(index)]
            if score <= 0 or chunk.path in seen:
                continue
            seen.add(chunk.path)
            out.append(Ranked(chunk.path, chunk.start_line, chunk.end_line))
            if len(out) >= limit:
                break
        return out
