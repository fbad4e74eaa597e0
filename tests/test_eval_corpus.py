"""`maguyva eval` and `maguyva tune` end to end on a real corpus (requests 2.32.3 from PyPI).

Runs without the semantic modality: the local embedder would add about a minute of indexing
on this machine, too much for the default test run. docs/eval.md has the full numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maguyva.eval.cli import main
from maguyva.eval.corpora import fetch_corpus
from maguyva.eval.queryset import load_queries, write_queries

EVAL = Path(__file__).parent.parent / "eval"
CORPUS = "requests-2.32.3"
MODALITIES = "text,structural,graph"


@pytest.fixture(scope="module")
def corpus() -> Path:
    return fetch_corpus(CORPUS)


@pytest.fixture(scope="module")
def small_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hand-written set plus every third generated query (all kinds, both splits)."""
    hand = load_queries([EVAL / f"{CORPUS}.nl.jsonl"])
    generated = load_queries([EVAL / f"{CORPUS}.generated.jsonl"])
    path = tmp_path_factory.mktemp("queries") / "small.jsonl"
    write_queries(path, hand + generated[::3])
    return path


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("index")


@pytest.fixture(scope="module")
def report(corpus: Path, small_set: Path, index_dir: Path, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("report") / "report.json"
    code = main(["eval", str(small_set), "--root", str(corpus), "--index-dir", str(index_dir),
                 "--modalities", MODALITIES, "--out", str(out), "-q"])  # fmt: skip
    assert code == 0
    return json.loads(out.read_text())


def test_every_system_is_reported_side_by_side(report: dict):
    names = [s["name"] for s in report["systems"]]
    for expected in ("text-only", "structural-only", "graph-only", "preset:default",
                     "preset:thorough", "baseline:ripgrep", "baseline:bm25"):  # fmt: skip
        assert expected in names
    assert "semantic-only" in report["unavailable"]
    assert "preset:quick" in report["unavailable"]
    assert report["meta"]["modalities_built"] == ["graph", "structural", "text"]
    for system in report["systems"]:
        overall = system["overall"]
        for key in ("file.mrr@10", "line.ndcg@10", "zero_result_rate", "latency_p95_ms"):
            assert key in overall
        assert {"understand_code", "exact_match", "find_definition"} <= set(system["by_intent"])


def test_overall_mrr_agrees_with_the_per_query_ranks(report: dict, small_set: Path):
    answered = {q.id for q in load_queries([small_set]) if not q.expects_empty}
    for system in report["systems"]:
        ranks = [q["first_file_rank"] for q in system["queries"] if q["id"] in answered]
        mrr = sum(1 / r for r in ranks if r is not None and r <= 10) / len(ranks)
        assert system["overall"]["file.mrr@10"] == pytest.approx(mrr)


def test_literal_queries_are_found_by_text_search(report: dict):
    # Ground truth comes from rg; the trigram modality must agree on nearly all of them.
    text = next(s for s in report["systems"] if s["name"] == "text-only")
    assert text["by_intent"]["exact_match"]["file.success@1"] >= 0.8
    assert text["by_intent"]["exact_match"]["empty_answer_zero_rate"] == 1.0


def test_classifier_accuracy_is_reported_per_label(report: dict):
    clf = report["classifier"]
    assert set(clf["by_intent"]) >= {"understand_code", "exact_match"}
    assert 0.0 <= clf["accuracy"] <= 1.0


def test_tuning_never_reads_the_heldout_answers(corpus, small_set, index_dir, tmp_path):
    """Scrambling the held-out half's answers must not change what tuning chooses."""
    queries = load_queries([small_set])
    scrambled = tmp_path / "scrambled.jsonl"
    write_queries(scrambled, [q if q.split == "tune" else q.__class__(
        q.id, q.query, q.intent, (), q.split, q.source, q.corpus) for q in queries])  # fmt: skip
    profiles = []
    for path in (small_set, scrambled):
        saved = tmp_path / f"{path.stem}.profile.json"
        out = tmp_path / f"{path.stem}.tune.json"
        code = main(["tune", str(path), "--root", str(corpus), "--index-dir", str(index_dir),
                     "--save", str(saved), "--out", str(out), "-q"])  # fmt: skip
        assert code == 0
        profiles.append(json.loads(saved.read_text())["intents"])
        result = json.loads(out.read_text())
        assert result["heldout_default"] and result["heldout_tuned"]
    assert profiles[0] == profiles[1]
    code = main(["eval", str(small_set), "--root", str(corpus), "--index-dir", str(index_dir),
                 "--split", "heldout", "--systems", "preset:default", "--no-baselines",
                 "--profile", str(tmp_path / f"{small_set.stem}.profile.json"), "-q",
                 "--out", str(tmp_path / "tuned.json")])  # fmt: skip
    assert code == 0
    names = [s["name"] for s in json.loads((tmp_path / "tuned.json").read_text())["systems"]]
    assert names == ["preset:default", "tuned"]


def test_bad_query_set_is_one_clear_error(tmp_path: Path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "query": "q", "intent": "nope"}\n')
    assert main(["eval", str(bad), "--root", str(tmp_path)]) == 2
    assert "unknown intent" in capsys.readouterr().err
