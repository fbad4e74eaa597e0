"""Voyage `voyage-code-3` through the official `voyageai` client, as packed `ubinary` codes.

Used only when the user opts in (`embedding_provider = "voyage"`) and `VOYAGE_API_KEY` is set.
Requests respect the API's limits (at most 1,000 texts and 120k tokens each, estimated
conservatively); 429, 5xx, timeouts and garbled bodies are retried a bounded number of times
with exponential backoff. The key is held only by the client: it never enters an error
message, a log record, the cache or the index (tests plant a canary key to check).
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from maguyva.errors import ProviderError
from maguyva.modalities.semantic.embed.base import (
    EmbeddingProvider,
    Embeddings,
    InputType,
    ProviderIdentity,
)

log = logging.getLogger("maguyva.modalities.semantic.embed.voyage")

ENV_KEY = "VOYAGE_API_KEY"
ENV_BASE_URL = "MAGUYVA_VOYAGE_BASE_URL"
MODEL = "voyage-code-3"
DIM = 1024
MAX_TEXTS = 1000
MAX_TOKENS = 120_000
CHARS_PER_TOKEN = 3  # conservative for code (over-estimates tokens, so batches stay legal)


class VoyageProvider(EmbeddingProvider):
    """Remote provider; thread-safe (the client keeps one HTTP session per thread)."""

    remote = True

    def __init__(
        self,
        api_key: str | None = None,
        *,
        model: str = MODEL,
        dim: int = DIM,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_attempts: int = 5,
        backoff: float = 1.0,
        max_texts: int = MAX_TEXTS,
        max_tokens: int = MAX_TOKENS,
    ) -> None:
        key = api_key if api_key is not None else os.environ.get(ENV_KEY)
        if not key:
            raise ProviderError(
                f"the voyage provider needs an API key: set {ENV_KEY} in the environment"
            )
        if dim % 8:
            raise ProviderError(f"dimension must be a multiple of 8, got {dim}")
        self._key = key
        self.model = model
        self.dim = dim
        self.base_url = base_url or os.environ.get(ENV_BASE_URL) or None
        self.timeout = timeout
        self.max_attempts = max(1, max_attempts)
        self.backoff = backoff
        self.max_texts = max_texts
        self.max_tokens = max_tokens
        self._client: Any = None

    def __repr__(self) -> str:  # never show the key
        return f"VoyageProvider(model={self.model!r}, dim={self.dim})"

    @property
    def identity(self) -> ProviderIdentity:
        return ProviderIdentity(provider="voyage", model_id=self.model, dim=self.dim,
                                max_tokens=32_000)  # fmt: skip

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                import voyageai
            except ImportError:
                raise ProviderError(
                    "the voyage provider needs its extra: pip install 'maguyva[voyage]'"
                ) from None
            # Retries are ours (bounded, with our backoff), so the client makes one attempt.
            self._client = voyageai.Client(
                api_key=self._key, max_retries=1, timeout=self.timeout, base_url=self.base_url
            )
        return self._client

    def count_tokens(self, texts: list[str]) -> int:
        return sum(max(1, len(t) // CHARS_PER_TOKEN) for t in texts)

    def batches(self, texts: list[str]) -> Iterator[tuple[int, int]]:
        """(start, end) ranges within the per-request text and token limits."""
        start, tokens = 0, 0
        for i, text in enumerate(texts):
            cost = max(1, len(text) // CHARS_PER_TOKEN)
            if i > start and (i - start >= self.max_texts or tokens + cost > self.max_tokens):
                yield start, i
                start, tokens = i, 0
            tokens += cost
        if start < len(texts):
            yield start, len(texts)

    def embed(self, texts: list[str], input_type: InputType) -> Embeddings:
        width = self.dim // 8
        if not texts:
            return Embeddings(np.zeros((0, width), np.uint8))
        parts, used = [], 0
        for start, end in self.batches(texts):
            codes, tokens = self._request(texts[start:end], input_type)
            parts.append(codes)
            used += tokens
        return self.check_result(Embeddings(np.concatenate(parts), None, used), len(texts))

    def _request(self, texts: list[str], input_type: InputType) -> tuple[np.ndarray, int]:
        client = self._get_client()  # first: a missing extra is a ProviderError naming it
        import voyageai.error as verr

        retryable = (verr.RateLimitError, verr.ServiceUnavailableError, verr.ServerError,
                     verr.Timeout, verr.APIConnectionError, verr.TryAgain)  # fmt: skip
        for attempt in range(1, self.max_attempts + 1):
            try:
                result = client.embed(texts, model=self.model, input_type=input_type,
                                      output_dtype="ubinary", output_dimension=self.dim)  # fmt: skip
                return self._decode(result.embeddings, len(texts)), int(result.total_tokens)
            except verr.AuthenticationError:
                raise ProviderError(
                    f"voyage rejected the API key (HTTP 401): check {ENV_KEY}"
                ) from None
            except (verr.InvalidRequestError, verr.MalformedRequestError) as exc:
                raise ProviderError(
                    f"voyage rejected the request (HTTP {exc.http_status}): {_safe(exc, self._key)}"
                ) from None
            except (*retryable, verr.APIError) as exc:
                why = f"{type(exc).__name__} (HTTP {getattr(exc, 'http_status', None)})"
            except (ValueError, KeyError, TypeError) as exc:  # garbled body
                why = f"bad response: {type(exc).__name__}"
            if attempt == self.max_attempts:
                raise ProviderError(
                    f"voyage request failed after {attempt} attempts: {why}"
                ) from None
            delay = self.backoff * 2 ** (attempt - 1) * (0.5 + random.random() / 2)
            log.warning("voyage attempt %d/%d failed: %s; retrying in %.2fs",
                        attempt, self.max_attempts, why, delay)  # fmt: skip
            time.sleep(delay)
        raise ProviderError("voyage request failed")  # unreachable: the loop returns or raises

    def _decode(self, rows: list[Any], n: int) -> np.ndarray:
        width = self.dim // 8
        if len(rows) != n or any(len(r) != width for r in rows):
            got = sorted({len(r) for r in rows}) if rows else []
            raise ProviderError(
                f"voyage returned {len(rows)} vectors of {got} bytes, expected {n} of {width} "
                f"(dimension {self.dim}); nothing was stored"
            )
        codes = np.asarray(rows, dtype=np.int64)
        if codes.min(initial=0) < 0 or codes.max(initial=0) > 255:
            raise ProviderError("voyage returned values outside uint8 for ubinary; nothing stored")
        return codes.astype(np.uint8)


def _safe(exc: Exception, key: str) -> str:
    """An API error's own message (the server's `detail`), without the key if echoed."""
    text = str(getattr(exc, "user_message", "") or exc)[:300]
    return text.replace(key, "[redacted]")
