"""The classifier on perturbed tuning questions: does a greeting, a typo or a trailing place move it?

    .venv/bin/python benches/perturb_intent.py [-v]

Each single-line question of the tuning data (the shipped dev half, the dev halves of
`independent.jsonl` and `independent-b.jsonl`, `tune-c.jsonl`; never a held-out half or
`independent-c.jsonl`) that is not a paste or a snippet is rewritten in eleven ways that keep
its meaning and its label: lower case, no final "?", "hey, ..." , "... pls", a prose preamble
with a colon, the target in backticks, one swap of letters in a long word that is not the
target, "can you tell me ...?", "... in the payments module", "I need to know ...", a capital
first letter. Prints the share whose intent or target is then wrong, and the share with a wrong
intent at the direct path's confidence. The questions are tuning data, so this measures
robustness, not accuracy on unseen questions. Deterministic (seeded).
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator

from maguyva.eval.phrasings import CONFIDENT, PHRASINGS, load, load_file, normalise_target
from maguyva.query.intent import classify
from maguyva.query.targets import PROSE


def _low(query: str) -> str:
    return query[0].lower() + query[1:] if query.split()[0].lower() in PROSE else query


def variants(query: str, target: str, rng: random.Random) -> Iterator[tuple[str, str]]:
    """(kind, rewritten question) for one question."""
    yield "lower", query if target else query.lower()
    yield "no-question-mark", query.rstrip("?.! ")
    yield "greeting", "hey, " + _low(query)
    yield "sign-off", query.rstrip("?.! ") + " pls"
    yield "preamble", "quick question about the billing service: " + _low(query)
    if target and "`" not in query and target in query:
        yield "backticks", query.replace(target, f"`{target}`", 1)
    words = query.split()
    long_words = [i for i, w in enumerate(words) if target not in w and w.isalpha() and len(w) > 4]
    if long_words:
        i = rng.choice(long_words)
        k = rng.randrange(1, len(words[i]) - 1)
        w = words[i]
        words[i] = w[:k] + w[k + 1] + w[k] + w[k + 2 :]
        yield "typo", " ".join(words)
    yield "tell-me", "can you tell me " + _low(query).rstrip("?") + "?"
    yield "place", query.rstrip("?.! ") + " in the payments module"
    yield "need", "I need to know " + _low(query)
    if query[0].islower() and query.split()[0].lower() in PROSE:
        yield "capital", query[0].upper() + query[1:]


def main(argv: list[str]) -> int:
    items = load("dev") + load_file(PHRASINGS / "tune-c.jsonl")
    for name in ("independent.jsonl", "independent-b.jsonl"):
        items += load_file(PHRASINGS / name, "dev")
    items = [
        i for i in items if "\n" not in i.query and i.intent not in ("exact_match", "find_similar")
    ]
    rng = random.Random(7)
    total = wrong = confident = 0
    for item in items:
        for kind, query in variants(item.query, item.target, rng):
            verdict = classify(query)
            total += 1
            ok_target = not item.target or (
                normalise_target(verdict.target) == normalise_target(item.target)
            )
            confident += verdict.intent != item.intent and verdict.confidence >= CONFIDENT
            if verdict.intent != item.intent or not ok_target:
                wrong += 1
                if "-v" in argv:
                    print(f"{kind:<16} {item.intent:>15} <- {verdict.intent:<15} "
                          f"{verdict.confidence:.2f} {query[:80]!r}")  # fmt: skip
    print(f"{total} variants of {len(items)} questions: wrong {wrong / total:.3f}, "
          f"confidently wrong intent {confident / total:.3f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
