"""What is embedded for a chunk: its full text and its head (phase one), with their hashes.

Kept apart from the build so that tools (the dry run, distributed embedding, benches) embed
exactly the texts a build would, without importing the build."""

from __future__ import annotations

from dataclasses import dataclass

from maguyva.modalities.semantic.embed import ProviderIdentity, content_hash
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
    """A chunk to embed: the full text and its head (phase one), each with its content hash.
    `head is text` when the whole chunk is short enough to be its own head. Only the chunk's
    id and whether it is a line window are kept, not the chunk (with its text)."""

    id: str
    lines: bool  # a line window (no definition), embedded after definitions
    text: str
    hash: str
    head: str
    head_hash: str


def plan_chunk(chunk: Chunk, identity: ProviderIdentity) -> Planned:
    text = embed_text(chunk, identity)
    head = head_text(chunk)
    head = text if len(head) >= len(text) else head
    return Planned(chunk.id, chunk.kind == "lines", text, content_hash(text), head,
                   content_hash(head))  # fmt: skip
