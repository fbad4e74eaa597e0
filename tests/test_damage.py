"""Damage is loud (issue 20, D1): a modality whose files fail their checks never answers
silently wrong. The CLI warns on stderr naming the modality and the fix, and exits 2 when the
question needs it; `maguyva status` shows it damaged; MCP answers carry `degraded` (or are tool
errors); and, for a random bit flip in any file of the index, every answer of a fixed query set
either equals the undamaged one or exits 2 with a message (hypothesis)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from damage_support import QUERIES, answers, corrupt, index_files, verdict
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from interfaces_corpus import make_corpus
from mcp import ClientSession
from test_mcp import text_of, with_session

from maguyva.api import Index

MAGUYVA = [sys.executable, "-m", "maguyva.interfaces.cli"]
FIX = "maguyva index --rebuild"

# (file under the generation, how, where, a question that needs the modality, the modality)
CASES = [
    ("text/content.bin", "flip-many", 0.1, ["search", "-F", "No closing quotation"], "text"),
    ("text/trigram.idx", "flip", 0.0005, ["search", "-F", "No closing quotation"], "text"),
    ("text/segments.json", "flip", 0.5, ["search", "-F", "No closing quotation"], "text"),
    ("structural/meta.json", "flip", 0.5, ["search", "where is dedent defined"], "structural"),
    ("structural/*.json", "flip", 0.5, ["search", "where is dedent defined"], "structural"),
    ("graph/graph.bin", "flip", 0.5, ["search", "who calls dedent"], "graph"),
    ("graph/names.bin", "flip", 0.5, ["search", "who calls dedent"], "graph"),
]


def cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*MAGUYVA, *args], cwd=root, capture_output=True, text=True,
                          timeout=300)  # fmt: skip


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> tuple[Path, list]:
    root = make_corpus(tmp_path_factory.mktemp("damage"))
    Index.open(root).build()
    return root, answers(root)


def damaged_copy(pristine: tuple[Path, list], base: Path, pattern: str, how: str, at: float):
    root = base / "repo"
    shutil.copytree(pristine[0], root, symlinks=True)
    gen = max((root / ".maguyva").glob("gen-[0-9]*[0-9]"))
    target = sorted(p for p in gen.glob(pattern) if p.name[0].isdigit() or "*" not in pattern)
    corrupt(target[0], how, at)
    return root


@pytest.mark.parametrize(("pattern", "how", "at", "query", "modality"), CASES,
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_a_damaged_modality_warns_and_exits_2(pristine, tmp_path, pattern, how, at, query,
                                              modality):  # fmt: skip
    root = damaged_copy(pristine, tmp_path, pattern, how, at)
    out = cli(root, *query)
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert f"warning: {modality} index unusable" in out.stderr, out.stderr
    assert FIX in out.stderr and "Traceback" not in out.stderr
    status = cli(root, "status")
    line = next(x for x in status.stdout.splitlines() if x.strip().startswith(modality))
    assert "DAMAGED" in line and FIX in line, status.stdout


def test_damaged_text_never_answers_a_literal_with_other_hits(pristine, tmp_path):
    """The issue's repro: with the text index damaged, `-F` returned structural hits that do
    not contain the string, exit 0. Now: no results, exit 2, the warning."""
    root = damaged_copy(pristine, tmp_path, "text/trigram.idx", "flip", 0.0005)
    out = cli(root, "search", "-F", "No closing quotation")
    assert out.returncode == 2 and out.stdout == "", out.stdout
    assert "text index unusable" in out.stderr


def test_a_damaged_update_segment_is_loud(pristine, tmp_path):
    """`seg-*` (a text update segment) exists after an incremental update."""
    root = tmp_path / "repo"
    shutil.copytree(pristine[0], root, symlinks=True)
    (root / "added.py").write_text("def added_for_segments():\n    return 'No closing quotation'\n")
    assert cli(root, "index", "-q").returncode == 0
    gen = max((root / ".maguyva").glob("gen-[0-9]*[0-9]"))
    segments = sorted(p for p in (gen / "text").glob("seg-*") if p.is_file())
    assert segments, sorted(p.name for p in (gen / "text").iterdir())
    for path in segments:
        corrupt(path, "flip", 0.5)
    out = cli(root, "search", "-F", "No closing quotation")
    assert out.returncode == 2 and "text index unusable" in out.stderr, out


def test_a_damaged_chunk_store_is_an_error(pristine, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(pristine[0], root, symlinks=True)
    gen = max((root / ".maguyva").glob("gen-[0-9]*[0-9]"))
    for path in (gen / "chunks").glob("*.jsonl"):
        corrupt(path, "flip", 0.5)
    for query in QUERIES:
        out = cli(root, *query)
        assert out.returncode == 2 and out.stderr.strip(), (query, out)


def test_mcp_reports_damage(pristine, tmp_path):
    root = damaged_copy(pristine, tmp_path, "text/trigram.idx", "flip", 0.0005)
    gen = max((root / ".maguyva").glob("gen-[0-9]*[0-9]"))
    corrupt(gen / "structural" / "meta.json", "flip", 0.5)

    async def scenario(session: ClientSession):
        search = await session.call_tool("search", {"query": '"No closing quotation"'})
        symbol = await session.call_tool("find_symbol", {"name": "dedent"})
        status = await session.call_tool("index_status", {})
        return search, symbol, status

    search, symbol, status = with_session(root, scenario)
    assert not search.is_error
    found = search.structured_content
    assert "text" in found["degraded"] and FIX in found["degraded"]["text"], found
    assert found["results"] == []
    assert symbol.is_error and "damaged" in text_of(symbol) and FIX in text_of(symbol)
    modalities = status.structured_content["modalities"]
    assert FIX in modalities["text"]["damaged"] and FIX in modalities["structural"]["damaged"]


@pytest.fixture(scope="module")
def files(pristine) -> list[Path]:
    return index_files(pristine[0])


@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(data=st.data())
def test_a_random_bit_flip_is_harmless_or_loud(pristine, files, data):
    rel = data.draw(st.sampled_from(files), label="file")
    at = data.draw(st.floats(0.0, 0.999), label="at")
    bit = data.draw(st.integers(0, 7), label="bit")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        shutil.copytree(pristine[0], root, symlinks=True)
        corrupt(root / rel, "flip", at, bit)
        verdicts = verdict(pristine[1], answers(root))
    assert "silent" not in verdicts, (str(rel), at, bit, verdicts)
