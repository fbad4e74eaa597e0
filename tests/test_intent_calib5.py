"""Round seven of issue 22 (branch calib5): the direct path doubted where a rule's cue is weak,
and targets the token forms cut short. Cases come from the tuning sets' failures
(`tune-c/e/f.jsonl`, `independent-f.jsonl`, the dev halves); the blind set H
(`independent-h.jsonl`) is never scored here, only its shape is checked."""

from __future__ import annotations

import pytest

from maguyva.eval.phrasings import CONFIDENT, PHRASINGS, load_file
from maguyva.query.intent import classify


@pytest.mark.parametrize(
    "query",
    [
        # a bare "where" over what is done to x: not surely its definition
        "where is Vec<Shipment> sorted by weight",
        "where is the --timeout=30 default set",
        "where's Map<string, Route> built in the router",
    ],
)
def test_where_something_is_done_to_x_goes_through_fusion(query):
    verdict = classify(query)
    assert verdict.confidence < CONFIDENT, verdict
    assert verdict.rule.endswith("+unsure"), verdict
    assert verdict.intent == classify(query, gate=False).intent  # the intent is kept


@pytest.mark.parametrize(
    "query",
    ["where is ParseConfig defined", "where is the RetryPolicy class", "where is parse_config",
     "where is SessionStore implemented"],
)  # fmt: skip
def test_where_a_definition_is_asked_keeps_the_direct_path(query):
    verdict = classify(query)
    assert (verdict.intent, verdict.rule) == ("find_definition", "1:phrase"), verdict
    assert verdict.confidence >= CONFIDENT


def test_lines_that_are_not_code_under_like_this_are_no_sure_snippet():
    verdict = classify("errors like this:\n2026-01-02 03:04:05 ERROR sync: lease lost for shard 9")
    assert verdict.confidence < CONFIDENT, verdict
    code = classify("code like this:\nfor row in rows:\n    total += row.amount")
    assert (code.intent, code.confidence) == ("find_similar", 0.85)


def test_a_quoted_literal_in_a_question_that_asks_for_an_explanation_is_fused():
    verdict = classify("what is the purpose of the 'retry budget exhausted' message")
    assert (verdict.intent, verdict.target) == ("exact_match", "retry budget exhausted")
    assert verdict.confidence < CONFIDENT
    assert classify('grep "retry budget exhausted"').confidence >= CONFIDENT


@pytest.mark.parametrize(
    ("query", "intent", "target"),
    [
        ("definition of the Go type http.Handler wrapper loggingHandler", "find_definition",
         "loggingHandler"),
        ("where is the css class .btn-primary-large defined", "find_definition",
         ".btn-primary-large"),
        ("usages of the :pending_review symbol", "find_references", ":pending_review"),
        ("is OrderSummary's total() used outside the checkout page", "find_references",
         "OrderSummary.total"),
        ("if we delete the /v1/rates endpoint handler rates_v1, what breaks", "impact_analysis",
         "rates_v1"),
        ('  File "/srv/app/jobs.py", line 12, in run_batch', "exact_match",
         'File "/srv/app/jobs.py", line 12, in run_batch'),
        ("the worker prints Error: EACCES: permission denied, open '/tmp/x.lock' at boot",
         "exact_match", "Error: EACCES: permission denied, open '/tmp/x.lock'"),
        ("where is def paid? in Invoice", "find_definition", "paid?"),
        ("where is std::vector<Item> items_ declared", "find_definition", "items_"),
        ("where is #[derive(Serialize)] on Invoice", "find_definition", "Invoice"),
        # unchanged: the forms these must not take over
        ("where is `Money` defined", "find_definition", "Money"),
        ("callers of Session.request", "find_references", "Session.request"),
        ("where: parse_config", "find_definition", "parse_config"),
    ],
)  # fmt: skip
def test_targets_the_token_forms_cut_short(query, intent, target):
    verdict = classify(query)
    assert (verdict.intent, verdict.target) == (intent, target), verdict


def test_the_blind_set_h_is_varied_and_new():
    blind = load_file(PHRASINGS / "independent-h.jsonl")
    assert len(blind) >= 150
    assert len({item.id.split("-")[1] for item in blind}) >= 12
    assert len({item.intent for item in blind}) == 6
    others = {item.query for path in PHRASINGS.glob("*.jsonl")
              if path.name != "independent-h.jsonl" for item in load_file(path)}  # fmt: skip
    assert not [item.id for item in blind if item.query in others]


@pytest.mark.parametrize(
    ("query", "intent", "target"),
    [
        # an agent's tool call written out: the question inside it (wrapped in one, 98 % of
        # the tuning questions went wrong at the direct path: benches/perturb_wrap_intent.py)
        ('search_code(query="who calls parse_config")', "find_references", "parse_config"),
        ('{"tool": "code_search", "query": "where is RetryPolicy defined"}', "find_definition",
         "RetryPolicy"),
        ('<tool_call>{"name": "search", "arguments": {"q": "impact of renaming load_rows"}}'
         "</tool_call>", "impact_analysis", "load_rows"),
        ('tool_input: {"pattern": "disk quota exceeded"}', "exact_match", "disk quota exceeded"),
        # not a tool call: a line of code or a quoted literal stays as it was
        ('print("hello world")', "exact_match", "hello world"),
        ('data.decode("utf-8")', "exact_match", "utf-8"),
        ('"lease lost"', "exact_match", "lease lost"),
    ],
)  # fmt: skip
def test_the_question_inside_a_tool_call(query, intent, target):
    verdict = classify(query)
    assert (verdict.intent, verdict.target) == (intent, target), verdict


def test_a_capitalised_name_beside_its_kind_beats_an_earlier_capitalised_word():
    verdict = classify(
        "Before the release on Friday, and with the tests green, where is User defined"
    )
    assert (verdict.intent, verdict.target) == ("find_definition", "User"), verdict


def test_a_tool_call_with_a_windows_path_keeps_its_backslashes():
    verdict = classify('search_code(query="who uses App\\Services\\MailerService")')
    assert (verdict.intent, verdict.target) == ("find_references", "App\\Services\\MailerService")


@pytest.mark.parametrize(
    ("query", "target"),
    [
        ("why does it say sql: no rows in result set when I look up a tote",
         "sql: no rows in result set"),
        ("getting redis: connection pool timeout on deploy", "redis: connection pool timeout"),
    ],
)  # fmt: skip
def test_a_go_style_error_after_a_verb_of_saying(query, target):
    verdict = classify(query)
    assert (verdict.intent, verdict.target) == ("exact_match", target), verdict


def test_a_note_after_a_verb_of_saying_is_no_error():
    assert classify("the log says note: this is fine").intent != "exact_match"


TUNE_H = load_file(PHRASINGS / "tune-h.jsonl")


@pytest.mark.parametrize(
    ("query", "intent", "target"),
    [
        # a question over several lines (Markdown, a list of asks) is a question, not a snippet
        ("## Question\nWhat depends on `settings.CACHE_BACKEND`?", "impact_analysis",
         "settings.CACHE_BACKEND"),
        ("- who calls `flush_metrics`\n- and how often", "find_references", "flush_metrics"),
        # what the asker does not want, before the ask, with a dash or "no need to"
        ("not asking who calls it - where is apply_coupon defined?", "find_definition",
         "apply_coupon"),
        ("no need to explain, just show me class CouponRule", "find_definition", "CouponRule"),
        # "the deprecated x" is an adjective, not a change
        ("who still calls the deprecated fetch_v1_rates", "find_references", "fetch_v1_rates"),
        # Markdown italics are not a name
        ("_usages_ of **normalize_currency**", "find_references", "normalize_currency"),
        ("where is __all__ set in the package init", "find_definition", "__all__"),
    ],
)  # fmt: skip
def test_shapes_of_tune_h(query, intent, target):
    verdict = classify(query)
    assert (verdict.intent, verdict.target) == (intent, target), verdict


def test_prose_over_pasted_output_is_still_the_output():
    verdict = classify("CI fails with\nerror[E0425]: cannot find value `cfg` in this scope")
    assert verdict.intent == "exact_match"
    assert verdict.target == "error[E0425]: cannot find value `cfg` in this scope"


def test_tune_h_after_its_failures_were_read():
    from maguyva.eval.phrasings import score

    result = score(TUNE_H)
    assert result.confident_wrong == 0.0, result.failures
    assert result.intent_accuracy >= 0.88, result.failures
