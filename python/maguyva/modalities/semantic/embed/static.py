"""The static tier: a per-token table distilled from the shipped MiniLM, pooled per text.

Why: the transformer embeds ~30 chunks per CPU-second, so a large repository waits minutes to
hours before it is searchable by meaning. A static table costs one tokenizer pass and one
weighted sum per text (thousands of chunks per CPU-second), and because the table was fitted
to MiniLM's own vectors (benches/static_tier/distill.py), its codes have the same width and
live in the same space: static and transformer codes are ranked together in one Hamming index,
and the transformer replaces a chunk's static code when it gets to it.

Pipeline per batch: an ASCII text (most code) is tokenized and pooled in one Rust call
(`_core.StaticTokenizer.pool`: the vendored MiniLM WordPiece, stopping at the window, the
SIF-weighted mean of the int8 rows, every core, GIL released); any other text goes through
`tokenizers` (batch encode, no special tokens) and `_core.static_pool`. Then a 256 -> 384
linear map (numpy BLAS), L2 normalisation and sign bits.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable
from importlib import resources
from typing import Any

import numpy as np

from maguyva.errors import ProviderError
from maguyva.modalities.semantic.embed.base import (
    EmbeddingProvider,
    Embeddings,
    InputType,
    ProviderIdentity,
    binarize,
)
from maguyva.modalities.semantic.embed.local import DIM, MAX_LENGTH, TOKENIZER

TABLE = resources.files("maguyva.data").joinpath("static-minilm/table.npz")
MODEL_ID = "maguyva/static-minilm-l6@distilled-v1"
"""Tier-1 codes are fitted to the space of `local.MODEL_ID`; `DIM` is the same, so the codes
share the transformer tier's width and Hamming index."""
STATIC_MAX_LENGTH = MAX_LENGTH
"""Tokens pooled per text: the transformer's window, the one the table was fitted on. 512
costs the same (the tokenizer reads the whole text either way) but scored 0.03 lower MRR@10
float on the held-out task (docs/semantic.md)."""
CHARS_PER_TOKEN = 8
"""Texts are cut to `max_length * CHARS_PER_TOKEN` characters before tokenizing."""
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def split_camel(text: str) -> str:
    """`getUserName` as `get User Name`: the uncased WordPiece would read `getusername` as
    `get ##user ##name`, rows of their own (a table fitted with `distill.py --split-camel`
    says so in its meta, and its texts are split the same way when embedded)."""
    return _CAMEL.sub(" ", text)


def load_tokenizer(max_length: int = MAX_LENGTH) -> Any:
    """The vendored MiniLM WordPiece tokenizer, truncating at `max_length`, no padding."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise ProviderError(
            "the static embedding tier needs tokenizers: pip install tokenizers"
        ) from None
    tok_file = resources.files(TOKENIZER[0]).joinpath(TOKENIZER[1])
    tokenizer = Tokenizer.from_str(tok_file.read_text(encoding="utf-8"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length)
    return tokenizer


def native_tokenizer() -> Any:
    """`_core.StaticTokenizer` over the vendored MiniLM vocabulary (its added tokens are split
    out of the raw text first, as `tokenizers` does), or None without the native class."""
    from maguyva import _core

    native = getattr(_core, "StaticTokenizer", None)
    if native is None:
        return None
    spec = json.loads(resources.files(TOKENIZER[0]).joinpath(TOKENIZER[1]).read_text("utf-8"))
    model = spec["model"]
    vocab = sorted(model["vocab"], key=model["vocab"].__getitem__)
    specials = [t["id"] for t in spec.get("added_tokens", ()) if t.get("special")]
    return native(vocab, model["vocab"][model["unk_token"]], specials,
                  int(model.get("max_input_chars_per_word", 100)))  # fmt: skip


def pack_table(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 rows with one float32 scale each (max-abs / 127): ~4x smaller than float32."""
    scales = np.maximum(np.abs(rows).max(axis=1), 1e-12) / 127.0
    q = np.clip(np.rint(rows / scales[:, None]), -127, 127).astype(np.int8)
    return q, scales.astype(np.float32)


def pool_reference(
    table: np.ndarray, scales: np.ndarray, weights: np.ndarray, ids: np.ndarray,
    offsets: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """Pure-numpy weighted mean of each text's rows (the oracle for `_core.static_pool`)."""
    out = np.zeros((len(offsets) - 1, table.shape[1]), np.float32)
    for i in range(len(offsets) - 1):
        bag = ids[offsets[i] : offsets[i + 1]]
        w = weights[bag] * scales[bag]
        total = float(weights[bag].sum())
        if total > 0:
            out[i] = (w @ table[bag].astype(np.float32)) / total
    return out


class StaticTable:
    """The loaded table file: int8 rows, scales, SIF weights and the fitted map to 384 dims."""

    def __init__(self, data: dict[str, np.ndarray]) -> None:
        self.table = np.ascontiguousarray(data["table"], dtype=np.int8)
        self.scales = np.ascontiguousarray(data["scales"], dtype=np.float32)
        self.weights = np.ascontiguousarray(data["weights"], dtype=np.float32)
        self.proj = np.ascontiguousarray(data["proj"], dtype=np.float32)
        self.bias = np.ascontiguousarray(data["bias"], dtype=np.float32)
        self.meta: dict[str, Any] = json.loads(bytes(data["meta"]).decode())
        if self.proj.shape != (self.table.shape[1], DIM):
            raise ProviderError(f"static table: projection {self.proj.shape} is not (d, {DIM})")

    @classmethod
    def load(cls) -> tuple[StaticTable, str]:
        """The packaged table and the sha256 of its file (part of the identity)."""
        try:
            raw = TABLE.read_bytes()
        except FileNotFoundError:
            raise ProviderError(f"static embedding table missing: {TABLE}") from None
        import io

        with np.load(io.BytesIO(raw)) as npz:
            data = {k: npz[k] for k in npz.files}
        return cls(data), hashlib.sha256(raw).hexdigest()


class StaticProvider(EmbeddingProvider):
    """Tier 1: distilled static MiniLM, 384 dims (same width as `MiniLMProvider`). Lazily
    loaded, thread-safe, deterministic (identical texts give identical codes)."""

    remote = False

    def __init__(self, max_length: int = STATIC_MAX_LENGTH) -> None:
        if not 8 <= max_length <= 8192:
            raise ProviderError(f"max_length must be between 8 and 8192, got {max_length}")
        self.max_length = max_length
        self._lock = threading.Lock()
        self._table: StaticTable | None = None
        self._sha = ""
        self._tokenizer: Any = None
        self._native: Any = None

    def _load(self) -> tuple[StaticTable, Any]:
        with self._lock:
            if self._table is None:
                self._tokenizer = load_tokenizer(self.max_length)
                self._native = native_tokenizer()
                self._table, self._sha = StaticTable.load()
            return self._table, self._tokenizer

    @property
    def identity(self) -> ProviderIdentity:
        self._load()
        return ProviderIdentity(
            provider="static", model_id=MODEL_ID, dim=DIM, sha256=self._sha,
            max_tokens=self.max_length,
        )  # fmt: skip

    def count_tokens(self, texts: list[str]) -> int:
        _, tokenizer = self._load()
        return sum(len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False))

    def embed(self, texts: list[str], input_type: InputType) -> Embeddings:
        """Codes and float vectors for `texts`; symmetric, `input_type` is unused."""
        if not texts:
            return Embeddings(np.zeros((0, DIM // 8), np.uint8), np.zeros((0, DIM), np.float32))
        return self._finish(*self._pool(texts))

    def embed_spans(self, root: str, paths: list[str], crcs: list[int],
                    spans: list[tuple[int, int, int]], heads: list[str], max_chars: int,
                    texts_of: Callable[[list[int]], list[str]]) -> Embeddings:  # fmt: skip
        """`embed` of texts cut from the files `paths` under `root`, read and cut in Rust
        (`_core.StaticTokenizer.pool_spans`: span `i` is `heads[i]`, a newline, lines
        `start..end` of `paths[file]`, cut at `max_chars`), never built as Python strings;
        the spans Rust leaves out (not ASCII, a `\r`, bytes that are not the ones cut from:
        their CRC-32 is not `crcs[file]`) are embedded from `texts_of(indices)`."""
        table, _ = self._load()
        if not spans:
            return Embeddings(np.zeros((0, DIM // 8), np.uint8), np.zeros((0, DIM), np.float32))
        native = self._native if not table.meta.get("split_camel") else None
        if native is None or not hasattr(native, "pool_spans"):
            return self.embed(texts_of(list(range(len(spans)))), "document")
        limit = min(max_chars, self.max_length * CHARS_PER_TOKEN)
        pooled, tokens, left = native.pool_spans(table.table, table.scales, table.weights,
                                                 root, paths, crcs, spans, heads,
                                                 self.max_length, limit)  # fmt: skip
        if left:
            more, extra = self._pool(texts_of(left))
            pooled[left] = more
            tokens += extra
        return self._finish(pooled, tokens)

    def _pool(self, texts: list[str]) -> tuple[np.ndarray, int]:
        """The pooled table rows of `texts` (before the map to 384 dims) and the tokens."""
        table, tokenizer = self._load()
        # The tokenizer reads the whole text before truncating: cut first, at 8 characters per
        # token of the window (the semantic build's own cut; on 5,000 stdlib chunks it changed
        # no token ids and saved ~15 % of the tokenizer's CPU).
        limit = self.max_length * CHARS_PER_TOKEN
        cut = [t[:limit] for t in texts]
        if table.meta.get("split_camel"):
            cut = [split_camel(t) for t in cut]
        pooled = np.empty((len(cut), table.table.shape[1]), np.float32)
        plain = [i for i, t in enumerate(cut) if t.isascii()] if self._native is not None else []
        tokens = 0
        if plain:  # tokenized and pooled in one Rust call
            pooled[plain], tokens = self._native.pool(
                table.table, table.scales, table.weights, [cut[i] for i in plain], self.max_length
            )  # fmt: skip
        if len(plain) < len(cut):
            other = sorted(set(range(len(cut))) - set(plain))
            pooled[other], more = _encode_pool(table, tokenizer, [cut[i] for i in other])
            tokens += more
        return pooled, tokens

    def _finish(self, pooled: np.ndarray, tokens: int) -> Embeddings:
        """The map to 384 dims, L2 normalisation and sign bits of pooled rows."""
        table, _ = self._load()
        vectors = pooled @ table.proj + table.bias
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return Embeddings(binarize(vectors), vectors, tokens)


def _encode_pool(table: StaticTable, tokenizer: Any, texts: list[str]) -> tuple[np.ndarray, int]:
    """`tokenizers` batch encode, then `_pool`: the pooled rows and the tokens pooled."""
    # `encode_batch_fast` (tokenizers >= 0.21) skips the character offsets: same ids.
    encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
    encodings = encode(texts, add_special_tokens=False)
    lengths = np.fromiter((len(e.ids) for e in encodings), np.int64, len(encodings))
    offsets = np.zeros(len(texts) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ids = np.fromiter((t for e in encodings for t in e.ids), np.uint32, int(offsets[-1]))
    return _pool(table, ids, offsets), int(offsets[-1])


def _pool(table: StaticTable, ids: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The weighted mean of each text's rows, in Rust when the native module has it."""
    from maguyva import _core

    native = getattr(_core, "static_pool", None)
    if native is None:
        return pool_reference(table.table, table.scales, table.weights, ids, offsets)
    result: np.ndarray = native(table.table, table.scales, table.weights, ids, offsets)
    return result


TIER_SETTING = "embedding_tier"
TIERS = ("transformer", "static")


def static_first(config: dict[str, Any] | None) -> bool:
    """True when the configuration asks for the static tier first (`embedding_tier =
    "static"`, the default) and the provider is the local MiniLM, the model the table was distilled from
    (Voyage codes live in another space: no static tier for them)."""
    config = config or {}
    tier = config.get(TIER_SETTING) or "static"
    if tier not in TIERS:
        from maguyva.errors import ConfigError

        raise ConfigError(f"{TIER_SETTING} must be one of {', '.join(TIERS)}, got {tier!r}")
    return tier == "static" and (config.get("embedding_provider") or "local") == "local"


_SHARED: StaticProvider | None = None
_SHARED_LOCK = threading.Lock()


def shared_provider() -> StaticProvider:
    """The process-wide static provider, loaded on first use (the build's and the queries')."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = StaticProvider()
        return _SHARED


def static_embed_spans(root: str, paths: list[str], crcs: list[int],
                       spans: list[tuple[int, int, int]], heads: list[str], max_chars: int,
                       texts_of: Callable[[list[int]], list[str]]) -> Embeddings:  # fmt: skip
    """`static_embed` of texts cut from files (`StaticProvider.embed_spans`)."""
    provider = shared_provider()
    got = provider.embed_spans(root, paths, crcs, spans, heads, max_chars, texts_of)
    return provider.check_result(got, len(spans))


def static_embed(texts: list[str]) -> Embeddings:
    """Tier-1 codes and floats for `texts` (the hook the semantic build calls): same width and
    space as `MiniLMProvider`, so rows from both tiers go into one Hamming index, and a row
    embedded here is replaced when the transformer reaches its chunk."""
    provider = shared_provider()
    return provider.check_result(provider.embed(texts, "document"), len(texts))
