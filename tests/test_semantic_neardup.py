"""Near-duplicate chunks share one vector (`semantic.dedup`): texts the local model sees as the
same token ids (whitespace, case, anything past its window) are embedded once. Real files (the
standard library's json package plus a module with platform-conditional definitions, the
pattern that makes such duplicates in real code), the local model, real edits through the
indexer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from maguyva.api import Index
from maguyva.build.indexer import Indexer
from maguyva.config import effective_config
from maguyva.modalities.semantic.coverage import describe
from maguyva.modalities.semantic.dedup import KeyMemo, keys_by_tokens, tokenizer, vector_keys
from maguyva.modalities.semantic.embed import (
    EmbeddingCache,
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
        return path.lower().replace("/",  "\\\\")

    def split_drive(path):
        """The drive and the rest of a path."""
        return "", path
'''
"""Two `normalise` chunks that differ only in whitespace (the same tokens to the model), two
`split_drive` chunks that differ in what they return (different vectors)."""

CFG = {"modalities": ["text", "semantic"], "semantic_phases": "full", "semantic_follows": False}


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


def test_keys_are_the_token_ids_the_model_runs_on(tmp_path: Path) -> None:
    """The key's tokenizer gives the provider's own ids on every chunk of a real package;
    texts with equal ids get bit-equal vectors from the model; a different word, a different
    key; a provider that sees the characters (Voyage) keys by the text's sha256."""
    _corpus(tmp_path)
    provider = MiniLMProvider()
    identity = provider.identity
    texts = [embed_text(c, identity) for c in _chunks(tmp_path)]
    _, theirs = provider._load(1)
    ours = tokenizer(int(identity.max_tokens or 0))
    assert [e.ids for e in theirs.encode_batch(texts)] == [e.ids for e in ours.encode_batch(texts)]
    base = "json/x.py: function load\ndef load(fp):\n    return loads(fp.read())"
    same = [
        "json/x.py: function load\ndef load(fp):\n\treturn   loads(fp.read())",
        "JSON/X.py: Function LOAD\ndef load(fp):\n    return loads(fp.read())",
    ]
    filled = base + " words" * 150  # past the window: what follows is not seen
    long = [filled + " pad" * 20, filled + " other" * 20]
    keys = vector_keys([base, *same, *long, base.replace("read", "readline")], identity)
    assert keys[0] == keys[1] == keys[2] and keys[3] == keys[4] and keys[0] != keys[5]
    out = provider.embed([base, *same, *long], "document")
    assert (out.codes[0] == out.codes[1]).all() and (out.codes[0] == out.codes[2]).all()
    assert (out.codes[3] == out.codes[4]).all() and out.floats is not None
    assert np.array_equal(out.floats[0], out.floats[2])
    assert np.array_equal(out.floats[3], out.floats[4])
    voyage = ProviderIdentity("voyage", "voyage-code-3", 1024, max_tokens=32000)
    assert not keys_by_tokens(voyage)
    assert vector_keys([base, same[0]], voyage) == [content_hash(base), content_hash(same[0])]


def test_duplicates_embedded_once_counted_and_valid(tmp_path: Path) -> None:
    """The build embeds each key once (`new` = distinct keys), says how many chunks shared a
    vector (report, status coverage, dry run), and the duplicate's row holds the vector of its
    own text."""
    _corpus(tmp_path)
    provider = MiniLMProvider()
    planned = plan_chunks(_chunks(tmp_path), provider.identity)
    distinct = {p.hash for p in planned}
    assert len(distinct) == len(planned) - 1  # the two `normalise`
    report = Indexer(tmp_path, config=CFG).update().modalities["semantic"]["report"]
    assert report["new"] == len(distinct) and report["embedded"] == len(planned)
    # heads that already fill the window (a long signature twice: header and `def` line)
    filled = sum(1 for p in planned if len(p.head) < len(p.text) and p.head_hash == p.hash)
    assert filled > 0 and report["duplicates"] == {"texts": 1, "heads": filled}
    memo_file = tmp_path / ".maguyva" / "cache" / "embeddings" / "token-keys.sqlite"
    with KeyMemo(memo_file.parent, provider.identity, write=False) as memo:
        assert memo.get([content_hash(p.text) for p in planned]) == {
            content_hash(p.text): p.hash for p in planned
        }  # the build remembered every key; a plan through the memo gives the same keys
        assert plan_chunks(_chunks(tmp_path), provider.identity, memo) == planned
    rows = _rows(tmp_path)
    first, second = (_code_of(rows, "json/compat.py", s) for s in (7, 16))
    compat = [p for p in planned if "function normalise" in p.text]
    assert len(compat) == 2 and compat[0].text != compat[1].text
    alone = provider.embed([compat[1].text], "document").codes[0].tobytes()
    assert first == second == alone
    drive = [_code_of(rows, "json/compat.py", s) for s in (11, 20)]
    assert drive[0] != drive[1]
    cov = Index.open(tmp_path).status()["modalities"]["semantic"]["coverage"]
    assert cov["duplicates"] == 1 + filled and cov["complete"]
    assert f"{1 + filled} duplicate texts share a vector" in describe(cov)
    dry = dry_run(tmp_path, dict(CFG), sample=0)
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
    dup_text = embed_text(next(c for c in _chunks(roots[0]) if c.start_line == 16
                               and c.path == "json/compat.py"), provider.identity)  # fmt: skip
    want = provider.embed([dup_text], "document").codes[0].tobytes()
    assert _code_of(_rows(roots[0]), "json/compat.py", 7) == want  # shared before the edits
    edited = COMPAT.replace('.replace("/", "\\\\")', '.replace("\\\\", "/")')
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
        assert _code_of(rows, "json/compat.py", 16 if step == 0 else 12) == want, step
        assert reports[0]["duplicates"]["texts"] == 0
        if step == 0:  # the edited owner got a vector of its own
            assert reports[0]["new"] == 1 and _code_of(rows, "json/compat.py", 7) != want
        assert rows == _rows(roots[1]), f"step {step}: update differs from a full plan"


def test_cache_keyed_by_text_is_still_used(tmp_path: Path) -> None:
    """Vectors cached under the text's sha256 (an index built before token keys) are found
    and copied under the token key: nothing is embedded again."""
    _corpus(tmp_path)
    provider = MiniLMProvider()
    planned = plan_chunks(_chunks(tmp_path), provider.identity)
    index = tmp_path / ".maguyva"
    texts = list({content_hash(p.text): p.text for p in planned}.items())
    with EmbeddingCache(index / "cache" / "embeddings", provider.identity) as cache:
        cache.put_many([h for h, _ in texts], provider.embed([t for _, t in texts], "document"))
    report = Indexer(tmp_path, config=CFG).update().modalities["semantic"]["report"]
    assert report["new"] == 0 and report["embedded"] == len(planned), report
    with EmbeddingCache(index / "cache" / "embeddings", provider.identity) as cache:
        assert len(cache.get_many(sorted({p.hash for p in planned}))) == len(
            {p.hash for p in planned}
        )
