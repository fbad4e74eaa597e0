"""The text index updated incrementally (segments + tombstones) answers exactly like an index
built from scratch over the same tree: literal, regex, case-insensitive, whole-word and BM25
questions, over random edit sequences on real code (a slice of the standard library)."""

from __future__ import annotations

import os
import shutil
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from maguyva.build.indexer import build_index
from maguyva.errors import CorruptIndexError
from maguyva.modalities.text.modality import SEGMENTS_FILE, SEGMENTS_KIND, TextModality, open_index
from maguyva.store.chunks import ChunkStore
from maguyva.store.generations import IndexDir
from maguyva.support import sealed

STDLIB = Path(sysconfig.get_paths()["stdlib"])
SOURCES = sorted((STDLIB / "json").glob("*.py")) + sorted((STDLIB / "email").glob("*.py"))[:14]
# Small limits so that short edit sequences reach compaction and merging too.
CONFIG: dict[str, Any] = {"modalities": ["text"], "jobs": 1, "text_max_segments": 3}
GREP = [
    ("def ", False, "sensitive", False),
    ("import", False, "smart", True),
    ("Error", False, "insensitive", False),
    ("maguyva_token", False, "smart", False),
    ("MAGUYVA_TOKEN", False, "insensitive", False),
    (r"def\s+_?[a-z]+_\w+\(", True, "sensitive", False),
    (r"(?i)decod(e|er)", True, "smart", False),
    (r"maguyva_token_\d+", True, "sensitive", True),
    ("ü", False, "insensitive", False),
    ("é", False, "smart", False),
]
BM25 = [["decode", "json", "string"], ["maguyva", "token"], ["header", "parse", "email"]]


def _write_repo(root: Path) -> None:
    for i, src in enumerate(SOURCES):
        (root / f"d{i % 3}").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, root / f"d{i % 3}" / src.name)


def _text_dir(index_dir: Path) -> Path:
    return IndexDir(index_dir).current().path / "text"


def _answers(text_dir: Path) -> list[Any]:
    index = open_index(text_dir)
    out: list[Any] = [index.paths(), index.stats()["docs"], index.stats()["content_bytes"]]
    for pattern, regex, case, whole in GREP:
        files, _candidates, truncated = index.search(
            pattern, regex=regex, case=case, whole_word=whole, max_lines=1 << 20
        )
        out.append((pattern, files, truncated))
        limited = index.search(pattern, regex=regex, case=case, max_files=3, count_all=False)
        out.append((pattern, limited[0], limited[2]))
    for terms in BM25:
        out.append(index.bm25(terms, 20))
    return out


def _apply(root: Path, op: str, n: int) -> None:
    files = sorted(p for p in root.rglob("*.py") if ".maguyva" not in p.parts)
    target = files[n % len(files)]
    if op == "edit":
        text = target.read_text(encoding="utf-8")
        cut = (n * 7919) % max(1, len(text))
        target.write_text(
            f"{text[:cut]}\ndef maguyva_token_{n}():  # Üñï\n    return {n}\n{text[cut:]}",
            encoding="utf-8",
        )
    elif op == "add":
        src = SOURCES[n % len(SOURCES)]
        (root / "new").mkdir(exist_ok=True)
        (root / "new" / f"added_{n}.py").write_text(
            src.read_text(encoding="utf-8") + f"\nMAGUYVA_TOKEN_{n} = {n}\n", encoding="utf-8"
        )
    elif op == "delete" and len(files) > 2:
        target.unlink()
    elif op == "rename":
        target.rename(target.with_name(f"moved_{n}_{target.name}"))
    elif op == "swap":
        other = files[(n + 1) % len(files)]
        a, b = target.read_bytes(), other.read_bytes()
        target.write_bytes(b)
        other.write_bytes(a)
    elif op == "touch":
        st_ = target.stat()
        os.utime(target, ns=(st_.st_atime_ns, st_.st_mtime_ns + 10**9))


EDITS = st.lists(
    st.tuples(
        st.sampled_from(["edit", "add", "delete", "rename", "swap", "touch"]), st.integers(0, 99)
    ),
    min_size=3,
    max_size=7,
)


def _check_sequence(root: Path, edits: list[tuple[str, int]]) -> list[str]:
    _write_repo(root)
    build_index(root, config=CONFIG)
    modes = []
    for op, n in edits:
        _apply(root, op, n)
        summary = build_index(root, config=CONFIG)
        if summary.noop:
            continue
        modes.append(summary.modalities["text"]["report"]["mode"])
        scratch = root.parent / (root.name + "-scratch")
        shutil.rmtree(scratch, ignore_errors=True)
        build_index(root, config={**CONFIG, "index_dir": str(scratch)})
        assert _answers(_text_dir(root / ".maguyva")) == _answers(_text_dir(scratch)), (op, n)
    return modes


def test_fixed_edit_sequence_equals_from_scratch(tmp_path):
    """Every kind of change once, through compaction (max 3 segments)."""
    edits = [("edit", 3), ("add", 5), ("rename", 7), ("delete", 2), ("swap", 11), ("edit", 3)]
    modes = _check_sequence(tmp_path / "repo", edits)
    assert modes[:4] == ["incremental", "incremental", "compacted", "incremental"], modes


@pytest.mark.slow
@given(EDITS)
@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # shrinking rebuilds for minutes
)
def test_incremental_text_equals_from_scratch(tmp_path_factory, edits):
    modes = _check_sequence(tmp_path_factory.mktemp("repo"), edits)
    # The sequence really went through segments (a from-scratch build every time would pass
    # the comparison trivially).
    assert not modes or set(modes) & {"incremental", "compacted"}, modes


def test_update_writes_one_small_segment_and_links_the_rest(tmp_path):
    _write_repo(tmp_path)
    build_index(tmp_path, config=CONFIG)
    first = _text_dir(tmp_path / ".maguyva")
    target = tmp_path / "d0" / SOURCES[0].name
    target.write_text(target.read_text() + "\nmaguyva_token_edit = 1\n")
    summary = build_index(tmp_path, config=CONFIG)
    report = summary.modalities["text"]["report"]
    assert report["mode"] == "incremental" and report["segment_docs"] == 1
    assert report["docs"] == len(SOURCES) and report["tombstones"] == 1
    second = _text_dir(tmp_path / ".maguyva")
    assert (second / "trigram.idx").stat().st_ino == (first / "trigram.idx").stat().st_ino
    assert (second / "content.bin").stat().st_ino == (first / "content.bin").stat().st_ino
    data = sealed.read_sealed_json(second / SEGMENTS_FILE, SEGMENTS_KIND)
    assert [len(s["deleted"]) for s in data["segments"]] == [1, 0]
    files, _, _ = open_index(second).search("maguyva_token_edit")
    assert [f[0] for f in files] == [f"d0/{SOURCES[0].name}"]
    # The old content of the edited file is no longer found.
    old_line = SOURCES[0].read_text().splitlines()[0]
    hits = [f[0] for f in open_index(second).search(old_line)[0]]
    assert hits.count(f"d0/{SOURCES[0].name}") <= 1


def test_too_many_changes_merge_into_one_base(tmp_path):
    _write_repo(tmp_path)
    config = {**CONFIG, "text_merge_ratio": 0.1, "text_merge_min_docs": 10}
    build_index(tmp_path, config=config)
    modes = []
    files = sorted(tmp_path.rglob("*.py"))
    for i in range(2):
        for path in files[3 * i : 3 * i + 3]:
            path.write_text(path.read_text() + f"\n# round {i}\n")
        modes.append(build_index(tmp_path, config=config).modalities["text"]["report"]["mode"])
    # Round 1: 3 new documents + 3 tombstones; round 2: 12 > 10, merged into one base.
    assert modes == ["incremental", "full"]
    data = sealed.read_sealed_json(_text_dir(tmp_path / ".maguyva") / SEGMENTS_FILE, SEGMENTS_KIND)
    assert len(data["segments"]) == 1 and data["segments"][0]["deleted"] == []


def _two_segment_index(tmp_path: Path) -> Path:
    _write_repo(tmp_path)
    build_index(tmp_path, config=CONFIG)
    target = tmp_path / "d1" / SOURCES[1].name
    target.write_text(target.read_text() + "\nmaguyva_token_x = 1\n")
    build_index(tmp_path, config=CONFIG)
    return _text_dir(tmp_path / ".maguyva")


@pytest.mark.parametrize("name", ["seg-000001.idx", "seg-000001.bin", SEGMENTS_FILE])
def test_a_damaged_segment_is_detected(tmp_path, name):
    text_dir = _two_segment_index(tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(text_dir, copy, copy_function=shutil.copyfile)
    path = copy / name
    data = bytearray(path.read_bytes())
    if name.endswith(".bin"):
        # A flip in the stored content is caught by the document's CRC when it is read.
        data[-3] ^= 0x10
        path.write_bytes(bytes(data))
        index = open_index(copy)
        with pytest.raises(CorruptIndexError):
            index.search("maguyva_token_x")
        return
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptIndexError):
        open_index(copy)
    assert TextModality().verify(copy)
    assert TextModality().verify(text_dir) == []


def test_a_segment_list_that_does_not_match_its_files_is_refused(tmp_path):
    text_dir = _two_segment_index(tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(text_dir, copy, copy_function=shutil.copyfile)
    data = sealed.read_sealed_json(copy / SEGMENTS_FILE, SEGMENTS_KIND)
    for mutate in (
        lambda d: d["segments"][1].update(build_id=d["segments"][1]["build_id"] ^ 2),
        lambda d: d["segments"][0].update(deleted=[]),  # the edited file live twice
        lambda d: d["segments"][0].update(deleted=[10**6]),
        lambda d: d["segments"][1].update(index="../escape.idx"),
    ):
        bad = {"segments": [dict(s) for s in data["segments"]]} | {
            k: v for k, v in data.items() if k != "segments"
        }
        mutate(bad)
        (copy / SEGMENTS_FILE).write_bytes(sealed.seal(SEGMENTS_KIND, sealed.dumps_json(bad)))
        with pytest.raises(CorruptIndexError):
            open_index(copy)


def test_a_missing_previous_segment_falls_back_to_a_full_build(tmp_path):
    text_dir = _two_segment_index(tmp_path)
    # Damage the previous generation's small segment (it is hard-linked, so unlink it).
    (text_dir / "seg-000001.idx").unlink()
    target = tmp_path / "d2" / SOURCES[2].name
    target.write_text(target.read_text() + "\nmaguyva_token_y = 1\n")
    summary = build_index(tmp_path, config=CONFIG)
    assert summary.modalities["text"]["report"]["mode"] == "full"
    index = open_index(_text_dir(tmp_path / ".maguyva"))
    assert [f[0] for f in index.search("maguyva_token_")[0]] == [
        f"d1/{SOURCES[1].name}",
        f"d2/{SOURCES[2].name}",
    ]


def test_other_storage_settings_rebuild_from_scratch(tmp_path):
    _write_repo(tmp_path)
    build_index(tmp_path, config=CONFIG)
    target = tmp_path / "d0" / SOURCES[0].name
    target.write_text(target.read_text() + "\nmaguyva_token_z = 1\n")
    summary = build_index(tmp_path, config={**CONFIG, "text_zstd_level": 1})
    assert summary.modalities["text"]["report"]["mode"] == "full"
    index = open_index(_text_dir(tmp_path / ".maguyva"))
    assert [f[0] for f in index.search("maguyva_token_z")[0]] == [f"d0/{SOURCES[0].name}"]


def test_enclosing_chunks_come_from_the_index_as_the_chunk_store_gives_them(tmp_path):
    text_dir = _two_segment_index(tmp_path)
    index = open_index(text_dir)
    store = ChunkStore.open(text_dir.parent)
    checked = 0
    for path in index.paths():
        n_lines = (tmp_path / path).read_text().count("\n") + 2
        lines = list(range(1, n_lines + 1))
        for line, got in zip(lines, index.enclosing(path, lines), strict=True):
            want = store.enclosing(path, line)
            assert got == ((want.start_line, want.end_line, want.id) if want else None)
            checked += want is not None
    assert checked > 1000
    assert index.enclosing("no/such/file.py", [1]) == [None]
