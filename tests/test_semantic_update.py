"""A long-running writer's semantic update (only the changed files planned, the other files'
rows copied from the previous generation) writes exactly what a full plan over every chunk
writes from the same previous generation: same rows in the same order, same vectors, same
pending and partial chunks. Real files (the standard library's json package), the local model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from maguyva.build.indexer import Indexer
from maguyva.modalities.semantic.embed import EmbeddingCache, content_hash
from maguyva.modalities.semantic.modality import MODALITY
from maguyva.modalities.semantic.reader import pending_of, read_rows
from maguyva.modalities.semantic.texts import embed_text
from maguyva.store.chunks import ChunkStore
from maguyva.store.generations import IndexDir

STDLIB_JSON = Path(json.__file__).parent


def _files(gen: Path) -> dict[str, object]:
    """The generation's rows in logical order (whatever its segments), and what is pending."""
    d = gen / "semantic"
    meta = json.loads((d / "meta.json").read_text())
    pending, partial = pending_of(d)
    return {
        **read_rows(d),
        "pending_ids": pending,
        "partial_ids": partial,
        "phases": meta["phases"],
        "embedded": meta["embedded"],
    }


def _cache_from_elsewhere(root: Path, cfg: dict) -> None:
    """Put the vectors of the first 3 pending chunks into the index's cache, as another
    process would: a full plan uses them, so an update must see them too."""
    index = IndexDir(root / ".maguyva")
    gen = index.current().path
    chosen = pending_of(gen / "semantic")[0][:3]
    if not chosen:
        return
    store = ChunkStore.open(gen)
    provider = MODALITY._provider(cfg)
    texts = [embed_text(store.get(i), provider.identity) for i in chosen]
    with EmbeddingCache(index.cache_dir / "embeddings", provider.identity) as cache:
        cache.put_many([content_hash(t) for t in texts], provider.embed(texts, "document"))


def _edits(root: Path) -> list[tuple[str, ...]]:
    dec = (root / "json/decoder.py").read_text()
    scanner = (root / "json/scanner.py").read_text()
    return [
        ("write", "json/decoder.py", dec + "\n\ndef maguyva_added(x):\n    return x + 1\n"),
        ("write", "json/extra.py", "def extra_one(a, b):\n    '''Sum.'''\n    return a + b\n"),
        ("rename", "json/extra.py", "json/extra2.py"),
        # a chunk whose text another file already has (its vector exists: no embedding)
        ("write", "json/copy_of_scanner.py", scanner),
        ("delete", "json/tool.py"),
        ("write", "json/decoder.py", dec),
        ("write", "json/encoder.py", "# emptied\n"),
    ]


def _apply(root: Path, edit: tuple[str, ...]) -> list[str]:
    op, path = edit[0], edit[1]
    if op == "write":
        (root / path).write_text(edit[2])
        return [path]
    if op == "rename":
        (root / path).rename(root / edit[2])
        return [path, edit[2]]
    (root / path).unlink()
    return [path]


@pytest.mark.parametrize(
    "config",
    [
        {"semantic_phases": "heads", "semantic_max_chunks": 3},  # most chunks stay pending
        {"semantic_phases": "heads-first", "semantic_max_chunks": 4},
        {"semantic_phases": "full"},  # everything embedded
    ],
    ids=["heads-cap3", "heads-first-cap4", "full"],
)
def test_update_equals_full_plan(tmp_path: Path, config: dict) -> None:
    roots = [tmp_path / "a", tmp_path / "b"]
    for root in roots:
        shutil.copytree(STDLIB_JSON, root / "json", ignore=shutil.ignore_patterns("__pycache__"))
    # one semantic build per update (no never-gate slices): each update's plan is compared
    cfg = {"modalities": ["text", "semantic"], "semantic_follows": False, **config}
    writers = [Indexer(root, config=cfg) for root in roots]
    modes, pending = [], []
    for step, edit in enumerate([None, *_edits(roots[0])]):
        reports = []
        for n, (root, writer) in enumerate(zip(roots, writers, strict=True)):
            hints = _apply(root, edit) if edit is not None else None
            if n == 1:  # writer a updates from what it wrote; writer b plans every chunk
                MODALITY._states.pop(str(root), None)
            summary = writer.update(hints=hints) if step else writer.update()
            reports.append(summary.modalities["semantic"]["report"])
        modes.append(reports[0]["mode"])
        assert reports[1]["mode"] == "full"
        a, b = (_files(IndexDir(r / ".maguyva").current().path) for r in roots)
        for root in roots:  # fsck's check of the segments, path tables and counts
            assert MODALITY.verify(IndexDir(root / ".maguyva").current().path / "semantic") == []
        assert a == b, f"step {step} ({edit and edit[:2]}): update differs from a full plan"
        assert reports[0]["new"] == reports[1]["new"]
        assert reports[0]["pending"] == reports[1]["pending"]
        if step > 3:  # nobody else wrote to the cache: only the changed file's hashes asked
            asked = [r["cache_asked"] for r in reports]
            assert asked[0] < asked[1] or not pending[-1], asked
        pending.append(len(a["pending_ids"]) + len(a["partial_ids"]))
        if step == 2:  # vectors reach the cache from elsewhere (distributed embedding workers)
            for root in roots:
                _cache_from_elsewhere(root, cfg)
    assert modes[0] == "full" and set(modes[1:]) == {"incremental"}
    if "semantic_max_chunks" in config:
        assert min(pending) > 0, "the cap should leave chunks pending or partial"
    else:
        assert max(pending) == 0
