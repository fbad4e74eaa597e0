"""Lazy patterns answer as compiled ones do, and importing the classifier compiles none."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from maguyva.support.lazyre import lazy_compile

CASES = [
    (r"(?P<word>[A-Za-z_]\w*)", 0, "  parse_config(x) and Foo.bar"),
    (r"\bwhere\s+is\b", re.IGNORECASE, "Where IS parse_config defined"),
    (r"^\s*File\s+\"(?P<path>[^\"]+)\"", re.MULTILINE, 'x\n  File "a.py", line 3\n'),
]


@pytest.mark.parametrize(("source", "flags", "text"), CASES)
def test_a_lazy_pattern_answers_as_the_compiled_one(source: str, flags: int, text: str) -> None:
    lazy, eager = lazy_compile(source, flags), re.compile(source, flags)
    first = lazy.search(text)
    expected = eager.search(text)
    assert (first and first.span(), first and first.groupdict()) == (
        expected and expected.span(),
        expected and expected.groupdict(),
    )
    assert lazy.findall(text) == eager.findall(text)
    assert lazy.sub("#", text) == eager.sub("#", text)
    assert lazy.split(text) == eager.split(text)
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in eager.finditer(text)]
    assert bool(lazy.match(text)) == bool(eager.match(text))
    assert bool(lazy.fullmatch(text)) == bool(eager.fullmatch(text))
    assert (lazy.pattern, lazy.flags, lazy.groups) == (eager.pattern, eager.flags, eager.groups)


def test_a_bad_pattern_fails_when_first_used() -> None:
    bad = lazy_compile("(unclosed")
    with pytest.raises(re.error):
        bad.search("x")


def test_importing_the_classifier_compiles_no_lazy_pattern() -> None:
    # A quoted literal from the shell imports the classifier; its patterns wait for use.
    probe = (
        "import maguyva.query.intent as m, maguyva.query.targets as t;"
        "from maguyva.support.lazyre import _LazyPattern as L;"
        "mods = [m, t];"
        "lazy = [v for mod in mods for v in vars(mod).values() if isinstance(v, L)];"
        "print(len(lazy), sum('search' in vars(v) for v in lazy))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    total, compiled = map(int, out.stdout.split())
    assert total >= 20
    assert compiled == 0
