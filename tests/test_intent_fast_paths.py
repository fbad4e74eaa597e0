"""The classifier's shortcuts change no verdict (issue 22, classification <= 50 us p50).

`targets.candidates` leaves out the token forms whose mark (a backtick, "-", "/", "\\") the
question lacks, and for `best` it consumes runs of plain lower-case words inside the regex.
Both must give exactly the tokens the full pattern gives, on every phrasing file and on random
strings built from the characters where the forms begin and end."""

from __future__ import annotations

import random

from maguyva.eval.phrasings import PHRASINGS, load_file
from maguyva.query import targets

PIECES = (
    "who", "calls", "foo", "Foo", "foo_bar", "fooBar", "a.b", "src/x.py", "src/", "-", "--flag",
    "-x", "`", "`foo`", "`a b`", "App\\Http\\X", "\\", "/", ".", "::", "#", "->", "()", "(", ")",
    "<", "<T>", ">", "'s", "'", "123", "v2", "café", ":12", " ", "\n", ",", "?", "$x", "_",
    "x.y/z", "foo-bar/baz", "a-b", "in", "line 3 of", "Cart#checkout!", "URLs", "HTTP", "x<",
    "::a", "a.", "-a", "1abc",
)  # fmt: skip


def _queries() -> list[str]:
    rng = random.Random(22)
    out = [p.query for path in sorted(PHRASINGS.glob("*.jsonl")) for p in load_file(path)]
    for _ in range(20_000):
        words = (rng.choice(PIECES) + rng.choice(("", " ")) for _ in range(rng.randint(1, 8)))
        out.append("".join(words))
    return out


QUERIES = _queries()


def test_leaving_out_absent_forms_and_plain_words_changes_no_token(monkeypatch):
    # the reference: every form in the pattern whatever the question holds, no plain-word run
    monkeypatch.setattr(targets, "_marks", lambda query: (True,) * len(targets._FORMS))
    monkeypatch.setattr(targets, "_CANDIDATES", {})
    full = [targets.candidates(q, 5) for q in QUERIES]
    monkeypatch.undo()
    assert targets._FORMS[0][0] == "`"
    for query, tokens in zip(QUERIES, full, strict=True):
        for rank in (0, 1, 3):
            assert targets.candidates(query, rank) == [t for t in tokens if t.rank <= rank], query


def test_the_marks_spelt_out_are_the_forms_marks():
    for query in QUERIES:
        assert targets._marks(query) == tuple(m in query for m, _ in targets._FORMS), query


def test_the_similar_and_contraction_marks_spelt_out_are_their_tuples():
    from maguyva.query import shapes

    for query in QUERIES:
        folded, low = query.casefold(), query.lower()
        assert shapes._marked(folded) == any(m in folded for m in shapes._SIMILAR_MARKS), query
        assert targets._has_is_form(low) == any(f in low for f in targets._IS_FORMS), query
