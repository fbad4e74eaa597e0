"""Shapes the classifier learnt from the fifth tuning set (`tune-e.jsonl`) and `tune-d.jsonl`
(issue 22): .NET and MSVC output, Windows paths, Kotlin signatures, Elixir arities,
environment variables read by name, negations, "the helper called x", dead code, "grep X".
The blind set `independent-e.jsonl` is never scored here: only its shape is checked."""

from __future__ import annotations

import pytest

from maguyva.eval.phrasings import PHRASINGS, load_file, normalise_target, score
from maguyva.query.intent import classify

TUNE = load_file(PHRASINGS / "tune-e.jsonl")


def test_the_tuning_set_meets_the_issue_targets():
    result = score(TUNE)
    assert result.intent_accuracy >= 0.97, result.failures
    assert result.target_accuracy >= 0.97, result.failures
    assert result.confident_wrong <= 0.01, result.failures


def test_the_blind_set_is_varied_and_has_no_tuning_duplicates():
    blind = load_file(PHRASINGS / "independent-e.jsonl")
    assert len(blind) >= 150
    assert len({item.id.split("-")[1] for item in blind}) >= 15
    assert len({item.intent for item in blind}) == 6
    tuned = {item.query for name in ("tune-c", "tune-d", "tune-e", "dev")
             for item in load_file(PHRASINGS / f"{name}.jsonl")}  # fmt: skip
    # two lines that happen to repeat tuned ones (noticed after the set was committed; it is
    # not edited): scored as they are
    assert {item.id for item in blind if item.query in tuned} == {
        "inde-colons-084", "inde-paste-python-056"}  # fmt: skip


@pytest.mark.parametrize(
    ("query", "intent", "target"),
    [
        # .NET exception lines and frames, MSVC diagnostics, Windows paths
        ("System.InvalidOperationException: Sequence contains no elements", "exact_match",
         "System.InvalidOperationException: Sequence contains no elements"),
        ("   at Acme.Jobs.Scheduler.Run() in C:\\src\\Acme\\Jobs\\Scheduler.cs:line 88",
         "exact_match", "Acme.Jobs.Scheduler.Run() in C:\\src\\Acme\\Jobs\\Scheduler.cs:line 88"),
        ("C:\\src\\core\\net.cpp(120): error C2039: 'connect': is not a member of 'Socket'",
         "exact_match", "error C2039: 'connect': is not a member of 'Socket'"),
        ("where is LoadSettings defined in C:\\dev\\app\\Settings.cs", "find_definition",
         "LoadSettings"),
        ("what breaks if I delete C:\\work\\web\\Utils\\OldHelpers.cs", "impact_analysis",
         "C:\\work\\web\\Utils\\OldHelpers.cs"),
        ("Unhandled Runtime Error\nTypeError: fetch failed", "exact_match",
         "TypeError: fetch failed"),
        ("Dec 01 10:00:00.000 ERROR sync_engine: replica lag exceeds threshold", "exact_match",
         "replica lag exceeds threshold"),
        # Kotlin signatures, Elixir arities, environment variables
        ("fun parseToken(raw: String): Token?", "find_definition", "parseToken"),
        ("override suspend fun fetchFeed(): List<Post>", "find_definition", "fetchFeed"),
        ("fn parse(a: &str) -> Result<Config, Error>", "find_definition", "parse"),
        ("who calls `Enum.map/2` in the reporting module", "find_references", "Enum.map"),
        ("who reads os.getenv('LOG_FORMAT')", "find_references", "LOG_FORMAT"),
        ("who reads os.environ['DATABASE_URL']", "find_references", "DATABASE_URL"),
        ("who->calls(flush_all)", "find_references", "flush_all"),
        # negations, naming, dead code, touching, literal words, grep
        ("not the usages, the definition of PlanLimits", "find_definition", "PlanLimits"),
        ("forget the callers, where does `make_client` live", "find_definition", "make_client"),
        ("not the string, the definition of `ErrorCode`", "find_definition", "ErrorCode"),
        ("where is the thing called build_manifest", "find_definition", "build_manifest"),
        ("where's the function named pick_shard", "find_definition", "pick_shard"),
        ("is `compute_checksum_v0` dead", "find_references", "compute_checksum_v0"),
        ("what touches the SessionStore", "find_references", "SessionStore"),
        ("if I touch SessionStore what breaks", "impact_analysis", "SessionStore"),
        ("I need to read the implementation of `resolve_tenant`. Please locate its definition.",
         "find_definition", "resolve_tenant"),
        ("find me the words access denied for tenant", "exact_match", "access denied for tenant"),
        ("grep for E_TOKEN_REVOKED", "exact_match", "E_TOKEN_REVOKED"),
    ],
)  # fmt: skip
def test_shapes_learnt_from_the_fifth_tuning_set(query: str, intent: str, target: str):
    verdict = classify(query)
    assert verdict.intent == intent, verdict
    assert normalise_target(verdict.target) == normalise_target(target), verdict


@pytest.mark.parametrize(
    "query",
    [
        "fun things to do with the parser",  # "fun" opens a Kotlin function, not a sentence
        "not sure how the cache warms up, can you explain",
        "ignore this, how are webhooks signed",
    ],
)
def test_prose_stays_prose(query: str):
    assert classify(query).intent == "understand_code", classify(query)


@pytest.mark.parametrize("query", ["ſtruct Foo", "İmpl Display for X", "\u212aLASS Widget"])
def test_keywords_under_unicode_case_folding_give_a_verdict_not_a_traceback(query: str):
    assert classify(query).intent in {"find_definition", "understand_code", "find_references"}
