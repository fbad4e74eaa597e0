"""The rule-based intent classifier (SPEC.md, "Intent classification").

Rules are tried in the spec's order and the first match wins. Each rule also extracts the
query's *target* — the identifier, literal or snippet the retrievers should look for — so that
"where is parseConfig defined" searches for `parseConfig`, not for the whole sentence.

It runs on every query, so it is a handful of precompiled regular expressions and no I/O: a few
microseconds per query (see benches/bench_intent.py).
"""

from __future__ import annotations

import errno
import re
from dataclasses import dataclass, field

from maguyva.modalities.text.stopwords import STOP_WORDS

FIND_SIMILAR = "find_similar"
FIND_DEFINITION = "find_definition"
FIND_REFERENCES = "find_references"
IMPACT_ANALYSIS = "impact_analysis"
EXACT_MATCH = "exact_match"
UNDERSTAND_CODE = "understand_code"


@dataclass(frozen=True, slots=True)
class Classification:
    """The classifier's verdict. `rule` names the spec row that matched (for `--explain`);
    `kind` is a definition kind the query asked for ("class", "function", ...), if any;
    `terms` are the salient words of the query (stop words dropped), for lexical scoring."""

    intent: str
    confidence: float
    target: str
    rule: str
    kind: str | None = None
    terms: list[str] = field(default_factory=list)
    snippet: str | None = None


# An identifier, possibly dotted or namespaced (Session.request, os.path.join, std::fs::read).
_Q = r"[`'\"]?"
"""An optional quote around a name."""
_IDENT = r"[A-Za-z_$][\w$]*(?:(?:\.|::|#|->)[A-Za-z_$][\w$]*)*"

# Rule 0: explicit requests for similar code, or a multi-line snippet.
_SIMILAR_PHRASE = re.compile(
    r"^\s*(?:find\s+|show\s+(?:me\s+)?|search\s+(?:for\s+)?)?"
    r"(?:code|functions?|snippets?|implementations?)\s+(?:that\s+(?:is|are|looks?)\s+)?"
    r"(?:similar\s+to|like\s+this|like)\s*:?\s*(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL,
)
_SIMILAR_TO = re.compile(r"^\s*similar\s+to\s*:\s*(?P<rest>.+)$", re.IGNORECASE | re.DOTALL)
_CODE_LINE = re.compile(r"[(){}\[\];=:]|^\s*(?:def|class|fn|func|function|return|if|for)\b")

# Rule 1: a definition keyword at the start, or a "where is X defined" phrase.
_DEF_KEYWORDS: dict[str, str] = {
    "def": "function",
    "async def": "function",
    "func": "function",
    "fn": "function",
    "function": "function",
    "class": "class",
    "interface": "interface",
    "struct": "struct",
    "type": "type",
    "enum": "enum",
    "trait": "trait",
    "impl": "impl",
    "module": "module",
    "mod": "module",
    "namespace": "namespace",
    "protocol": "protocol",
    "record": "record",
    "typedef": "type",
    "macro": "macro",
    "import": "import",
    "from": "import",
}
_DEF_KEYWORD = re.compile(
    r"^\s*(?P<kw>async\s+def|" + "|".join(sorted(_DEF_KEYWORDS, key=len, reverse=True)) + r")\s+"
    r"(?P<name>" + _IDENT + r")",
    re.IGNORECASE,
)
_DEF_PHRASES = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bwhere\s+(?:is|are)\s+(?:the\s+)?(?:(?P<kind>class|function|method|struct|interface|"
        r"type|enum|trait|constant|variable)\s+)?"
        + _Q
        + r"(?P<name>"
        + _IDENT
        + r")"
        + _Q
        + r"\s*(?:\(\))?\s+"
        r"(?:defined|declared|implemented)\b",
        r"\bwhere\s+does\s+"
        + _Q
        + r"(?P<name>"
        + _IDENT
        + r")"
        + _Q
        + r"\s+(?:get\s+)?(?:defined|declared)\b",
        r"\b(?:go\s+to\s+)?(?:the\s+)?(?:definition|declaration|implementation)\s+of\s+"
        r"(?:the\s+)?(?:(?P<kind>class|function|method|struct|interface|type|enum|trait)\s+)?"
        + _Q
        + r"(?P<name>"
        + _IDENT
        + r")"
        + _Q,
        r"\b(?:find|show|jump\s+to|goto)\s+(?:the\s+)?(?:definition|declaration)\s+(?:for|of)\s+"
        + _Q
        + r"(?P<name>"
        + _IDENT
        + r")"
        + _Q,
        r"\bwhere\s+is\s+" + _Q + r"(?P<name>" + _IDENT + r")" + _Q + r"\s*(?:\(\))?\s*\??\s*$",
    )
]

# Rule 2: references and callers.
_REF_PHRASES = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\b(?:who|what)\s+(?:calls|invokes|uses|references|imports)\s+(?:the\s+)?"
        r"(?:function\s+|method\s+|class\s+)?" + _Q + r"(?P<name>" + _IDENT + r")" + _Q,
        r"\b(?:usages?|uses|references|refs|callers|call\s+sites|calls|invocations|"
        r"consumers|importers)\s+(?:of|to|for)\s+(?:the\s+)?(?:function\s+|method\s+|class\s+)?"
        + _Q
        + r"(?P<name>"
        + _IDENT
        + r")"
        + _Q,
        r"\bwhere\s+(?:is|are)\s+" + _Q + r"(?P<name>" + _IDENT + r")" + _Q + r"\s*(?:\(\))?\s+"
        r"(?:used|called|referenced|invoked|imported)\b",
        r"\bfind\s+(?:all\s+)?(?:usages|references|callers)\b(?:\s+(?:of|to|for))?\s*"
        + _Q
        + r"(?P<name>"
        + _IDENT
        + r")?`?",
    )
]

# Rule 3: impact analysis.
_IMPACT_PHRASES = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bwhat\s+(?:depends|relies)\s+on\s+(?:the\s+)?" + _Q + r"(?P<name>" + _IDENT + r")?`?",
        r"\bwhat\s+(?:breaks|would\s+break|will\s+break|is\s+affected|gets\s+affected)\s+"
        r"(?:if|when)\b.*?(?:change|modify|remove|delete|rename|edit|touch)\w*\s+(?:the\s+)?"
        r"(?:function\s+|method\s+|class\s+)?" + _Q + r"(?P<name>" + _IDENT + r")?`?",
        r"\bblast\s+radius\b(?:\s+(?:of|for)\s+" + _Q + r"(?P<name>" + _IDENT + r")" + _Q + r")?",
        r"\bimpact\b(?:\s+(?:of|on)\s+(?:changing\s+|modifying\s+|removing\s+)?(?:the\s+)?"
        + _Q
        + r"(?P<name>"
        + _IDENT
        + r")"
        + _Q
        + r")?",
        r"\bdependents\s+of\s+" + _Q + r"(?P<name>" + _IDENT + r")" + _Q,
        r"\bwhat\s+breaks\b",
    )
]

# Rule 4: literals and error tokens.
_QUOTED = re.compile(r"\"(?P<dq>[^\"]+)\"|'(?P<sq>[^']{2,})'|`(?P<bq>[^`]+)`")
_TRACEBACK = re.compile(r"Traceback \(most recent call last\)", re.IGNORECASE)
_FILE_LINE = re.compile(r"File \"[^\"]+\", line \d+")
# POSIX errno names (from the platform's own table) and Node-style ERR_* codes.
_ERRNO = re.compile(
    r"\b(?:"
    + "|".join(sorted(errno.errorcode.values(), key=len, reverse=True))
    + r"|ERR_[A-Z0-9_]+)\b"
)
_ERROR_NAME = re.compile(r"\b[A-Z][A-Za-z0-9]*(?:Error|Exception|Warning|Exit|Interrupt)\b:?")
_LEADING_VERB = re.compile(
    r"^\s*(?:please\s+)?(?:find|search(?:\s+for)?|grep(?:\s+for)?|look\s+for|locate|show(?:\s+me)?)"
    r"\s+(?:the\s+)?(?:(?:string|literal|text|error|message|token)\s+)?",
    re.IGNORECASE,
)

# Rule 5: one identifier, perhaps with a word or two that ask for nothing else.
_FILLER = frozenset(
    [
        "find",
        "show",
        "the",
        "a",
        "an",
        "definition",
        "def",
        "function",
        "func",
        "method",
        "class",
        "struct",
        "interface",
        "type",
        "symbol",
        "go",
        "to",
        "goto",
        "jump",
        "where",
        "is",
        "of",
        "for",
        "me",
        "please",
    ]
)
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z][a-z]+[A-Z]")
_SUBWORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_KIND_WORDS = {
    "class": "class",
    "function": "function",
    "func": "function",
    "def": "function",
    "method": "method",
    "struct": "struct",
    "interface": "interface",
    "type": "type",
}

# Rule 6: questions about meaning.
_UNDERSTAND = re.compile(
    r"\b(?:how|why|explain|explains|architecture|overview|walk\s+me\s+through|describe)\b",
    re.IGNORECASE,
)

_WORD = re.compile(r"[A-Za-z_][\w$]*")


def salient_terms(query: str) -> list[str]:
    """The query's words minus stop words, in order, without duplicates (case kept)."""
    seen: set[str] = set()
    terms: list[str] = []
    for word in _WORD.findall(query):
        low = word.lower()
        if low in STOP_WORDS or len(word) < 2 or low in seen:
            continue
        seen.add(low)
        terms.append(word)
    return terms


def _identifier_confidence(ident: str) -> float:
    """0.60 for a short identifier up to 0.80 for a long, multi-word or qualified one."""
    parts = [p for p in re.split(r"\.|::|#|->", ident) if p]
    subwords = sum(len(_SUBWORD.findall(p)) for p in parts)
    confidence = 0.60 + 0.04 * max(0, subwords - 1) + 0.04 * (len(parts) - 1)
    return round(min(0.80, confidence), 2)


def _looks_like_identifier(word: str) -> bool:
    """CamelCase, snake_case, PascalCase, SCREAMING_CASE or dotted: not a plain word."""
    if re.fullmatch(_IDENT, word) is None:
        return False
    if any(sep in word for sep in (".", "::", "#", "->")):
        return True
    if word.startswith("_") and len(word.strip("_")) > 0:
        return True  # a private or dunder name (`_resolve`, `__init__`) is never prose
    return "_" in word.strip("_") or bool(_CAMEL.search(word)) or word[:1].isupper()


def _similar(query: str) -> Classification | None:
    match = _SIMILAR_PHRASE.match(query) or _SIMILAR_TO.match(query)
    if match:
        snippet = match.group("rest").strip() or query.strip()
        return Classification(
            FIND_SIMILAR, 0.85, snippet, "0:similar-phrase", snippet=snippet,
            terms=salient_terms(snippet),
        )  # fmt: skip
    lines = [line for line in query.strip().splitlines() if line.strip()]
    if len(lines) >= 2 and sum(1 for line in lines if _CODE_LINE.search(line)) >= 2:
        snippet = query.strip("\n")
        return Classification(
            FIND_SIMILAR, 0.85, snippet, "0:snippet", snippet=snippet, terms=salient_terms(snippet)
        )
    return None


_DEF_TRIGGERS = ("defin", "declar", "implement", "where")
_REF_TRIGGERS = ("call", "usage", "uses", "used", "referenc", "refs", "invo", "consumer", "import")
_IMPACT_TRIGGERS = ("depend", "relies", "break", "affect", "blast", "impact")
_ERRNO_HINT = re.compile(r"\bE[A-Z]{2}|\bERR_")


def _named(
    patterns: list[re.Pattern[str]], query: str, triggers: tuple[str, ...] = ()
) -> tuple[re.Match[str], str] | None:
    """First pattern that matches, with its `name` group. The cheap `triggers` substring test
    (on the lower-cased query) skips the regexes for the many queries that cannot match."""
    if triggers:
        lowered = query.lower()
        if not any(t in lowered for t in triggers):
            return None
    for pattern in patterns:
        match = pattern.search(query)
        if match:
            return match, (match.groupdict().get("name") or "")
    return None


def classify(query: str) -> Classification:
    """Classify a query into one of the six intents (first matching rule wins)."""
    text = query.strip()
    terms = salient_terms(text)

    similar = _similar(query)
    if similar:
        return similar

    match = _DEF_KEYWORD.match(text)
    if match:
        keyword = " ".join(match.group("kw").lower().split())
        return Classification(
            FIND_DEFINITION, 0.95, match.group("name"), "1:keyword",
            kind=_DEF_KEYWORDS[keyword], terms=terms,
        )  # fmt: skip
    found = _named(_DEF_PHRASES, text, _DEF_TRIGGERS)
    if found:
        match, name = found
        kind = (match.groupdict().get("kind") or "").lower() or None
        return Classification(FIND_DEFINITION, 0.90, name, "1:phrase", kind=kind, terms=terms)

    found = _named(_REF_PHRASES, text, _REF_TRIGGERS)
    if found:
        return Classification(FIND_REFERENCES, 0.90, found[1], "2:references", terms=terms)

    found = _named(_IMPACT_PHRASES, text, _IMPACT_TRIGGERS)
    if found:
        name = found[1] or _last_identifier(text)
        return Classification(IMPACT_ANALYSIS, 0.90, name, "3:impact", terms=terms)

    literal = _literal(text)
    if literal:
        target, confidence, rule = literal
        return Classification(EXACT_MATCH, confidence, target, rule, terms=terms)

    ident = _lone_identifier(text)
    if ident:
        name, kind = ident
        return Classification(
            FIND_DEFINITION, _identifier_confidence(name), name, "5:identifier",
            kind=kind, terms=terms,
        )  # fmt: skip

    if _UNDERSTAND.search(text):
        return Classification(UNDERSTAND_CODE, 0.75, text, "6:question", terms=terms)
    return Classification(UNDERSTAND_CODE, 0.40, text, "7:fallback", terms=terms)


def _last_identifier(text: str) -> str:
    candidates = [w for w in _WORD.findall(text) if _looks_like_identifier(w)]
    return candidates[-1] if candidates else ""


def _literal(text: str) -> tuple[str, float, str] | None:
    """Rule 4: (target, confidence, rule) for a literal or error-token query."""
    if _TRACEBACK.search(text):
        return "Traceback (most recent call last)", 0.85, "4:traceback"
    file_line = _FILE_LINE.search(text)
    if file_line:
        return file_line.group(0), 0.85, "4:traceback-line"
    quoted = _QUOTED.search(text)
    if quoted:
        literal = quoted.group("dq") or quoted.group("sq") or quoted.group("bq")
        return literal, 0.90, "4:quoted"
    errno = _ERRNO.search(text) if _ERRNO_HINT.search(text) else None
    if errno:
        return errno.group(0), 0.85, "4:error-token"
    error = _ERROR_NAME.search(text)
    if error and (error.group(0).endswith(":") or _LEADING_VERB.match(text)):
        stripped = _LEADING_VERB.sub("", text, count=1).strip()
        target = stripped if error.group(0).endswith(":") else error.group(0).rstrip(":")
        return target, 0.85, "4:error-token"
    return None


def _lone_identifier(text: str) -> tuple[str, str | None] | None:
    """Rule 5: the query is one identifier plus at most two filler words."""
    words = text.rstrip("?").split()
    if not words or len(words) > 3:
        return None
    idents = [w.strip("`'\"()") for w in words if w.lower() not in _FILLER]
    if len(idents) != 1:
        return None
    ident = idents[0].removesuffix("()")
    kind = next((_KIND_WORDS[w.lower()] for w in words if w.lower() in _KIND_WORDS), None)
    # A plain word is prose ("cookies"), unless a kind word says it names something
    # ("method constant", "function bind") or it is written as a call ("bind()").
    named = kind is not None or any(w.endswith("()") for w in words)
    if not _looks_like_identifier(ident) and not (named and re.fullmatch(_IDENT, ident)):
        return None
    return ident, kind
