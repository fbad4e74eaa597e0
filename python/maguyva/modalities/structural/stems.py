"""A question's words in the forms the code's identifiers spell them (understand_code).

The structural index matches a question's words against the sub-tokens of symbol names
(`FloatSerializer` -> `float`, `serializer`) and doc comments, word for word: "floats" does
not find `float`, "tickets" not `ticket`, "serializing" not `serialize`. `forms` gives a word
with its inflection cut (plural, past tense, -ing) and that stem with an `e` ("serializ" ->
`serialize`, "deriv" -> `derive`); the searcher counts a question word once, by the best
form it finds. Only plain lower-case words are cut, and never below `MIN_STEM` letters: a
three-letter stem ("cap" of "capped") is a part of too many words.
"""

from __future__ import annotations

MIN_STEM = 4
_DOUBLED = frozenset("bdgmnprt")  # "embedded" -> "embed", "shipped" -> "ship"; not "called"
_SIBILANT_ES = ("sses", "shes", "ches", "xes", "zes")  # "classes", "hashes", "matches"


def stem(word: str) -> str:
    """`word` without its English inflection, or unchanged when it has none (or is not a
    plain lower-case word, or the stem would be shorter than `MIN_STEM`)."""
    if not word.isalpha() or not word.islower():
        return word
    cut = _cut(word)
    return cut if len(cut) >= MIN_STEM else word


def _cut(word: str) -> str:
    if word.endswith("ies"):
        return word[:-3]  # "entries" -> "entr" (`forms` adds `entry`)
    if word.endswith(_SIBILANT_ES):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]  # "records" -> "record"; "status", "class", "analysis" kept
    for suffix in ("ing", "ed"):
        if word.endswith(suffix):
            base = word[: -len(suffix)]
            if len(base) >= 2 and base[-1] == base[-2] and base[-1] in _DOUBLED:
                base = base[:-1]
            return base  # "derived" -> "deriv" (`forms` adds `derive`)
    return word


def forms(word: str) -> tuple[str, ...]:
    """`word`, then its stem and the stem with an `e` when it has an inflection."""
    cut = stem(word)
    if cut == word:
        return (word,)
    if word.endswith("ies"):
        return (word, cut + "y")
    return (word, cut) if cut.endswith("e") else (word, cut, cut + "e")
