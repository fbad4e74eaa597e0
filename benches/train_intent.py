"""Train the classifier's second stage on the dev halves of the phrasing sets.

    .venv/bin/python benches/train_intent.py            # writes python/maguyva/query/intent_model.npz

Multinomial logistic regression (numpy, full-batch gradient descent, L2) over the features of
`maguyva.query.intent_model.features`, computed on each question's shape (target masked), over
`eval/phrasings/dev.jsonl`, the dev half (by `split_of`) of `independent.jsonl`, the set a
second engineer wrote, and `tune-c.jsonl` whole (a tuning set; `independent-b.jsonl` and
`independent-c.jsonl` are blind checks: never trained on). The
softmax temperature is fitted on 5-fold out-of-fold logits of the same dev half, so the shipped
probabilities are calibrated on questions the fold's model did not see. The held-out half is
never read. Deterministic: same input, same weights.
"""

from __future__ import annotations

import sys
from collections import Counter

import numpy as np

from maguyva.eval.phrasings import PHRASINGS, Phrasing, load, load_file
from maguyva.model import INTENTS
from maguyva.query import targets
from maguyva.query.intent_model import MODEL, features

L2 = 1e-3
STEPS = 400
RATE = 0.5
MIN_COUNT = 2


TRAIN_FILES = ("independent.jsonl",)
"""Phrasing files whose dev half is trained on, besides `dev.jsonl`."""
TUNE_FILES = ("tune-c.jsonl", "tune-d.jsonl", "tune-e.jsonl")
"""Tuning-only phrasing files (no held-out half): trained on whole."""


def dev_items() -> list[Phrasing]:
    """The shipped dev half, the dev half of each of `TRAIN_FILES`, each of `TUNE_FILES`."""
    items = load("dev")
    for name in TRAIN_FILES:
        items += load_file(PHRASINGS / name, "dev")
    for name in TUNE_FILES:
        items += load_file(PHRASINGS / name)
    return items


def shape_of(query: str) -> str:
    return targets.mask(query.strip(), targets.best(query.strip()))


def design(rows: list[list[str]], vocab: dict[str, int]) -> np.ndarray:
    x = np.zeros((len(rows), len(vocab)), dtype=np.float32)
    for i, feats in enumerate(rows):
        for f in feats:
            j = vocab.get(f)
            if j is not None:
                x[i, j] += 1.0
    return x


def fit(x: np.ndarray, y: np.ndarray, classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Full-batch gradient descent on the mean cross-entropy plus L2."""
    w = np.zeros((x.shape[1], classes), dtype=np.float64)
    b = np.zeros(classes, dtype=np.float64)
    onehot = np.eye(classes)[y]
    for _ in range(STEPS):
        logits = x @ w + b
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        grad = (p - onehot) / len(y)
        w -= RATE * (x.T @ grad + L2 * w)
        b -= RATE * grad.sum(axis=0)
    return w, b


def temperature(logits: np.ndarray, y: np.ndarray) -> float:
    """The T in softmax(logits / T) that minimises the negative log-likelihood."""
    best, best_nll = 1.0, float("inf")
    for t in np.arange(0.2, 5.01, 0.05):
        z = logits / t
        z = z - z.max(axis=1, keepdims=True)
        nll = -(z[np.arange(len(y)), y] - np.log(np.exp(z).sum(axis=1))).mean()
        if nll < best_nll:
            best, best_nll = float(t), float(nll)
    return best


def main() -> int:
    items = dev_items()
    classes = list(INTENTS)
    rows = [features(shape_of(item.query)) for item in items]
    y = np.array([classes.index(item.intent) for item in items])
    counts = Counter(f for row in rows for f in set(row))
    vocab = {f: i for i, f in enumerate(sorted(f for f, c in counts.items() if c >= MIN_COUNT))}
    x = design(rows, vocab)

    folds = np.arange(len(y)) % 5
    oof = np.zeros((len(y), len(classes)))
    for k in range(5):
        train, test = folds != k, folds == k
        w, b = fit(x[train], y[train], len(classes))
        oof[test] = x[test] @ w + b
    t = temperature(oof, y)
    accuracy = float((oof.argmax(axis=1) == y).mean())

    w, b = fit(x, y, len(classes))
    np.savez_compressed(
        MODEL,
        vocab=np.array("\n".join(vocab)),
        weights=w.astype(np.float16),
        bias=b.astype(np.float32),
        classes=np.array("\n".join(classes)),
        temperature=np.array(t),
    )
    print(f"{len(items)} dev questions, {len(vocab)} features; out-of-fold accuracy "
          f"{accuracy:.3f}, temperature {t:.2f}; wrote {MODEL} ({MODEL.stat().st_size} bytes)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
