"""Semantic segments (format 2): a long-running writer's update writes only the changed files'
rows (a delta segment) and tombstones their previous rows; readers search the base and the
deltas. Property: after every step of a random sequence of edits, additions, deletions and
renames, the searcher of the updated index answers exactly what the searcher of a from-scratch
build answers (same hits, same order, same scores), through deltas, compactions and folds.
Real files (the standard library's json package and two modules), the local model."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from maguyva.build.fsck import fsck
from maguyva.build.indexer import Indexer, build_index
from maguyva.modalities.protocol import RetrieverQuery
from maguyva.modalities.semantic import layout
from maguyva.modalities.semantic.modality import MODALITY
from maguyva.modalities.semantic.reader import pending_of
from maguyva.modalities.semantic.segments import FORMAT_VERSION
from maguyva.query.engine import Engine
from maguyva.store.generations import IndexDir

STDLIB = Path(json.__file__).parent.parent
QUERIES = [
    "decode a JSON document into Python objects",
    "escape a string for output",
    "split a string using shell-like syntax",
    "wrap text to a given width",
    "raise an error with the position of the bad character",
    "iterate over the items of a dictionary and encode them",
]


def _seed(root: Path) -> None:
    shutil.copytree(STDLIB / "json", root / "json", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("shlex.py", "textwrap.py"):
        shutil.copy(STDLIB / name, root / name)


def _answers(root: Path, queries: list[tuple[str, str | None]], searcher=None) -> list[list[tuple]]:
    searcher = searcher or Engine.open(root).searcher("semantic")
    out = []
    for text, snippet in queries:
        q = RetrieverQuery(text=text, intent="understand_code", target=text, snippet=snippet)
        out.append([(h.path, h.start_line, h.end_line, h.key, h.score, h.extra["hamming"])
                    for h in searcher.search(q, 8)])  # fmt: skip
    return out


def _edit(root: Path, rng: random.Random, n: int) -> tuple[list[str], list[str]]:
    """One random change; returns the paths it touched and texts of what it removed or
    changed (snippet queries aimed at rows that must be gone)."""
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py")
                   if ".maguyva" not in p.parts)  # fmt: skip
    op = rng.choice(["append", "append", "cut", "add", "delete", "rename"])
    path = rng.choice(files)
    old = (root / path).read_text()
    if op == "append":
        (root / path).write_text(old + f"\n\ndef added_{n}(value):\n    '''Double {n}.'''\n"
                                 f"    return value * {n}\n")  # fmt: skip
        return [path], [old[-400:]]
    if op == "cut":  # drop the second half of the file (definitions disappear)
        lines = old.split("\n")
        (root / path).write_text("\n".join(lines[: len(lines) // 2]) + "\n")
        return [path], ["\n".join(lines[len(lines) // 2 :])[:600]]
    if op == "add":
        new = f"json/added_{n}.py"
        (root / new).write_text(old[: len(old) // 3] + f"\n\ndef fresh_{n}():\n    return {n}\n")
        return [new], []
    if len(files) <= 3:
        return [], []
    if op == "delete":
        (root / path).unlink()
        return [path], [old[:600]]
    new = f"json/renamed_{n}.py"
    (root / path).rename(root / new)
    return [path, new], [old[:600]]


@pytest.mark.parametrize("seed", [7, pytest.param(11, marks=pytest.mark.slow)])
def test_search_after_updates_equals_from_scratch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    # small thresholds: a dozen steps go through deltas, a compaction and folds
    monkeypatch.setattr(layout, "MAX_DELTAS", 2)
    monkeypatch.setattr(layout, "FOLD_MIN_ROWS", 60)
    a, b = tmp_path / "a", tmp_path / "b"
    _seed(a)
    # one generation per update (no never-gate slices): the layout of a single build
    cfg = {"modalities": ["text", "semantic"], "semantic_phases": "full", "semantic_follows": False}
    writer = Indexer(a, config=cfg)
    writer.update()
    # the from-scratch side shares the embedding cache (nothing is embedded twice)
    (b / ".maguyva" / "cache").mkdir(parents=True)
    (b / ".maguyva" / "cache" / "embeddings").symlink_to(a / ".maguyva" / "cache" / "embeddings")
    rng = random.Random(seed)
    layouts, compacted = [], []
    for step in range(12):
        touched, removed = _edit(a, rng, step)
        report = writer.update(hints=touched).modalities["semantic"]["report"]
        layouts.append(report["layout"])
        compacted.append(report["compacted"])
        shutil.rmtree(b / "json", ignore_errors=True)
        for p in b.glob("*.py"):
            p.unlink()
        shutil.copytree(a / "json", b / "json")
        for p in a.glob("*.py"):
            shutil.copy(p, b / p.name)
        scratch = build_index(b, config=cfg, rebuild=True).modalities["semantic"]["report"]
        assert scratch["layout"] == "full" and scratch["segments"] == 1
        queries = [(q, None) for q in QUERIES] + [(t, t) for t in removed if t.strip()]
        got, want = _answers(a, queries), _answers(b, queries)
        for (q, _), g, w in zip(queries, got, want, strict=True):
            assert g == w, f"step {step} ({layouts[-1]}): {q[:60]!r}"
        assert fsck(a / ".maguyva").ok, fsck(a / ".maguyva").errors
    print(layouts, compacted)
    assert "delta" in layouts and "fold" in layouts and any(compacted), (layouts, compacted)


def test_delta_writes_only_the_changed_file(tmp_path: Path) -> None:
    """One edited file: the update writes a delta of that file's rows and hard-links the base
    (same inode), tombstones the file's old rows; fsck verifies the segments and names a
    tombstone out of range."""
    _seed(tmp_path)
    # one generation per update (no never-gate slices): the layout of a single build
    cfg = {"modalities": ["text", "semantic"], "semantic_phases": "full", "semantic_follows": False}
    writer = Indexer(tmp_path, config=cfg)
    writer.update()
    index = IndexDir(tmp_path / ".maguyva")
    before = index.current().path / "semantic"
    meta0 = json.loads((before / "meta.json").read_text())
    target = tmp_path / "json" / "tool.py"
    target.write_text(target.read_text() + "\n\ndef maguyva_extra():\n    return 1\n")
    report = writer.update(hints=["json/tool.py"]).modalities["semantic"]["report"]
    assert report["layout"] == "delta" and report["segments"] == 2
    after = index.current().path / "semantic"
    assert (after / "codes.npy").stat().st_ino == (before / "codes.npy").stat().st_ino
    meta = json.loads((after / "meta.json").read_text())
    base, delta = meta["segments"]
    table = json.loads((after / f"{delta['name']}.paths.json").read_text())
    assert [t[0] for t in table] == ["json/tool.py"] and delta["deleted"] == []
    old_table = json.loads((before / "paths.json").read_text())
    tool = next(t for t in old_table if t[0] == "json/tool.py")
    assert base["deleted"] == list(range(tool[1], tool[1] + tool[2]))
    assert meta["embedded"] == meta0["embedded"] + 1
    codes = np.load(after / f"{delta['name']}.codes.npy")
    assert codes.shape == (delta["rows"], 48)
    assert MODALITY.verify(after) == []
    # a damaged tombstone list is named by fsck (through the modality's verify)
    bad = dict(meta, segments=[dict(base, deleted=[base["rows"] + 5]), delta])
    (after / "meta.json").write_text(json.dumps(bad))
    problems = MODALITY.verify(after)
    assert any("tombstones" in p for p in problems), problems


def test_format_1_is_read_and_newer_refused(tmp_path: Path) -> None:
    """A format-1 semantic part (one base, no path table) is searched as it is; a newer
    format is refused with a clear error."""
    _seed(tmp_path)
    # one generation per update (no never-gate slices): the layout of a single build
    cfg = {"modalities": ["text", "semantic"], "semantic_phases": "full", "semantic_follows": False}
    build_index(tmp_path, config=cfg)
    gen = IndexDir(tmp_path / ".maguyva").current().path
    d = gen / "semantic"
    want = _answers(tmp_path, [(q, None) for q in QUERIES])
    meta = json.loads((d / "meta.json").read_text())
    old = {k: v for k, v in meta.items() if k not in ("segments", "next")}
    (d / "meta.json").write_text(json.dumps(dict(old, format=1)))
    (d / "paths.json").unlink()
    searcher = MODALITY.open(gen, {})
    assert len(searcher.segments) == 1
    assert _answers(tmp_path, [(q, None) for q in QUERIES], searcher) == want
    (d / "meta.json").write_text(json.dumps(dict(meta, format=FORMAT_VERSION + 1)))
    from maguyva.errors import IndexVersionError

    with pytest.raises(IndexVersionError, match="newer Maguyva"):
        MODALITY.open(gen, {})


def test_update_embeds_the_changed_file_first(tmp_path: Path) -> None:
    """With a cap and a backlog of pending chunks, an update embeds the chunks of the files it
    changed before the backlog: the function just written is searchable at once (the backlog
    would otherwise come first: shorter definitions are queued before it)."""
    _seed(tmp_path)
    cfg = {"modalities": ["text", "semantic"], "semantic_phases": "heads",
           "semantic_max_chunks": 1}  # fmt: skip
    writer = Indexer(tmp_path, config=cfg)
    writer.update()
    target = tmp_path / "json" / "tool.py"
    doc = "Compute the checksum of a ledger of parcels. " * 6
    target.write_text(target.read_text() + f"\n\ndef ledger_checksum(parcels):\n    '''{doc}'''\n"
                      "    return sum(parcels) % 65521\n")  # fmt: skip
    report = writer.update(hints=["json/tool.py"]).modalities["semantic"]["report"]
    assert report["new"] == 1 and report["pending"] > 10
    gen = IndexDir(tmp_path / ".maguyva").current().path
    pending, _partial = pending_of(gen / "semantic")
    hits = _answers(tmp_path, [("checksum of a ledger of parcels", None)])[0]
    assert hits and hits[0][0] == "json/tool.py" and hits[0][3] not in pending, hits[:2]


def test_native_file_crc_equals_zlib(tmp_path: Path) -> None:
    """The commit's checksum table and fsck read every new file (the vector segments among
    them) through `_core.crc32_file`: it must give zlib's CRC-32 and the size, for empty,
    small and multi-block files, and name a missing file."""
    import zlib

    from maguyva import _core
    from maguyva.store import checksums

    rng = np.random.default_rng(5)
    for size in (0, 1, 4095, (1 << 20) + 17, 3 << 20):
        data = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
        path = tmp_path / f"f{size}"
        path.write_bytes(data)
        assert _core.crc32_file(str(path)) == (size, zlib.crc32(data))
        assert checksums.checksum_table_one(path) == zlib.crc32(data)
    with pytest.raises(FileNotFoundError, match="missing"):
        _core.crc32_file(str(tmp_path / "missing"))
