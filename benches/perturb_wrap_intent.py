"""The classifier on tuning questions wrapped the way agents and long prompts wrap them.

    .venv/bin/python benches/perturb_wrap_intent.py [-v]

Each single-line lookup or understand question of the tuning data (the shipped dev half, the
dev halves of `independent.jsonl` and `independent-b.jsonl`, set F, `tune-c/d/e/f.jsonl`;
never a held-out half or a blind set) is rewritten in six ways that keep its label: written
out as a tool call (`search_code(query="...")`), after a context sentence, after a context
clause ("Before the release on Friday, and assuming ..., "), followed by a long aside, after
"Thought: ...", after "Step 2: ". Prints per kind the share whose intent or target is then
wrong, and the share with a wrong intent at the direct path's confidence (-v lists those).
Tuning data, so robustness, not accuracy on unseen questions (docs/phrasings-h.md).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable

from maguyva.eval.phrasings import CONFIDENT, PHRASINGS, load, load_file, normalise_target
from maguyva.query.intent import classify
from maguyva.query.targets import PROSE


def _low(query: str) -> str:
    return query[0].lower() + query[1:] if query.split()[0].lower() in PROSE else query


WRAPS: dict[str, Callable[[str], str]] = {
    "tool-call": lambda q: 'search_code(query="' + q + '")',
    "ctx-sentence": lambda q: "For context, we are migrating the service to the new API. " + q,
    "ctx-clause": lambda q: (
        "Before the release on Friday, and assuming nobody else is touching this code, " + _low(q)
    ),
    "aside-after": lambda q: (
        q.rstrip("?.! ") + ", if that is not too much trouble, since I am new to this repo"
    ),
    "thought": lambda q: "Thought: to continue the task I need this answered. " + q,
    "step": lambda q: "Step 2: " + q,
}


def main(argv: list[str]) -> int:
    items = load("dev") + load_file(PHRASINGS / "independent-f.jsonl")
    items += [i for n in ("independent.jsonl", "independent-b.jsonl")
              for i in load_file(PHRASINGS / n, "dev")]  # fmt: skip
    items += [i for n in "cdef" for i in load_file(PHRASINGS / f"tune-{n}.jsonl")]
    items = [
        i for i in items if "\n" not in i.query and i.intent not in ("exact_match", "find_similar")
    ]
    total, wrong, confident = Counter(), Counter(), Counter()
    for item in items:
        for kind, wrap in WRAPS.items():
            query = wrap(item.query)
            verdict = classify(query)
            total[kind] += 1
            ok_target = not item.target or (
                normalise_target(verdict.target) == normalise_target(item.target)
            )
            wrong[kind] += verdict.intent != item.intent or not ok_target
            if verdict.intent != item.intent and verdict.confidence >= CONFIDENT:
                confident[kind] += 1
                if "-v" in argv:
                    print(f"{kind:<13} {item.intent:>15} <- {verdict.intent:<15} {query[:90]!r}")
    for kind in WRAPS:
        print(f"{kind:<13} {total[kind]} variants: wrong {wrong[kind] / total[kind]:.3f}, "
              f"confidently wrong intent {confident[kind] / total[kind]:.3f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
