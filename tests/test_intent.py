"""Every row of SPEC.md's intent table, the rule ordering, and target extraction."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maguyva.query.intent import classify, salient_terms

ROWS = [
    # rule 0: snippets and similar-code requests
    ("code similar to: for key in sorted(d): print(key)", "find_similar", 0.85, "for key in sorted(d): print(key)"),
    ("find code like this: with open(p) as fh: data = fh.read()", "find_similar", 0.85, None),
    ("def load(path):\n    with open(path) as fh:\n        return json.load(fh)\n", "find_similar", 0.85, None),
    # rule 1: keyword (0.95) and phrase (0.90)
    ("def parse_config", "find_definition", 0.95, "parse_config"),
    ("class Session", "find_definition", 0.95, "Session"),
    ("func NewServer", "find_definition", 0.95, "NewServer"),
    ("fn read_to_string", "find_definition", 0.95, "read_to_string"),
    ("function parseConfig", "find_definition", 0.95, "parseConfig"),
    ("interface Handler", "find_definition", 0.95, "Handler"),
    ("struct Buffer", "find_definition", 0.95, "Buffer"),
    ("type Options", "find_definition", 0.95, "Options"),
    ("import os.path", "find_definition", 0.95, "os.path"),
    ("where is parseConfig defined", "find_definition", 0.90, "parseConfig"),
    ("Where is the class Session defined?", "find_definition", 0.90, "Session"),
    ("definition of Session.request", "find_definition", 0.90, "Session.request"),
    ("go to definition of parse_config", "find_definition", 0.90, "parse_config"),
    # rule 2: references
    ("who calls parse_config", "find_references", 0.90, "parse_config"),
    ("usages of Session.request", "find_references", 0.90, "Session.request"),
    ("references to HTTPAdapter", "find_references", 0.90, "HTTPAdapter"),
    ("callers of send", "find_references", 0.90, "send"),
    ("where is merge_setting used", "find_references", 0.90, "merge_setting"),
    # rule 3: impact
    ("impact of changing parse_config", "impact_analysis", 0.90, "parse_config"),
    ("blast radius of Session.send", "impact_analysis", 0.90, "Session.send"),
    ("what depends on utils.helper", "impact_analysis", 0.90, "utils.helper"),
    ("what breaks if I change resolve_redirects", "impact_analysis", 0.90, "resolve_redirects"),
    # rule 4: literals and error tokens (quoted 0.90, bare token 0.85)
    ('"connection refused"', "exact_match", 0.90, "connection refused"),
    ("find 'Invalid URL %r'", "exact_match", 0.90, "Invalid URL %r"),
    ("find ECONNREFUSED", "exact_match", 0.85, "ECONNREFUSED"),
    ("Traceback (most recent call last):", "exact_match", 0.85, "Traceback (most recent call last)"),
    ('File "adapters.py", line 519', "exact_match", 0.85, 'File "adapters.py", line 519'),
    ("ValueError: invalid literal for int()", "exact_match", 0.85, "ValueError: invalid literal for int()"),
    ("find KeyError", "exact_match", 0.85, "KeyError"),
    # rule 5: a lone identifier, 0.60-0.80
    ("parseConfig", "find_definition", None, "parseConfig"),
    ("Session.request", "find_definition", None, "Session.request"),
    ("parse_config function", "find_definition", None, "parse_config"),
    ("HTTPConnectionPool", "find_definition", None, "HTTPConnectionPool"),
    ("_resolve", "find_definition", None, "_resolve"),
    ("method constant", "find_definition", None, "constant"),
    ("bind()", "find_definition", None, "bind"),
    # rule 6: questions about meaning
    ("how does parse_config handle missing files", "understand_code", 0.75, None),
    ("why are cookies merged twice", "understand_code", 0.75, None),
    ("explain the retry logic", "understand_code", 0.75, None),
    ("architecture of the adapters", "understand_code", 0.75, None),
    # rule 7: nothing matched
    ("cookie jar persistence", "understand_code", 0.40, None),
    ("cookies", "understand_code", 0.40, None),
]  # fmt: skip


@pytest.mark.parametrize(("query", "intent", "confidence", "target"), ROWS)
def test_every_rule_row(query: str, intent: str, confidence: float | None, target: str | None):
    verdict = classify(query)
    assert verdict.intent == intent, verdict
    if confidence is not None:
        assert verdict.confidence == pytest.approx(confidence)
    else:
        assert 0.60 <= verdict.confidence <= 0.80
    if target is not None:
        assert verdict.target == target


def test_identifier_confidence_grows_with_subwords():
    short = classify("Session").confidence
    long = classify("HTTPConnectionPoolManager").confidence
    dotted = classify("requests.sessions.Session.merge_environment_settings").confidence
    assert 0.60 <= short < long <= 0.80
    assert dotted == 0.80


@pytest.mark.parametrize(
    ("query", "intent"),
    [
        # a snippet with a quoted string is rule 0, not rule 4
        ('x = load("config.json")\nprint(x["name"])', "find_similar"),
        # a definition keyword with an error name is rule 1, not rule 4
        ("class ConnectionError", "find_definition"),
        # "where is X used" is rule 2 even though "where is" starts rule 1 phrases
        ("where is parse_config used", "find_references"),
        # a quoted identifier in a references question is rule 2, not rule 4
        ('who calls "parse_config"', "find_references"),
        # an impact question that mentions an error is rule 3
        ("what breaks if I change ConnectionError", "impact_analysis"),
        # a question that merely mentions an identifier is rule 6, not rule 5
        ("how does parse_config handle missing files", "understand_code"),
        # an error token inside a how-question is rule 4 (it comes first)
        ("how to handle ECONNREFUSED", "exact_match"),
    ],
)
def test_first_matching_rule_wins(query: str, intent: str):
    assert classify(query).intent == intent


def test_definition_kind_is_extracted():
    assert classify("class Session").kind == "class"
    assert classify("def parse").kind == "function"
    assert classify("where is the struct Buffer defined").kind == "struct"


def test_salient_terms_drop_stop_words():
    assert salient_terms("how are signed cookies verified") == ["signed", "cookies", "verified"]


@given(st.text(max_size=300))
def test_classifier_is_total(query: str):
    """Any text gets an intent, a confidence in range, and never raises."""
    verdict = classify(query)
    assert verdict.intent in {
        "find_definition", "find_references", "understand_code",
        "find_similar", "impact_analysis", "exact_match",
    }  # fmt: skip
    assert 0.0 < verdict.confidence <= 1.0
