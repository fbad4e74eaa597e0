"""What is embedded for a chunk: its full text and its head (phase one), with their hashes.

Kept apart from the build so that tools (the dry run, distributed embedding, benches) embed
exactly the texts a build would, without importing the build."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from maguyva.modalities.semantic.dedup import KeyMemo, vector_keys
from maguyva.modalities.semantic.embed import ProviderIdentity
from maguyva.model import Chunk

HEAD_CHARS = 200
"""Phase one embeds a chunk's head: its header and the first lines of its text up to this many
characters (signature, start of the docstring), about 50 tokens: cheaper than a full
window (measured in docs/semantic.md)."""


def head_text(chunk: Chunk) -> str:
    """The head of a chunk (phase one): header, then whole lines of the text while they fit in
    `HEAD_CHARS` (at least the first line, cut)."""
    lines = chunk.text.split("\n")
    taken, size = [], 0
    for line in lines:
        if taken and size + len(line) + 1 > HEAD_CHARS:
            break
        taken.append(line[:HEAD_CHARS])
        size += len(line) + 1
    body = "\n".join(taken)
    return f"{chunk.header}\n{body}" if chunk.header else body


def embed_text(chunk: Chunk, identity: ProviderIdentity) -> str:
    """What is embedded for a chunk: header (path, name, signature) first, so a token window
    truncates the tail of the body, not the identity; cut long bodies before tokenising."""
    text = f"{chunk.header}\n{chunk.text}" if chunk.header else chunk.text
    limit = (identity.max_tokens or 8192) * 8
    return text[:limit]


@dataclass(frozen=True, slots=True)
class Planned:
    """A chunk to embed: the full text and its head (phase one), each with the key its
    vector is stored under (`dedup.vector_keys`: texts the model sees alike share one).
    `head is text` when the whole chunk is short enough to be its own head; `head_hash ==
    hash` also when the head alone fills the model's window. Only the chunk's id and whether
    it is a line window are kept, not the chunk (with its text)."""

    id: str
    lines: bool  # a line window (no definition), embedded after definitions
    text: str
    hash: str
    head: str
    head_hash: str


def plan_chunks(
    chunks: Iterable[Chunk], identity: ProviderIdentity, memo: KeyMemo | None = None
) -> list[Planned]:
    """Each chunk's texts and their vector keys (computed in one batch, `memo`: those
    known from earlier builds)."""
    rows = []
    for chunk in chunks:
        text = embed_text(chunk, identity)
        head = head_text(chunk)
        rows.append((chunk, text, text if len(head) >= len(text) else head))
    keys = iter(
        vector_keys(
            [t for _, text, head in rows for t in ((text,) if head is text else (text, head))],
            identity,
            memo,
        )
    )
    planned = []
    for chunk, text, head in rows:
        key = next(keys)
        planned.append(
            Planned(
                chunk.id,
                chunk.kind == "lines",
                text,
                key,
                head,
                key if head is text else next(keys),
            )
        )
    return planned  # fmt: skip


def plan_chunk(chunk: Chunk, identity: ProviderIdentity) -> Planned:
    return plan_chunks([chunk], identity)[0]
