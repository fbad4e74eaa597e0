"""The classifier's verdict (`Classification`), its six intents, and the query's salient terms.

Split from `intent.py` (which re-exports them), so the rule modules and the calibration can
build verdicts without importing the rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from maguyva.modalities.text.stopwords import STOP_WORDS
from maguyva.support.lazyre import lazy_compile

FIND_SIMILAR = "find_similar"
FIND_DEFINITION = "find_definition"
FIND_REFERENCES = "find_references"
IMPACT_ANALYSIS = "impact_analysis"
EXACT_MATCH = "exact_match"
UNDERSTAND_CODE = "understand_code"


@dataclass(frozen=True, slots=True)
class Classification:
    """The classifier's verdict. `rule` names the spec row that matched (for `--explain`);
    `kind` is a definition kind the query asked for ("class", "function", ...), if any;
    `terms` are the salient words of the query (stop words dropped), for lexical scoring."""

    intent: str
    confidence: float
    target: str
    rule: str
    kind: str | None = None
    terms: list[str] = field(default_factory=list)
    snippet: str | None = None


_WORD = lazy_compile(r"[A-Za-z_][\w$]+")
"""A word of two characters or more (a one-character word is never a term)."""


def salient_terms(query: str) -> list[str]:
    """The query's words minus stop words, in order, without duplicates (case kept)."""
    seen: set[str] = set()
    terms: list[str] = []
    for word in _WORD.findall(query):
        low = word.lower()
        if low in seen or low in STOP_WORDS:
            continue
        seen.add(low)
        terms.append(word)
    return terms
