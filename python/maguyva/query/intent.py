"""The intent classifier (SPEC.md, "Intent classification"): rules first, a small model after.

Stage one is the spec's rules in order, first match wins, with vocabularies broadened from a
phrasing set written independently of them (`eval/phrasings/`). The rules read the question's
*shape*: the target — the token that looks most like code (`targets.py`) — is masked first, so
"enqueue_email callers" reads "x callers" and "impact of renaming parse_config" targets
`parse_config`, not `renaming`. Pasted errors and log lines (`pasted.py`) come before the
snippet rule. Stage two (`intent_model.py`, a linear model over character n-grams trained on the
dev half) answers what no rule matched, with a calibrated confidence kept below the direct
path's threshold; when it is unsure the answer is rule 7's understand_code at 0.40.

It runs on every query: precompiled regular expressions, no I/O on the rule path, tens of
microseconds at most (benches/bench_intent.py).
"""

from __future__ import annotations

import dataclasses
import errno
import re

from maguyva.modalities.text.stopwords import STOP_WORDS
from maguyva.query import targets as _targets
from maguyva.query.calibrate import calibrated
from maguyva.query.paste_shapes import inline_exception, pasted_error, qualified_exception
from maguyva.query.plain_names import AT_WORD as _AT_WORD
from maguyva.query.plain_names import plain_changed, plain_target, word_in
from maguyva.query.shapes import (
    naming,
    one_line_snippet,
    prose_lines,
    similar_request,
    split_clauses,
    strip_chatter,
    tool_call_question,
    unquoted_literal,
)
from maguyva.query.verdict import (
    EXACT_MATCH,
    FIND_DEFINITION,
    FIND_REFERENCES,
    FIND_SIMILAR,
    IMPACT_ANALYSIS,
    UNDERSTAND_CODE,
    Classification,
    salient_terms,
)
from maguyva.support.lazyre import lazy_compile

_IDENT = r"[A-Za-z_$][\w$]*(?:(?:\.|::|#|->)[A-Za-z_$][\w$]*)*"

# Rule 1: a definition keyword at the start.
_DEF_KEYWORDS: dict[str, str] = {
    "def": "function",
    "async def": "function",
    "func": "function",
    "fn": "function",
    "fun": "function",
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
    "macro_rules!": "macro",
    "var": "variable",
    "import": "import",
    "from": "import",
}
_DEF_KEYWORD = lazy_compile(
    r"^\s*(?:(?:pub(?:\([\w ]+\))?|export(?:\s+default)?|public|private|protected|static"
    r"|abstract|final|async|unsafe|extern|const|open|sealed|data|override|suspend|internal"
    r"|inline|operator|infix|tailrec)\s+)*"
    r"(?P<kw>async\s+def|" + "|".join(re.escape(k) for k in sorted(_DEF_KEYWORDS, key=len, reverse=True)) + r")\s+"
    r"(?P<name>" + _IDENT + r")(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL,
)  # fmt: skip
_MODIFIER_WORDS = """
    pub export public private protected static abstract final async unsafe extern const open
    sealed data override suspend internal inline operator infix tailrec
"""
_KEYWORD_STARTS = frozenset(_MODIFIER_WORDS.split()) | frozenset(_DEF_KEYWORDS)
"""The first word of every match of `_DEF_KEYWORD` (ASCII, lower-cased), or "pub(...)"."""
_KIND_WORDS = {
    "class": "class",
    "function": "function",
    "func": "function",
    "fn": "function",
    "def": "function",
    "method": "method",
    "struct": "struct",
    "interface": "interface",
    "type": "type",
    "enum": "enum",
    "trait": "trait",
    "constant": "constant",
    "macro": "macro",
}

# Rule 4: literals and error tokens.
_QUOTED = lazy_compile(r"\"(?P<dq>[^\"]+)\"|(?<!\w)'(?P<sq>[^']{2,})'(?!\w)|`(?P<bq>[^`]+)`")
_ERRNO = lazy_compile(
    r"\b(?:"
    + "|".join(sorted(errno.errorcode.values(), key=len, reverse=True))
    + r"|ERR_[A-Z0-9_]+)\b"
)
_ERRNO_HINT = lazy_compile(r"\bE[A-Z]{2}|\bERR_")
_ERROR_NAME = lazy_compile(r"\b[A-Z][A-Za-z0-9]*(?:Error|Exception|Warning|Exit|Interrupt)\b")
_LEADING_VERB = lazy_compile(
    r"^\s*(?:please\s+)?(?:find|search(?:\s+for)?|grep(?:\s+for)?|look\s+for|locate|show(?:\s+me)?)"
    r"\s+(?:the\s+)?(?:(?:string|literal|text|error|message|token)\s+)?",
    re.IGNORECASE,
)

# Stage one's phrase families, over the masked question (the target is "x").
_IMPACT_STRONG = lazy_compile(
    _AT_WORD + r"(?:impact\w*|blast\s+radius|fallout|ripple|consequences?|downstream|upstream"
    r"|dependents|dependencies|side\s+effects?|effects?\s+of|risk\w*|dangerous|(?<![-\w])safe|safely"
    r"|break|breaks|broken|breaking|stops?\s+working|go\s+wrong|affect\w*|retest\w*"
    r"|depends?\s+on|depending\s+on|rel(?:y|ies|ying)\s+on|scope\s+of\s+change)\b"
)
_CHANGE = (
    r"(?:chang\w*|modif\w*|renam\w*|delet\w*|remov\w*|drop\w*|refactor\w*|rewrit\w*|deprecat\w*"
    r"|mov(?:e|es|ed|ing)|split\w*|edit\w*|(?<!what\s)(?<!who\s)(?<!else\s)touch\w*|replac\w*|lower\w*|rais\w*|made|becomes?"
    r"|starts?|add(?:s|ed|ing)?\s+(?:a|an)\s+\w+\s+to|inlin\w*|swap\w*|narrow\w*|widen\w*"
    r"|bump\w*|upgrad\w*|downgrad\w*|rework\w*|restructur\w*|overhaul\w*|reimplement\w*"
    r"|retyp\w*|tweak\w*|unexport\w*|privati[sz]\w*)"
)
_IMPACT_CHANGE = lazy_compile(
    _AT_WORD
    + r"(?:(?<!\bthe )(?<!\ba )(?<!\ban )(?<!\bour )\b"  # "the deprecated x": an adjective
    + _CHANGE
    + r"\s+(?:the\s+)?(?:signature\s+of\s+|props\s+of\s+|type\s+of\s+)?x\b"
    r"|\bx\s+(?:is\s+|are\s+|gets\s+)?" + _CHANGE + r"(?:\s|$|[?,:.!—-])"
    r"|\bx\s+signature\s+"
    + _CHANGE
    + r"|\b(?:convert\w*|turn\w*)\s+x\s+(?:in)?to\b|\bmak(?:e|es|ing)\s+x\s+(?:async|sync|synchronous"
    r"|asynchronous|private|public|generic|optional|nullable|const|static|final|internal"
    r"|immutable|mutable|lazy|pure|non-?null|read-?only|abstract|virtual|sealed)\b)"
)
_IMPACT_ASK = lazy_compile(
    _AT_WORD
    + r"(?:what|who|which|anything|need\w*|has\s+to|have\s+to|must|updat\w*|impact\w*|affect\w*)\b"
)
_MAY_I = lazy_compile(r"^(?:so\s+)?(?:can|could|may|should)\s+(?:i|we)\b|\b(?:ok|okay|fine)\s+to\b")
""""can I delete x", "ok to drop x": asks whether a change is safe, when x names code (not
"can we change the retry policy per tenant", a question about behaviour)."""
_REFS = lazy_compile(
    _AT_WORD
    + r"(?:call(?:s|ed|ing|er|ers)?|call\s+sites?|callsites?|invok\w*|invocations?|usages?|use[sd]?|using"
    r"|referenc\w*|refs|xrefs?|cross-?referenc\w*|consum\w+|import(?:s|ed|ing|ers)?|instantiat\w*|construct(?:s|ed|ing)?|trigger\w*"
    r"|(?:who|what|which\s+\w+)\s+(?:reads?|touch(?:es)?)"
    r"|reads?\s+(?:the\s+)?(?!(?:implementation|definition|source|code|body|declaration)\b)"
    r"(?:[\w-]+\s+){0,2}x|dead(?:\s+code)?|unused|unreferenced|orphan\w*"
    r"|passed\s+(?:around|to|into|in)|registered|subscrib\w+"
    r"|implementations\s+of|implement[eo]rs|(?:who|what|anything)\s+implements"
    r"|(?:who|what|which\s+\w+)\s+(?:extends|subclasses|inherits\s+from|overrides)|subclasses\s+of"
    r"|which\s+\w+s\s+implement|(?:classes|types|structs)\s+implementing"
    r"|occurrences?|appears?|render(?:s|ed)|inject\w*|wired|checks?\s+for|checked|returned"
    r"|tests?\s+(?:for|of|covering|exercising|hitting|that\s+(?:cover|exercise|hit|call)\w*)\s+x"
    r"|depend\s+on\s+x\s+directly|x\s+(?:is\s+|gets\s+)?(?:read|subclassed|overridden)"
    r"|x\s+(?:flag|option|key|setting|header|env\s+var)\s+(?:is\s+|gets\s+)?(?:handled|parsed)"
    r"|overrides\s+of|conform(?:s|ing)?\s+to)\b"
)
_DEF_PHRASE = lazy_compile(
    _AT_WORD
    + r"(?:defin\w*|declar\w*|implement\w*|impl|def|source(?:\s+code)?|body|signature|locat\w*"
    r"|lives?|written|where|wher|were\s+is|which\s+file|what\s+file|in\s+which\s+file|file\s+containing"
    r"|(?:in|at)\s+(?:what|which)\s+(?:place|part|module)"
    r"|go\s+to|goto|jump\s+to|code\s+of\s+x)\b"
)
_SHOW = lazy_compile(
    r"(?:^|[,.;:!—]\s*)(?:please\s+|can\s+you\s+|could\s+you\s+|i\s+need\s+|need\s+)?"
    r"(?:show(?:\s+me)?|give\s+me|pull\s+up|bring\s+up|take\s+me\s+to"
    r"|open|print|find|locate|look\s+up|get|need|want\s+(?:to\s+)?see|let\s+me\s+see)\b"
)
_UNDERSTAND = lazy_compile(
    _AT_WORD + r"(?:how|why|explain\w*|expalin|architecture|overview|walk\s+me\s+through|describe"
    r"|summar\w+|purpose|difference|understand|what\s+(?:does|do|is|are)\s+.*\b(?:do|for|mean)"
    r"|what\s+happens|tell\s+me\s+about|role\s+of|point\s+of|big\s+picture|design|flow"
    r"|lifecycle|(?:thread|type|memory|null|signal|fork|async)[- ]?safe(?:ty)?|idempotent"
    r"|re-?entrant)\b"
)
_SUBWORD = lazy_compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def _identifier_confidence(ident: str) -> float:
    """0.60 for a short identifier up to 0.80 for a long, multi-word or qualified one."""
    parts = [p for p in re.split(r"\.|::|#|->", ident) if p]
    subwords = sum(len(_SUBWORD.findall(p)) for p in parts)
    confidence = 0.60 + 0.04 * max(0, subwords - 1) + 0.04 * (len(parts) - 1)
    return round(min(0.80, confidence), 2)


_GO_RECEIVER = lazy_compile(r"^\s*func\s*\(\s*\w*\s*\*?\s*[\w.]+(?:\[[\w, ]*\])?\s*\)\s*(?=\w)")
"""A Go method's receiver: "func (s *Store) Compact" asks for the method `Compact`."""


_PARAMS = lazy_compile(r"^\((?:[^()]|\([^()]*\))*\)\s*:?\s*")


def _keyword(text: str, terms: list[str]) -> Classification | None:
    """Rule 1, keyword form: "class Session", "pub fn build_index", "export class X"."""
    first = text.split(None, 1)[0].lower() if text.strip() else ""
    if first.isascii() and first not in _KEYWORD_STARTS and not first.startswith("pub("):
        return None  # the first word is no modifier or keyword: most questions
    match = _DEF_KEYWORD.match(_GO_RECEIVER.sub("func ", text, count=1) if "func" in text else text)
    if not match:
        return None
    name, rest = match.group("name"), match.group("rest").strip()
    if match.group("kw").lower() == "def" and re.match(r"[?!](?:\s|\(|$)", rest):
        name, rest = name + rest[0], rest[1:].strip()  # Ruby: `def valid_email?`
    impl_for = re.match(r"for\s+`?(" + _IDENT + r")`?\s*$", rest)
    if impl_for and match.group("kw").lower() == "impl":
        name, rest = impl_for.group(1), ""  # "impl Display for ErrorKind": ErrorKind's impl
    plain = _targets._rank(name) >= 4
    if name.lower() in _targets.PROSE or name.lower() in STOP_WORDS:
        return None
    if plain and rest and not rest.startswith("("):
        return None  # "import path resolution for plugins" is prose
    if rest.startswith("(") and not re.search(r"[={};]", rest):
        rest = _PARAMS.sub("", rest, count=1)  # a signature: "fun f(a: Int, b: Int): Int"
        rest = rest.removeprefix("->").strip() if rest.startswith("->") else rest
    if re.search(r"[={};]|=>|->", rest) or len(rest.split()) > 3:
        return None  # a line of code or a sentence, not a name to look up
    kind = _DEF_KEYWORDS.get(" ".join(match.group("kw").casefold().split()))
    if kind is None:
        return None  # a keyword only under Unicode case folding ("İmpl")
    return Classification(FIND_DEFINITION, 0.95, name.removesuffix("()"), "1:keyword",
                          kind=kind, terms=terms)  # fmt: skip


def _literal(text: str) -> tuple[str, float, str] | None:
    """Rule 4: a quoted literal that is not a bare name."""
    if '"' not in text and "'" not in text and "`" not in text:
        return None  # no quote: most questions
    for quoted in _QUOTED.finditer(text):
        literal = quoted.group("dq") or quoted.group("sq") or quoted.group("bq")
        if quoted.group("bq") is not None and _targets.best(f"`{literal}`", 0):
            if not _LITERAL_ASK.search(text):
                continue  # a backticked name is a name, not a literal, unless grep'd for
            return literal, 0.90, "4:quoted-asked"
        return literal, 0.90, "4:quoted"
    return None


_LITERAL_ASK = lazy_compile(
    r"\b(?:grep|rg|strings?|literal(?:ly)?|text|exact(?:ly)?|verbatim)\b", re.IGNORECASE
)
"""Words that ask for the text itself: a backticked name after them is a literal."""


def _error_token(text: str, inline: str | None) -> tuple[str, float, str] | None:
    """Rule 4: an errno or error-code token, an exception line inside a sentence (`inline`,
    when the caller has looked for one already)."""
    if inline is None and "\n" in text:
        inline = inline_exception(text)
    if inline:
        return inline, 0.85, "4:error-token"
    found = _ERRNO.search(text) if _ERRNO_HINT.search(text) else None
    if found:
        return found.group(0), 0.85, "4:error-token"
    error = _ERROR_NAME.search(text)
    if error and _LEADING_VERB.match(text):
        return error.group(0), 0.85, "4:error-token"
    return None


_SIMILAR_NAMED = lazy_compile(
    _AT_WORD
    + r"(?:similar\s+(?:code\s+)?to|resembl\w*|(?:near-?)?duplicat\w*\s+of|copies\s+of|clones?\s+of"
    r"|copy-?pasted\s+(?:versions?\s+|copies\s+|code\s+)?of|(?:look|looks)\s+like"
    r"|(?:code|functions?|implementations?|helpers?|classes|methods?|something|anything)\s+like)"
    r"\s+(?:the\s+|a\s+|an\s+|our\s+)?(?:class\s+|function\s+|method\s+|helper\s+)?"
    r"(?P<w>x\b|[a-z_]\w*)"
)
"""Code like a named function ("duplicates of normalize_phone", "anything resembling the
debounce helper"): find_similar with the name as target, below the direct path (the snippet
is the name's definition, which the engine has to look up)."""


_NAMED_MARKS = ("simil", "resembl", "duplicat", "copies", "clone", "copy", "like")
"""One of these is in every phrase of `_SIMILAR_NAMED` (the shape is lower-cased)."""


_RAISED = lazy_compile(r"\b(?:rais(?:e|es|ed|ing)|throw(?:s|n|ing)?)\b")
_THROW_X = lazy_compile(
    r"\b(?:throw(?:s|n|ing)?|rais(?:e|es|ed|ing))\s+(?:an?\s+)?x\b"
    r"|\bx\s+(?:is\s+|are\s+|gets\s+|being\s+|ever\s+)*(?:thrown|raised)\b"
)
_PASCAL = lazy_compile(r"(?:[A-Za-z_]\w*(?:\.|::))*[A-Z][a-z]\w*")


def _raise_sites(name: str, shape: str) -> bool:
    """Whether the question asks where an exception class is raised or thrown."""
    if not name or not ("rais" in shape or "throw" in shape) or _IMPACT_STRONG.search(shape):
        return False
    if _ERROR_NAME.fullmatch(name) and _RAISED.search(shape):
        return True
    return bool(_THROW_X.search(shape) and _PASCAL.fullmatch(name))


_LONE_FILLERS = frozenset(
    {"def", "definition", "pls", "please", "source", "impl", "component", "hook", "constant",
     "symbol", "code", "need", "the", "a", "an", "find", "show", "me", "open", "go", "to",
     "jump", "goto", "of", "for", "is", "where", "it", *_KIND_WORDS}
)  # fmt: skip
"""Words that, beside one name, ask for nothing but its definition ("UserRepository class")."""


def _lone(text: str, target: _targets.Target | None, shape: str) -> Classification | None:
    """Rule 5: one identifier plus words that ask for nothing else."""
    words = shape.rstrip("?!. ").replace("()", "").split()
    if not words or len(words) > 4:
        return None
    rest = [w for w in words if w != "x"]
    fillers = _LONE_FILLERS
    if any(w not in fillers for w in rest):
        return None
    kind = next((_KIND_WORDS[w] for w in rest if w in _KIND_WORDS), None)
    if target is None:
        # A plain word is prose ("cookies"), unless a kind word says it names something
        # ("method constant") or it is written as a call ("bind()").
        words_raw = text.rstrip("?").split()
        plain = [w for w in words_raw if w.lower().strip("()") not in fillers]
        if not plain and len(words_raw) == 2 and words_raw[0].lower() in _KIND_WORDS:
            plain = words_raw[1:]  # "method constant": a kind word and the name
        if len(plain) != 1 or not (kind or plain[0].endswith("()")):
            return None
        name = plain[0].removesuffix("()")
        if not re.fullmatch(_IDENT, name):
            return None
        return Classification(FIND_DEFINITION, _identifier_confidence(name), name,
                              "5:identifier", kind=kind, terms=salient_terms(text))  # fmt: skip
    if "x" not in words:
        return None
    confidence = _identifier_confidence(target.text)
    if len(rest) >= 1 and any(w in {"definition", "def", "source", "impl"} for w in rest):
        confidence = 0.80
    return Classification(FIND_DEFINITION, confidence, target.text, "5:identifier", kind=kind,
                          terms=salient_terms(text))  # fmt: skip


_EXPLAIN_OPENER = lazy_compile(
    r"^(?:(?:can|could)\s+you\s+)?(?:how(?!\s+(?:many|often|much)|\s+(?:is|are)\s+(?:the\s+)?x"
    r"(?:\s+(?:type|class|struct|function|method|module|hook|component|helper|constant|trait"
    r"|interface|enum|macro))?\s+(?:being\s+)?"
    r"(?:used|called|invoked|referenced|imported|instantiated|consumed)\b)|why|explain\w*"
    r"|describe|walk\s+me\s+through)\b"
)
"""A question that opens by asking how or why: references and definition words later in it
("how does x notify subscribers", "why is x defined twice") do not make it a lookup; "how is
x used" still asks for its uses."""


_DEF_OPENER = lazy_compile(
    r"^(?:(?:show|find|get|give)\s+(?:me\s+)?)?(?:the\s+)?(?:definition|declaration|source"
    r"|implementation)\s+of\s+(?:the\s+)?(?:\w+\s+)?x\b"
)


def _phrase(
    text: str, shape: str, target: _targets.Target | None, terms: list[str]
) -> Classification | None:
    """Rules 1 (phrase), 2 and 3 over the question's shape."""
    name = target.text if target else ""
    has_x = target is not None
    similar = _SIMILAR_NAMED.search(shape) if any(m in shape for m in _NAMED_MARKS) else None
    if similar and (similar.group("w") == "x" or similar.group("w") not in _targets.PROSE):
        word = similar.group("w")
        code_like = target is not None and target.rank <= 2
        named = name if word == "x" or code_like else word_in(word, text)
        return Classification(FIND_SIMILAR, 0.75, named, "0:similar-named", terms=terms)
    if _raise_sites(name, shape):
        # "who raises ValidationError", "where do we throw QuotaExceeded": raise sites, not
        # "raising" a limit (a change) nor the class's definition
        return Classification(FIND_REFERENCES, 0.90, name, "2:references", terms=terms)
    changed = "" if has_x else plain_changed(shape, text)
    if has_x or changed or plain_target(shape, text) or "blast" in shape or "what breaks" in shape:
        impact = _IMPACT_STRONG.search(shape) or (
            _IMPACT_CHANGE.search(shape)
            and (_IMPACT_ASK.search(shape) or (has_x and _MAY_I.search(shape)))
        )
        if impact:
            plain = plain_target(shape, text) or changed
            if not (name or plain):
                # "what breaks the build on windows": no name to follow through the graph, so
                # no direct path to it
                return Classification(IMPACT_ANALYSIS, 0.80, "", "3:impact+untargeted",
                                      terms=terms)  # fmt: skip
            return Classification(IMPACT_ANALYSIS, 0.90, name or plain, "3:impact", terms=terms)
    after_colon = shape.partition(": ")[2] if ": " in shape else ""
    if _EXPLAIN_OPENER.match(shape) or (after_colon and _EXPLAIN_OPENER.match(after_colon)):
        return None  # "how does x notify subscribers": the words after "how" are not the ask
    if has_x and _DEF_OPENER.match(shape):
        return None  # "definition of x used by y": the definition, whatever follows
    refs = _REFS.search(shape) or (_ERROR_NAME.fullmatch(name) and _RAISED.search(shape))
    if refs and (has_x or plain_target(shape, text)):
        # "where is x used" is rule 2 even though "where is" opens rule 1 phrases.
        return Classification(FIND_REFERENCES, 0.90, name or plain_target(shape, text),
                              "2:references", terms=terms)  # fmt: skip
    if not has_x and re.search(r"\b(?:where\s+is|definition\s+of)\b", shape):
        plain = plain_target(shape, text)
        if plain:
            return Classification(FIND_DEFINITION, 0.90, plain, "1:phrase", terms=terms)
    return None


def _definition_phrase(
    text: str, shape: str, target: _targets.Target | None, terms: list[str]
) -> Classification | None:
    """Rule 1, phrase form: "where's x declared", "x implementation", "show me the method x"."""
    name = target.text if target else ""
    if target is not None and (_DEF_PHRASE.search(shape) or _SHOW.search(shape)):
        if _UNDERSTAND.search(shape) and not re.search(r"\b(?:defin|declar)\w*", shape):
            return None
        kind = next((_KIND_WORDS[w] for w in shape.split() if w in _KIND_WORDS), None)
        return Classification(FIND_DEFINITION, 0.90, name, "1:phrase", kind=kind, terms=terms)
    return None


_OTHER_ASK = lazy_compile(
    _AT_WORD + r"(?:defin\w*|declar\w*|implement\w*|who\s+calls|callers?|call\s+sites?|usages?"
    r"|references?)\b"
)


def _quoted(
    literal: tuple[str, float, str], shape: str, asked: bool, terms: list[str]
) -> Classification:
    """Rule 4's verdict on a quoted literal. "what breaks if the 'retry' default changes": the
    quotes are searched as written, but the question asks for more than the text: fusion."""
    if not asked and _asks_other(_QUOTED.sub(" q ", shape)):
        return Classification(EXACT_MATCH, 0.80, literal[0], literal[2] + "+unsure", terms=terms)
    return Classification(EXACT_MATCH, literal[1], literal[0], literal[2], terms=terms)


def _asks_other(shape: str) -> bool:
    """Whether a question with a quoted literal also asks for what another rule answers: a
    definition, its uses, the impact of a change, an explanation."""
    return bool(
        _IMPACT_STRONG.search(shape)
        or (_IMPACT_CHANGE.search(shape) and _IMPACT_ASK.search(shape))
        or _EXPLAIN_OPENER.match(shape)
        or _OTHER_ASK.search(shape)
        or _UNDERSTAND.search(shape)
    )


def classify(query: str, *, gate: bool = True) -> Classification:
    """Classify a query into one of the six intents (first matching rule wins). A question that
    asks two things is the first one asked, below the direct path (`shapes.py`); with `gate`, so
    is a phrase rule's verdict the learned gate disagrees with (`calibrate.py`)."""
    called = tool_call_question(query)  # `search_code(query="who calls x")`: the question in it
    if called is not None:
        inner = classify(called, gate=gate)
        return dataclasses.replace(inner, rule=inner.rule + "+call")
    verdict = _classify(query, gate)
    if verdict.rule.startswith(_WHOLE_TEXT_RULES):
        return verdict
    joined = prose_lines(query)  # "## Question\nwho calls x?": one line of clauses
    if joined is not None:
        return classify(joined, gate=gate)
    plain = strip_chatter(query.strip())
    if plain != query.strip():
        verdict = _classify(plain, gate)
        if verdict.rule.startswith(_WHOLE_TEXT_RULES):
            return verdict
    clauses = split_clauses(plain)
    if clauses is None:
        return verdict
    first = _classify(clauses[0], gate)
    if first.rule.startswith(("7:", "learned")):
        return verdict
    if first.intent == verdict.intent:
        # The second question asks something else ("... and explain it"): the same first
        # answer, through fusion. "it" in the second question is the first one's target.
        name = verdict.target if verdict.intent != UNDERSTAND_CODE else "x"
        rest = _PRONOUN.sub(lambda m: f"`{name}`" + (" is" if m.group(1) else ""), clauses[1])
        second = _classify(rest, gate)
        if second.intent == verdict.intent or second.rule.startswith(("7:", "learned")):
            return verdict
        first = verdict
    target = query.strip() if first.intent == UNDERSTAND_CODE else first.target
    return Classification(first.intent, min(first.confidence, 0.80), target or verdict.target,
                          first.rule + "+first-ask", kind=first.kind, terms=verdict.terms)  # fmt: skip


_PRONOUN = lazy_compile(r"\b(?:it|them|this|that)('s|’s)?\b")

_WHOLE_TEXT_RULES = ("0:snippet", "0:similar-phrase", "0:one-line", "4:pasted", "4:error-token")
"""Verdicts on the whole text (a paste, a snippet): never split into questions."""


def _classify(query: str, gate: bool = True) -> Classification:
    """The rules over one question."""
    text = query.strip()
    terms = salient_terms(text)

    error = pasted_error(text)
    if error:
        # Several lines of real output are a stronger signal than one line that might be prose.
        confidence = 0.90 if "\n" in text else 0.85
        return Classification(EXACT_MATCH, confidence, error, "4:pasted-error", terms=terms)
    similar = similar_request(text)
    if similar:
        return similar
    keyword = _keyword(text, terms)
    if keyword:
        return keyword
    if one_line_snippet(text):
        return Classification(FIND_SIMILAR, 0.80, text, "0:one-line", snippet=text, terms=terms)

    literal = _literal(text)
    inline = inline_exception(text) if "\n" not in text else None
    if inline and not (literal and inline.split(":")[0] in literal[0]):
        # "why am I getting RecursionError: maximum recursion depth exceeded while calling":
        # the message's words are not the question's ("calling" does not ask for callers).
        # A quoted exception line is rule 4's quoted literal, below.
        return Classification(EXACT_MATCH, 0.85, inline, "4:error-token", terms=terms)
    target = _targets.best(text)
    # A capitalised word in a long sentence is more often English ("a 303 See Other reply")
    # than a name, unless a kind word or a lookup's verb sits beside it ("the Codec trait",
    # "Settings defined"); otherwise the question is read without a target.
    if (
        target is not None
        and target.rank == 3
        and "/" not in target.text  # a path, even one that says where
        and len(text.split()) > 8
        and not _targets.named_by_context(text, target)
    ):
        target = _targets.named_capital(text)
    shape = naming(_targets.mask(text, target))
    asked = literal is not None and literal[2] == "4:quoted-asked"
    if literal and (asked or not (target and target.rank == 0 and literal[0] == target.text)):
        quoted_name = re.fullmatch(_IDENT, literal[0]) is not None
        if not quoted_name or asked:
            return _quoted(literal, shape, asked, terms)
    phrase = _phrase(text, shape, target, terms)
    if phrase:
        return calibrated(phrase, shape) if gate else phrase
    if literal:
        return Classification(EXACT_MATCH, literal[1], literal[0], literal[2], terms=terms)
    unquoted = unquoted_literal(text, named=target is not None and target.rank <= 2)
    if unquoted:
        return Classification(EXACT_MATCH, 0.85, unquoted, "4:unquoted", terms=terms)
    token = _error_token(text, inline)
    if token:
        return Classification(EXACT_MATCH, token[1], token[0], token[2], terms=terms)
    definition = _definition_phrase(text, shape, target, terms)
    if definition:
        return calibrated(definition, shape) if gate else definition
    loose = _targets.loose_name(text) if target is None else None
    if loose is not None:
        # A plain word the phrase names as code ("the function apply, who use it?"): the
        # same rules, below the direct path, since the word may be English after all.
        loose_shape = _targets.mask(text, loose)
        found = _phrase(text, loose_shape, loose, terms) or _definition_phrase(
            text, loose_shape, loose, terms
        )
        if found is not None and found.intent != FIND_SIMILAR:
            return dataclasses.replace(found, confidence=0.80, rule=found.rule + "+plain")
    if qualified_exception(text.strip("`")):
        return Classification(EXACT_MATCH, 0.85, text.strip("`"), "4:error-token", terms=terms)
    lone = _lone(text, target, shape)
    if lone:
        return lone
    if _UNDERSTAND.search(shape):
        return Classification(UNDERSTAND_CODE, 0.75, text, "6:question", terms=terms)
    return _second_stage(text, shape, target, terms)


def _second_stage(
    text: str, shape: str, target: _targets.Target | None, terms: list[str]
) -> Classification:
    """What no rule matched: the learned model's verdict if it is sure enough, else rule 7."""
    from maguyva.query import intent_model

    # Only the intents that search for a name are the model's to assign, and only with a name
    # to search for: a learned exact_match on prose ("rate limiting") would search a literal
    # that is nowhere and answer nothing, and find_similar needs a snippet.
    guess = intent_model.predict(shape) if target is not None else None
    if guess is not None:
        intent, confidence = guess
        if intent in (FIND_DEFINITION, FIND_REFERENCES, IMPACT_ANALYSIS):
            return Classification(intent, confidence, target.text, "learned", terms=terms)
    return Classification(UNDERSTAND_CODE, 0.40, text, "7:fallback", terms=terms)
