"""Which token of a question names the code it is about.

"impact of renaming parse_config" is about `parse_config`, not `renaming`; "who references the
--legacy-auth flag" is about `--legacy-auth`, not `the`. A question's target is the token that
looks most like code: backticked, then qualified (`a.b`, `a::b`, paths, `--flags`), then
snake/camel/Pascal/SCREAMING case, then a capitalised word that is not English prose. The
classifier also masks the target (`X`) so its phrase rules read the question's shape, not the
name ("enqueue_email callers" -> "x callers").
"""

from __future__ import annotations

import re
from typing import NamedTuple

from maguyva.modalities.text.stopwords import STOP_WORDS
from maguyva.query import typos
from maguyva.support.lazyre import lazy_compile

# The lookaheads fail a word that holds no "/" (or no "\\") in one pass, instead of
# backtracking through it once per letter: `best` runs on every query.
_FORMS = (
    ("`", r"`(?P<bq>[^`\n]+)`"),
    ("-", r"(?<![\w-])(?P<flag>--?[A-Za-z][\w-]*)"),
    ("/", r"(?P<path>(?=[\w.-]+/)(?:[\w.-]+/)+[\w.-]*\w)"),
    ("\\", r"(?P<win>(?<![\w\\])[A-Z]:\\(?:[\w.$-]+\\)*[\w.$-]*\w)"),
    ("\\", r"(?P<ns>(?=[A-Z][\w$]*\\[A-Z])[A-Z][\w$]*(?:\\[A-Z][\w$]*)+)"),
    ("", r"(?P<name>[A-Za-z_$][\w$]*(?:(?:\.|::|#|->)[A-Za-z_$][\w$]*)*(?:\(\))?)"),
)
"""The token forms, first match wins, each with a character it cannot match without."""
_CANDIDATES: dict[tuple[bool, ...], re.Pattern[str]] = {}
_PLAIN_RUN = r"(?:(?:PATH)[a-z]+(?![\w$<]|(?:\.|::|#|->)[A-Za-z_$]|\(\))[^\w$`.-]*)*"
"""Lower-case words that the name form would match as they are (nothing qualified, called or
generic after them), with what follows them up to a character a form could start on: rank 4
or 5, so `best` skips them inside the regex. `PATH` is where a path must not start."""


def _marks(query: str) -> tuple[bool, ...]:
    """Which of `_FORMS`' marks `query` holds, in their order (spelt out: it runs per query)."""
    back = "\\" in query
    return ("`" in query, "-" in query, "/" in query, back, back, True)


def _candidate_pattern(query: str, plain: bool) -> re.Pattern[str]:
    """The token forms that can match in `query`: a form whose mark is absent cannot match
    anywhere, so leaving it out changes no match, and the rest run faster (most questions
    have no backtick, path or namespace). With `plain`, runs of plain words are consumed
    before the forms (and the forms are optional, so a run before a character no form takes
    still ends a match, which the caller skips)."""
    key = (plain, *_marks(query))
    pattern = _CANDIDATES.get(key)
    if pattern is None:
        forms = "|".join(form for (_, form), on in zip(_FORMS, key[1:], strict=True) if on)
        if plain:
            run = _PLAIN_RUN.replace("PATH", r"(?![\w.-]+/)" if key[3] else "")
            forms = f"{run}(?:{forms})?"
        pattern = _CANDIDATES[key] = re.compile(forms)
    return pattern


_GENERIC_ARGS = lazy_compile(r"<[\w$ ,.:=\[\]|&<>]{1,60}?>(?!>)")
"""A generic type's arguments right after its name (`Repository<T>`, `Cache<K, V>`): the name
is the target, and the arguments go with it when the question is masked."""
_BACKTICK_GENERIC = lazy_compile(r"(?P<n>[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*)<.*>")
_ARITY = lazy_compile(r"(?<=[\w!?])/\d{1,2}$")
_ELIXIR_ARITY = lazy_compile(r"(?P<n>[A-Z]\w*(?:\.[A-Za-z_]\w*)+[!?]?)/\d{1,2}")
"""An Elixir function with its arity, unquoted (`Warehouse.Zones.resolve/1`): not a path."""
_BACKTICK_OTHER = lazy_compile(
    r"--?[\w-]+|(?:[\w.-]+/)+[\w.-]+|[A-Za-z]\w*(?:-\w+)+|[A-Z]\w*(?:\\[A-Z]\w*)+"
)
_BACKTICK_DECL = lazy_compile(
    r"(?:pub\s+)?(?:class|struct|enum|trait|interface|type|fn|func|def|function|impl|module|mod"
    r"|record|protocol)\s+(?P<n>[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*)(?:\(\))?"
)
"""A declaration in backticks (`class InvoiceExporter`, `fn drain`): it names the item."""
_LOCATION_BEFORE = lazy_compile(r"(?:\b(?:in|at|inside|within|under)|\bline\s+\d+\s+of)\s+$", re.I)
_LOCATION_AFTER = lazy_compile(r"(?::\d+|\(\d+,\d+\)|#L\d+|,?\s+lines?\s+\d+)")
_FILE_NAME = lazy_compile(
    r"[\w-]+\.(?:py|pyi|rs|go|ts|tsx|js|jsx|mjs|java|kt|rb|php|cs|c|h|cc|cpp|hpp|swift|scala"
    r"|sh|toml|ya?ml|json)"
)
"""A path that says where a name sits ("in src/auth/jwt.go:19 there's verifyClaims", "who
calls load_profile in src/profile.py") is a location, not the question's target."""
_RUBY_SUFFIX = lazy_compile(r"[!?](?=\s|$|\()")
"""`Cart#checkout!`, `Invoice#paid?`: in `#` notation a Ruby method's `!` or `?` is its name's."""
_PLURAL_ACRONYM = lazy_compile(r"[A-Z]{2,}s")
""""TTLs", "APIs", "URLs": English plurals, not camelCase names."""
_QUALIFIED = lazy_compile(r"\.|::|#|->")
_CAMEL = lazy_compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")
_IDENT = lazy_compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|#|->)[A-Za-z_$][\w$]*)*")
_NOT_QUALIFIED = frozenset({"e.g", "i.e", "etc", "vs"})

# Words of the questions themselves: never a target even when capitalised at the start of a
# sentence ("Find all usages", "Where is", "Before I rename").
_PROSE_WORDS = """
    find show give open print locate look jump go goto get need want list grep search tell help
    where what who whom which when why how whats wheres whos hows is are was were be been does
    do did can could would should will shall may might must please pls i we you me my our
    before after if then else also again anyway anything anyone everything every all any some
    definition definiton defenition declaration declared declare defined definied implemented
    implementation impl source code body signature location file files module modules
    function functions func method methods class classes struct type types interface enum trait
    constant variable component hook macro field symbol caller callers call calls called calling
    usage usages use uses used using reference references referenced refs impact blast radius
    break breaks broken change changes changed changing rename renaming delete deleting remove
    removing modify modifying refactor refactoring affected affect affects depends dependents
    explain describe summarise summarize overview architecture error exception warning the a an
    it this that these those there here in on of to for from with by about into over under
    yes no not ok okay hi hello thanks now just only still else other others safe safely risk
    risky consequences downstream upstream effects effect callsites invocations invoked
    keyword keywords
"""
PROSE = STOP_WORDS | frozenset(_PROSE_WORDS.split())


class Target(NamedTuple):
    """A candidate target: the name as written, its span in the query, and how code-like
    (`rank`: 0 backticked, 1 qualified/path/flag, 2 cased identifier, 3 capitalised word,
    4 plain word, 5 a word of the question; a path that only says where is 3). A tuple: built for every word of every query."""

    text: str
    start: int
    end: int
    rank: int


_RANKS: dict[str, int] = {}
"""Each word already ranked (words repeat across questions). Bounded."""


def _rank(word: str) -> int:
    if word.isalpha() and word.islower():  # most words of a question: no regex needed
        return 5 if word in PROSE else 4
    rank = _RANKS.get(word)
    if rank is None:
        rank = _rank_of(word)
        if len(_RANKS) < 20_000:
            _RANKS[word] = rank
    return rank


def _rank_of(word: str) -> int:
    bare = word.removesuffix("()")
    if not any(c.isalnum() for c in bare):
        return 5  # "$" alone, as in a regex
    if word.endswith("()"):
        return 2
    if _QUALIFIED.search(bare) and bare.lower() not in _NOT_QUALIFIED:
        if all(p.lower() in PROSE for p in _QUALIFIED.split(bare) if p):
            return 5  # question words run together: "who->calls(flush_all)"
        return 1
    if _PLURAL_ACRONYM.fullmatch(bare):
        return 3
    if bare[:1] == bare[-1:] == "_" and bare[1:2] != "_" and bare[1:-1].lower() in PROSE:
        return 5  # Markdown italics ("_usages_ of x"), not a name
    if "_" in bare.strip("_") or bare.startswith("_") or "$" in bare or _CAMEL.search(bare):
        return 2
    if bare.lower() in PROSE:
        return 5
    if bare[:1].isupper() and not (bare.isupper() and len(bare) <= 4):
        return 3
    return 4


def _located(query: str, start: int, end: int) -> bool:
    return bool(_LOCATION_BEFORE.search(query, 0, start) or _LOCATION_AFTER.match(query, end))


def candidates(query: str, max_rank: int = 5) -> list[Target]:
    """Every token of `query` that could name code, in order, ranked by how code-like it is;
    only those up to `max_rank`."""
    out: list[Target] = []
    for found in _candidate_pattern(query, max_rank < 4).finditer(query):
        kind = found.lastgroup
        if kind is None:
            continue  # only plain words (the forms matched nothing after them)
        text = found.group(kind)
        bq = kind == "bq"  # its group is inside the backticks
        start, stop = found.start(kind) - bq, found.end(kind) + bq
        if kind == "bq":
            inner = text.strip().removesuffix("()")
            generic = _BACKTICK_GENERIC.fullmatch(inner)
            if generic:
                inner = generic.group("n")
            arity = _ARITY.search(inner) if "/" in inner else None
            if arity:
                inner = inner[: arity.start()]  # Elixir / Erlang: `Enum.map/2` is `Enum.map`
            if _IDENT.fullmatch(inner.rstrip("!?")) or _BACKTICK_OTHER.fullmatch(inner):
                out.append(Target(inner, start, stop, 0))
            elif " " in inner:
                declared = _BACKTICK_DECL.fullmatch(inner)
                if declared:  # `class InvoiceExporter`: the name, the keyword masked with it
                    out.append(Target(declared.group("n"), start, stop, 0))
            continue
        if kind == "flag":
            if len(text) > 2 and text.startswith("--") and max_rank >= 1:
                out.append(Target(text, start, stop, 1))
            continue
        elixir = _ELIXIR_ARITY.fullmatch(text) if kind == "path" and text[-1].isdigit() else None
        if elixir:
            if max_rank >= 1:
                out.append(Target(elixir.group("n"), start, stop, 1))
            continue
        if kind in ("path", "win"):  # a Windows path too: C:\\src\\Acme\\Jobs.cs
            rank = 3 if _located(query, start, stop) else 1
            if kind == "path" and query[start - 1 : start] == "/" and "." not in text:
                rank = 3  # a URL route ("the /v1/rates endpoint handler rates_v1"): an address
            if rank <= max_rank:
                out.append(Target(text.rstrip("."), start, stop, rank))
            continue
        if kind == "ns":  # a PHP namespace: App\Http\Controllers\UserController
            if max_rank >= 1:
                out.append(Target(text, start, stop, 1))
            continue
        word, end = text, stop
        if word.endswith("'s"):  # a possessive ("RetryPolicy's")
            word = word[:-2]
        elif "#" in word and _RUBY_SUFFIX.match(query, end):
            word, end = word + query[end], end + 1
        rank = _rank(word)
        if rank == 1 and _FILE_NAME.fullmatch(word) and _located(query, start, end):
            rank = 3  # "at line 77 of worker.rs the fn drain_queue": a place, not the target
        generic = _GENERIC_ARGS.match(query, end) if query[end : end + 1] == "<" else None
        if generic and word[:1].isalpha():
            end, rank = generic.end(), min(rank, 2)
        if rank <= max_rank:
            out.append(Target(word.removesuffix("()"), start, end, rank))
    return out


_ENV_READ = lazy_compile(
    r"(?<![\w.])(?:os\.getenv|os\.environ(?:\.get)?|System\.getenv|(?:std::)?env::var(?:_os)?"
    r"|ENV(?:\.fetch)?|getenv|Environment\.GetEnvironmentVariable)\s*[(\[]\s*(?P<q>['\"])"
    r"(?P<key>[A-Za-z_][\w.-]*)(?P=q)"
)
"""An environment variable read by name (Python, Java, Rust, Ruby, C, .NET)."""
_MODULE_SPEC = lazy_compile(
    r"\b(?:import(?:s|ed|ing)?|requires?|required)\s+(?P<q>['\"])(?P<key>[@~.\w][\w@~./-]*)(?P=q)"
)


_MEMBER_WORDS = lazy_compile(r"\b(?:method|function|field|property|attribute|member)\s+(?:of|in)\s")
_MEMBER_MARKS = ("method", "function", "field", "property", "attribute", "member")
_MEMBER_OF = lazy_compile(
    r"\b(?P<w>[a-z_][\w$]*)\s+(?:method|function|field|property|attribute|member)\s+(?:of|in)\s+"
    r"(?:the\s+)?`?[A-Z][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*`?(?:\s+(?:class|struct|type|object))?"
    r"\s*[?.!]?\s*$"
)
"""A member named by a plain word before its owner ("the validate method of OrderForm"):
the member is the target, not the capitalised owner."""


_ASIDE = lazy_compile(r"(?<!\S)\([^()]*\)")
"""A parenthesised aside ("safe_expanduser (our os.path.expanduser wrapper)"), not call
arguments (`mark_paid(invoice, at)`)."""


_WRAPPED = lazy_compile(
    r"\bwrapper\s+(?:(?:class|type|struct|called|named)\s+)?`?(?P<n>[A-Za-z_$][\w$]*)`?(?![\w$.:<])"
)
""""the Go type http.Handler wrapper loggingHandler": the wrapper's name, not the wrapped type."""
_CSS_CLASS = lazy_compile(
    r"\b(?:css\s+class(?:name)?|class(?:Name)?|selector)\s+`?(?P<n>\.[A-Za-z_-][\w-]*)(?![\w.])"
)
"""A CSS class named with its dot (".btn-primary-large"), which no other form reads as a name."""
_RUBY_SYMBOL = lazy_compile(r"(?<![\w:$.])(?P<n>:[a-z_]\w*[?!]?)(?![\w:(])")
"""A Ruby symbol (`:pending_review`): the colon is part of what the source holds."""
_INNER_DECL = lazy_compile(
    r"(?<![\w`])(?:def|fn|func)\s+(?P<n>[A-Za-z_]\w*[?!]?)(?=[\s(?.,]|$)"
    r"|<[^<>]*>\s+(?P<v>[a-z_]\w*)\s+(?:declared|defined|initiali[sz]ed)\b"
    r"|#\[[^\]]+\]\s+on\s+(?:the\s+)?(?P<t>[A-Z]\w*)"
)
"""A declaration inside a question: `def paid?` in "where is def paid? in Invoice", the
variable of "std::vector<Item> items_ declared", the item an attribute is on ("where is
#[derive(Serialize)] on Invoice")."""
_POSSESSIVE_MEMBER = lazy_compile(r"\b(?P<a>[A-Z][\w$]*)'s\s+(?P<b>[a-z_][\w$]*)\(\)")
""""OrderSummary's total()": the member of the owner, `OrderSummary.total`."""


def _written_forms(query: str) -> Target | None:
    """Targets that the token forms cut short or miss: a wrapper's name, a CSS class, a Ruby
    symbol, an owner's member written with a possessive."""
    if "wrapper" in query:
        wrapped = _WRAPPED.search(query)
        if wrapped and wrapped.group("n").lower() not in PROSE and _rank(wrapped.group("n")) <= 3:
            return Target(wrapped.group("n"), wrapped.start("n"), wrapped.end("n"), 2)
    if "." in query and ("class" in query or "selector" in query):
        css = _CSS_CLASS.search(query)
        if css:
            return Target(css.group("n"), css.start("n"), css.end("n"), 1)
    if ":" in query and "`" not in query:
        symbol = _RUBY_SYMBOL.search(query)
        if symbol and symbol.group("n")[1:].lower() not in PROSE:
            return Target(symbol.group("n"), symbol.start("n"), symbol.end("n"), 1)
    if "def " in query or "fn " in query or "func " in query or "<" in query or "#[" in query:
        inner = _INNER_DECL.search(query)
        if inner:
            group = next(g for g in ("n", "v", "t") if inner.group(g))
            if inner.group(group).rstrip("?!").lower() not in PROSE:
                return Target(inner.group(group), inner.start(group), inner.end(group), 1)
    if "'s " in query and "()" in query:
        member = _POSSESSIVE_MEMBER.search(query)
        if member:
            name = f"{member.group('a')}.{member.group('b')}"
            return Target(name, member.start(), member.end(), 1)
    return None


def best(query: str, max_rank: int = 3) -> Target | None:
    """The most code-like token (the first of the best rank), if any is at most `max_rank`.
    A name inside a parenthesised aside loses to a code-like name outside it."""
    if max_rank >= 1:  # each form checks its own mark first
        written = _written_forms(query)
        if written is not None:
            return written
    if ("env" in query or "ENV" in query) and max_rank >= 0:
        key = _ENV_READ.search(query)
        if key:  # `os.getenv("LOG_FORMAT")`: the variable read is what the question is about
            return Target(key.group("key"), key.start("key"), key.end("key"), 0)
    if ("'" in query or '"' in query) and ("import" in query or "require" in query):
        spec = _MODULE_SPEC.search(query)
        if spec:  # "who imports '@/lib/analytics'": a module specifier, not a literal
            return Target(spec.group("key"), spec.start("key") - 1, spec.end("key") + 1, 0)
    if (" of " in query or " in " in query) and any(m in query for m in _MEMBER_MARKS):
        member = _MEMBER_OF.search(query) if _MEMBER_WORDS.search(query) else None
        if member and member.group("w").lower() not in PROSE:
            return Target(member.group("w"), member.start("w"), member.end("w"), 2)
    found = candidates(query, max_rank)
    if not found:
        return None
    if "(" in query:
        asides = [m.span() for m in _ASIDE.finditer(query)]
        outside = [c for c in found if not any(a <= c.start < b for a, b in asides)]
        if asides and any(c.rank <= 2 for c in outside):
            found = outside
    top = min(c.rank for c in found)
    return next(c for c in found if c.rank == top)


def mask(query: str, target: Target | None) -> str:
    """The question's shape: lower-cased, contractions spelled out, misspelt question words
    put right (`typos.py`), the target replaced by x."""
    text = query if target is None else query[: target.start] + " x " + query[target.end :]
    text = text.lower().replace("’", "'")
    if "s" in text and _has_is_form(text):
        text = _IS.sub(_spell_is, text)
    if "n't" in text:
        text = _NOT.sub(" not", text)
    return typos.correct(" ".join(text.split()))


_IS = lazy_compile(r"\b(where|what|who|how|that|it|there)'?s\b")
_IS_FORMS = ("'s", "whats", "wheres", "whos", "hows", "thats", "its", "theres")
"""A substring of every match of `_IS`: without one, the substitution is skipped."""


def _has_is_form(text: str) -> bool:
    """Whether one of `_IS_FORMS` is in `text` (spelt out: no generator per query)."""
    return (
        "'s" in text or "its" in text or "whats" in text or "wheres" in text or "whos" in text
        or "hows" in text or "thats" in text or "theres" in text
    )  # fmt: skip


def _spell_is(match: re.Match[str]) -> str:
    return match.group(1) + " is"  # a function: a template ("\\1 is") is parsed on every call


_NOT = lazy_compile(r"n't\b")


_KIND_NEXT = lazy_compile(
    r"\s+(?:class|struct|component|type|trait|interface|enum|module|function|method|hook"
    r"|constant|macro|record|protocol|object|defined|declared|implemented|used|called"
    r"|referenced|invoked|instantiated|constructed|subclass\w*)\b",
    re.IGNORECASE,
)
_KIND_BEFORE = lazy_compile(
    r"\b(?:class|struct|component|type|trait|interface|enum|module|function|method|hook"
    r"|constant|macro|implements|extends|subclasses|subclassing|inherit\w*\s+from"
    r"|(?:implementations|subclasses|instances|callers|usages|uses|definition|dependents)\s+of"
    r"|(?:references|calls)\s+to)\s+$",
    re.IGNORECASE,
)


def named_capital(query: str) -> Target | None:
    """The first capitalised word of `query` that the words beside it say is a name: in "Before
    the release on Friday, where is User defined" that is `User`, not the earlier `Friday`."""
    for found in candidates(query, 3):
        if found.rank == 3 and "/" not in found.text and named_by_context(query, found):
            return found
    return None


def named_by_context(query: str, target: Target) -> bool:
    """A capitalised word that the words beside it say is a name ("the Codec trait", "class
    Invoice", "where is Settings defined")."""
    return bool(_KIND_NEXT.match(query, target.end) or _KIND_BEFORE.search(query, 0, target.start))


_LOOSE = lazy_compile(
    r"\b(?:function|method|class|struct|helper|constant|variable|field|hook|component|macro"
    r"|fn|func|def)\s+(?P<a>[a-z_][\w$]*)\b"
    r"|\b(?:call(?:s|ing|ed)?|us(?:e|es|ing)|invok\w+|referenc\w+|import(?:s|ing)?)"
    r"\s+(?:to\s+|of\s+)?(?P<b>[a-z_][\w$]*)\s*\??$",
    re.IGNORECASE,
)


def loose_name(query: str) -> Target | None:
    """A plain lower-case word that the phrase around it names as code: after a kind word
    ("the function apply") or last after a verb of use ("which code is calling to validate")."""
    for match in _LOOSE.finditer(query):
        group = "a" if match.group("a") else "b"
        word = match.group(group)
        if word.lower() not in PROSE and len(word) > 2:
            return Target(word, match.start(group), match.end(group), 4)
    return None
