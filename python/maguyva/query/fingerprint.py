"""Lexical-structural fingerprints of code, so that a renamed copy of a snippet is found.

A pasted snippet whose names were changed shares few words with its original and only a
vague embedding, but its shape survives: the keywords, operators, literals' kinds and the
attribute names it reads. A fingerprint is the multiset of token 4-grams in which every
identifier that is not a keyword is written by its shape (`I` for a name, `.name` kept for an
attribute read), strings as `S` and numbers as `N`. Two pieces of code are near-copies when
their fingerprints overlap almost entirely (Dice coefficient of the multisets).
"""

from __future__ import annotations

import keyword
import re
from collections import Counter
from dataclasses import replace
from typing import Any

from maguyva.model import Result

SNIPPET_LINES = 12  # lines of a result's snippet, as the engine shows them (present.py)

GRAM = 4
NEAR_COPY = 0.6
"""Dice similarity from which a chunk counts as a copy of the snippet: the renamed copies of
`eval/similar-*.jsonl` score 0.68-1.0 against their originals (mean 0.95); on requests, the
most similar chunk that is not the original scores 0.19-0.47, except sibling methods written
alike (`Session.options` for a renamed `Session.head`: 0.86, below the original's 1.0)."""

SHARED_NAMES_WEIGHT = 0.05
"""How much the share of the snippet's literal names a near-copy has adds to its similarity:
enough to order copies whose shapes tie (a function written once per crypto provider), too
little to lift a copy over one whose shape is clearly closer."""

# keywords of the languages the index reads most; kept as they are (they are the shape)
KEYWORDS = frozenset(keyword.kwlist) | frozenset(
    """fn let mut impl pub use mod struct enum trait match loop where crate super self Self
    const static ref move dyn unsafe async await function var new this typeof instanceof
    void delete export default interface extends implements type switch case break continue
    throw catch finally func go chan defer select package range map public private protected
    final abstract synchronized virtual override namespace using template typename auto
    return if else for while do try in is not and or None True False null undefined true
    false nil""".split()  # noqa: SIM905 (a word list reads better as words)
)

_TOKEN = re.compile(
    r"""(?P<d>[rRbBuUfF]{0,2}(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''))"""
    r"""|(?P<s>'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|`[^`]*`)"""
    r"|(?P<n>\b\d[\w.]*)"
    r"|(?P<i>[A-Za-z_$][\w$]*)"
    r"|(?P<c>\#[^\n]*|//[^\n]*)"
    r"|(?P<p>->|=>|::|==|!=|<=|>=|\*\*|//|\+=|-=|\*=|/=|&&|\|\||[^\s\w])"
)


def tokens(code: str) -> list[str]:
    """The normalised token stream of `code` (comments dropped)."""
    out: list[str] = []
    after_dot = False
    for m in _TOKEN.finditer(code):
        kind, text = m.lastgroup, m.group()
        if kind in ("c", "d"):  # comments and docstrings (a pasted snippet rarely keeps them)
            continue
        if kind == "s":
            if not out or out[-1] != "S":  # implicit concatenation `"a" "b"` is one string
                out.append("S")
        elif kind == "n":
            out.append("N")
        elif kind == "i":
            if text in KEYWORDS:
                out.append(text)
            elif after_dot:
                out.append("." + text)  # attribute names survive renaming of locals
            else:
                out.append("I")
        else:
            out.append(text)
        after_dot = text == "." and kind == "p"
    return out


_BINDERS = frozenset(
    [
        "fn",
        "def",
        "function",
        "func",
        "let",
        "var",
        "const",
        "class",
        "struct",
        "enum",
        "trait",
        "mut",
    ]
)
"""Words after which a name is a binding of the snippet's own (renamed in a copy)."""


def _is_literal_name(name: str, before: str, after: str) -> bool:
    return name[0].isupper() or before in (".", "::") or after in ("::", "(", "!")


def literal_names(code: str) -> frozenset[str]:
    """The names of `code` that a renaming of its own bindings leaves alone: types and
    constants (capitalised), module paths and the functions it calls (`hkdf::Salt::new`,
    `generate_key_pair(...)`), attributes read (`.alg`) and string literals. They tell a
    renamed snippet's original from a near-copy of the same shape in a sibling module
    (`crypto/ring/tls13.rs` and `crypto/aws_lc_rs/tls13.rs` differ in `RingHkdfExpander`)."""
    toks = [
        (m.lastgroup, m.group()) for m in _TOKEN.finditer(code) if m.lastgroup not in ("c", "d")
    ]
    names: set[str] = set()
    for n, (kind, text) in enumerate(toks):
        before = toks[n - 1][1] if n else ""
        after = toks[n + 1][1] if n + 1 < len(toks) else ""
        string = kind == "s" and len(text) > 3  # not '' nor 'x'
        kept = kind == "i" and text not in KEYWORDS and before not in _BINDERS
        if string or (kept and _is_literal_name(text, before, after)):
            names.add(text)
    return frozenset(names)


def shared_names(names: frozenset[str], code: str) -> float:
    """The share of `names` (`literal_names` of a snippet) that `code` has too (1.0 when
    `names` is empty)."""
    if not names:
        return 1.0
    return len(names & literal_names(code)) / len(names)


def fingerprint(code: str) -> Counter[tuple[str, ...]]:
    """The multiset of token `GRAM`-grams of `code`."""
    toks = tokens(code)
    if len(toks) < GRAM:
        return Counter([tuple(toks)]) if toks else Counter()
    return Counter(tuple(toks[i : i + GRAM]) for i in range(len(toks) - GRAM + 1))


def similarity(a: Counter[tuple[str, ...]], b: Counter[tuple[str, ...]]) -> float:
    """Dice coefficient of two fingerprints: 1.0 for the same shape, 0.0 for nothing shared."""
    total = sum(a.values()) + sum(b.values())
    if not total:
        return 0.0
    return 2.0 * sum((a & b).values()) / total


_CACHE: dict[str, list[tuple[str, ...]]] = {}
_CACHE_MAX = 20_000  # chunk ids are content-addressed: an entry never goes stale


def chunk_grams(chunk: Any) -> list[tuple[str, ...]]:
    """The token `GRAM`-grams of a chunk in order, remembered by chunk id."""
    found = _CACHE.get(chunk.id)
    if found is None:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        toks = tokens(chunk.text)
        found = [tuple(toks[i : i + GRAM]) for i in range(max(1, len(toks) - GRAM + 1))]
        _CACHE[chunk.id] = found
    return found


def best_window(want: Counter[tuple[str, ...]], grams: list[tuple[str, ...]]) -> float:
    """The similarity of `want` to `grams`, or to its most similar stretch of the same length
    when `grams` is more than twice as long: a copy of a nested function or of a part of a
    long function is a stretch of its chunk."""
    n = sum(want.values())
    if len(grams) <= 2 * n:
        return similarity(want, Counter(grams))
    step = max(1, n // 8)
    return max(
        similarity(want, Counter(grams[i : i + n])) for i in range(0, len(grams) - n + step, step)
    )


def near_copies_first(
    snippet: str, results: list[Result], chunks: Any, candidates: dict[str, set[str]]
) -> list[Result]:
    """`results` (fused, one per file) with the files holding a near-copy of `snippet` first,
    most similar first, each spanning its most similar chunk (the fused best chunk of a file
    may be another one); the others keep their fused order. `chunks`: the generation's chunk
    store; `candidates`: path -> the chunk ids any retriever returned (only those are
    compared: fingerprinting every chunk of 30 files would cost ~250 ms). A chunk more than
    twice the snippet's length is compared by its most similar stretch (`best_window`)."""
    want = fingerprint(snippet)
    names = literal_names(snippet)
    size = len(snippet)
    ranked = []
    for pos, result in enumerate(results):
        best, chosen = 0.0, None
        for key in sorted(candidates.get(result.path, ())):
            chunk = chunks.get(key, result.path)
            if chunk is None or len(chunk.text) < size / 3:
                continue  # a copy is not much shorter
            sim = best_window(want, chunk_grams(chunk))
            if sim > best:
                best, chosen = sim, chunk
        shared = 0.0
        if best >= NEAR_COPY and chosen is not None:
            shared = shared_names(names, chosen.text)
            lines = chosen.text.splitlines()
            result = replace(
                result, start_line=chosen.start_line, end_line=chosen.end_line,
                snippet="\n".join(lines[:SNIPPET_LINES]), symbol=chosen.qualified_name,
                kind=chosen.kind, extra={**result.extra, "near_copy": round(best, 3),
                                         "shared_names": round(shared, 3)},
            )  # fmt: skip
        score = best + SHARED_NAMES_WEIGHT * shared if best >= NEAR_COPY else 0.0
        ranked.append((-score, pos, result))
    ranked.sort(key=lambda item: item[:2])
    return [item[2] for item in ranked]
