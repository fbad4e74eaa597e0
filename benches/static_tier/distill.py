"""Distil the static embedding table from the shipped int8 MiniLM (no download, no torch).

Recipe (../shared/notes/EMBEDDINGS.md, "A static tier distilled from the shipped model"):

1. every one of the tokenizer's 30,522 tokens goes through the model alone (`[CLS] t [SEP]`);
   its own output vector (position 1) is its row;
2. PCA of the rows to `--pca` dims (centred);
3. SIF weights `a / (a + p(t))`, `p` the token's frequency in the standard library;
4. the table is stored as int8 with one scale per row, then a ridge least-squares map from the
   SIF-weighted mean of a text's rows to MiniLM's vector of the same text is fitted on real
   texts (standard-library chunks, docstring sentences, and the chunks of one PyPI sdist), so
   the static vectors live in MiniLM's space and their sign bits are comparable with the
   transformer tier's in one Hamming index.

The fit uses the int8 table, so quantisation is part of what is fitted. Held-out cosine to
MiniLM is printed for each SIF coefficient tried; the best is kept. Run (about 3-5 minutes of
CPU on one core):

    .venv/bin/python benches/static_tier/distill.py --sdist /tmp/statictier/sdists/requests-2.32.3

The held-out evaluation corpora (attrs, click: benches/static_tier/eval_static.py) are never
used here.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import random
import sysconfig
import time
from pathlib import Path

import numpy as np

from maguyva.modalities.semantic.embed import MiniLMProvider
from maguyva.modalities.semantic.embed.static import TABLE, load_tokenizer, pack_table, split_camel

STDLIB = Path(sysconfig.get_paths()["stdlib"])
SKIP = {"test", "tests", "idlelib", "lib2to3", "site-packages", "ensurepip", "turtledemo"}


def python_files(root: Path) -> list[Path]:
    out = []
    for path in sorted(root.rglob("*.py")):
        if not SKIP & set(path.relative_to(root).parts):
            out.append(path)
    return out


def chunks_of(path: Path, root: Path) -> tuple[list[str], list[str]]:
    """Function/class chunks (`header + "\\n" + source`, the modality's shape) and the first
    lines of their docstrings (short natural-language texts, the shape of a query)."""
    try:
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return [], []
    lines = source.splitlines()
    rel = path.relative_to(root).as_posix()
    code, prose = [], []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        kind = "class" if isinstance(node, ast.ClassDef) else "function"
        body = "\n".join(lines[node.lineno - 1 : (node.end_lineno or node.lineno)][:60])
        code.append(f"{rel}: {kind} {node.name}\n{lines[node.lineno - 1].strip()}\n{body}")
        doc = ast.get_docstring(node)
        if doc:
            first = doc.strip().split("\n\n")[0].replace("\n", " ")
            if len(first.split()) >= 3:
                prose.append(first[:300])
    return code, prose


def token_rows(provider: MiniLMProvider, vocab: int, batch: int = 1024) -> np.ndarray:
    """Each token's own output vector: `[CLS] t [SEP]` through the model, position 1."""
    session, _ = provider._load(1)
    rows = np.empty((vocab, 384), np.float32)
    for lo in range(0, vocab, batch):
        hi = min(vocab, lo + batch)
        ids = np.zeros((hi - lo, 3), np.int64)
        ids[:, 0], ids[:, 1], ids[:, 2] = 101, np.arange(lo, hi), 102
        (hidden,) = session.run(
            None,
            {
                "input_ids": ids,
                "attention_mask": np.ones_like(ids),
                "token_type_ids": np.zeros_like(ids),
            },
        )
        rows[lo:hi] = hidden[:, 1, :]
    return rows


def pool(table: np.ndarray, weights: np.ndarray, bags: list[np.ndarray]) -> np.ndarray:
    """SIF-weighted mean of each bag's rows (the reference of what the Rust pooling does)."""
    out = np.zeros((len(bags), table.shape[1]), np.float32)
    for i, ids in enumerate(bags):
        if len(ids):
            w = weights[ids]
            out[i] = (w @ table[ids]) / max(float(w.sum()), 1e-9)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sdist", type=Path, required=True, help="unpacked sdist used for fitting")
    ap.add_argument("--texts", type=int, default=4000, help="fitting texts (code + prose)")
    ap.add_argument("--pca", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--split-camel",
        action="store_true",
        help="tokenize camelCase words apart (`static.split_camel`), here and when embedding",
    )
    ap.add_argument("--out", type=Path, default=None, help="default: the packaged table")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/statictier/cache"),
                    help="token rows and MiniLM targets, reused by a rerun")  # fmt: skip
    args = ap.parse_args()
    t0 = time.process_time()
    provider = MiniLMProvider()
    tokenizer = load_tokenizer(provider.max_length)
    vocab = tokenizer.get_vocab_size()

    rows_file = args.cache / "token_rows.npy"
    if rows_file.exists():
        rows = np.load(rows_file)
    else:
        rows = token_rows(provider, vocab)
        args.cache.mkdir(parents=True, exist_ok=True)
        np.save(rows_file, rows)
    print(f"token rows: {rows.shape} in {time.process_time() - t0:.0f} CPU-s", flush=True)
    mean = rows.mean(axis=0)
    _, _, vt = np.linalg.svd(rows - mean, full_matrices=False)
    reduced = (rows - mean) @ vt[: args.pca].T

    # Token frequencies over the whole standard library (special tokens get weight 0).
    counts = np.zeros(vocab, np.float64)
    stdlib_code, stdlib_prose = [], []
    for path in python_files(STDLIB):
        code, prose = chunks_of(path, STDLIB)
        stdlib_code += code
        stdlib_prose += prose
    for lo in range(0, len(stdlib_code), 2048):
        batch = stdlib_code[lo : lo + 2048]
        for enc in tokenizer.encode_batch(
            [split_camel(t) for t in batch] if args.split_camel else batch
        ):
            np.add.at(counts, enc.ids, 1)
    freq = counts / counts.sum()
    special = [tokenizer.token_to_id(t) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")]

    sdist_code: list[str] = []
    for path in python_files(args.sdist):
        sdist_code += chunks_of(path, args.sdist)[0]
    rng = random.Random(args.seed)
    n_code = args.texts * 6 // 10
    n_sdist = min(len(sdist_code), n_code // 4)
    texts = (
        rng.sample(stdlib_code, n_code - n_sdist)
        + rng.sample(sdist_code, n_sdist)
        + rng.sample(stdlib_prose, args.texts - n_code)
    )
    rng.shuffle(texts)
    print(
        f"fit texts: {len(texts)} ({n_code - n_sdist} stdlib chunks, {n_sdist} from "
        f"{args.sdist.name}, {args.texts - n_code} docstring sentences)",
        flush=True,
    )
    key = hashlib.sha256("\0".join(texts).encode()).hexdigest()[:16]
    target_file = args.cache / f"targets-{key}.npy"
    if target_file.exists():
        target = np.load(target_file)
    else:
        floats = provider.embed(texts, "document").floats
        assert floats is not None
        target = floats
        np.save(target_file, target)
    print(f"MiniLM targets in {time.process_time() - t0:.0f} CPU-s", flush=True)

    q, scales = pack_table(reduced)
    deq = q.astype(np.float32) * scales[:, None]
    fit_texts = [split_camel(t) for t in texts] if args.split_camel else texts
    bags = [np.asarray(e.ids, np.int64) for e in tokenizer.encode_batch(fit_texts)]
    split = len(texts) * 9 // 10
    best = None
    for a in (3e-3, 1e-2, 3e-2):
        weights = (a / (a + freq)).astype(np.float32)
        weights[special] = 0.0
        x = pool(deq, weights, bags)
        x1 = np.hstack([x, np.ones((len(x), 1), np.float32)])
        for lam in (1e-2, 1.0, 10.0, 100.0):
            ridge = lam * np.eye(x1.shape[1], dtype=np.float32)
            fit = np.linalg.solve(x1[:split].T @ x1[:split] + ridge, x1[:split].T @ target[:split])
            pred = x1[split:] @ fit
            pred /= np.linalg.norm(pred, axis=1, keepdims=True) + 1e-12
            cos = float((pred * target[split:]).sum(axis=1).mean())
            print(f"  sif a={a:g} ridge={lam:g}: held-out cosine to MiniLM {cos:.3f}", flush=True)
            if best is None or cos > best[0]:
                best = (cos, a, lam, weights)
    assert best is not None
    cos, a, lam, weights = best
    # Refit on every text with the chosen coefficients.
    x = pool(deq, weights, bags)
    x1 = np.hstack([x, np.ones((len(x), 1), np.float32)])
    ridge = lam * np.eye(x1.shape[1], dtype=np.float32)
    fit = np.linalg.solve(x1.T @ x1 + ridge, x1.T @ target).astype(np.float32)

    out = args.out or Path(str(TABLE))
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "source_model": "sentence-transformers/all-MiniLM-L6-v2@onnx-int8",
        "source_sha256": "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
        "script": "benches/static_tier/distill.py",
        "pca": args.pca,
        "sif_a": a,
        "ridge": lam,
        "seed": args.seed,
        "fit_texts": len(texts),
        "fit_sdist": args.sdist.name,
        "heldout_cosine": round(cos, 4),
        "window": provider.max_length,
        "split_camel": args.split_camel,
    }
    np.savez_compressed(
        out,
        table=q,
        scales=scales,
        weights=weights,
        proj=fit[:-1],
        bias=fit[-1],
        meta=np.frombuffer(json.dumps(meta).encode(), np.uint8),
    )
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    print(json.dumps(meta | {"file": str(out), "bytes": out.stat().st_size, "sha256": digest}))
    print(f"total {time.process_time() - t0:.0f} CPU-s")


if __name__ == "__main__":
    main()
