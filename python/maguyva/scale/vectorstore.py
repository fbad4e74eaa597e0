"""Where binary embedding codes live and how they are searched: the local Hamming index (the
default: codes in memory, SIMD popcount scan in Rust) or LanceDB (a shared store on a local
directory or object storage, `s3://...`, `gs://...`, searched by Hamming distance).

Both answer the same question the same way: exact top-k by Hamming distance, ties broken by
insertion order (`seq`), as `(ids, distances)` arrays like `_core.hamming_topk`. Ids are the
caller's int64 ids (a chunk's row, a content-hash prefix...). docs/scale.md says when to move
from one to the other, with measurements (`benches/bench_scale.py`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from maguyva import _core
from maguyva.errors import MaguyvaError


class VectorStore(Protocol):
    """Binary codes by id, searched exactly by Hamming distance."""

    width: int

    def add(self, ids: Sequence[int] | np.ndarray, codes: np.ndarray) -> None:
        """Append `codes` (uint8, shape (n, width)) under `ids` (n distinct int64, new)."""
        ...

    def delete(self, ids: Sequence[int]) -> int:
        """Remove ids; returns how many were present."""
        ...

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k of one query (uint8, shape (width,)): (ids int64, distances int32), sorted by
        distance, ties by insertion order."""
        ...

    def __len__(self) -> int: ...


def _check_codes(codes: np.ndarray, width: int) -> np.ndarray:
    codes = np.asarray(codes)
    if codes.dtype != np.uint8 or codes.ndim != 2 or codes.shape[1] != width:
        raise ValueError(f"codes must be uint8 of shape (n, {width}), got {codes.dtype} "
                         f"{codes.shape}")  # fmt: skip
    return np.ascontiguousarray(codes)


def _check_query(query: np.ndarray, width: int) -> np.ndarray:
    query = np.asarray(query)
    if query.dtype != np.uint8 or query.shape != (width,):
        raise ValueError(f"query must be uint8 of shape ({width},), got {query.dtype} "
                         f"{query.shape}")  # fmt: skip
    return np.ascontiguousarray(query)


class LocalHammingStore:
    """The default: `_core.HammingIndex` (rows in memory, tombstones for deletes) plus the
    row -> id map. Thread-safe."""

    def __init__(self, width: int) -> None:
        self.width = width
        self._index = _core.HammingIndex(width)
        self._ids: list[int] = []  # row -> id
        self._rows: dict[int, int] = {}  # live id -> row
        self._lock = threading.Lock()

    def add(self, ids: Sequence[int] | np.ndarray, codes: np.ndarray) -> None:
        codes = _check_codes(codes, self.width)
        ids = [int(i) for i in ids]
        if len(ids) != len(codes):
            raise ValueError(f"{len(ids)} ids for {len(codes)} codes")
        with self._lock:
            clash = [i for i in ids if i in self._rows]
            if clash or len(set(ids)) != len(ids):
                raise MaguyvaError(f"vector store: id {clash[0] if clash else ids} already present")
            first = self._index.add(codes)
            for offset, i in enumerate(ids):
                self._rows[i] = first + offset
            self._ids.extend(ids)

    def delete(self, ids: Sequence[int]) -> int:
        with self._lock:
            rows = [self._rows.pop(int(i)) for i in ids if int(i) in self._rows]
            if rows:
                self._index.delete(rows)
            return len(rows)

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        query = _check_query(query, self.width)
        if k <= 0 or not self._rows:
            return np.zeros(0, np.int64), np.zeros(0, np.int32)
        rows, dists = self._index.search(query, k)
        with self._lock:
            ids = np.array([self._ids[r] for r in rows], dtype=np.int64)
        return ids, np.asarray(dists, dtype=np.int32)

    def __len__(self) -> int:
        return len(self._rows)


class LanceDBStore:
    """Codes in a LanceDB table: `uri` is a directory or an object-store URL (credentials come
    from the environment, as LanceDB reads them). Search is LanceDB's exact scan with the
    `hamming` distance; several processes or machines can share one table.

    Columns: `id` int64, `seq` int64 (insertion order, the tie-break), `vector`
    fixed_size_list<uint8>[width].

    `exact=True` (default) always scans, like the local index. After `create_index()` an
    `exact=False` store searches LanceDB's IVF_FLAT index (approximate: `nprobes` partitions
    of it), which is what makes tens of millions of shared vectors affordable."""

    def __init__(
        self,
        uri: str | Path,
        width: int,
        *,
        table: str = "codes",
        exact: bool = True,
        nprobes: int = 16,
    ) -> None:
        try:
            import lancedb
            import pyarrow as pa
        except ImportError as exc:
            raise MaguyvaError(
                "the LanceDB vector store needs `pip install 'maguyva[scale]'` (lancedb)"
            ) from exc
        self._pa = pa
        self.width = width
        self.uri = str(uri)
        self._db = lancedb.connect(self.uri)
        self._schema = pa.schema([
            pa.field("id", pa.int64()),
            pa.field("seq", pa.int64()),
            pa.field("vector", pa.list_(pa.uint8(), width)),
        ])  # fmt: skip
        if table in _table_names(self._db):
            self._table = self._db.open_table(table)
            field = self._table.schema.field("vector").type
            if getattr(field, "list_size", None) != width:
                raise MaguyvaError(f"{self.uri}/{table}: holds codes of another width ({field})")
        else:
            self._table = self._db.create_table(table, schema=self._schema)
        self._lock = threading.Lock()
        self.exact = exact
        self.nprobes = nprobes

    def create_index(self, num_partitions: int | None = None) -> None:
        """Build LanceDB's IVF_FLAT index with the hamming metric (used when `exact=False`)."""
        n = len(self)
        parts = num_partitions or max(1, min(4096, int(n**0.5)))
        try:
            from lancedb.index import IvfFlat
        except ImportError:  # lancedb < 0.20: the older keyword form
            with self._lock:
                self._table.create_index(metric="hamming", vector_column_name="vector",
                                         index_type="IVF_FLAT", num_partitions=parts)  # fmt: skip
            return
        with self._lock:
            # the column goes first in this form (lancedb's documented migration)
            self._table.create_index(
                "vector", config=IvfFlat(distance_type="hamming", num_partitions=parts)
            )

    def _next_seq(self) -> int:
        if self._table.count_rows() == 0:
            return 0
        column = self._table.to_arrow().column("seq")
        return int(self._pa.compute.max(column).as_py()) + 1

    def add(self, ids: Sequence[int] | np.ndarray, codes: np.ndarray) -> None:
        codes = _check_codes(codes, self.width)
        ids_arr = np.asarray(ids, dtype=np.int64)
        if len(ids_arr) != len(codes):
            raise ValueError(f"{len(ids_arr)} ids for {len(codes)} codes")
        if len(ids_arr) == 0:
            return
        pa = self._pa
        with self._lock:
            start = self._next_seq()
            data = pa.table(
                {
                    "id": ids_arr,
                    "seq": np.arange(start, start + len(ids_arr), dtype=np.int64),
                    "vector": pa.FixedSizeListArray.from_arrays(
                        pa.array(codes.reshape(-1), type=pa.uint8()), self.width
                    ),
                },
                schema=self._schema,
            )
            self._table.add(data)

    def delete(self, ids: Sequence[int]) -> int:
        wanted = sorted({int(i) for i in ids})
        if not wanted:
            return 0
        with self._lock:
            before = self._table.count_rows()
            self._table.delete(f"id IN ({', '.join(map(str, wanted))})")
            return before - self._table.count_rows()

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        query = _check_query(query, self.width)
        total = len(self)
        if k <= 0 or total == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int32)
        fetch = min(total, 2 * k + 32)
        while True:
            search = self._table.search(query).distance_type("hamming")
            search = search.bypass_vector_index() if self.exact else search.nprobes(self.nprobes)
            found = search.select(["id", "seq", "_distance"]).limit(fetch).to_arrow()
            dist = found.column("_distance").to_numpy().astype(np.int64)
            seq = found.column("seq").to_numpy()
            ids = found.column("id").to_numpy()
            order = np.lexsort((seq, dist))
            # Exact ties: every row at the k-th distance must be in the window, else widen it.
            complete = (
                not self.exact
                or fetch >= total
                or (len(order) > k and dist[order[-1]] > dist[order[k - 1]])
            )
            if complete:
                top = order[:k]
                return ids[top].astype(np.int64), dist[top].astype(np.int32)
            fetch = min(total, fetch * 4)

    def __len__(self) -> int:
        return int(self._table.count_rows())


def _table_names(db: Any) -> list[str]:
    listing = db.list_tables() if hasattr(db, "list_tables") else db.table_names()
    return list(getattr(listing, "tables", listing))


def open_store(kind: str = "local", *, width: int, uri: str | Path | None = None) -> VectorStore:
    """`local` (default) or `lancedb` (needs `uri`)."""
    if kind == "local":
        return LocalHammingStore(width)
    if kind == "lancedb":
        if uri is None:
            raise MaguyvaError("the lancedb vector store needs a uri (directory or s3://...)")
        return LanceDBStore(uri, width)
    raise MaguyvaError(f"vector store must be 'local' or 'lancedb', got {kind!r}")


__all__ = ["LanceDBStore", "LocalHammingStore", "VectorStore", "open_store"]
