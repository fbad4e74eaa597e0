"""The provider interface: what every embedding backend declares and returns.

A provider turns texts into packed binary codes (`uint8`, `dim / 8` bytes per text, the bit
order of Voyage's `ubinary` and `np.packbits`: dimension 0 is the most significant bit of byte
0), plus float vectors when it has them (used to rescore the Hamming top candidates). Its
`identity` is recorded in the index, and an index never mixes identities.
"""

from __future__ import annotations

import abc
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from maguyva.errors import ModelMismatchError

InputType = Literal["document", "query"]

BIT_ORDER = "msb-first"
"""`np.packbits` / Voyage `ubinary` order: dimension 0 is bit 7 of byte 0."""


@dataclass(frozen=True, slots=True)
class ProviderIdentity:
    """Everything that makes two sets of codes comparable. Two identities must be equal for an
    index built with one to be searched with the other."""

    provider: str  # "local" | "voyage" | ...
    model_id: str
    dim: int
    dtype: str = "ubinary"
    bit_order: str = BIT_ORDER
    sha256: str | None = None  # of the weights file, for local models
    centred: bool = False  # codes are sign(x - corpus mean); the mean is stored with the index
    max_tokens: int | None = None

    @property
    def width(self) -> int:
        """Bytes per packed code."""
        return self.dim // 8

    @property
    def cache_key(self) -> str:
        """Key prefix of the embedding cache: vectors are reusable only for the same model."""
        key = f"{self.provider}:{self.model_id}:{self.dim}:{self.sha256 or '-'}"
        # The token window changes the vector of a long text: never mix windows.
        return f"{key}:{self.max_tokens}" if self.max_tokens else key

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProviderIdentity:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})

    def check_same(self, other: ProviderIdentity, action: str) -> None:
        """Raise ModelMismatchError unless `other` produces comparable codes."""
        mine = (self.provider, self.model_id, self.dim, self.dtype, self.bit_order, self.sha256)
        theirs = (other.provider, other.model_id, other.dim, other.dtype, other.bit_order,
                  other.sha256)  # fmt: skip
        if mine != theirs:
            raise ModelMismatchError(
                f"cannot {action}: the index was built with {self.provider} model "
                f"{self.model_id!r} ({self.dim} dims), the configured provider is "
                f"{other.provider} model {other.model_id!r} ({other.dim} dims); "
                "rebuild the index (maguyva index) or switch embedding_provider back"
            )


@dataclass(slots=True)
class Embeddings:
    """Codes for `n` texts, and float vectors when the provider returns them."""

    codes: np.ndarray  # uint8, shape (n, dim / 8)
    floats: np.ndarray | None = None  # float32, shape (n, dim), L2-normalised
    tokens: int = 0  # tokens consumed (as counted by the provider)


def binarize(floats: np.ndarray, centre: np.ndarray | None = None) -> np.ndarray:
    """Sign bits packed MSB-first, like Voyage's `ubinary`: bit = (x - centre) > 0."""
    x = floats if centre is None else floats - centre
    return np.packbits(x > 0, axis=-1)


class EmbeddingProvider(abc.ABC):
    """A backend that embeds texts. Implementations load their model lazily (on the first
    `embed`), never at import or construction, so opening an index costs nothing."""

    #: True when texts leave the machine (secret filtering applies).
    remote: bool = False

    @property
    @abc.abstractmethod
    def identity(self) -> ProviderIdentity: ...

    @abc.abstractmethod
    def embed(self, texts: list[str], input_type: InputType) -> Embeddings:
        """Embed `texts`; raises `ProviderError` on failure (never a partial result)."""

    def count_tokens(self, texts: list[str]) -> int:
        """Tokens that `embed` would consume (estimate when the provider has no tokenizer)."""
        return sum(max(1, len(t) // 4) for t in texts)

    def check_result(self, result: Embeddings, n: int) -> Embeddings:
        """Reject a result of the wrong shape or dtype before anything is stored."""
        from maguyva.errors import ProviderError

        want = (n, self.identity.width)
        codes = result.codes
        if codes.dtype != np.uint8 or codes.shape != want:
            raise ProviderError(
                f"{self.identity.provider}: expected codes of shape {want} uint8, got "
                f"{codes.shape} {codes.dtype}; nothing was stored"
            )
        if result.floats is not None and result.floats.shape != (n, self.identity.dim):
            raise ProviderError(
                f"{self.identity.provider}: expected float vectors of shape "
                f"{(n, self.identity.dim)}, got {result.floats.shape}; nothing was stored"
            )
        return result
