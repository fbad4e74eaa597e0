"""The CPU a heads build spends beside the model (issue 17): a slice of a first build embeds
pending chunks of files it did not plan, and their texts come back without tokenizing (the
window check ran when the chunk was first planned). Real chunks of the standard library's
json package, the local provider's identity."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from maguyva.build.indexer import Indexer
from maguyva.config import effective_config
from maguyva.errors import CorruptIndexError
from maguyva.modalities.semantic import dedup, planning
from maguyva.modalities.semantic.embed import MiniLMProvider, content_hash
from maguyva.modalities.semantic.planning import text_of
from maguyva.modalities.semantic.queue import entry_of
from maguyva.modalities.semantic.reader import read_rows
from maguyva.modalities.semantic.texts import HEAD_SLACK, head_text, own_head, plan_chunks
from maguyva.modalities.structural.modality import extract_repository
from maguyva.repo.walk import walk_repository
from maguyva.store.generations import IndexDir

STDLIB_JSON = Path(json.__file__).parent


class _Chunks(list):  # type: ignore[type-arg]
    def of_paths(self, paths: list[str]) -> list[Any]:
        return [c for c in self if c.path in paths]


def test_pending_texts_come_back_without_tokenizing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(STDLIB_JSON, tmp_path / "json", ignore=shutil.ignore_patterns("__pycache__"))
    values = effective_config(tmp_path, {}).values
    files = walk_repository(tmp_path, values).files
    chunks = _Chunks(extract_repository(tmp_path, files, values, lambda *a: None)[1])
    identity = MiniLMProvider().identity
    planned = plan_chunks(chunks, identity)  # with the window check, as a full plan does
    as_body = [p for p in planned if p.head_hash == p.hash and len(p.head) < len(p.text)]
    own = [p for p in planned if p.head_hash != p.hash]
    assert as_body and own

    def no_tokenizing(*args: Any) -> Any:
        raise AssertionError("tokenized again")

    monkeypatch.setattr(dedup, "_fills_window", no_tokenizing)
    monkeypatch.setattr(dedup, "same_ids", no_tokenizing)
    by_id = {c.id: c for c in chunks}
    ctx = SimpleNamespace(chunks=chunks, config={"semantic_phases": "heads"})
    for p in as_body + own:
        e = entry_of(by_id[p.id], p)
        texts: dict[str, Any] = {}  # not planned in this build: an unchanged file's chunk
        head = text_of(ctx, texts, (p.head_hash, e, True), identity)  # type: ignore[arg-type]
        assert content_hash(head) == p.head_hash  # the text the key names
        assert text_of(ctx, texts, (p.hash, e, False), identity) == p.text  # type: ignore[arg-type]
        with pytest.raises(CorruptIndexError):
            text_of(ctx, texts, (content_hash("other"), e, True), identity)  # type: ignore[arg-type]


def test_the_provider_tokenizes_without_offsets_to_the_same_ids() -> None:
    """`embed` tokenizes with `encode_batch_fast` (no offsets): the ids of `encode_batch`."""
    texts = [p.read_text(encoding="utf-8")[:2000] for p in sorted(STDLIB_JSON.glob("*.py"))]
    texts += ["", "x", '  def f(a, b):\n    """Äpfel — naïve café."""', "\t\n" * 50]
    _, tokenizer = MiniLMProvider()._load(1)
    fast = [e.ids for e in tokenizer.encode_batch_fast(texts)]
    assert fast == [e.ids for e in tokenizer.encode_batch(texts)]
    assert max(len(ids) for ids in fast) == 128  # truncated to the window, as a run sees it


def test_runs_of_one_text_tokenize_their_own_text_on_their_thread() -> None:
    """With one text per run (the default) each run tokenizes its text on the embedding
    worker's thread (never the tokenizer's own pool): the ids and tokens of one batch call."""
    texts = [p.read_text(encoding="utf-8")[:600] for p in sorted(STDLIB_JSON.glob("*.py"))]
    provider = MiniLMProvider(threads=2)
    _, tokenizer = provider._load(1)
    calls: list[tuple[int, str]] = []

    class Recording:
        def encode_batch_fast(self, batch: list[str]) -> Any:
            calls.append((len(batch), threading.current_thread().name))
            return tokenizer.encode_batch_fast(batch)

    provider._tokenizer = Recording()
    result = provider.embed(texts, "document")
    assert result.tokens == sum(len(e.ids) for e in tokenizer.encode_batch_fast(texts))
    assert len(calls) == len(texts) and all(n == 1 for n, _ in calls)
    assert all(name.startswith("maguyva-embed") for _, name in calls)
    again = MiniLMProvider(threads=1).embed(texts, "document")  # one thread, its own tokenizer
    assert result.floats is not None and again.floats is not None
    np.testing.assert_array_equal(result.floats, again.floats)


class _NoPlanning(list):  # type: ignore[type-arg]
    def of_paths(self, paths: list[str]) -> list[Any]:
        raise AssertionError("a file was planned again")


def test_slices_take_the_planned_texts_without_planning_files_again(tmp_path: Path) -> None:
    """A plan keeps its texts for the slices that embed them (`PendingTexts`): a slice finds
    each queued text by its key without planning its file again, takes it once, and a key
    not kept (taken, or never planned) plans the file again, as before."""
    shutil.copytree(STDLIB_JSON, tmp_path / "json", ignore=shutil.ignore_patterns("__pycache__"))
    values = effective_config(tmp_path, {}).values
    files = walk_repository(tmp_path, values).files
    chunks = _Chunks(extract_repository(tmp_path, files, values, lambda *a: None)[1])
    provider = MiniLMProvider()
    config = {"semantic_phases": "heads"}
    ctx = SimpleNamespace(chunks=chunks, config=config, cache_dir=tmp_path / "cache")
    eligible = planning.plan(ctx, provider)["eligible"]  # type: ignore[arg-type]
    by_id = {c.id: c for c in chunks}
    slice_ctx = SimpleNamespace(chunks=_NoPlanning(), config=config)
    for p in eligible:
        e = entry_of(by_id[p.id], p)
        if p.head_hash != p.hash:
            head = text_of(slice_ctx, {}, (p.head_hash, e, True), provider.identity)  # type: ignore[arg-type]
            assert head == p.head
        assert text_of(slice_ctx, {}, (p.hash, e, False), provider.identity) == p.text  # type: ignore[arg-type]
    p = eligible[0]
    with pytest.raises(AssertionError, match="planned again"):  # taken: the file is planned
        text_of(slice_ctx, {}, (p.hash, entry_of(by_id[p.id], p), False), provider.identity)  # type: ignore[arg-type]
    ctx.chunks = _Chunks(chunks)
    assert text_of(ctx, {}, (p.hash, entry_of(by_id[p.id], p), False), provider.identity) == p.text  # type: ignore[arg-type]
    dry = SimpleNamespace(chunks=chunks, config=config, cache_dir=tmp_path / "cache")
    before = len(planning.PENDING)
    planning.plan(dry, provider, write_memo=False)  # type: ignore[arg-type]  # a dry run keeps none
    assert len(planning.PENDING) == before


def test_pending_texts_stay_within_their_limit() -> None:
    kept = planning.PendingTexts(limit=10)
    made = [SimpleNamespace(hash=f"t{i}", text="x" * 4, head_hash=f"h{i}", head="y" * 2)
            for i in range(3)]  # fmt: skip
    kept.add(made, heads=True)  # type: ignore[arg-type]
    # the oldest left first, and the full texts are older than the heads (embedded first)
    assert kept.size <= 10 and kept.take("t0") is None and kept.take("t1") is None
    assert [kept.take(f"h{i}") for i in range(3)] == ["yy"] * 3
    assert kept.take("t2") == "xxxx" and kept.take("t2") is None


def test_a_chunk_a_little_longer_than_its_head_is_embedded_once(tmp_path: Path) -> None:
    """A chunk whose full text is at most `HEAD_SLACK` characters longer than its head is its
    own head (`texts.own_head`): a heads build embeds its full text (the row holds that text's
    vector, bit for bit, as a short chunk's does), and the build that completes coverage
    embeds only the bodies of the chunks whose head was embedded apart (the rest come from
    the embedding cache)."""
    shutil.copytree(STDLIB_JSON, tmp_path / "json", ignore=shutil.ignore_patterns("__pycache__"))
    values = effective_config(tmp_path, {}).values
    files = walk_repository(tmp_path, values).files
    chunks = extract_repository(tmp_path, files, values, lambda *a: None)[1]
    provider = MiniLMProvider()
    planned = plan_chunks(chunks, provider.identity)
    by_id = {c.id: c for c in chunks}
    longer = {p.id: len(p.text) - len(head_text(by_id[p.id])) for p in planned}
    slack = [p for p in planned if 0 < longer[p.id] <= HEAD_SLACK]
    apart = [p for p in planned if longer[p.id] > HEAD_SLACK]
    assert slack and apart
    assert all(p.head is p.text and p.head_hash == p.hash for p in slack)
    assert all(p.head == head_text(by_id[p.id]) for p in apart)
    assert own_head("abc", "abc"[:1]) == "abc" and own_head("x" * 200, "x") == "x"

    heads = {"modalities": ["text", "semantic"], "semantic_phases": "heads",
             "semantic_follows": False}  # fmt: skip
    report = Indexer(tmp_path, config=heads).update().modalities["semantic"]["report"]
    assert report["new"] == len({p.head_hash for p in planned})
    rows = read_rows(IndexDir(tmp_path / ".maguyva").current().path / "semantic")
    at = {(path, info[0]): i for i, (path, info) in enumerate(zip(rows["paths"], rows["info"], strict=True))}  # fmt: skip
    want = provider.embed([p.text for p in slack], "document").codes
    for p, code in zip(slack, want, strict=True):
        c = by_id[p.id]
        i = at[(c.path, c.start_line)]
        assert bytes(rows["codes"][i * 48 : (i + 1) * 48]) == code.tobytes(), c.name

    full = dict(heads, semantic_phases="full")  # every vector from the cache but the bodies
    report = Indexer(tmp_path, config=full).update(rebuild=True).modalities["semantic"]["report"]
    bodies = {p.hash for p in planned} - {p.head_hash for p in planned}
    assert report["new"] == len(bodies) and not any(p.hash in bodies for p in slack)
