"""Weight profiles, presets, the direct path and explicit overrides (SPEC.md tables)."""

from __future__ import annotations

import pytest

from maguyva.errors import BadQueryError
from maguyva.query.routing import FILE_EVIDENCE_K, WEIGHTS, plan_query

SPEC_WEIGHTS = {
    "find_definition": (0.2, 0.1, 0.6, 0.1),
    "find_references": (0.1, 0.2, 0.2, 0.5),
    "understand_code": (0.5, 0.2, 0.2, 0.1),
    "find_similar": (0.4, 0.3, 0.2, 0.1),
    "impact_analysis": (0.1, 0.1, 0.1, 0.7),
    "exact_match": (0.0, 0.9, 0.1, 0.0),
}


@pytest.mark.parametrize("intent", list(SPEC_WEIGHTS))
def test_weight_profiles_match_spec(intent: str):
    semantic, text, structural, graph = SPEC_WEIGHTS[intent]
    assert WEIGHTS[intent] == {
        "semantic": semantic, "text": text, "structural": structural, "graph": graph,
    }  # fmt: skip


# default preset: the three highest non-zero weights, ties to the cheaper modality
# (text, structural, graph, semantic); k = 40.
DEFAULT_MODALITIES = {
    "find_definition": ("structural", "semantic", "text"),  # text beats graph on the 0.1 tie
    "find_references": ("graph", "text", "structural"),  # text beats structural on 0.2
    "understand_code": ("semantic", "text", "structural"),
    "find_similar": ("semantic", "text", "structural"),
    "impact_analysis": ("graph", "text", "structural"),  # three-way 0.1 tie: cheapest two
    "exact_match": ("text", "structural"),  # only two non-zero
}


@pytest.mark.parametrize(("intent", "expected"), list(DEFAULT_MODALITIES.items()))
def test_default_preset_low_confidence_fuses_top_three(intent: str, expected: tuple[str, ...]):
    plan = plan_query(intent, 0.5)
    assert plan.strategy == "rrf"
    assert plan.modalities == expected
    # a question in words is fused on file evidence, with its own k (docs/eval.md)
    assert plan.k == FILE_EVIDENCE_K.get(intent, 40)
    assert plan.by_file == (intent == "understand_code")


def test_file_evidence_keeps_an_explicit_k_and_thorough_k60():
    assert plan_query("understand_code", 0.4, k=25).k == 25
    assert plan_query("understand_code", 0.4, k=25).by_file
    thorough = plan_query("understand_code", 0.4, preset="thorough")
    assert thorough.k == 60 and thorough.by_file
    fallback = plan_query("understand_code", 0.4, preset="quick").fallback
    assert fallback is not None and fallback.k == 10 and fallback.by_file


@pytest.mark.parametrize("intent", list(SPEC_WEIGHTS))
def test_thorough_runs_every_nonzero_modality_with_k60(intent: str):
    plan = plan_query(intent, 0.99, preset="thorough")
    assert plan.strategy == "rrf"
    assert set(plan.modalities) == {m for m, w in WEIGHTS[intent].items() if w > 0}
    assert plan.k == 60


def test_quick_is_semantic_only():
    plan = plan_query("understand_code", 0.4, preset="quick")
    assert plan.modalities == ("semantic",)
    assert plan.strategy == "single"
    assert plan.fallback is not None


@pytest.mark.parametrize(
    ("intent", "confidence", "direct"),
    [
        ("exact_match", 0.85, "text"),
        ("find_definition", 0.95, "structural"),
        ("find_definition", 0.90, "structural"),
        ("find_references", 0.90, "graph"),
        ("impact_analysis", 0.90, "graph"),
        ("find_similar", 0.85, None),  # semantic 0.4 is not dominant
        ("understand_code", 0.75, None),  # not confident enough
        ("find_definition", 0.80, None),  # rule 5 identifiers stay below the threshold
        ("understand_code", 0.90, "semantic"),  # 0.5 dominant, if ever that confident
    ],
)
def test_direct_path(intent: str, confidence: float, direct: str | None):
    plan = plan_query(intent, confidence)
    if direct is None:
        assert plan.strategy == "rrf"
    else:
        assert plan.strategy == "direct"
        assert plan.modalities == (direct,)
        assert plan.fallback is not None and plan.fallback.strategy == "rrf"


def test_zero_weight_modality_never_runs():
    plan = plan_query("exact_match", 0.5, preset="thorough")
    assert "semantic" not in plan.modalities and "graph" not in plan.modalities


def test_explicit_overrides():
    plan = plan_query("exact_match", 0.9, modalities=["text", "semantic"], k=7)
    assert plan.modalities == ("text", "semantic") and plan.k == 7 and plan.strategy == "rrf"
    plan = plan_query("understand_code", 0.4, weights={"text": 0.9, "semantic": 0.05})
    assert plan.weights["text"] == 0.9 and plan.modalities[0] == "text"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"preset": "fast"},
        {"modalities": ["grep"]},
        {"weights": {"text": -1.0}},
        {"weights": {"text": float("nan")}},
        {"k": -3},
    ],
)
def test_bad_overrides_are_clear_errors(kwargs):
    with pytest.raises(BadQueryError):
        plan_query("understand_code", 0.4, **kwargs)
