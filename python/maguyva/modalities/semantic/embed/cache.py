"""Content-addressed embedding cache: re-indexing never re-embeds an unchanged chunk.

Keyed by (provider identity, sha256 of the exact embedded text), so a chunk that moves, or a
file that is renamed without edits, hits the cache; a different model never does. Stored in one
SQLite file (transactions make concurrent builds and interrupted runs safe); only vectors and
hashes are stored, never the text.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path

import numpy as np

from maguyva.modalities.semantic.embed.base import Embeddings, ProviderIdentity

SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model TEXT NOT NULL,
    content TEXT NOT NULL,
    code BLOB NOT NULL,
    floats BLOB,
    PRIMARY KEY (model, content)
) WITHOUT ROWID
"""


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class EmbeddingCache:
    """Vectors by (model, content hash). Float vectors are kept as float16 (rescoring only)."""

    def __init__(self, directory: Path, identity: ProviderIdentity) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / "vectors.sqlite"
        self.identity = identity
        self.model = identity.cache_key
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(SCHEMA)
        self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get_many(self, hashes: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
        """The cached (code, floats) of each hash found."""
        found: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
        width, dim = self.identity.width, self.identity.dim
        with self._lock:
            for start in range(0, len(hashes), 500):
                part = hashes[start : start + 500]
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT content, code, floats FROM vectors WHERE model = ? "
                    f"AND content IN ({marks})",
                    [self.model, *part],
                ).fetchall()
                for content, code, floats in rows:
                    if len(code) != width:
                        continue  # never trust a row of the wrong size
                    vec = None
                    if floats is not None and len(floats) == dim * 2:
                        vec = np.frombuffer(floats, dtype=np.float16).astype(np.float32)
                    found[content] = (np.frombuffer(code, dtype=np.uint8), vec)
        return found

    def put_many(self, hashes: list[str], result: Embeddings) -> None:
        rows = []
        for i, h in enumerate(hashes):
            floats = None
            if result.floats is not None:
                floats = result.floats[i].astype(np.float16).tobytes()
            rows.append((self.model, h, result.codes[i].tobytes(), floats))
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
            self._db.commit()

    def count(self) -> int:
        with self._lock:
            (n,) = self._db.execute(
                "SELECT COUNT(*) FROM vectors WHERE model = ?", [self.model]
            ).fetchone()
        return int(n)
