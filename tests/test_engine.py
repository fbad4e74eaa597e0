"""End-to-end through the engine and the CLI on a small real corpus (stdlib modules)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.corpora import STDLIB, copy_stdlib

from maguyva.build.indexer import build_index
from maguyva.errors import BadQueryError
from maguyva.query.engine import Engine

CORPUS_FILES = ["json/__init__.py", "json/decoder.py", "json/encoder.py", "json/scanner.py",
                "shlex.py", "textwrap.py", "fnmatch.py"]  # fmt: skip
NO_SEMANTIC = {"modalities": ["text", "structural", "graph"]}


@pytest.fixture(scope="module")
def corpus(stdlib_index) -> Path:
    return stdlib_index(CORPUS_FILES, NO_SEMANTIC)


@pytest.fixture(scope="module")
def engine(corpus: Path) -> Engine:
    return Engine.open(corpus)


def test_response_carries_everything_the_spec_lists(engine: Engine):
    response = engine.search("how does the decoder scan strings", limit=5)
    assert response.intent == "understand_code" and response.confidence == 0.75
    assert response.fusion_strategy == "rrf" and response.preset == "default"
    assert response.k == 10  # understand_code: file evidence, k=10 (routing.FILE_EVIDENCE_K)
    assert set(response.weights) == {"semantic", "text", "structural"}
    assert "semantic" in response.unavailable  # selected, not built: reported, not skipped
    assert response.total_ms > 0 and "classify" in response.timings_ms
    data = json.loads(json.dumps(response.to_dict()))
    assert data["results"], "text and structural both match this question in json/"
    fields = {"path", "start_line", "end_line", "snippet", "score", "provenance", "boost", "stale"}
    assert fields <= set(data["results"][0])
    assert {"modality", "rank", "contribution"} <= set(data["results"][0]["provenance"][0])


def test_results_are_one_per_file_and_explained(engine: Engine):
    response = engine.search("split shell words quotes", preset="thorough", limit=10)
    paths = [r.path for r in response.results]
    assert len(paths) == len(set(paths))
    for result in response.results:
        assert result.provenance, result
        total = sum(p.contribution for p in result.provenance) * result.boost
        assert result.score == pytest.approx(total * (0.5 if result.demoted else 1.0))


def test_missing_modality_is_reported_unavailable(corpus: Path, tmp_path: Path):
    index_dir = tmp_path / "idx"
    build_index(corpus, config={"modalities": ["text"], "index_dir": str(index_dir)})
    response = Engine.open(corpus, index_dir).search("where is JSONDecoder defined")
    assert "structural" in response.unavailable
    assert any("fell back" in note for note in response.notes)


def test_bad_options_are_clear_errors(engine: Engine):
    with pytest.raises(BadQueryError):
        engine.search("x", limit=0)
    with pytest.raises(BadQueryError):
        engine.search("x", colour="red")
    with pytest.raises(BadQueryError):
        engine.search("   ")


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "maguyva.interfaces.cli.main", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_cli_exit_codes_and_explain(corpus: Path, tmp_path: Path):
    explained = run_cli("search", "JSONDecoder", "--explain", cwd=corpus)
    assert explained.returncode == 0, explained.stderr
    for field in ("intent: find_definition", "strategy:", "preset:", "modalities:", "target:"):
        assert field in explained.stdout
    as_json = run_cli("search", "JSONDecoder", "--json", cwd=corpus)
    summary = json.loads(as_json.stdout.splitlines()[-1])  # ripgrep JSON Lines (issue 8)
    assert summary["type"] == "summary"
    assert summary["data"]["maguyva"]["intent"] == "find_definition"
    bad = run_cli("search", "x", "--preset", "turbo", cwd=corpus)
    assert bad.returncode == 2
    missing = run_cli("search", "anything", cwd=tmp_path)
    assert missing.returncode == 2
    assert "no index" in missing.stderr and "Traceback" not in missing.stderr


def test_absent_literal_answers_nothing(engine: Engine):
    response = engine.search('"this literal occurs nowhere 1f9c"')
    assert response.intent == "exact_match" and response.fusion_strategy == "direct"
    assert response.results == []
    assert response.modalities == ["text"]


def test_present_literal_takes_the_direct_path_to_text(engine: Engine, corpus: Path):
    response = engine.search('"Expecting value"', limit=50)
    assert response.fusion_strategy == "direct" and response.modalities == ["text"]
    expected = {
        str(p.relative_to(corpus))
        for p in corpus.rglob("*.py")
        if "Expecting value" in p.read_text(encoding="utf-8")
    }
    assert expected and {r.path for r in response.results} == expected


def test_a_common_literal_trusts_the_text_index_chunk_ids(corpus: Path):
    """The text index's chunk ids are the generation's: a literal found in every file is
    answered without decoding any file's chunk rows (only each result's own record), and each
    result is its chunk as the chunk store holds it."""
    from maguyva.store.chunks import ChunkStore, SegmentedChunkStore

    engine = Engine.open(corpus)
    response = engine.search('"self"', limit=100)
    assert isinstance(engine.chunks, SegmentedChunkStore) and not engine.chunks._rows
    assert len(response.results) >= 4
    full = ChunkStore.open(engine.generation.path)
    for result in response.results:
        owner = [c for c in full.by_path(result.path)
                 if (c.start_line, c.end_line) == (result.start_line, result.end_line)]  # fmt: skip
        assert owner and (result.symbol, result.kind) == (owner[0].qualified_name, owner[0].kind)
        assert any(result.start_line <= n <= result.end_line for n in result.lines)


def test_a_named_place_comes_first_and_the_rest_keeps_the_fused_order(engine: Engine):
    """Files in the place a question names are shown first; the reorder is applied to the
    fused entries before the results are made, so a shorter answer is the longer's head."""
    question = "how are strings split into words in the json package"
    few, more = engine.search(question, limit=3), engine.search(question, limit=9)
    assert any(note.startswith("preferred files matching") for note in few.notes)
    inside = [r.path.startswith("json/") for r in more.results]
    assert inside[0] and not inside[-1] and inside == sorted(inside, reverse=True)
    assert [r.to_dict() for r in few.results] == [r.to_dict() for r in more.results[:3]]
    unplaced = engine.search("how are strings split into words", limit=9)
    assert [r.path for r in unplaced.results] != [r.path for r in more.results]


def test_a_damaged_modality_is_unavailable_not_fatal(corpus: Path, tmp_path: Path):
    index_dir = tmp_path / "idx"
    build_index(corpus, config={**NO_SEMANTIC, "index_dir": str(index_dir)})
    engine = Engine.open(corpus, index_dir)
    text_dir = engine.generation.path / "text"
    pristine = {p: p.read_bytes() for p in text_dir.iterdir()}
    for damaged in pristine:  # the postings (checked on open), the content (on decompression)
        data = bytearray(pristine[damaged])
        for at in range(len(data) // 3, len(data), 211):  # past the header, every stored file
            data[at] ^= 0xFF
        damaged.write_bytes(bytes(data))
        response = Engine.open(corpus, index_dir).search('"JSONDecodeError"', preset="thorough")
        assert "text" in response.unavailable, damaged.name
        assert "--repair" in response.unavailable["text"]
        assert response.results  # structural still answers
        damaged.write_bytes(pristine[damaged])


def _fresh_corpus(root: Path) -> Path:
    copy_stdlib(root, CORPUS_FILES)
    build_index(root, config=NO_SEMANTIC)
    return root


def test_warm_loads_every_modality_and_segment_and_answers_the_same(tmp_path: Path):
    from maguyva.store.chunks import SEGMENTS, SegmentedChunkStore

    root = _fresh_corpus(tmp_path / "repo")
    cold, warm = Engine.open(root), Engine.open(root)
    took = warm.warm()
    assert {"text", "structural", "graph", "chunks"} <= set(took)
    assert "semantic" not in took  # not built here: skipped, not an error
    assert isinstance(warm.chunks, SegmentedChunkStore)
    assert len(warm.chunks._segments) == SEGMENTS  # every segment verified and indexed
    assert len(cold.chunks._segments) == 0  # ... which a cold engine does on demand only
    for query in ("how does the decoder scan strings", "JSONDecodeError", "shlex.split"):
        a, b = cold.search(query, limit=5), warm.search(query, limit=5)
        assert [(r.path, r.start_line, r.score) for r in a.results] == [
            (r.path, r.start_line, r.score) for r in b.results
        ]


def test_warm_tables_survive_reopens_of_later_generations(tmp_path: Path):
    """A warmed store's segment tables are carried to the next generation's store whether or
    not a question touched them (hard-linked segments are the same files), and only those."""
    from maguyva.store.chunks import SEGMENTS

    root = _fresh_corpus(tmp_path / "repo")
    Engine.open(root).warm()
    for n in range(3):  # three later generations, none of them warmed or asked anything
        (root / "shlex.py").write_text((STDLIB / "shlex.py").read_text() + f"\nX{n} = {n}\n")
        build_index(root, config=NO_SEMANTIC)
        engine = Engine.open(root)
        carried = engine.chunks._decoded
        assert len(carried) >= SEGMENTS - 1, len(carried)  # all but shlex.py's segment
    assert engine.search("shlex split quotes", limit=3).results


def test_warm_builds_the_structural_term_tables(tmp_path: Path):
    root = _fresh_corpus(tmp_path / "repo")
    engine = Engine.open(root)
    structural = engine.searcher("structural")
    assert all(seg._name_terms is None and seg._doc_terms is None for seg in structural._segs)
    engine.warm()
    assert structural._segs
    assert all(
        seg._name_terms is not None and seg._doc_terms is not None for seg in structural._segs
    )
