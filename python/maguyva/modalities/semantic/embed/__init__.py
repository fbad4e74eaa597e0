"""Embedding providers for the semantic modality.

- `EmbeddingProvider` / `ProviderIdentity` / `Embeddings` (base): the interface and the identity
  recorded in the index (an index never mixes models).
- `MiniLMProvider` (local): the offline default, no network, no key, no torch; it computes
  through an int8 graph derived once from the shipped weights (int8_graph).
- `VoyageProvider` (voyage): `voyage-code-3` `ubinary`, opt-in, needs `VOYAGE_API_KEY`.
- `StaticProvider`, `static_embed` (static): the fast tier distilled from MiniLM, same width.
- `EmbeddingCache` (cache): vectors by (model, content hash).
- `file_secret_reason` (secrets): which files are never sent to a remote provider.

Nothing here imports onnxruntime, tokenizers or voyageai until a model is actually used.
"""

from __future__ import annotations

import os
from typing import Any

from maguyva.errors import ConfigError, ProviderError
from maguyva.modalities.semantic.embed.base import (
    BIT_ORDER,
    EmbeddingProvider,
    Embeddings,
    ProviderIdentity,
    binarize,
)
from maguyva.modalities.semantic.embed.cache import EmbeddingCache, content_hash
from maguyva.modalities.semantic.embed.local import BATCH_SIZE, MAX_LENGTH, MiniLMProvider
from maguyva.modalities.semantic.embed.secrets import (
    file_secret_reason,
    is_secret_path,
    secret_reason,
)
from maguyva.modalities.semantic.embed.voyage import VoyageProvider

PROVIDERS = ("local", "voyage")

__all__ = [
    "BIT_ORDER",
    "PROVIDERS",
    "EmbeddingCache",
    "EmbeddingProvider",
    "Embeddings",
    "MiniLMProvider",
    "ProviderIdentity",
    "VoyageProvider",
    "binarize",
    "content_hash",
    "file_secret_reason",
    "is_secret_path",
    "make_provider",
    "secret_reason",
]


def make_provider(config: dict[str, Any] | None = None) -> EmbeddingProvider:
    """The provider the configuration asks for (`embedding_provider`, default "local").

    Choosing "voyage" is the user's opt-in to sending code out; it still needs
    `VOYAGE_API_KEY` in the environment (never in a file). Optional keys:
    `embedding_max_length`, `embedding_batch_size`, `embedding_threads` (local).
    """
    config = config or {}
    name = config.get("embedding_provider") or "local"
    if name == "local":
        return MiniLMProvider(
            max_length=int(config.get("embedding_max_length") or MAX_LENGTH),
            batch_size=int(config.get("embedding_batch_size") or BATCH_SIZE),
            threads=config.get("embedding_threads"),
        )
    if name == "voyage":
        if not os.environ.get("VOYAGE_API_KEY"):
            raise ProviderError(
                "embedding_provider is 'voyage' but VOYAGE_API_KEY is not set in the environment"
            )
        return VoyageProvider()
    raise ConfigError(f"embedding_provider must be one of {', '.join(PROVIDERS)}, got {name!r}")
