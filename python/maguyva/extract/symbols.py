"""The symbol index: every definition with its chunk, stored as columns in one JSON file, and
the searcher that answers exact, case-insensitive, sub-token, prefix and qualified look-ups.

Ranking, best first: how well the name matches (exact > case-insensitive > same sub-tokens >
prefix > contains the sub-tokens), the kind asked for, definitions above declarations and
re-exports, implementation above tests, first-party above vendored code, types and functions
above variables, then shorter paths.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from ..chunkstore import ChunkStore
from ..errors import CorruptIndexError, ModalityUnavailable
from ..extract_types import FileExtraction
from ..model import Chunk, Hit
from ..retriever import RetrieverQuery

FORMAT_VERSION = 1
FILE_NAME = "symbols.json"

_TOKEN = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]{2,}")


def subtokens(name: str) -> list[str]:
    """`parseConfig`, `parse_config`, `ParseConfig` -> ['parse', 'config']."""
    return [t.lower() for t in _TOKEN.findall(name)]


def fold(name: str) -> str:
    """The key under which sub-token spellings meet: lower case, no separators."""
    return "".join(subtokens(name)) or name.lower()


# A query's kind word -> the definition kinds it accepts.
KIND_FAMILIES: dict[str, frozenset[str]] = {
    "class": frozenset({"class", "struct", "record", "object", "interface", "trait", "protocol"}),
    "struct": frozenset({"struct", "class", "record", "union"}),
    "interface": frozenset({"interface", "trait", "protocol"}),
    "trait": frozenset({"trait", "interface", "protocol"}),
    "protocol": frozenset({"protocol", "interface", "trait"}),
    "enum": frozenset({"enum"}),
    "type": frozenset({"type", "class", "struct", "interface", "trait", "enum", "record",
                       "protocol", "union", "object"}),
    "function": frozenset({"function", "method", "macro"}),
    "method": frozenset({"method", "function"}),
    "module": frozenset({"module", "namespace"}),
    "variable": frozenset({"variable", "constant", "field"}),
    "constant": frozenset({"constant", "variable"}),
}  # fmt: skip
KIND_ALIASES = {"def": "function", "func": "function", "fn": "function", "fun": "function",
                "sub": "function", "proc": "function", "var": "variable", "let": "variable",
                "const": "constant", "namespace": "module", "mod": "module", "package": "module",
                "impl": "type", "object": "class", "record": "class"}  # fmt: skip
_KIND_RANK = {"class": 0, "struct": 0, "interface": 0, "trait": 0, "enum": 0, "protocol": 0,
              "record": 0, "object": 0, "type": 1, "function": 1, "method": 1, "macro": 2,
              "module": 2, "namespace": 2, "union": 1, "constant": 3, "variable": 3,
              "field": 4}  # fmt: skip

_TEST_DIRS = frozenset({"test", "tests", "testing", "spec", "specs", "__tests__", "testdata"})
_TEST_FILE = re.compile(
    r"(^test_.*|.*_test\.\w+|.*_tests?\.py|.*\.(test|spec)\.\w+|.*Tests?\.(java|cs|kt|scala|swift)"
    r"|.*_spec\.rb|conftest\.py)$"
)
_VENDOR_DIRS = frozenset(
    {"vendor", "third_party", "thirdparty", "node_modules", "build", "dist", "target", "external"}
)
_DECL_FILE = re.compile(r".*\.(pyi|d\.ts|h|hh|hpp|hxx)$")


def is_test_path(path: str) -> bool:
    parts = path.lower().split("/")
    return any(p in _TEST_DIRS for p in parts[:-1]) or bool(_TEST_FILE.match(path.split("/")[-1]))


def is_vendor_path(path: str) -> bool:
    return any(p in _VENDOR_DIRS for p in path.lower().split("/")[:-1])


def _columns() -> dict[str, list[Any]]:
    return {k: [] for k in ("name", "qualified", "kind", "path", "start", "end", "line",
                            "chunk", "signature", "doc", "flags")}  # fmt: skip


FLAG_DECL, FLAG_TEST, FLAG_VENDOR = 1, 2, 4


def build_index(
    out_dir: Path, extraction: dict[str, FileExtraction], chunks: list[Chunk]
) -> dict[str, Any]:
    """Write `symbols.json` under `out_dir` and return a small report."""
    out_dir.mkdir(parents=True, exist_ok=True)
    store = ChunkStore(chunks)
    cols = _columns()
    paths = sorted(extraction)
    kinds: dict[str, int] = defaultdict(int)
    for path_index, path in enumerate(paths):
        ex = extraction[path]
        test, vendor, decl_file = is_test_path(path), is_vendor_path(path), _DECL_FILE.match(path)
        for d in ex.definitions:
            line = d.name_line or d.start_line
            chunk = store.enclosing(path, line)
            flags = (
                (FLAG_DECL if d.declaration or decl_file else 0)
                | (FLAG_TEST if test else 0)
                | (FLAG_VENDOR if vendor else 0)
            )
            cols["name"].append(d.name)
            cols["qualified"].append(d.qualified_name)
            cols["kind"].append(d.kind)
            cols["path"].append(path_index)
            cols["start"].append(d.start_line)
            cols["end"].append(d.end_line)
            cols["line"].append(line)
            cols["chunk"].append(chunk.id if chunk else None)
            cols["signature"].append(d.signature)
            cols["doc"].append(d.doc.split("\n\n", 1)[0][:300])
            cols["flags"].append(flags)
            kinds[d.kind] += 1
    payload = {"version": FORMAT_VERSION, "paths": paths, "columns": cols}
    target = out_dir / FILE_NAME
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, ensure_ascii=False, separators=(",", ":")), "utf-8")
    tmp.replace(target)
    return {"symbols": len(cols["name"]), "files": len(paths), "kinds": dict(sorted(kinds.items()))}


def load_index(directory: Path) -> StructuralSearcher:
    """Open a symbol index written by `build_index`."""
    path = directory / FILE_NAME
    try:
        payload = json.loads(path.read_text("utf-8"))
    except FileNotFoundError as exc:
        raise ModalityUnavailable(f"structural index not built ({path} missing)") from exc
    except (OSError, ValueError) as exc:
        raise CorruptIndexError(f"{path}: unreadable symbol index ({exc})") from exc
    if not isinstance(payload, dict) or payload.get("version") != FORMAT_VERSION:
        raise CorruptIndexError(f"{path}: unknown symbol index version")
    try:
        return StructuralSearcher(payload["paths"], payload["columns"])
    except (KeyError, TypeError, IndexError) as exc:
        raise CorruptIndexError(f"{path}: malformed symbol index ({exc})") from exc


def normalize_kind(kind: str | None) -> str | None:
    """A query's kind word (`def`, `struct`, `interface`, ...) -> a KIND_FAMILIES key."""
    if not kind:
        return None
    word = kind.strip().lower()
    word = KIND_ALIASES.get(word, word)
    return word if word in KIND_FAMILIES else None


class StructuralSearcher:
    """Read-only symbol look-ups over one index generation. Thread-safe (immutable)."""

    modality: ClassVar[str] = "structural"

    def __init__(self, paths: list[str], cols: dict[str, list[Any]]) -> None:
        self._paths = paths
        self._c = cols
        n = len(cols["name"])
        self._n = n
        self._exact: dict[str, list[int]] = defaultdict(list)
        self._lower: dict[str, list[int]] = defaultdict(list)
        self._folded: dict[str, list[int]] = defaultdict(list)
        self._token: dict[str, list[int]] = defaultdict(list)
        self._doc_token: dict[str, list[int]] = defaultdict(list)
        for i, name in enumerate(cols["name"]):
            self._exact[name].append(i)
            self._lower[name.lower()].append(i)
            self._folded[fold(name)].append(i)
            for tok in set(subtokens(name)):
                self._token[tok].append(i)
            for word in set(w.lower() for w in _WORD.findall(cols["doc"][i])):
                self._doc_token[word].append(i)
        self._sorted_lower = sorted(self._lower)

    def __len__(self) -> int:
        return self._n

    # ---- look-ups -----------------------------------------------------------------------

    def find_symbol(self, name: str, kind: str | None = None, limit: int = 20) -> list[Hit]:
        """Definitions named `name` (any spelling rule above), best first."""
        return self._hits(self._rank_name(name, normalize_kind(kind)), limit)

    def search(self, query: RetrieverQuery, k: int) -> list[Hit]:
        """By `query.target` when it looks like a name; for natural-language questions also
        by `query.terms` against symbol names and doc comments."""
        kind = normalize_kind(query.kind)
        target = _with_suffix((query.target or "").strip(), query.text)
        ranked: list[tuple[tuple[Any, ...], int]] = []
        named = bool(target) and _looks_like_name(target)
        bare = named and query.text.strip() == target
        if named:
            ranked = self._rank_name(target, kind)
            # A query that is nothing but a name asks where it is defined, whatever the
            # classifier made of it (`bind`, `redirect` read as words).
            if query.intent == "find_definition" or bare:
                ranked = _definitive(ranked)
        # A name asked for and not found is an honest empty answer (the engine then fuses);
        # questions in words also match symbol names and doc comments (for a bare name that
        # would only re-add the weaker matches `_definitive` removed).
        if not named or (query.intent != "find_definition" and not (bare and ranked)):
            seen = {i for _, i in ranked}
            terms = list(query.terms) or ([] if ranked else _WORD.findall(query.text))
            extra = [(key, i) for key, i in self._rank_terms(terms, kind) if i not in seen]
            ranked = ranked + extra
        return self._hits(ranked, k)

    # ---- ranking ------------------------------------------------------------------------

    def _quality_key(self, i: int, kind: frozenset[str] | None) -> tuple[int, ...]:
        flags = self._c["flags"][i]
        return (
            0 if kind is None or self._c["kind"][i] in kind else 1,
            1 if flags & FLAG_DECL else 0,
            1 if flags & FLAG_TEST else 0,
            1 if flags & FLAG_VENDOR else 0,
            _KIND_RANK.get(self._c["kind"][i], 3),
            len(self._paths[self._c["path"][i]]),
        )

    def _rank_name(self, target: str, kind_word: str | None) -> list[tuple[tuple[Any, ...], int]]:
        target = target.strip().rstrip("()").strip()
        parts = [p for p in re.split(r"::|\.|#|->|\\", target) if p]
        if not parts:
            return []
        name, qualifier = parts[-1], parts[:-1]
        kind = KIND_FAMILIES.get(kind_word) if kind_word else None
        tiers: dict[int, int] = {}

        def offer(ids: Iterable[int], tier: int) -> None:
            for i in ids:
                if tiers.get(i, 99) > tier:
                    tiers[i] = tier

        offer(self._exact.get(name, ()), 0)
        offer(self._lower.get(name.lower(), ()), 1)
        offer(self._folded.get(fold(name), ()), 2)
        low = name.lower()
        if len(low) >= 3:
            at = bisect.bisect_left(self._sorted_lower, low)
            for key in self._sorted_lower[at : at + 200]:
                if not key.startswith(low):
                    break
                offer(self._lower[key], 3)
        if len(tiers) < 50:
            toks = subtokens(name)
            if len(toks) >= 2:
                common = set.intersection(*(set(self._token.get(t, ())) for t in toks))
                offer(common, 4)
        ranked = []
        for i, tier in tiers.items():
            if qualifier:
                q_match = self._qualifier_match(i, qualifier)
                if q_match is None:
                    continue
                tier = tier * 2 + q_match
            ranked.append(((tier, *self._quality_key(i, kind)), i))
        if kind is not None and not any(key[1] == 0 for key, _ in ranked):
            pass  # nothing of the asked kind: the kind only orders, the rest still answers
        ranked.sort()
        return ranked

    def _qualifier_match(self, i: int, qualifier: list[str]) -> int | None:
        """0 when the definition's qualified name ends with the qualifier, 1 when its path does
        (module-qualified `json.loads`), None when neither."""
        qual = self._c["qualified"][i].lower().split(".")[:-1]
        want = [q.lower() for q in qualifier]
        if qual[-len(want) :] == want:
            return 0
        path = self._paths[self._c["path"][i]].lower()
        stem = path.rsplit(".", 1)[0].split("/")
        if stem and stem[-1] in ("__init__", "index", "mod", "lib"):
            stem = stem[:-1]
        tail = want[-len(stem) :] if len(want) <= len(stem) else want
        if stem[-len(tail) :] == tail or (want and want[-1] in stem):
            return 1
        if qual and fold(qual[-1]) == fold(want[-1]):
            return 1
        return None

    def _rank_terms(
        self, terms: list[str], kind_word: str | None
    ) -> list[tuple[tuple[Any, ...], int]]:
        kind = KIND_FAMILIES.get(kind_word) if kind_word else None
        scores: dict[int, float] = defaultdict(float)
        n = max(self._n, 1)
        words = set()
        for term in terms:
            words.update(subtokens(term) or [term.lower()])
        for word in words:
            if len(word) < 3:
                continue
            ids = self._token.get(word, [])
            if ids and len(ids) < n:
                idf = math.log(n / len(ids))
                for i in ids:
                    scores[i] += 2.0 * idf
            doc_ids = self._doc_token.get(word, [])
            if doc_ids and len(doc_ids) < n:
                idf = math.log(n / len(doc_ids))
                for i in doc_ids:
                    scores[i] += idf
        ranked = [((10, -score, *self._quality_key(i, kind)), i) for i, score in scores.items()]
        ranked.sort()
        return ranked

    def _hits(self, ranked: list[tuple[tuple[Any, ...], int]], k: int) -> list[Hit]:
        hits: list[Hit] = []
        seen_chunks: set[str] = set()
        c = self._c
        for key, i in ranked:
            if len(hits) >= k:
                break
            chunk = c["chunk"][i]
            if chunk is not None and chunk in seen_chunks:
                continue
            if chunk is not None:
                seen_chunks.add(chunk)
            snippet = c["signature"][i]
            if c["doc"][i]:
                snippet = f"{snippet}\n{c['doc'][i]}" if snippet else c["doc"][i]
            hits.append(
                Hit(
                    path=self._paths[c["path"][i]],
                    start_line=c["start"][i],
                    end_line=c["end"][i],
                    key=chunk,
                    score=round(1.0 / (1 + key[0]) if key[0] < 10 else -key[1], 4),
                    snippet=snippet or None,
                    lines=[c["line"][i]],
                    symbol=c["qualified"][i],
                    kind=c["kind"][i],
                    extra={"declaration": bool(c["flags"][i] & FLAG_DECL)},
                )
            )
        return hits


def _definitive(ranked: list[tuple[tuple[Any, ...], int]]) -> list[tuple[tuple[Any, ...], int]]:
    """For "where is X defined": only the best match tier (an exact name hides prefix and
    other-spelling matches), and only definitions when the tier has any (a prototype or a stub
    is dropped when the body exists). The engine fuses this list with text hits and boosts by
    centrality, so a weaker match left in the list can outrank the answer; `find_symbol`
    keeps the full ranking."""
    if not ranked:
        return ranked
    best = ranked[0][0][0]
    kept = [(key, i) for key, i in ranked if key[0] == best]
    bodies = [(key, i) for key, i in kept if key[2] == 0]  # key[2]: 1 for declarations
    return bodies or kept


_NAME = re.compile(r"^[A-Za-z_$][\w$]*(?:(?:\.|::|#|->)[A-Za-z_$~][\w$]*)*[?!=]?(?:\(\))?$")


def _with_suffix(target: str, text: str) -> str:
    """Ruby and Scala names may end in `?`, `!` or `=` (`valid?`, `save!`, `etag=`); the
    classifier drops it from the target, so take it back from the query text."""
    if target and target[-1] not in "?!=":
        at = text.find(target)
        while at >= 0:
            end = at + len(target)
            if (
                end < len(text)
                and text[end] in "?!="
                and (end + 1 == len(text) or text[end + 1] in " ()")
            ):
                return target + text[end]
            at = text.find(target, end)
    return target


def _looks_like_name(target: str) -> bool:
    return bool(_NAME.match(target.strip()))
