"""Shapes of a question that the classifier's phrase rules do not read on their own.

- Two questions in one ("where is parse_config defined and who calls it?"): the first one asked
  is the intent, and the answer goes through fusion, since the second asks for something else.
- A request for similar code or a snippet of several lines (rule 0, `similar_request`).
- One line of code pasted without a word around it (`const sleep = (ms) => ...;`): a snippet
  to find similar code for, like the spec's multi-line rule 0.
- A literal nobody quoted: after "regex" or "pattern" ("find the regex [A-Z]{3}-\\d{4}"), and
  comment markers (`TODO(perf)`, `FIXME`) that a search is asked for.

All plain regular expressions: they run on every query (benches/bench_intent.py).
"""

from __future__ import annotations

import json
import re

from maguyva.modalities.text.stopwords import STOP_WORDS
from maguyva.query import targets as _targets
from maguyva.query.paste_shapes import pasted_error
from maguyva.query.verdict import EXACT_MATCH, FIND_SIMILAR, Classification, salient_terms
from maguyva.support.lazyre import lazy_compile

_ASKS = (
    r"(?:who|what|where|which|how|why|whether|explain|show|find|list|tell|give|open|can|could"
    r"|would|will|is|are|does|do|did|should)"
)
_CLAUSE = lazy_compile(
    r"\?\s+(?=\S)|;\s+(?=" + _ASKS + r"\b)|,?\s+(?:and\s+)?then\s+(?=" + _ASKS + r"\b)"
    r"|,?\s+and\s+(?:also\s+)?(?=" + _ASKS + r"\b)",
    re.IGNORECASE,
)
"""Where a second question starts: after "?", or "and" / "then" / ";" before a question word."""


def split_clauses(text: str) -> tuple[str, str] | None:
    """(first question, the rest) when `text` asks two things on one line, else None."""
    if "\n" in text or not ("?" in text[:-1] or ";" in text or " and " in text or " then " in text):
        return None
    match = _CLAUSE.search(text)
    if not match:
        return None
    first, rest = text[: match.start()].strip(), text[match.end() :].strip()
    if len(first.split()) < 2 or len(rest.split()) < 2:
        return None
    if not (text[match.start() : match.end()].startswith("?") or _LEAD.match(first)):
        return None  # "src/lib.rs:12 defines `Engine`; who uses it": a statement, then the ask
    return first, rest


_LEAD = lazy_compile(
    r"^(?:" + _ASKS + r"|please|pls|callers|call\s+sites|usages?|uses|references|refs|xrefs"
    r"|definition|impact|blast|dependents|consequences|effects?|locate|search|grep|look"
    r"|go\s+to|jump\s+to|any|anything|all)\b",
    re.IGNORECASE,
)
"""A first clause that asks something (a question word or a lookup's noun phrase)."""


_CODE_START = lazy_compile(
    r"^\s*(?:(?:export\s+)?(?:default\s+)?(?:const|let|var|function|async\s+function|class)\s"
    r"|(?:pub(?:\(\w+\))?\s+)?(?:fn|struct|enum|impl|trait)\s|def\s|func\s|return\s|import\s"
    r"|(?:public|private|protected|static|final)\s|[\w$.]+\s*(?:\(|=[^=]|\+=|:=))"
)
_CODE_MARK = lazy_compile(r";\s*$|=>|[{}]|\s=\s|\):|:=|->")
_CODE_CHAR = lazy_compile(r"[(){}\[\];=<>]")


def one_line_snippet(text: str) -> bool:
    """A single line that is code, not a question about code."""
    if "\n" in text or len(text) < 20 or text.rstrip().endswith("?"):
        return False
    if not ("=" in text or ";" in text or "{" in text or "):" in text or "->" in text):
        return False  # no mark of code at all: most questions stop here
    if not (_CODE_START.match(text) and _CODE_MARK.search(text)):
        return False
    words = re.findall(r"[A-Za-z]+", text)
    prose = sum(1 for w in words if w.lower() in STOP_WORDS)
    return len(_CODE_CHAR.findall(text)) >= 4 and prose <= 2


_SEARCH = (
    r"(?:please\s+)?(?:(?:find|search)(?:\s+me)?(?:\s+for)?|grep(?:\s+for)?|look\s+for|locate"
    r"|where\s+is)"
)
_UNQUOTED = lazy_compile(
    r"^\s*" + _SEARCH + r"\s+(?:the\s+|all\s+|any\s+|a\s+)?"
    r"(?:(?P<kind>regexp?|pattern|string|literal|words)|(?P<soft>text|message|phrase))\s+"
    r"(?P<lit>\S(?:.*\S)?)\s*$",
    re.IGNORECASE,
)
_PLACE_TAIL = lazy_compile(
    r"\s+(?:in|under|inside|within|across)\s+(?:the\s+)?[\w./-]+(?:\s+(?:files?|folder|dir|code))?$"
)
"""Where to look, after an unquoted literal ("the literal 42 in config")."""
_SLASHED = lazy_compile(r"^/(?P<re>[^/\s](?:.*[^\s])?)/[gimsuy]*$")
"""A regular expression written between slashes, as in JavaScript or sed."""
_REGEX_LEAD = lazy_compile(
    r"^(?:the\s+)?(?:regexp?|regular\s+expression|pattern)\s+(?P<rest>/\S.*)$", re.IGNORECASE
)
_MARKER = lazy_compile(r"(?<![\w])(?:TODO|FIXME|XXX|HACK)(?:\([^()\s]{1,30}\))?(?![\w(])")
_MARKER_ASK = lazy_compile(r"\b(?:find|search|grep|look|list|show|where|which|comments?)\b", re.I)


_GREP_TOKEN = lazy_compile(r"^(?:grep|rg)(?:\s+-\w+)*(?:\s+for)?\s+(?P<tok>[^\s`'\"]+)\s*$", re.I)


def unquoted_literal(text: str, named: bool = False) -> str | None:
    """The literal of "find the regex ^v\\d+$", "/def merge_(a|b)\\(/" or "search for
    FIXME(security)", if asked; a marker only when no name is asked about (`named`)."""
    if text[:1] in "tTrRpP":
        named_regex = _REGEX_LEAD.match(text)
        if named_regex:  # "the regex /^PLT-\d{6}$/": the pattern between the slashes
            text = named_regex.group("rest")
    slashed = _SLASHED.match(text) if text.startswith("/") else None
    if slashed:
        return slashed.group("re")
    match = _UNQUOTED.match(text)
    if match:
        literal = _PLACE_TAIL.sub("", match.group("lit")) or match.group("lit")
        if match.group("kind") or re.search(r"[^\w\s]", literal):
            return literal
    grep = _GREP_TOKEN.match(text) if text[:1] in "gGrR" else None
    if grep:
        return grep.group("tok")  # "grep for E_TOKEN_REVOKED": the token itself, not its definition
    markers = "TODO" in text or "FIXME" in text or "XXX" in text or "HACK" in text
    marker = (
        _MARKER.search(text) if markers and not named else None
    )  # "TODO: where is X defined" asks for X
    if marker and _MARKER_ASK.search(text):
        return marker.group(0)
    return None


_GREETING = lazy_compile(
    r"^(?:(?:hey|hi|hello|yo|ok|okay|so|um|hmm|btw|also|quick\s+q(?:uestion)?|question)\b"
    r"(?:\s+(?:there|team|all|folks))?[,:!.\s-]*)+(?=\S)",
    re.IGNORECASE,
)
_SIGN_OFF = lazy_compile(
    r"[,\s]+(?:pls|plz|please|thanks|thank\s+you|thx|ty|cheers)[.!]*\s*$", re.IGNORECASE
)
_WRAPPER = lazy_compile(
    r"^(?:(?:can|could|would)\s+you\s+(?:please\s+)?(?:tell|show)\s+me|(?:i\s+)?(?:need|want"
    r"|would\s+like)\s+to\s+know|do\s+you\s+know|any\s+idea)\s+"
    r"(?=(?:where|who|what|which|how|why)\b)",
    re.IGNORECASE,
)
_PLACE_AFTER = lazy_compile(
    r"\s+(?:in|from|under|inside|within|across)\s+(?:the|our|this)\s+(?:[\w.-]+\s+)?[\w.-]+\s+"
    r"(?:module|package|crate|service|app|project|repo|codebase|folder|directory|dir|layer"
    r"|component)s?\s*(?=\?*\s*$)",
    re.IGNORECASE,
)
"""Where to look, at the end ("... in the payments module"): not part of what is asked."""
_OPENER_WORDS = """
    hey hi hello yo ok okay so um hmm btw also quick question can could would i need want do any
"""
_OPENERS = frozenset(_OPENER_WORDS.split())
_CLOSER_WORDS = """
    pls plz please thanks you thx ty cheers module package crate service app project repo
    codebase folder directory dir layer component modules packages crates services apps
    projects repos folders directories dirs layers components
"""
_CLOSERS = frozenset(_CLOSER_WORDS.split())
_PREAMBLE = lazy_compile(r"^(?P<lead>[A-Za-z][\w ,'’-]{2,60}?):\s+(?P<rest>\S.*)$")


_NOT_THIS = lazy_compile(
    r"^(?:not|forget(?:\s+about)?|never\s*mind|ignore|skip|rather\s+than|instead\s+of"
    r"|no\s+need\s+to|(?:i\s+)?(?:don't|do\s+not)\s+(?:want|need))\s+"
    r"(?:the|its|any|all|about)?\s*[\w -]{1,30}?(?:,|\s+[-—–]+|;)\s+(?:but\s+|just\s+|only\s+)?"
    r"(?=\S+\s+\S)",
    re.IGNORECASE,
)
"""What the asker does not want, before what they do ("not the usages, the definition of X",
"forget the callers, where does X live"): its words would be read as the ask."""
_NAMING = lazy_compile(
    r"\b(?P<noun>thing|function|method|class|helper|one|type|struct|module|variable|constant"
    r"|something|file|hook|component|macro|field)\s+(?:called|named)\s+x\b"
)


def naming(shape: str) -> str:
    """`shape` without the "called" or "named" that only names x ("the helper called x")."""
    if "called" not in shape and "named" not in shape:
        return shape
    return _NAMING.sub(_noun_x, shape)


def _noun_x(match: re.Match[str]) -> str:
    return match.group("noun") + " x"


def strip_chatter(text: str) -> str:
    """The question without a greeting ("hey, "), a sign-off (" pls") or a prose preamble
    ending in a colon ("quick question about the billing service: ..."); a preamble that
    names code is the question's subject ("parse_config: who calls it"), not chatter."""
    if "\n" in text:
        return text
    if not text.strip():
        return text
    stripped = text
    # Each pattern runs only when the first or last word could start it: this is every query.
    if text.split(None, 1)[0].strip(",:!.-").lower() in _OPENERS:
        stripped = _WRAPPER.sub("", _GREETING.sub("", stripped)).strip()
    if text.rsplit(None, 1)[-1].strip("?!.").lower() in _CLOSERS:
        stripped = _PLACE_AFTER.sub("", _SIGN_OFF.sub("", stripped)).strip()
    if "," in stripped or ";" in stripped or " -" in stripped or "—" in stripped:
        stripped = _NOT_THIS.sub("", stripped, count=1) or stripped
    preamble = _PREAMBLE.match(stripped) if ":" in stripped else None
    if (
        preamble
        and len(preamble.group("lead").split()) + len(preamble.group("rest").split()) >= 5
        and _targets.best(preamble.group("lead"), 3) is None
    ):
        stripped = preamble.group("rest")
    return stripped if len(stripped.split()) >= 1 else text


# Rule 0: explicit requests for similar code, or a multi-line snippet.
_SIMILAR_WORDS = lazy_compile(
    r"\b(?:similar|resembl\w*|like\s+(?:this|that|the\s+following)|(?:code|functions?|snippets?"
    r"|implementations?|helpers?)\s+like|duplicat\w*|copies|copy\b|copy-pasted|clones?\s+of"
    r"|same\s+(?:pattern|thing|logic)|shaped\s+like|something\s+like|roughly\s+this"
    r"|looks?\s+like\s+this|already\s+a\s+helper|like\s*:)",
    re.IGNORECASE,
)
_SIMILAR_MARKS = (
    "similar",
    "resembl",
    "like",
    "duplicat",
    "cop",
    "clone",
    "same",
    "roughly",
    "already",
)
"""One of these is in every phrase of `_SIMILAR_WORDS`: without them it cannot match."""
_SIMILAR_LEAD = lazy_compile(r"^(?P<lead>[^:\n]{0,80}?)\s*:\s*(?P<rest>\S.*)$", re.DOTALL)
_CODE_CHARS = lazy_compile(
    r"[(){}\[\];=<>]|^\s*(?:def|class|fn|func|function|return|if|for|while|try|except|with|match"
    r"|let|const|var|impl|pub|public|private|async|export|import|from|SELECT|INSERT|UPDATE"
    r"|WITH)\b|^\s*@\w"
)
_FENCE = lazy_compile(r"^```[\w+-]*\s*\n(?P<code>.*?)\n?```\s*$", re.DOTALL)


_CODE_LINE = lazy_compile(
    r"[{};:,(\[]\s*$|^\s*[)}\]]|^\s*(?:def|class|fn|func|function|return|if|elif|else|for|while"
    r"|try|except|catch|with|match|case|let|const|var|impl|pub|public|private|protected|static"
    r"|async|await|export|import|from|yield|raise|throw|package|use|struct|enum|interface|type"
    r"|SELECT|INSERT|UPDATE|DELETE|WITH)\b|^\s*@\w|\s[-+*/%]?=\s|=>|:=|->|^\s*[\w.$]+\(.*\)\s*$"
)


def _marked(folded: str) -> bool:
    """Whether one of `_SIMILAR_MARKS` is in `folded` (spelt out: no generator per query)."""
    return (
        "like" in folded or "similar" in folded or "cop" in folded or "same" in folded
        or "duplicat" in folded or "resembl" in folded or "clone" in folded
        or "roughly" in folded or "already" in folded
    )  # fmt: skip


def _asks_similar(lead: str) -> bool:
    return _marked(lead.casefold()) and bool(_SIMILAR_WORDS.search(lead))


def _code_body(body: str) -> bool:
    """Whether at least half the lines of `body` read as code."""
    lines = [line for line in body.splitlines() if line.strip()]
    return 2 * sum(1 for line in lines if _CODE_LINE.search(line)) >= len(lines)


def similar_request(query: str) -> Classification | None:
    """Rule 0 (SPEC.md): a request for similar code, or a snippet of several lines."""
    text = query.strip()
    # a printable text holds no line break (most questions): one line, nothing to split
    lines = [text] if text.isprintable() else [x for x in text.splitlines() if x.strip()]
    if len(lines) >= 2:
        lead = lines[0]
        code_lead = bool(_CODE_CHARS.search(lead))
        snippet = text if code_lead else "\n".join(text.splitlines()[1:]).strip()
        fenced = _FENCE.match(snippet)
        if fenced:
            snippet = fenced.group("code").strip()
        rule = "0:snippet" if code_lead else "0:similar-phrase"
        confidence = 0.85
        if not code_lead and not _asks_similar(lead):
            # A line of prose over pasted output ("seeing this in prod:" and a log line) is
            # the output's question, and prose over lines that are not code is no sure snippet.
            error = pasted_error(snippet)
            if error:
                return Classification(EXACT_MATCH, 0.85, error, "4:pasted-error+lead",
                                      terms=salient_terms(text))  # fmt: skip
        if not code_lead and not _code_body(snippet):
            if not _asks_similar(lead):
                return None  # a question over several lines (`prose_lines`), not a snippet
            # Even under "like this:", lines that are not code (log lines, an error, prose)
            # may ask for their source rather than look-alikes: no direct path either way.
            confidence, rule = 0.80, rule + "+unsure"
        return Classification(FIND_SIMILAR, confidence, snippet, rule, snippet=snippet,
                              terms=salient_terms(snippet))  # fmt: skip
    folded = text.casefold()  # as IGNORECASE matches: "ſame" is "same"
    if _marked(folded) and _SIMILAR_WORDS.search(text):
        lead = _SIMILAR_LEAD.match(text)
        if lead and _SIMILAR_WORDS.search(lead.group("lead") + ":"):
            snippet = lead.group("rest").strip()
            code = _code_body(snippet)
            return Classification(FIND_SIMILAR, 0.85 if code else 0.80, snippet,
                                  "0:similar-phrase" if code else "0:similar-phrase+unsure",
                                  snippet=snippet, terms=salient_terms(snippet))  # fmt: skip
    return None


_CALL = lazy_compile(
    r"^\s*(?:(?P<func>[A-Za-z_][\w.]*)\(\s*)?(?:(?P<key>[A-Za-z_]\w*)\s*[=:]\s*)?"
    r"(?P<q>\"(?:[^\"\\\n]|\\.){3,}\"|'(?:[^'\\\n]|\\.){3,}')\s*(?:,[^()]*)?\)?\s*;?\s*$"
)
_TOOL_TAGS = lazy_compile(r"^\s*<(?P<tag>[\w-]+)>\s*(?P<body>\{.*\})\s*</(?P=tag)>\s*$", re.DOTALL)
_NAME_PART = lazy_compile(r"[._]+|(?<=[a-z0-9])(?=[A-Z])")
_SEARCH_TOOL = frozenset({"search", "find", "query", "lookup", "ask", "grep", "tool", "code"})
"""Words of a function named for a search (`search_code`, `runSearch`): its one string argument
is the question (not `data.decode("utf-8")`, a line of code)."""
_QUESTION_KEYS = ("query", "q", "question", "prompt", "input", "text", "search")
_PATTERN_KEYS = ("pattern", "regex", "literal")
"""In a tool call, the argument holding the question; or a pattern, searched as written."""
_LOG_KEYS = frozenset({"level", "severity", "lvl", "msg", "message", "ts", "time", "timestamp"})
"""Keys of a JSON log line, which is pasted output, not a tool call."""
_JSON_LEAD = lazy_compile(r"[\w -]{0,30}:?\s*\{")


def tool_call_question(text: str) -> str | None:
    """The question inside a tool call an agent wrote out (`search_code(query="who calls x")`,
    `{"tool": "search", "query": "..."}`, a `<tool_call>` tag around such JSON), or None.
    A pattern argument comes back quoted, so rule 4 searches it as written."""
    if "(" not in text and "{" not in text and "=" not in text:
        return None  # most questions
    body = text.strip()
    tagged = _TOOL_TAGS.match(body) if body.startswith("<") else None
    if tagged:
        body = tagged.group("body")
    if "{" in body and body.endswith("}") and _JSON_LEAD.match(body):
        body = body[body.index("{") :]  # "tool_input: {...}"
    if body.startswith("{") and body.endswith("}"):
        try:
            row = json.loads(body)
        except ValueError:
            return None
        if isinstance(row, dict) and _LOG_KEYS & row.keys():
            return None  # a JSON log line (`pasted_error` reads it)
        return _argument(row)
    call = _CALL.match(body)
    if not call or (call.group("key") is None and not _search_tool(call.group("func") or "")):
        return None  # a quoted literal alone is rule 4's, `print("x")` a line of code
    key = (call.group("key") or "query").lower()
    quoted = call.group("q")
    try:
        value = json.loads(quoted) if quoted[0] == '"' else quoted[1:-1]
    except ValueError:
        value = quoted[1:-1]  # a Python string's escapes ("C:\dev\x.cs") are not JSON's
    if key in _PATTERN_KEYS:
        return f'"{value}"'
    return value if key in _QUESTION_KEYS and isinstance(value, str) and value.strip() else None


def _search_tool(name: str) -> bool:
    return any(part.lower() in _SEARCH_TOOL for part in _NAME_PART.split(name))


def _argument(row: object) -> str | None:
    """The question (or the quoted pattern) among a tool call's JSON arguments, nested or not."""
    if not isinstance(row, dict):
        return None
    for key, value in row.items():
        if isinstance(value, str) and value.strip():
            if key.lower() in _QUESTION_KEYS:
                return value
            if key.lower() in _PATTERN_KEYS:
                return f'"{value}"'
    for value in row.values():
        found = _argument(value)
        if found:
            return found
    return None


_LINE_MARK = lazy_compile(r"^\s*(?:#{1,6}\s+|>\s*|[-*+]\s+|\d{1,2}[.)]\s+)")
"""A Markdown heading, quote or list marker at the start of a line."""


def prose_lines(text: str) -> str | None:
    """A question written over several lines ("## Question" then the ask, a list of asks) as
    one line of clauses joined by "; ", or None when the lines are code, pasted output or a
    request for similar code (rule 0)."""
    if "\n" not in text.strip():
        return None
    lines = [x.strip() for x in text.strip().splitlines() if x.strip()]
    if len(lines) < 2 or _CODE_CHARS.search(lines[0]) or _asks_similar(lines[0]):
        return None
    body = "\n".join(lines[1:])
    if _code_body(body) or pasted_error(text) or pasted_error(body):
        return None
    return "; ".join(_LINE_MARK.sub("", line) for line in lines)
