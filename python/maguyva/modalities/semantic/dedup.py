"""Which chunks share a vector: the key a text's vector is stored and looked up under.

A vector is a function of what the model sees, not of the text's characters. The local
transformer (`embed/local.py`) sees the token ids of its vendored WordPiece tokenizer,
truncated to its window, one text per run: the tokenizer lowercases, drops accents and
control characters and splits on any run of whitespace, and the window drops every token
after the 126th. Two texts with the same ids get the same vector, bit for bit, so for that
provider the key is the sha256 of the ids ("tokens"): whitespace, case and anything past the
window no longer make a second embedding. Any other provider (Voyage, whose tokenizer sees
case and whitespace; the static tier, which pools 128 tokens without the special ones) keys
by the sha256 of the exact text, as before ("exact").

Normalisations the model would see (literal values, comments, the path in the header,
identifiers) were measured and are not used: docs/semantic.md, "Near-duplicate chunks".
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from maguyva.modalities.semantic.embed import (
    EmbeddingCache,
    Embeddings,
    ProviderIdentity,
    content_hash,
)

log = logging.getLogger("maguyva.modalities.semantic.dedup")

TOKEN_KEY = b"maguyva-token-ids-v1\0"
"""Prefix of the hashed ids: a token key is never the sha256 of some text."""

ENCODE_BATCH = 1024

_TOKENIZERS: dict[int, Any] = {}
_LOCK = threading.Lock()


def _local_model_ids() -> tuple[str, ...]:
    from maguyva.modalities.semantic.embed.local import MODEL_ID

    return (MODEL_ID, f"{MODEL_ID}-compute")


def keys_by_tokens(identity: ProviderIdentity) -> bool:
    """Whether this provider's vector is a function of the local tokenizer's truncated ids."""
    return (
        identity.provider == "local"
        and identity.model_id in _local_model_ids()
        and bool(identity.max_tokens)
    )


def tokenizer(max_length: int) -> Any:
    """The local provider's tokenizer as it encodes a text (truncated to `max_length`, with
    its special tokens, no padding), loaded once per process and window."""
    with _LOCK:
        if max_length not in _TOKENIZERS:
            from maguyva.modalities.semantic.embed.static import load_tokenizer

            _TOKENIZERS[max_length] = load_tokenizer(max_length)
        return _TOKENIZERS[max_length]


def token_key(ids: Sequence[int]) -> str:
    return hashlib.sha256(TOKEN_KEY + np.asarray(ids, dtype=np.uint32).tobytes()).hexdigest()


def _tokenize(texts: list[str], identity: ProviderIdentity) -> list[str]:
    tok = tokenizer(int(identity.max_tokens or 0))
    encode = getattr(tok, "encode_batch_fast", tok.encode_batch)  # the same ids, no offsets
    keys: list[str] = []
    for start in range(0, len(texts), ENCODE_BATCH):  # an encoding holds ~10 kB
        keys += [token_key(e.ids) for e in encode(texts[start : start + ENCODE_BATCH])]
    return keys


def vector_keys(
    texts: list[str], identity: ProviderIdentity, memo: KeyMemo | None = None
) -> list[str]:
    """The key of each text's vector (see the module's docstring); `memo` remembers the
    token keys of texts seen before (tokenizing costs ~0.4 ms a chunk, a lookup ~10 us)."""
    if not texts or not keys_by_tokens(identity):
        return [content_hash(t) for t in texts]
    if memo is None:
        return _tokenize(texts, identity)
    hashes = [content_hash(t) for t in texts]
    known = memo.get(hashes)
    todo = sorted({i for i, h in enumerate(hashes) if h not in known})
    if todo:
        fresh = dict(zip((hashes[i] for i in todo), _tokenize([texts[i] for i in todo], identity),
                         strict=True))  # fmt: skip
        memo.put(fresh)
        known.update(fresh)
    return [known[h] for h in hashes]


class KeyMemo:
    """The token key of each text by its sha256 (`<cache>/embeddings/token-keys.sqlite`), so
    a build that plans every chunk again (a new process) tokenizes only the new texts.
    Read-only when `write` is false (the dry run writes nothing)."""

    def __init__(self, directory: Path, identity: ProviderIdentity, write: bool = True) -> None:
        self.scheme = f"{TOKEN_KEY.decode().rstrip(chr(0))}:{identity.max_tokens}"
        self.write = write
        self._db: sqlite3.Connection | None = None
        path = Path(directory) / "token-keys.sqlite"
        if not write and not path.exists():
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, timeout=30, check_same_thread=False)
            if write:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute(MEMO_SCHEMA)
                self._db.commit()
        except sqlite3.Error as exc:  # a memo is an optimisation: plan without it
            log.info("semantic: token-key memo not used: %s", exc)
            self._db = None

    def get(self, hashes: list[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        if self._db is None:
            return found
        try:
            for start in range(0, len(hashes), 500):
                part = hashes[start : start + 500]
                rows = self._db.execute(
                    f"SELECT text, key FROM token_keys WHERE scheme = ? "
                    f"AND text IN ({','.join('?' * len(part))})", [self.scheme, *part],
                ).fetchall()  # fmt: skip
                found.update(rows)
        except sqlite3.Error as exc:
            log.info("semantic: token-key memo not read: %s", exc)
        return found

    def put(self, keys: dict[str, str]) -> None:
        if self._db is None or not self.write or not keys:
            return
        try:
            self._db.executemany(
                "INSERT OR REPLACE INTO token_keys VALUES (?, ?, ?)",
                [(self.scheme, h, k) for h, k in keys.items()],
            )
            self._db.commit()
        except sqlite3.Error as exc:
            log.info("semantic: token-key memo not written: %s", exc)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> KeyMemo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


MEMO_SCHEMA = """
CREATE TABLE IF NOT EXISTS token_keys (
    scheme TEXT NOT NULL,
    text TEXT NOT NULL,
    key TEXT NOT NULL,
    PRIMARY KEY (scheme, text)
) WITHOUT ROWID
"""


def duplicates(items: Iterable[tuple[str, str, bool]]) -> dict[str, int]:
    """How many texts a build does not embed because another chunk's text has their key:
    `texts` (full texts) and `heads` (heads that are not their whole chunk, sharing the key
    of another head or of a full text, their own included when the head fills the window).
    `items`: (full key, head key, whether the head is shorter than the text) per chunk."""
    full: set[str] = set()
    heads: set[str] = set()
    n = separate = 0
    for key, head_key, shorter in items:
        n += 1
        full.add(key)
        if shorter:
            separate += 1
            heads.add(head_key)
    return {"texts": n - len(full), "heads": separate - len(heads - full)}


def by_text_hash(
    cache: EmbeddingCache, wanted: dict[str, str], identity: ProviderIdentity
) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    """Vectors of `wanted` ({key: one of its texts}) that the cache holds under the text's
    sha256, the key before token keys (an index or cache built by an earlier version, a
    worker that keys by text), copied under their token key so the next lookup finds them
    directly. Nothing for a provider keyed by text already."""
    if not wanted or not keys_by_tokens(identity):
        return {}
    by_hash = {content_hash(text): key for key, text in wanted.items()}
    found = cache.get_many(sorted(by_hash))
    if not found:
        return {}
    got = {by_hash[h]: vec for h, vec in found.items()}
    keys = sorted(got)
    floats = [got[k][1] for k in keys]
    cache.put_many(keys, Embeddings(
        np.stack([got[k][0] for k in keys]),
        None if any(f is None for f in floats) else np.stack(floats),  # type: ignore[arg-type]
    ))  # fmt: skip
    return got
