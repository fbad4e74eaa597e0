"""Metrics, query-set format, baselines' text handling, generator renaming and tuned profiles."""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maguyva.errors import ConfigError, MaguyvaError
from maguyva.eval.baselines import keywords, tokenize
from maguyva.eval.generate import rename_function
from maguyva.eval.metrics import Ranked, aggregate, file_metrics, line_metrics, score_query
from maguyva.eval.queryset import Query, QuerySetError, Span, load_queries, split_for
from maguyva.eval.tune import Profile, load_profile, weight_grid

A, B, C = "a.py", "b.py", "c.py"


def test_file_metrics_by_hand():
    results = [Ranked(B, 1, 5), Ranked(A, 1, 5), Ranked(A, 9, 12), Ranked(C, 1, 2)]
    got = file_metrics(results, [Span(A), Span(C)])
    assert got["mrr@10"] == 0.5
    assert got["success@1"] == 0.0
    assert got["recall@5"] == 1.0
    # gains 0,1,1 over the deduplicated paths b, a, c; ideal 1,1
    ideal = 1 + 1 / math.log2(3)
    assert got["ndcg@10"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(4)) / ideal)


def test_line_metrics_need_overlap_and_count_each_span_once():
    relevant = [Span(A, 10, 20), Span(A, 40, 41)]
    results = [Ranked(A, 1, 9), Ranked(A, 15, 16), Ranked(A, 12, 18), Ranked(A, 30, 50)]
    got = line_metrics(results, relevant)
    assert got["mrr@10"] == 0.5
    assert got["recall@5"] == 1.0
    ideal = 1 + 1 / math.log2(3)
    assert got["ndcg@10"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / ideal)


def test_line_metrics_accept_match_lines_inside_a_wide_result():
    got = line_metrics([Ranked(A, 100, 200, (15,))], [Span(A, 10, 20)])
    assert got["success@1"] == 1.0


def test_recall_beyond_the_cutoff_does_not_count():
    results = [Ranked(f"x{i}.py", 1, 1) for i in range(10)] + [Ranked(A, 1, 1)]
    got = file_metrics(results, [Span(A)])
    assert got["recall@10"] == 0.0 and got["mrr@10"] == 0.0


ranked_lists = st.lists(
    st.builds(Ranked, st.sampled_from([A, B, C, "d.py"]), st.integers(1, 50), st.integers(50, 60)),
    max_size=15,
)
span_lists = st.lists(
    st.builds(
        lambda p, s, n: Span(p, s, s + n),
        st.sampled_from([A, B, C]),
        st.integers(1, 70),
        st.integers(0, 5),
    ),
    min_size=1,
    max_size=5,
)


@given(ranked_lists, span_lists)
def test_metric_bounds_and_monotonicity(results, spans):
    for metrics in (file_metrics(results, spans), line_metrics(results, spans)):
        assert all(0.0 <= v <= 1.0 + 1e-9 for v in metrics.values())
        assert metrics["recall@5"] <= metrics["recall@10"]
        assert metrics["success@1"] <= metrics["mrr@10"]
        assert (metrics["mrr@10"] > 0) == (metrics["ndcg@10"] > 0)


@given(span_lists)
def test_a_perfect_file_ranking_scores_one(spans):
    paths = list(dict.fromkeys(s.path for s in spans))
    got = file_metrics([Ranked(p, 1, 1) for p in paths], spans)
    assert got["ndcg@10"] == pytest.approx(1.0)
    assert got["recall@10"] == 1.0


def test_aggregate_separates_empty_answer_queries():
    q1 = Query("1", "x", "exact_match", (Span(A),))
    q2 = Query("2", '"nothing"', "exact_match", ())
    scores = [score_query(q1, [], 1.0), score_query(q2, [], 3.0),
              score_query(q1, [Ranked(A, 1, 1)], 2.0)]  # fmt: skip
    out = aggregate(scores)
    assert out["with_answer"] == 2 and out["empty_answer"] == 1
    assert out["zero_result_rate"] == 0.5
    assert out["empty_answer_zero_rate"] == 1.0
    assert out["file.mrr@10"] == 0.5
    assert out["latency_p50_ms"] == 2.0 and out["latency_p95_ms"] == 3.0


def _write(tmp_path: Path, rows: list) -> Path:
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_query_set_round_trip_and_errors(tmp_path: Path):
    good = {"id": "q1", "query": "where is x", "intent": "find_definition",
            "relevant": [{"path": A, "start": 3, "end": 4}], "split": "heldout"}  # fmt: skip
    (query,) = load_queries([_write(tmp_path, [good])])
    assert query.relevant == (Span(A, 3, 4),) and query.split == "heldout"
    bad_cases = [
        ({**good, "intent": "guess"}, "unknown intent"),
        ({**good, "split": "train"}, "split must be"),
        ({**good, "relevant": [{"path": A, "start": 5, "end": 4}]}, "bad line range"),
        ({**good, "relevant": [{"start": 5}]}, "'path'"),
        ({**good, "query": " "}, "'query'"),
    ]
    for row, message in bad_cases:
        with pytest.raises(QuerySetError, match=message):
            load_queries([_write(tmp_path, [row])])
    with pytest.raises(QuerySetError, match="duplicate"):
        load_queries([_write(tmp_path, [good, good])])
    (tmp_path / "broken.jsonl").write_text("{not json\n")
    with pytest.raises(QuerySetError, match=r"broken\.jsonl:1"):
        load_queries([tmp_path / "broken.jsonl"])


def test_split_is_stable_and_roughly_even():
    splits = [split_for(f"id-{i}") for i in range(400)]
    assert splits == [split_for(f"id-{i}") for i in range(400)]
    assert 150 < splits.count("heldout") < 250


def test_shipped_query_sets_are_valid_and_hand_written_ones_are_paraphrased():
    root = Path(__file__).parent.parent / "eval"
    hand = load_queries(sorted(root.glob("*.nl.jsonl")))
    assert len(hand) >= 60
    assert len({q.corpus for q in hand}) >= 2
    assert abs(sum(q.split == "heldout" for q in hand) - len(hand) / 2) <= 2
    for query in hand:
        words = {w.lower() for w in query.query.replace("-", " ").split()}
        for span in query.relevant:
            assert span.start is not None, query.id
            name = (span.symbol or "").rsplit(".", 1)[-1].lower()
            assert name not in words, f"{query.id} names its answer {name!r}"
    load_queries(sorted(root.glob("*.generated.jsonl")))


def test_keywords_prefer_a_quoted_literal():
    assert keywords('find "Invalid URL" please') == (["Invalid URL"], True)
    words, literal = keywords("how are redirects followed by the session")
    assert not literal and "redirects" in words and "the" not in words


def test_tokenize_splits_identifiers_but_keeps_them_whole():
    tokens = tokenize("def parseConfig(max_retries): HTTPAdapter")
    for token in ("parseconfig", "parse", "config", "max_retries", "max", "retries", "httpadapter"):
        assert token in tokens


def test_rename_function_renames_locals_and_keeps_meaning():
    source = '''
    def total(items, start=0):
        """Sum them."""
        acc = start
        for item in items:
            acc += item.price
        return acc
    '''
    renamed = rename_function(source)
    assert renamed is not None
    for old in ("items", "start", "acc", "Sum them", "def total"):
        assert old not in renamed
    assert ".price" in renamed  # attributes are not locals
    namespace: dict = {}
    exec(compile(ast.parse(renamed), "<renamed>", "exec"), namespace)

    class Item:
        price = 2

    assert namespace["f"]([Item(), Item()], 1) == 5


def test_weight_grid_is_the_simplex():
    grid = weight_grid(["text", "structural", "graph"])
    assert len(grid) == math.comb(12, 2)
    assert all(abs(sum(w.values()) - 1.0) < 1e-9 for w in grid)


def test_profile_round_trip_and_validation(tmp_path: Path):
    profile = Profile({"understand_code": {"weights": {"text": 0.7, "graph": 0.0,
                                                        "structural": 0.3}, "k": 10}})  # fmt: skip
    path = tmp_path / "p.json"
    profile.save(path)
    loaded = load_profile(path)
    assert loaded.search_kwargs("understand_code") == {
        "modalities": ["text", "structural"], "weights": {"text": 0.7, "structural": 0.3}, "k": 10,
    }  # fmt: skip
    assert loaded.search_kwargs("exact_match") == {}
    path.write_text(json.dumps({"version": 1, "intents": {"nope": {}}}))
    with pytest.raises(ConfigError, match="nope"):
        load_profile(path)
    with pytest.raises(MaguyvaError):
        load_profile(tmp_path / "missing.json")
