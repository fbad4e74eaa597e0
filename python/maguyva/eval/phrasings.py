"""How well the intent classifier reads phrasings it was not written for.

The phrasing set (`eval/phrasings/{dev,heldout}.jsonl`) was written by hand, independently of
the rules: one question per line with its intent and its target. The split is a fixed hash of
the query; the learned stage is trained on `dev` only and figures are reported on `heldout`.

    python -m maguyva.eval.phrasings                 # held-out figures
    python -m maguyva.eval.phrasings --split dev --failures
    python -m maguyva.eval.phrasings --file eval/phrasings/independent.jsonl [--split heldout]

Another set (`--file`, e.g. `independent.jsonl`, written by a second engineer) is scored whole
by default; `--split dev|heldout` takes the half of it the same hash assigns (`split_of`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from maguyva.model import INTENTS

if TYPE_CHECKING:
    from maguyva.query.intent import Classification

PHRASINGS = Path(__file__).resolve().parents[3] / "eval" / "phrasings"
SPLITS = ("dev", "heldout")
ALL = "all"
CONFIDENT = 0.85
"""The direct path's threshold (SPEC.md, routing): a wrong intent above it skips fusion."""


@dataclass(frozen=True, slots=True)
class Phrasing:
    """One labelled question. `target` is empty where the intent has none (understand_code)."""

    id: str
    query: str
    intent: str
    target: str


@dataclass(frozen=True, slots=True)
class Scores:
    """The four figures of issue 22, and the failures behind them."""

    n: int
    intent_accuracy: float
    fallback_rate: float
    target_accuracy: float
    confident_wrong: float
    failures: list[dict[str, object]]


def split_of(query: str) -> str:
    """The fixed split of a question: `heldout` when its blake2b-64 digest is odd."""
    digest = hashlib.blake2b(query.strip().encode(), digest_size=8).hexdigest()
    return "heldout" if int(digest, 16) % 2 else "dev"


def load(split: str, root: Path = PHRASINGS) -> list[Phrasing]:
    """The phrasings of one split (`all`: both); a malformed line names its file and line."""
    if split == ALL:
        return [item for name in SPLITS for item in load(name, root)]
    return load_file(root / f"{split}.jsonl")


def load_file(path: Path, split: str = ALL) -> list[Phrasing]:
    """The phrasings of one file, or the half of it that `split_of` assigns to `split`."""
    out: list[Phrasing] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            item = Phrasing(row["id"], row["query"], row["intent"], row.get("target") or "")
        except (ValueError, KeyError) as exc:
            raise ValueError(f"{path}:{number}: {exc}") from None
        if item.intent not in INTENTS:
            raise ValueError(f"{path}:{number}: unknown intent {item.intent!r}")
        if split == ALL or split_of(item.query) == split:
            out.append(item)
    return out


def normalise_target(text: str) -> str:
    """Compare targets as a reader would: no surrounding quotes or backticks, no `()`."""
    text = " ".join(text.split())
    text = text.strip().strip("`'\"").strip()
    return text.removesuffix("()")


def score(
    items: Iterable[Phrasing], classify: Callable[[str], Classification] | None = None
) -> Scores:
    """Run the classifier over `items` and compute the figures."""
    if classify is None:
        from maguyva.query.intent import classify as classify_default

        classify = classify_default
    items = list(items)
    right = fallback = non_understand = targets = targets_right = confident_wrong = 0
    failures: list[dict[str, object]] = []
    for item in items:
        verdict = classify(item.query)
        intent, confidence, target, rule = (
            verdict.intent, verdict.confidence, verdict.target, verdict.rule
        )  # fmt: skip
        ok_intent = intent == item.intent
        right += ok_intent
        if item.intent != "understand_code":
            non_understand += 1
            fallback += rule.startswith("7:")
        if not ok_intent and confidence >= CONFIDENT:
            confident_wrong += 1
        ok_target = True
        if item.target:
            targets += 1
            ok_target = normalise_target(target) == normalise_target(item.target)
            targets_right += ok_target
        if not (ok_intent and ok_target):
            failures.append({
                "id": item.id, "query": item.query, "want": item.intent, "got": intent,
                "confidence": confidence, "rule": rule, "want_target": item.target,
                "got_target": target,
            })  # fmt: skip
    n = len(items) or 1
    return Scores(
        n=len(items),
        intent_accuracy=right / n,
        fallback_rate=fallback / (non_understand or 1),
        target_accuracy=targets_right / (targets or 1),
        confident_wrong=confident_wrong / n,
        failures=failures,
    )


def _shorten(text: object, width: int = 70) -> str:
    flat = re.sub(r"\s+", " ", str(text))
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m maguyva.eval.phrasings", description=__doc__)
    parser.add_argument("--split", choices=[*SPLITS, ALL],
                        help="default: heldout, or all with --file")  # fmt: skip
    parser.add_argument("--file", type=Path, action="append",
                        help="score this phrasing file instead (repeatable)")  # fmt: skip
    parser.add_argument("--failures", action="store_true", help="list the misclassified lines")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    try:
        if args.file:
            split = args.split or ALL
            result = score(item for path in args.file for item in load_file(path, split))
        else:
            split = args.split or "heldout"
            result = score(load(split))
    except (OSError, ValueError) as exc:
        print(f"maguyva eval phrasings: {exc}", file=sys.stderr)
        return 2
    figures = {
        "split": split, "n": result.n, "intent_accuracy": round(result.intent_accuracy, 3),
        "fallback_rate": round(result.fallback_rate, 3),
        "target_accuracy": round(result.target_accuracy, 3),
        "confident_wrong": round(result.confident_wrong, 3),
    }  # fmt: skip
    if args.json:
        print(json.dumps(figures))
    else:
        for key, value in figures.items():
            print(f"{key:<16} {value}")
    if args.failures:
        for f in result.failures:
            print(f"{f['want']:>15} <- {f['got']:<15} {f['confidence']:.2f} {f['rule']:<14} "
                  f"{_shorten(f['query'])!s}  [{_shorten(f['got_target'], 30)} | "
                  f"{_shorten(f['want_target'], 30)}]")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
