"""Texts the model sees alike share one vector: equal texts (platform-conditional definitions,
the pattern that makes them in real code) and heads that fill the local model's window (their
full text's ids, `semantic.dedup`) are embedded once, counted in the report, status and dry
run, and stay valid when the chunk whose text was embedded is edited or deleted. Real files
(the standard library's json package plus such a module), the local model, real edits
through the indexer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from maguyva.api import Index
from maguyva.build.indexer import Indexer
from maguyva.config import effective_config
from maguyva.modalities.semantic.coverage import describe
from maguyva.modalities.semantic.dedup import (
    KeyMemo,
    heads_seen_as_bodies,
    keys_by_tokens,
    tokenizer,
)
from maguyva.modalities.semantic.embed import (
    MiniLMProvider,
    ProviderIdentity,
    content_hash,
)
from maguyva.modalities.semantic.modality import MODALITY
from maguyva.modalities.semantic.reader import read_rows
from maguyva.modalities.semantic.texts import embed_text, plan_chunks
from maguyva.modalities.structural.modality import extract_repository
from maguyva.repo.walk import walk_repository
from maguyva.scale.dryrun import dry_run, format_report
from maguyva.store.generations import IndexDir

STDLIB_JSON = Path(json.__file__).parent

COMPAT = '''"""Path helpers that differ by platform."""

import sys

if sys.platform == "win32":

    def normalise(path):
        """Lower-case a path and use the platform's separator."""
        return path.lower().replace("/", "\\\\")

    def split_drive(path):
        """The drive and the rest of a path."""
        return path[:2], path[2:]

else:

    def normalise(path):
        """Lower-case a path and use the platform's separator."""
        return path.lower().replace("/", "\\\\")

    def split_drive(path):
        """The drive and the rest of a path."""
        return "", path
'''
"""Two equal `normalise` chunks (one vector), two `split_drive` chunks that differ in what
they return (two vectors)."""

CFG = {"modalities": ["text", "semantic"], "semantic_phases": "full", "semantic_follows": False}
HEADS_FIRST = dict(CFG, semantic_phases="heads-first")


def _corpus(root: Path, compat: str = COMPAT) -> None:
    shutil.copytree(STDLIB_JSON, root / "json", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "json" / "compat.py").write_text(compat)


def _chunks(root: Path) -> list:
    values = effective_config(root, {}).values
    files = walk_repository(root, values).files
    return extract_repository(root, files, values, lambda *a: None)[1]


def _rows(root: Path) -> dict:
    return read_rows(IndexDir(root / ".maguyva").current().path / "semantic")


def _code_of(rows: dict, path: str, start: int) -> bytes:
    for i, (p, info) in enumerate(zip(rows["paths"], rows["info"], strict=True)):
        if p == path and info[0] == start:
            return bytes(rows["codes"][i * 48 : (i + 1) * 48])
    raise AssertionError(f"no row for {path}:{start}")


def test_heads_that_fill_the_window_are_their_bodies(tmp_path: Path) -> None:
    """The check's tokenizer gives the provider's own ids on every chunk of a real package; a
    head found to fill the window gets the bit-equal vector of its full text from the model;
    a head that does not, and any head of a provider that sees characters, is kept apart."""
    _corpus(tmp_path)
    provider = MiniLMProvider()
    identity = provider.identity
    chunks = _chunks(tmp_path)
    texts = [embed_text(c, identity) for c in chunks]
    _, theirs = provider._load(1)
    ours = tokenizer(int(identity.max_tokens or 0))
    assert [e.ids for e in theirs.encode_batch(texts)] == [e.ids for e in ours.encode_batch(texts)]
    planned = plan_chunks(chunks, identity)
    shorter = [p for p in planned if len(p.head) < len(p.text)]
    pairs = [(p.text, p.head) for p in shorter]
    seen = heads_seen_as_bodies(pairs, identity)
    assert seen == [p.head_hash == p.hash for p in shorter] and 0 < sum(seen) < len(seen)
    filled = [p for p, same in zip(shorter, seen, strict=True) if same]
    kept = [p for p, same in zip(shorter, seen, strict=True) if not same][:3]
    out = provider.embed([t for p in filled + kept for t in (p.text, p.head)], "document")
    assert out.floats is not None
    for i in range(len(filled)):
        assert np.array_equal(out.floats[2 * i], out.floats[2 * i + 1]), filled[i].head
    for i in range(len(filled), len(filled) + len(kept)):
        assert not np.array_equal(out.floats[2 * i], out.floats[2 * i + 1])
    voyage = ProviderIdentity("voyage", "voyage-code-3", 1024, max_tokens=32000)
    assert not keys_by_tokens(voyage) and heads_seen_as_bodies(pairs, voyage) == [False] * len(
        pairs
    )
    assert all(p.head_hash == content_hash(p.head) for p in plan_chunks(chunks, identity, heads=False)
               if len(p.head) < len(p.text))  # fmt: skip


def test_duplicates_embedded_once_counted_and_valid(tmp_path: Path) -> None:
    """The build embeds each key once (`new` = distinct keys), says how many chunks shared a
    vector (report, status coverage, dry run), and the duplicate's row holds the vector of its
    own text."""
    _corpus(tmp_path)
    provider = MiniLMProvider()
    planned = plan_chunks(_chunks(tmp_path), provider.identity)
    distinct = {p.hash for p in planned} | {p.head_hash for p in planned}
    assert len({p.hash for p in planned}) == len(planned) - 1  # the two `normalise`
    report = Indexer(tmp_path, config=HEADS_FIRST).update().modalities["semantic"]["report"]
    assert report["new"] == len(distinct) and report["embedded"] == len(planned)
    assert report["partial"] == 0
    # heads that already fill the window (a long signature twice: header and `def` line)
    filled = sum(1 for p in planned if len(p.head) < len(p.text) and p.head_hash == p.hash)
    assert filled > 0 and report["duplicates"] == {"texts": 1, "heads": filled}
    memo_file = tmp_path / ".maguyva" / "cache" / "embeddings" / "head-window.sqlite"
    heads = [content_hash(p.head) for p in planned if len(p.head) < len(p.text)]
    with KeyMemo(memo_file.parent, provider.identity, write=False) as memo:
        # the build remembered every head; a plan through the memo gives the same hashes
        assert sorted(memo.get(heads)) == sorted(set(heads))
        assert plan_chunks(_chunks(tmp_path), provider.identity, memo) == planned
    rows = _rows(tmp_path)
    first, second = (_code_of(rows, "json/compat.py", s) for s in (7, 17))
    compat = [p for p in planned if "function normalise" in p.text]
    assert len(compat) == 2 and compat[0].text == compat[1].text
    alone = provider.embed([compat[1].text], "document").codes[0].tobytes()
    assert first == second == alone
    drive = [_code_of(rows, "json/compat.py", s) for s in (11, 21)]
    assert drive[0] != drive[1]
    cov = Index.open(tmp_path).status()["modalities"]["semantic"]["coverage"]
    assert cov["duplicates"] == 1 + filled and cov["complete"]
    assert f"{1 + filled} duplicate texts share a vector" in describe(cov)
    dry = dry_run(tmp_path, dict(HEADS_FIRST), sample=0)
    assert dry.embedding["duplicates"] == {"texts": 1, "heads": filled}
    assert f"1 chunks and {filled} heads not embedded" in format_report(dry)


def test_owner_edited_then_deleted_duplicate_keeps_its_vector(tmp_path: Path) -> None:
    """The chunk whose text was embedded for both is edited, then deleted, through the
    long-running writer's incremental update: the other keeps a valid vector (its own text's),
    the update writes what a full plan from the same generation writes, fsck passes."""
    roots = [tmp_path / "a", tmp_path / "b"]
    for root in roots:
        _corpus(root)
    writers = [Indexer(root, config=CFG) for root in roots]
    for writer in writers:
        writer.update()
    provider = MiniLMProvider()
    dup_text = embed_text(next(c for c in _chunks(roots[0]) if c.start_line == 17
                               and c.path == "json/compat.py"), provider.identity)  # fmt: skip
    want = provider.embed([dup_text], "document").codes[0].tobytes()
    assert _code_of(_rows(roots[0]), "json/compat.py", 7) == want  # shared before the edits
    edited = COMPAT.replace('.replace("/", "\\\\")', '.replace("\\\\", "/")', 1)
    deleted = COMPAT.replace(
        '    def normalise(path):\n        """Lower-case a path and use the platform\'s '
        'separator."""\n        return path.lower().replace("/", "\\\\")\n\n',
        "",
        1,
    )
    assert edited != COMPAT and deleted != COMPAT and deleted.count("def normalise") == 1
    for step, text in enumerate((edited, deleted)):
        reports = []
        for n, (root, writer) in enumerate(zip(roots, writers, strict=True)):
            (root / "json" / "compat.py").write_text(text)
            if n == 1:  # writer b plans every chunk
                MODALITY._states.pop(str(root), None)
            reports.append(writer.update(hints=["json/compat.py"]).modalities["semantic"]["report"])
        assert [r["mode"] for r in reports] == ["incremental", "full"], step
        gen = IndexDir(roots[0] / ".maguyva").current().path
        assert MODALITY.verify(gen / "semantic") == []
        rows = _rows(roots[0])
        assert _code_of(rows, "json/compat.py", 17 if step == 0 else 13) == want, step
        assert reports[0]["duplicates"]["texts"] == 0
        if step == 0:  # the edited owner got a vector of its own
            assert reports[0]["new"] == 1 and _code_of(rows, "json/compat.py", 7) != want
        assert rows == _rows(roots[1]), f"step {step}: update differs from a full plan"
