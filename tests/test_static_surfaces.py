"""The static tier where users and tools see it (issue 17, "say which tier answered"): every
result semantic placed names the tier whose vector matched, in `--explain`, `--json`, MCP and
the Python API, and the tier named is the truth of the index (a chunk still pending answers
by its static row, an embedded one by its transformer vector); `maguyva fsck` checks the
static tier's files and names what is wrong in one line per problem.

Real code (the standard library's `json` and `email` packages), the real MiniLM and static
table; a build capped at a few transformer vectors so both tiers answer."""

from __future__ import annotations

import json
import shutil
import sysconfig
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mcp import ClientSession
from test_mcp import with_session

from maguyva.api import Index
from maguyva.build.fsck import fsck
from maguyva.build.indexer import Indexer
from maguyva.interfaces.cli.main import main
from maguyva.modalities.protocol import RetrieverQuery
from maguyva.modalities.semantic.reader import pending_of
from maguyva.store.checksums import checksum_table
from maguyva.store.chunks import ChunkStore
from maguyva.store.generations import CHECKSUMS, IndexDir, write_sealed
from maguyva.support import sealed

STDLIB = Path(sysconfig.get_paths()["stdlib"])
CONFIG: dict[str, Any] = {"modalities": ["text", "structural", "semantic"], "jobs": 1,
                          "semantic_phases": "full", "embedding_threads": 1,
                          "semantic_max_chunks": 60}  # fmt: skip
QUESTION = "how is a JSON document decoded into Python objects"
TIERS = {"static", "transformer"}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tiers") / "repo"
    for name in ("json", "email"):
        shutil.copytree(STDLIB / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    Indexer(root, config=CONFIG).update()
    return root


def semantic_dir(root: Path) -> Path:
    return IndexDir(root / ".maguyva").current(pin=False).path / "semantic"


def pending(root: Path) -> set[str]:
    return set(pending_of(semantic_dir(root))[0])


def truth(root: Path) -> dict[str, set[str]]:
    """path -> the tiers its chunks can answer by (a result is shown by its file's best chunk,
    which need not be the chunk semantic matched: fusion is by file)."""
    waiting = pending(root)
    store = ChunkStore.open(semantic_dir(root).parent)
    return {path: {"static" if c.id in waiting else "transformer" for c in store.by_path(path)}
            for path in store.paths()}  # fmt: skip


def semantic_rows(provenance: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in provenance if p["modality"] == "semantic"]


def test_the_build_leaves_both_tiers(root: Path) -> None:
    meta = json.loads((semantic_dir(root) / "meta.json").read_text())
    assert meta["embedded"] > 0 and meta["static"] == meta["pending"] > 100, meta


def test_every_semantic_hit_names_the_tier_of_its_chunk(root: Path) -> None:
    """The retriever's own hits: a chunk still pending by its static row, any other by its
    transformer vector."""
    waiting = pending(root)
    searcher = Index.open(root).searcher("semantic")
    hits = searcher.search(RetrieverQuery(QUESTION, "understand_code", QUESTION), 200)
    tiers = [h.extra["tier"] for h in hits]
    assert tiers == ["static" if h.key in waiting else "transformer" for h in hits]
    assert set(tiers) == TIERS, tiers


def test_every_semantic_result_names_the_tier_that_matched_in_the_api(root: Path) -> None:
    expected = truth(root)
    seen = set()
    for preset, modalities in (("default", ["semantic"]), ("thorough", None)):
        response = Index.open(root).search(QUESTION, preset=preset, modalities=modalities,
                                           limit=30)  # fmt: skip
        assert response.results
        for r in response.results:
            tiers = [p.tier for p in r.provenance if p.modality == "semantic"]
            others = [p.tier for p in r.provenance if p.modality != "semantic"]
            assert others == [None] * len(others)  # only semantic has tiers
            if not tiers:
                assert "tier" not in r.extra
                continue
            assert tiers[0] in TIERS and r.extra["tier"] == tiers[0], r
            assert tiers[0] in expected[r.path], (r.path, tiers[0], expected[r.path])
            seen.add(tiers[0])
    assert seen == TIERS, seen  # the capped build answers by both


def test_explain_and_json_name_the_tier(root: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(root)
    assert main(["search", QUESTION, "--modalities", "semantic", "--limit", "30",
                 "--explain", "--no-daemon"]) == 0  # fmt: skip
    explained = capsys.readouterr().out
    lines = [line for line in explained.splitlines() if line.strip().startswith("score ")]
    assert lines and all("semantic/static#" in x or "semantic/transformer#" in x for x in lines)
    assert main(["search", QUESTION, "--limit", "30", "--preset", "thorough", "--json",
                 "--no-daemon"]) == 0  # fmt: skip
    begins = [m["data"] for m in map(json.loads, capsys.readouterr().out.splitlines())
              if m["type"] == "begin"]  # fmt: skip
    expected = truth(root)
    tiers = set()
    for data in begins:
        info = data["maguyva"]
        for row in info["provenance"]:
            assert ("tier" in row) == (row["modality"] == "semantic"), row
        rows = semantic_rows(info["provenance"])
        if rows:
            assert rows[0]["tier"] == info["extra"]["tier"]
            assert rows[0]["tier"] in expected[data["path"]["text"]], (data["path"], rows[0])
            tiers.add(rows[0]["tier"])
    assert tiers == TIERS, tiers


def test_mcp_search_names_the_tier(root: Path) -> None:
    async def scenario(session: ClientSession) -> Any:
        return await session.call_tool("search", {"query": QUESTION, "k": 30,
                                                  "preset": "thorough"})  # fmt: skip

    result = with_session(root, scenario)
    assert not result.is_error, result.content
    expected = truth(root)
    tiers = set()
    for hit in result.structured_content["results"]:
        for row in hit["provenance"]:
            assert ("tier" in row) == (row["modality"] == "semantic"), row
        rows = semantic_rows(hit["provenance"])
        if rows:
            assert rows[0]["tier"] in expected[hit["path"]], (hit["path"], rows[0])
            tiers.add(rows[0]["tier"])
    assert tiers == TIERS, tiers
    assert json.loads(result.content[0].text) == result.structured_content


# -- fsck of the static tier ----------------------------------------------------------------


def damaged_copy(root: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the indexed repository to damage, and its current semantic directory."""
    copy = tmp_path / "repo"
    shutil.copytree(root, copy, symlinks=True)
    return copy, semantic_dir(copy)


def reseal(sem: Path) -> None:
    """CHECKSUMS written again over the damaged files: only the static tier's own checks
    can see what is wrong."""
    gen = sem.parent
    write_sealed(gen / CHECKSUMS, "checksums", sealed.dumps_json_packed(checksum_table(gen)),
                 sealed.PACKED_VERSION)  # fmt: skip


def static_errors(copy: Path) -> list[str]:
    report = fsck(copy / ".maguyva")
    assert not report.ok
    return [e for e in report.errors if "static tier" in e]


def test_fsck_passes_the_static_tier_of_a_sound_index(root: Path) -> None:
    report = fsck(root / ".maguyva")
    assert report.ok, report.errors
    assert report.verified_by["semantic"] == "verify"


def test_fsck_names_a_truncated_static_rows_file(root: Path, tmp_path: Path) -> None:
    copy, sem = damaged_copy(root, tmp_path)
    path = sem / "static.floats.npy"
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        fh.truncate(size // 2)
    errors = static_errors(copy)
    assert errors == [f"semantic: {sem}: static tier: static.floats.npy: {size // 2:,} bytes, "
                      f"its header says {size:,} (truncated or extended)"], errors  # fmt: skip
    report = fsck(copy / ".maguyva")  # the checksum table names it too
    assert any("static.floats.npy" in e and "static tier" not in e for e in report.errors)


def test_fsck_names_static_rows_that_disagree(root: Path, tmp_path: Path) -> None:
    copy, sem = damaged_copy(root, tmp_path)
    rows = json.loads((sem / "static.ids.json").read_bytes())
    waiting = set(pending_of(sem)[0])
    dropped = max(i for i, row in enumerate(rows) if row[0] in waiting)  # a pending chunk's
    (sem / "static.ids.json").unlink()  # hard-linked: replaced, not written through
    (sem / "static.ids.json").write_text(json.dumps(rows[:dropped] + rows[dropped + 1 :]))
    reseal(sem)
    errors = static_errors(copy)
    n = len(rows)
    assert (
        f"semantic: {sem}: static tier: static.codes.npy holds {n} rows, static.ids.json "
        f"lists {n - 1}" in errors
    ), errors
    assert (
        f"semantic: {sem}: static tier: static.floats.npy holds {n} rows, static.ids.json "
        f"lists {n - 1}" in errors
    ), errors
    meta = json.loads((sem / "meta.json").read_text())
    assert (
        f"semantic: {sem}: static tier: {meta['static'] - 1} rows of pending chunks, the "
        f"build report counts {meta['static']}" in errors
    ), errors


def test_fsck_names_repeated_and_misplaced_static_ids(root: Path, tmp_path: Path) -> None:
    copy, sem = damaged_copy(root, tmp_path)
    rows = json.loads((sem / "static.ids.json").read_bytes())
    other = next(r[1] for r in rows if r[1] != rows[0][1])
    changed = [[rows[0][0], other], *rows[1:-1], rows[1]]  # first moved, last a repeat
    (sem / "static.ids.json").unlink()
    (sem / "static.ids.json").write_text(json.dumps(changed))
    reseal(sem)
    errors = static_errors(copy)
    assert f"semantic: {sem}: static tier: static.ids.json: 1 chunk ids listed twice" in errors
    assert (
        f"semantic: {sem}: static tier: row of chunk {rows[0][0]} names {other!r}, the "
        f"chunk is pending under {rows[0][1]!r}" in errors
    ), errors


def test_fsck_names_static_vectors_of_the_wrong_shape_or_type(root: Path, tmp_path: Path) -> None:
    copy, sem = damaged_copy(root, tmp_path)
    codes = np.load(sem / "static.codes.npy")
    floats = np.load(sem / "static.floats.npy")
    for name in ("static.codes.npy", "static.floats.npy"):
        (sem / name).unlink()
    np.save(sem / "static.codes.npy", codes[:, :-1])  # a byte short per row
    np.save(sem / "static.floats.npy", floats.astype(np.float32))
    reseal(sem)
    errors = static_errors(copy)
    n, width = codes.shape
    assert (
        f"semantic: {sem}: static tier: static.codes.npy: uint8 ({n}, {width - 1}), "
        f"expected (rows, {width}) uint8" in errors
    ), errors
    assert (
        f"semantic: {sem}: static tier: static.floats.npy: float32 {floats.shape}, "
        f"expected (rows, {floats.shape[1]}) float16" in errors
    ), errors
    # a search says the semantic part is damaged (it failed midway on the codes' width)
    response = Index.open(copy).search(QUESTION, modalities=["semantic"])
    assert response.damaged["semantic"].startswith(
        f"damaged: {sem}: static tier: codes uint8 ({n}, {width - 1}), expected (rows, "
        f"{width}) uint8"
    ), response.damaged


def test_fsck_names_a_missing_static_file(root: Path, tmp_path: Path) -> None:
    copy, sem = damaged_copy(root, tmp_path)
    (sem / "static.codes.npy").unlink()
    reseal(sem)
    errors = static_errors(copy)
    assert errors == [f"semantic: {sem}: static tier: static.codes.npy missing beside "
                      "static.floats.npy, static.ids.json"], errors  # fmt: skip
