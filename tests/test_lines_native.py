"""Matching lines printed in Rust (`_core.print_lines`) are byte for byte what the Python
printer (`Renderer.lines_of`, `text`, `json_lines`) prints: on a real indexed corpus through
the CLI, and on arbitrary bytes (bad UTF-8, `\\r`, control characters, no final newline)."""

from __future__ import annotations

import io
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from interfaces_corpus import make_corpus

from maguyva.interfaces import output
from maguyva.interfaces.cli.main import main
from maguyva.model import ModalityContribution, Response, Result

# Times and timings differ between two runs of the same question; nothing else may.
_CLOCKS = re.compile(
    rb'"(elapsed|elapsed_total)":\{[^}]*\}|"(timings_ms)":\{[^}]*\}|"total_ms":[0-9.e-]+'
)


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = make_corpus(tmp_path_factory.mktemp("lines"))
    (root / "odd.py").write_bytes(
        b"self = 1\r\nx = '\xff\xfe self'\n\tself\x01\x1b\"q\\\n# SELF Self\nself.self(self)"
    )
    assert main(["-q", "index", str(root), "--modalities", "text,structural"]) == 0
    return root


def _printed(root: Path, args: list[str], native: bool, monkeypatch, capsysbinary) -> bytes:
    monkeypatch.chdir(root)
    monkeypatch.setenv("MAGUYVA_DAEMON", "0")
    monkeypatch.setattr(output.Renderer, "_native_for", lambda self, light, every: native and
                        output.Renderer._cap(self, every) >= 0 and light.native)  # fmt: skip
    code = main(["search", *args])
    out = capsysbinary.readouterr().out
    assert code in (0, 1)
    return _CLOCKS.sub(b"", out)


QUESTIONS = [
    ['"self"', "--max-results", "100"],
    ["self", "--max-results", "100"],
    ['"self"', "--max-results", "100", "--json"],
    ['"SELF"', "--max-results", "100", "-i", "-C", "2"],
    ['"self"', "--max-results", "100", "-w", "-m", "3", "--color", "always"],
    ['"Self"', "--max-results", "100", "--json", "-C", "1", "--color", "always"],
    ["-F", "self.", "--max-results", "100", "-s"],
    ["where is dedent defined", "--json"],
    ["who calls dedent", "-C", "1"],
    ["how does shell-like splitting handle quotes", "--color", "always"],
    ["how does shell-like splitting handle quotes", "--json", "-C", "3"],
    ['"zzz_nowhere"'],
]


@pytest.mark.parametrize("args", QUESTIONS, ids=lambda a: " ".join(a))
def test_cli_output_is_the_python_printers(root: Path, args, monkeypatch, capsysbinary):
    reference = _printed(root, args, False, monkeypatch, capsysbinary)
    native = _printed(root, args, True, monkeypatch, capsysbinary)
    assert native == reference
    if args[0] != '"zzz_nowhere"':
        assert reference.count(b"\n") > 2


def test_native_printer_is_used(root: Path, monkeypatch, capsysbinary):
    calls = []
    for name in ("print_lines", "print_results"):
        real = getattr(output._core, name)
        monkeypatch.setattr(output._core, name, lambda *a, _n=name, _r=real, **k:
                            calls.append(_n) or _r(*a, **k))  # fmt: skip
    monkeypatch.chdir(root)
    monkeypatch.setenv("MAGUYVA_DAEMON", "0")
    assert main(["search", '"self"', "--max-results", "100"]) == 0
    out = capsysbinary.readouterr().out
    # text: every result in one call; JSON Lines: one call per result
    assert calls == ["print_results"] and out.count(b"self") > 100
    calls.clear()
    assert main(["search", '"self"', "--max-results", "100", "--json"]) == 0
    assert len(calls) >= 5 and set(calls) == {"print_lines"}
    capsysbinary.readouterr()
    # a regex is highlighted by Python's `re`: the Python printer answers
    calls.clear()
    assert main(["search", "--regex", "se+lf", "--max-results", "5"]) == 0
    assert calls == []


def _stream(encoding: str) -> tuple[io.TextIOWrapper, io.BytesIO]:
    raw = io.BytesIO()
    return io.TextIOWrapper(raw, encoding=encoding, errors="backslashreplace", newline="\n"), raw


_LINE = st.lists(
    st.sampled_from([b"self", b"SELF", b"Self", b"\r", b"\xff", b"\xe2\x82", b"\xe2\x82\xac",
                     b"\xed\xa0\x80", b'"', b"\\", b"\x01", b"\t", b" ", b"x", b"\xc3\xa9", b"\x7f"]),
    max_size=8,
).map(b"".join)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(_LINE, min_size=0, max_size=12),
    final_newline=st.booleans(),
    span=st.tuples(st.integers(1, 14), st.integers(0, 14)),
    recorded=st.lists(st.integers(-2, 16), max_size=6),
    target=st.sampled_from(["self", "SELF", "", "é", '"self"', "x x"]),
    case=st.sampled_from([None, "smart", "sensitive", "insensitive"]),
    intent=st.sampled_from(["exact_match", "understand_code"]),
    context=st.integers(0, 3),
    max_count=st.one_of(st.none(), st.integers(0, 4)),
    color=st.booleans(),
    encoding=st.sampled_from(["utf-8", "ascii"]),
)
def test_any_bytes_print_alike(lines, final_newline, span, recorded, target, case, intent,
                               context, max_count, color, encoding):  # fmt: skip
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "f.txt").write_bytes(data)
        result = Result(path="f.txt", start_line=span[0], end_line=span[1], score=0.5,
                        snippet="", provenance=[ModalityContribution("text", 1, 0.1)],
                        lines=recorded)  # fmt: skip
        response = Response(query=target, intent=intent, confidence=1.0, target=target,
                            fusion_strategy="direct", preset="default", modalities=["text"],
                            weights={"text": 1.0}, k=40, results=[result, result],
                            timings_ms={}, total_ms=0.0)  # fmt: skip
        outs = []
        for native in (False, True):
            renderer = output.Renderer(root, color=color, context=context, case=case,
                                       max_count=max_count, native=native)  # fmt: skip
            text, text_raw = _stream(encoding)
            output.write_lines(renderer.text(response), text)
            json_out, json_raw = _stream(encoding)
            output.write_lines(renderer.json_lines(response, 0.0), json_out)
            outs.append((text_raw.getvalue(), _CLOCKS.sub(b"", json_raw.getvalue())))
        assert outs[1] == outs[0]
