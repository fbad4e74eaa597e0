"""One file's extraction and chunks as the bytes the index stores, made in the worker.

A worker used to send its results as nested tuples; the indexer then rebuilt every
definition, call, reference and chunk as an object only to encode it again as JSON (for Django,
about 4 CPU-seconds in the one parent process against 12 in the two workers). Encoding in the
worker sends two byte strings instead, and the parent writes them as they are. The bytes are
exactly those of `store.extraction.encode_extraction` dumped with `sealed.dumps_json` and of
`store.extraction.encode_chunks` (tests/test_extract_records.py holds them equal; this stage
cannot import `store`).
"""

from __future__ import annotations

import dataclasses
import json
import operator
from typing import Any

from maguyva.extract.types import Call, Definition, FileExtraction, Import, Reference
from maguyva.model import Chunk

_CHUNK_FIELDS = tuple(f.name for f in dataclasses.fields(Chunk))
_ROW_KINDS = (Definition, Import, Call, Reference)
_ROW_FIELDS = tuple(operator.attrgetter(*kind.__slots__) for kind in _ROW_KINDS)


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()


def extraction_bytes(ex: FileExtraction) -> bytes:
    """`[language, definitions, imports, calls, references, error]`, each record a row of
    its fields in declaration order (tuples, which JSON writes as the same lists)."""
    definition, imp, call, ref = _ROW_FIELDS
    return _dumps([ex.language, list(map(definition, ex.definitions)), list(map(imp, ex.imports)),
                   list(map(call, ex.calls)), list(map(ref, ex.references)), ex.error])  # fmt: skip


def chunk_order(chunks: list[Chunk]) -> tuple[list[Chunk], list[int] | None]:
    """The chunks in stored order (path, lines, id), and where each chunk as produced sits
    in it (None when the order is already the same)."""
    keyed = sorted(range(len(chunks)), key=lambda i: _chunk_key(chunks[i]))
    if keyed == list(range(len(chunks))):
        return chunks, None
    position = [0] * len(chunks)
    for place, i in enumerate(keyed):
        position[i] = place
    return [chunks[i] for i in keyed], position


def _chunk_key(c: Chunk) -> tuple[str, int, int, str]:
    return c.path, c.start_line, c.end_line, c.id


def chunk_bytes(ordered: list[Chunk]) -> bytes:
    """One JSON object per chunk and line, fields in declaration order (`ordered` sorted)."""
    dumps, fields = json.dumps, _CHUNK_FIELDS
    return b"".join(
        dumps({f: getattr(c, f) for f in fields}, ensure_ascii=False).encode() + b"\n"
        for c in ordered
    )


def decode_extraction(path: str, data: bytes) -> FileExtraction:
    """The inverse of `extraction_bytes`."""
    language, defs, imports, calls, refs, error = json.loads(data)
    definition, imp, call, ref = _ROW_KINDS
    return FileExtraction(
        path, language, [definition(*r) for r in defs], [imp(*r) for r in imports],
        [call(*r) for r in calls], [ref(*r) for r in refs], error,
    )  # fmt: skip


def decode_chunks(data: bytes, order: list[int] | None) -> list[Chunk]:
    """The inverse of `chunk_bytes`, back in the order the chunker produced."""
    loads = json.loads
    stored = [Chunk(**loads(line)) for line in data.splitlines()]
    return stored if order is None else [stored[place] for place in order]
