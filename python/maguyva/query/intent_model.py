"""The classifier's second stage: a linear model over character n-grams of the question.

It sees only what no rule matched, as the question's shape (lower-cased, the target masked as
`x`), so it learns how people ask rather than which names they ask about. Weights come from
`benches/train_intent.py` (trained on `eval/phrasings/dev.jsonl` only) and ship beside this
module as `intent_model.npz`; they are loaded on first use. The softmax is temperature-scaled
(fitted on out-of-fold predictions of the dev half), and a verdict is returned only above
`THRESHOLD`; its confidence is capped below the direct path's 0.85, so a learned guess always
goes through fusion.
"""

from __future__ import annotations

import itertools
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

MODEL = Path(__file__).with_name("intent_model.npz")
THRESHOLD = 0.55
"""Below this calibrated probability the answer is rule 7's fallback."""
CAP = 0.80
"""A learned verdict never reaches the direct path (SPEC.md: confidence >= 0.85)."""


def features(shape: str) -> list[str]:
    """Character 3- and 4-grams of the padded words, and the words themselves."""
    words = shape.split()
    out = [f"w:{w}" for w in words]
    out += [f"b:{a}_{b}" for a, b in itertools.pairwise(words)]
    padded = f" {' '.join(words)} "
    for n in (3, 4):
        out += [padded[i : i + n] for i in range(len(padded) - n + 1)]
    return out


@lru_cache(maxsize=1)
def _load() -> tuple[dict[str, int], Any, Any, tuple[str, ...], float] | None:
    if not MODEL.exists():
        return None
    with np.load(MODEL, allow_pickle=False) as data:
        vocab = {f: i for i, f in enumerate(str(data["vocab"]).split("\n"))}
        weights = data["weights"].astype(np.float32)
        bias = data["bias"].astype(np.float32)
        classes = tuple(str(data["classes"]).split("\n"))
        temperature = float(data["temperature"])
    return vocab, weights, bias, classes, temperature


def probabilities(shape: str) -> dict[str, float] | None:
    """Calibrated class probabilities for a masked question, or None without a model."""
    model = _load()
    if model is None:
        return None
    vocab, weights, bias, classes, temperature = model
    index = [vocab[f] for f in features(shape) if f in vocab]
    logits = bias + (weights[index].sum(axis=0) if index else 0.0)
    logits = logits / temperature
    logits = np.exp(logits - logits.max())
    probs = logits / logits.sum()
    return {c: float(p) for c, p in zip(classes, probs, strict=True)}


def predict(shape: str) -> tuple[str, float] | None:
    """(intent, confidence) when the model is sure enough, else None."""
    probs = probabilities(shape)
    if not probs:
        return None
    intent = max(probs, key=probs.__getitem__)
    if probs[intent] < THRESHOLD:
        return None
    return intent, round(min(CAP, probs[intent]), 2)
