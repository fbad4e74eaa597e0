"""The direct-path gate (`maguyva.query.calibrate`, issue 22): a phrase rule's verdict that the
learned model disagrees with keeps its intent and target but goes through fusion."""

from __future__ import annotations

import pytest

from maguyva.eval.phrasings import PHRASINGS, load_file, score
from maguyva.query import calibrate
from maguyva.query.intent import classify


def test_the_shipped_gate_loads_with_a_threshold_below_one():
    model = calibrate._load()
    assert model is not None
    table, threshold = model
    assert set(table) == {"find_definition", "find_references", "impact_analysis"}
    assert 0.0 < threshold < 1.0


def test_a_verdict_the_model_doubts_drops_below_the_direct_path(monkeypatch):
    raw = classify("who calls parse_config", gate=False)
    assert raw.confidence >= calibrate.DIRECT
    table, _ = calibrate._load()  # type: ignore[misc]
    monkeypatch.setattr(calibrate, "_load", lambda: (table, 1.01))  # doubt every verdict
    doubted = classify("who calls parse_config")
    assert (doubted.intent, doubted.target) == (raw.intent, raw.target)
    assert doubted.confidence == calibrate.UNSURE < calibrate.DIRECT
    assert doubted.rule == raw.rule + "+unsure"


@pytest.mark.parametrize(
    "query", ["KeyError: 'user_id'", "def parse_config", 'grep "connection reset"']
)
def test_only_the_phrase_rules_are_gated(monkeypatch, query):
    table, _ = calibrate._load()  # type: ignore[misc]
    monkeypatch.setattr(calibrate, "_load", lambda: (table, 1.01))
    assert classify(query) == classify(query, gate=False)


def test_the_gate_lowers_confident_errors_on_its_tuning_set():
    tune = load_file(PHRASINGS / "tune-d.jsonl")
    gated = score(tune)
    ungated = score(tune, lambda q: classify(q, gate=False))
    assert gated.intent_accuracy == ungated.intent_accuracy  # it never changes an intent
    assert gated.confident_wrong <= ungated.confident_wrong


@pytest.mark.parametrize(
    ("query", "intent", "target"),
    [
        # a package-qualified exception alone is what a crash printed: search its text
        ("java.lang.IllegalArgumentException", "exact_match", "java.lang.IllegalArgumentException"),
        ("`kotlin.KotlinNullPointerException`", "exact_match", "kotlin.KotlinNullPointerException"),
        ("TimeoutException", "find_definition", "TimeoutException"),  # rule 5: a bare name
        ("where is ValidationError defined", "find_definition", "ValidationError"),
        # reading, subclassing, overriding and conforming are uses (tune-d.jsonl)
        ("where is SENTRY_DSN read", "find_references", "SENTRY_DSN"),
        ("where is Rails::Application subclassed", "find_references", "Rails::Application"),
        ("find overrides of OnConfiguring", "find_references", "OnConfiguring"),
        ("who conforms to `Codable` in the models", "find_references", "Codable"),
    ],
)  # fmt: skip
def test_shapes_learnt_from_the_fourth_tuning_set(query: str, intent: str, target: str):
    verdict = classify(query)
    assert (verdict.intent, verdict.target) == (intent, target), verdict
