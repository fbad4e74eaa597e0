"""The Makefile's targets do what their help line says: every `cargo test` run that
`make test-rust` filters to a module of the core finds Rust tests there (a filter that
matches nothing passes with "0 passed" and checks nothing)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _recipe(target: str) -> list[str]:
    """The command lines of `target` in the Makefile."""
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    out = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        out.append(line.strip())
    return out


def _filter_sources(test_filter: str) -> list[Path]:
    """The Rust sources of the module a test-name filter (`py::`, `trigram::memo`) names."""
    parts = [p for p in test_filter.split("::") if p]
    base = ROOT / "rust" / "src" / Path(*parts)
    found = sorted(base.rglob("*.rs")) if base.is_dir() else []
    return found + [p for p in [base.with_suffix(".rs")] if p.is_file()]


def test_every_filtered_cargo_test_of_test_rust_has_tests_to_run() -> None:
    runs = [shlex.split(line) for line in _recipe("test-rust") if line.startswith("cargo test")]
    assert runs, "make test-rust runs no cargo test"
    filtered = 0
    for argv in runs:
        filters = [a for a in argv[2:] if not a.startswith("-") and "::" in a]
        for test_filter in filters:
            filtered += 1
            sources = _filter_sources(test_filter)
            assert sources, f"{test_filter!r} names no module under rust/src"
            tests = sum(len(re.findall(r"#\[test\]", p.read_text())) for p in sources)
            assert tests > 0, f"`{' '.join(argv)}` runs 0 tests: {test_filter!r} has none"
    assert filtered, "no filtered run to check (update this test with the Makefile)"
