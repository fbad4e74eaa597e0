"""Texts the local model sees alike get one vector: a chunk's head that already fills the
model's window is embedded as (and keyed like) the chunk's full text.

A vector is a function of what the model sees. The local transformer (`embed/local.py`) runs
on the token ids of its vendored WordPiece tokenizer, truncated to its window (126 tokens and
the two special ones), one text per run: a head (header, signature, the first lines up to
200 characters, `texts.head_text`) long enough to fill the window (a long signature, written
twice: in the header and on the `def` line) has the same ids as its full text, so the same
vector, bit for bit. Such a head takes its body's key: heads-first embeds that chunk once.
Keys stay the sha256 of the exact text (the cache and earlier indexes stay valid).

Measured and not used (docs/semantic.md, "Near-duplicate chunks"): keying every text by its
token ids (whitespace, case, the tail past the window) found 3 more full texts in Django's
53,112 chunks and 0 in the standard library's, for ~35 CPU-s of tokenizing; normalising
literals, comments, the path or identifiers changes what the model sees.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from maguyva.modalities.semantic.embed import ProviderIdentity, content_hash

log = logging.getLogger("maguyva.modalities.semantic.dedup")

SCHEME = "minilm-wordpiece-fills-window-v1"
"""What the memo's rows mean (with the window: a new window asks again)."""

ENCODE_BATCH = 1024

_TOKENIZERS: dict[int, Any] = {}
_LOCK = threading.Lock()


def _is_local_minilm(model_id: str) -> bool:
    """The shipped MiniLM under any of its graphs (weight-only, or int8-compute of any graph
    version): they differ in arithmetic, not in the tokenizer."""
    from maguyva.modalities.semantic.embed.local import MODEL_ID

    return model_id == MODEL_ID or model_id.startswith(f"{MODEL_ID}-compute")


def keys_by_tokens(identity: ProviderIdentity) -> bool:
    """Whether this provider's vector is a function of the local tokenizer's truncated ids."""
    return (
        identity.provider == "local"
        and _is_local_minilm(identity.model_id)
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


def _fills_window(heads: list[str], max_length: int) -> list[bool]:
    tok = tokenizer(max_length)
    encode = getattr(tok, "encode_batch_fast", tok.encode_batch)  # the same ids, no offsets
    out: list[bool] = []
    for start in range(0, len(heads), ENCODE_BATCH):
        out += [len(e.ids) >= max_length for e in encode(heads[start : start + ENCODE_BATCH])]
    return out


def same_ids(texts: list[str], heads: list[str], max_length: int) -> list[bool]:
    """Whether each head has its text's ids (truncated to `max_length`)."""
    tok = tokenizer(max_length)
    encode = getattr(tok, "encode_batch_fast", tok.encode_batch)
    out: list[bool] = []
    for start in range(0, len(texts), ENCODE_BATCH):
        a = encode(texts[start : start + ENCODE_BATCH])
        b = encode(heads[start : start + ENCODE_BATCH])
        out += [x.ids == y.ids for x, y in zip(a, b, strict=True)]
    return out


def heads_seen_as_bodies(
    pairs: list[tuple[str, str]], identity: ProviderIdentity, memo: KeyMemo | None = None
) -> list[bool]:
    """For each (full text, shorter head): whether the model sees the head as the full text
    (the head fills the window with the text's own ids). False for every pair of a provider
    that is not the local transformer. `memo` remembers, by the head's sha256, which heads
    fill the window (tokenizing a head costs ~0.2 ms, a lookup ~10 us)."""
    if not pairs or not keys_by_tokens(identity):
        return [False] * len(pairs)
    window = int(identity.max_tokens or 0)
    hashes = [content_hash(head) for _, head in pairs]
    known = memo.get(hashes) if memo is not None else {}
    todo = sorted({i for i, h in enumerate(hashes) if h not in known})
    if todo:
        filled = _fills_window([pairs[i][1] for i in todo], window)
        fresh = {hashes[i]: "1" if f else "0" for i, f in zip(todo, filled, strict=True)}
        if memo is not None:
            memo.put(fresh)
        known.update(fresh)
    full = [i for i, h in enumerate(hashes) if known[h] == "1"]
    out = [False] * len(pairs)
    equal = same_ids([pairs[i][0] for i in full], [pairs[i][1] for i in full], window)
    for i, same in zip(full, equal, strict=True):
        out[i] = same
    return out


class KeyMemo:
    """Whether each head fills the model's window, by the head's sha256
    (`<cache>/embeddings/head-window.sqlite`), so a build that plans every chunk again (a
    new process) tokenizes only new heads. Read-only when `write` is false (the dry run
    writes nothing)."""

    def __init__(self, directory: Path, identity: ProviderIdentity, write: bool = True) -> None:
        self.scheme = f"{SCHEME}:{identity.max_tokens}"
        self.write = write
        self._db: sqlite3.Connection | None = None
        path = Path(directory) / "head-window.sqlite"
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
            log.info("semantic: head-window memo not used: %s", exc)
            self._db = None

    def get(self, hashes: list[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        if self._db is None:
            return found
        try:
            for start in range(0, len(hashes), 500):
                part = hashes[start : start + 500]
                rows = self._db.execute(
                    f"SELECT text, key FROM head_window WHERE scheme = ? "
                    f"AND text IN ({','.join('?' * len(part))})", [self.scheme, *part],
                ).fetchall()  # fmt: skip
                found.update(rows)
        except sqlite3.Error as exc:
            log.info("semantic: head-window memo not read: %s", exc)
        return found

    def put(self, keys: dict[str, str]) -> None:
        if self._db is None or not self.write or not keys:
            return
        try:
            self._db.executemany(
                "INSERT OR REPLACE INTO head_window VALUES (?, ?, ?)",
                [(self.scheme, h, k) for h, k in keys.items()],
            )
            self._db.commit()
        except sqlite3.Error as exc:
            log.info("semantic: head-window memo not written: %s", exc)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> KeyMemo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


MEMO_SCHEMA = """
CREATE TABLE IF NOT EXISTS head_window (
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
