"""When a phrase rule's verdict may take the direct path (SPEC.md routing: confidence >= 0.85).

The phrase rules (1:phrase, 2:references, 3:impact) were written from the dev phrasings, so on
those they are nearly always right, and their fixed confidences (0.90) say nothing about a
question phrased another way. A second opinion does: a one-vs-rest logistic model per intent
over the words and word pairs of the question's shape (target masked), trained by
`benches/train_intent.py` on the dev halves and the tuning sets, its scale fitted on 5-fold
out-of-fold scores. When it gives the rule's intent a probability below the shipped threshold,
the rule and the model disagree: the verdict keeps its intent and target but drops to 0.80
(rule suffix `+unsure`), so it goes through fusion instead of a single retriever.

Pure Python over a dict per intent (a few microseconds: it runs on most questions).

Before the model, one shape no phrase rule reads well (`doubtful`): "where is x built in the
router", "where is x sorted by weight", "where is the --timeout default set" ask where
something is *done* to x, not where x is defined; rule 1's bare "where" takes them for a
definition lookup. Such a verdict keeps its intent but goes through fusion.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from functools import lru_cache
from pathlib import Path

from maguyva.query.verdict import Classification
from maguyva.support.lazyre import lazy_compile

GATE = Path(__file__).with_name("intent_gate.npz")
GATED_RULES = ("1:phrase", "2:references", "3:impact")
DIRECT = 0.85
"""The direct path's threshold (SPEC.md)."""
UNSURE = 0.80
"""A verdict the model disagrees with: below the direct path."""


_WHERE_DONE = lazy_compile(
    r"\bwhere\s+(?:is|are|was|were)\s+(?:the\s+|a\s+|an\s+)?x\b(?P<rest>.*)$"
)
_PARTICIPLE = lazy_compile(
    r"\b(?!(?:defined|declared|implemented|located|exported|named|stored|kept|written|used"
    r"|called|referenced|invoked|imported)\b)(?:[a-z]{3,}ed|set|built|made|run|done|held|sent"
    r"|put|read|thrown|shown|drawn|found|got|gotten|torn|spun)\b"
)
_DEF_WORDS = lazy_compile(
    r"\b(?:defin\w*|declar\w*|implement\w*|impl|def|source|body|signature|locat\w*|lives?"
    r"|written|file|place|go\s+to|goto|jump\s+to|class|struct|function|method|type|trait"
    r"|interface|enum|module|macro|constant|component|hook|helper)\b"
)


def doubtful(verdict: Classification, shape: str) -> bool:
    """Whether a confident definition verdict rests on a bare "where" over a question about
    what is done to x ("where is x built", "where is the x default set")."""
    if verdict.rule != "1:phrase" or "where" not in shape:
        return False
    done = _WHERE_DONE.search(shape)
    return bool(done and _PARTICIPLE.search(done.group("rest")) and not _DEF_WORDS.search(shape))


def features(shape: str) -> list[str]:
    """The words of the shape and its adjacent word pairs."""
    words = shape.split()
    return [f"w:{w}" for w in words] + [f"b:{a}_{b}" for a, b in itertools.pairwise(words)]


_Column = tuple[dict[str, float], dict[tuple[str, str], float], float, float]
"""One intent's weights: by word, by adjacent word pair, the bias and the scale."""


@lru_cache(maxsize=1)
def _load() -> tuple[dict[str, _Column], float] | None:
    """Per intent: (word weights, word-pair weights, bias, scale); and the threshold. The
    features are keyed by the words themselves, so scoring a shape builds no strings."""
    if not GATE.exists():
        return None
    import numpy as np  # here: a literal question's process never imports numpy

    with np.load(GATE, allow_pickle=False) as data:
        vocab = str(data["vocab"]).split("\n")
        intents = str(data["intents"]).split("\n")
        weights = data["weights"].astype(np.float64)  # (features, intents)
        bias = data["bias"].astype(np.float64)
        scale = data["scale"].astype(np.float64)
        threshold = float(data["threshold"])
    table = {}
    for j, intent in enumerate(intents):
        words: dict[str, float] = {}
        pairs: dict[tuple[str, str], float] = {}
        for name, weight in zip(vocab, weights[:, j], strict=True):
            if not weight:
                continue
            if name.startswith("w:"):
                words[name[2:]] = float(weight)
            else:  # "b:a_b": every split, as any pair whose join is the name scored it
                for pair in _pairs_of(name[2:]):
                    pairs[pair] = float(weight)
        table[intent] = (words, pairs, float(bias[j]), float(scale[j]))
    return table, threshold


def _pairs_of(joined: str) -> list[tuple[str, str]]:
    """The word pairs whose `a_b` join is `joined` (more than one when a word holds `_`)."""
    return [(joined[:i], joined[i + 1 :]) for i, c in enumerate(joined) if c == "_"]


def agreement(shape: str, intent: str) -> float | None:
    """The model's probability that a question of this shape asks for `intent` (None when no
    model covers the intent)."""
    model = _load()
    if model is None or intent not in model[0]:
        return None
    by_word, by_pair, bias, scale = model[0][intent]
    words = shape.split()
    score = bias + sum(map(by_word.get, words, itertools.repeat(0.0)))
    score += sum(map(by_pair.get, itertools.pairwise(words), itertools.repeat(0.0)))
    return 1.0 / (1.0 + math.exp(-scale * score))


def calibrated(verdict: Classification, shape: str) -> Classification:
    """`verdict`, below the direct path when the model disagrees with its phrase rule."""
    if verdict.confidence < DIRECT or not verdict.rule.startswith(GATED_RULES):
        return verdict
    if doubtful(verdict, shape):
        return dataclasses.replace(verdict, confidence=UNSURE, rule=verdict.rule + "+unsure")
    model = _load()
    if model is None:
        return verdict
    probability = agreement(shape, verdict.intent)
    if probability is None or probability >= model[1]:
        return verdict
    return dataclasses.replace(verdict, confidence=UNSURE, rule=verdict.rule + "+unsure")
