"""Misspelt question words, put right before the phrase rules read a question's shape.

"waht clals merge_segments", "usgaes of Throttle", "wat dpeends on pricing/rules.py": the
rules know "calls", "usages" and "depends", not their typos. A word of the shape that is one
swap of neighbouring letters, one missing letter or one extra letter away from a word the
rules read is replaced by that word. Variants that are English words themselves ("sued",
"here", "test", "users": found against the 22,501 alphabetic words of the shipped MiniLM
tokenizer's vocabulary, once, by hand) are never corrected. Names are not touched: the target
is masked (`x`) before this runs, and only lower-case alphabetic words of four letters or more
are looked at.
"""

from __future__ import annotations

from maguyva.modalities.text.stopwords import STOP_WORDS

_KEYWORD_WORDS = """
    calls called caller callers calling usages usage uses using used references referenced
    reference refs defined definition declared declaration implemented implementation
    implements impact depends dependents depend delete deleting remove removing rename
    renaming change changing modify modifying where which what invoked invokes invocations
    tests breaks break affected affect affects signature similar explain source imports
    imported importers function method class struct interface declare define locate location
    search find refactor consequences downstream broken safely instantiated wired rendered
    render risky raised raises passed xrefs thrown throws consumed consumers triggered
    occurrences dangerous dependencies referencing extends subclasses
"""
_KEYWORDS = frozenset(_KEYWORD_WORDS.split())
_REAL = """
    affect beak break broke call caller cass chang consequence declare define depend
    dependent hanging here implement import lass reactor reference sage sing sued tess test
    usage were buses fined fused mused reefs users wheat preference preferences finds arises
    rises praised praises
"""
_REAL_WORDS = frozenset(_REAL.split())


def _variants(word: str) -> set[str]:
    out = {word[:i] + word[i + 1] + word[i] + word[i + 2 :] for i in range(len(word) - 1)}
    if len(word) >= 5:
        out |= {word[:i] + word[i + 1 :] for i in range(len(word) - 1)}  # not the last:
    out.discard(word)  # "importer" is not a typo of "importers", nor "usage" of "usages"
    return out


_FIX = {v: k for k in sorted(_KEYWORDS) for v in _variants(k) if v not in _REAL_WORDS}
"""Typo -> word: each keyword's swaps and (from five letters) deletions."""


_SEEN: dict[str, str] = {}
"""Each word already looked at, and what it becomes (itself when it is no typo): a question's
words repeat across queries, so the rule path costs a dictionary lookup per word. Bounded."""


def _lookup(word: str) -> str | None:
    if word in _KEYWORDS or word in STOP_WORDS or word in _REAL_WORDS:
        return None
    found = _FIX.get(word)
    if found is None and len(word) >= 6:  # one letter too many: "calllers", "definied"
        found = next(
            (d for i in range(len(word) - 1) if (d := word[:i] + word[i + 1 :]) in _KEYWORDS),
            None,
        )
    return found


def _learn(word: str) -> str:
    core = word.rstrip("?,.!:;")
    fixed = _lookup(core) if len(core) >= 4 and core.isalpha() else None
    out = fixed + word[len(core) :] if fixed else word
    if len(_SEEN) < 20_000:
        _SEEN[word] = out
    return out


def correct(shape: str) -> str:
    """`shape` (lower-cased, target masked) with misspelt question words put right."""
    seen = _SEEN.get
    return " ".join([seen(word) or _learn(word) for word in shape.split(" ")])
