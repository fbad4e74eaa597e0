"""What is embedded for a chunk: its full text and its head (phase one), with their hashes.

Kept apart from the build so that tools (the dry run, distributed embedding, benches) embed
exactly the texts a build would, without importing the build."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from maguyva.modalities.semantic.dedup import KeyMemo, heads_seen_as_bodies
from maguyva.modalities.semantic.embed import ProviderIdentity, content_hash
from maguyva.model import Chunk

HEAD_CHARS = 200
"""Phase one embeds a chunk's head: its header and the first lines of its text up to this many
characters (signature, start of the docstring), about 50 tokens: cheaper than a full
window (measured in docs/semantic.md)."""

HEAD_SLACK = 80
"""A chunk whose full text is at most this many characters longer than its head (~20 tokens)
is its own head: its full text is embedded in the heads phase, once, instead of a head now and
the body later. On Django 5.2.8 that is 3,524 of 37,264 separate heads: 1.2 % more tokens in
the heads phase, 3.9 % fewer texts for full coverage, and those chunks have their final vector
at heads-only coverage (docs/semantic-heads.md). 0 is the rule before (a head apart unless the
text is no longer)."""


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
    `head is text` when the whole chunk is short enough to be its own head (`own_head`);
    `head_hash == hash` also when the model sees the head as the text (it fills the window:
    `dedup`). Only the chunk's id and whether it is a line window are kept, not the chunk
    (with its text)."""

    id: str
    lines: bool  # a line window (no definition), embedded after definitions
    text: str
    hash: str
    head: str
    head_hash: str


def own_head(text: str, head: str) -> str:
    """What a chunk embeds as its head: `text` itself (the same object: one key, one vector)
    when the head is not shorter by more than `HEAD_SLACK` characters, else `head`."""
    return text if len(text) - len(head) <= HEAD_SLACK else head


def plan_chunks(
    chunks: Iterable[Chunk], identity: ProviderIdentity, memo: KeyMemo | None = None,
    heads: bool = True,
) -> list[Planned]:  # fmt: skip
    """Each chunk's texts and their hashes; a head the model sees as its full text takes the
    text's hash (`dedup.heads_seen_as_bodies`; `heads`: look for them, `memo`: the heads
    looked at before)."""
    rows = []
    for chunk in chunks:
        text = embed_text(chunk, identity)
        head = head_text(chunk)
        rows.append((chunk, text, own_head(text, head)))
    shorter = [i for i, (_, text, head) in enumerate(rows) if head is not text]
    pairs = [(rows[i][1], rows[i][2]) for i in shorter] if heads else []
    seen = heads_seen_as_bodies(pairs, identity, memo)
    as_body = {i for i, same in zip(shorter, seen, strict=False) if same}
    planned = []
    for i, (chunk, text, head) in enumerate(rows):
        key = content_hash(text)
        head_key = key if head is text or i in as_body else content_hash(head)
        planned.append(Planned(chunk.id, chunk.kind == "lines", text, key, head, head_key))
    return planned


def plan_chunk(chunk: Chunk, identity: ProviderIdentity) -> Planned:
    return plan_chunks([chunk], identity)[0]
