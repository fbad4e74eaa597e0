"""Extraction on bad input, the time budget, the parallel driver and the grammar registry."""

from __future__ import annotations

import email
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maguyva.extract import extract_files, extract_source, grammars
from maguyva.extract.extractor import _Def, _Enclosing
from maguyva.model import SourceFile

REQUIRED = ["python", "javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp",
            "csharp", "ruby", "php", "kotlin", "swift", "scala", "bash"]  # fmt: skip


def test_every_required_grammar_and_query_loads() -> None:
    assert grammars.unavailable() == {}
    assert set(REQUIRED) <= set(grammars.available())


def test_unknown_language_gets_line_windows() -> None:
    result = extract_source("notes.txt", None, b"hello\nworld\n")
    assert result.status == "no_grammar"
    assert [c.kind for c in result.chunks] == ["lines"]


def test_truncated_file_keeps_its_valid_definitions() -> None:
    src = b"def complete(a):\n    return a\n\nclass Half:\n    def ok(self):\n        pass\n    def broken(self, x:\n"
    result = extract_source("t.py", "python", src)
    names = {d.qualified_name for d in result.extraction.definitions}
    assert result.status == "ok"
    assert {"complete", "Half", "Half.ok"} <= names


@pytest.mark.parametrize("language", REQUIRED)
def test_garbage_does_not_crash(language: str) -> None:
    garbage = bytes(range(256)) * 20 + b"}{)(][ def class fn func <<<>>> \xff\xfe" * 50
    result = extract_source("garbage", language, garbage)
    assert result.status == "ok"
    assert result.chunks  # indexed anyway


def test_deep_nesting_does_not_overflow() -> None:
    depth = 100_000
    src = b"x = " + b"[" * depth + b"]" * depth + b"\ndef after():\n    pass\n"
    result = extract_source("deep.py", "python", src)
    assert result.status in ("ok", "timeout")
    if result.status == "ok":
        assert "after" in {d.name for d in result.extraction.definitions}
    assert result.chunks


def test_deep_braces_in_c_family() -> None:
    src = b"int f(void) {" + b"{" * 100_000 + b"}" * 100_000 + b"}\n"
    result = extract_source("deep.c", "c", src)
    assert result.status in ("ok", "timeout")
    assert result.chunks


def test_blown_budget_is_reported_and_file_still_chunked() -> None:
    src = b"".join(b"def f%d(x):\n    return x + %d\n\n" % (i, i) for i in range(3000))
    result = extract_source("big.py", "python", src, budget_s=0.0)
    assert result.status == "timeout"
    assert result.extraction.error and "budget" in result.extraction.error
    assert result.extraction.definitions == []
    assert result.chunks and all(c.kind == "lines" for c in result.chunks)


def test_crlf_and_bom_lines_match_the_file() -> None:
    src = "\ufeffimport os\r\n\r\ndef f():\r\n    return os.sep\r\n".encode()
    result = extract_source("crlf.py", "python", src)
    (d,) = result.extraction.definitions
    assert (d.start_line, d.end_line) == (3, 4)
    func = next(c for c in result.chunks if c.qualified_name == "f")
    assert func.text == "def f():\n    return os.sep"


def test_calls_have_enclosing_callers_and_imports_have_levels() -> None:
    src = b"from ..pkg import mod as m\nimport a.b\n\nclass K:\n    def run(self):\n        m.go(self.x)\n\ndef top():\n    K().run()\n"
    ex = extract_source("k.py", "python", src).extraction
    assert [(i.module, i.name, i.alias, i.level) for i in ex.imports] == [
        ("pkg", "mod", "m", 2),
        ("a.b", None, None, 0),
    ]
    calls = {(c.callee, c.caller) for c in ex.calls}
    assert ("m.go", "K.run") in calls
    assert ("K().run", "top") in calls and ("K", "top") in calls


def _write_tree(root: Path, n: int) -> list[SourceFile]:
    files = []
    for i in range(n):
        rel = f"pkg/mod{i}.py"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"def func_{i}(x):\n    return helper_{i}(x)\n\nclass C{i}:\n    pass\n")
        files.append(SourceFile(rel, path.stat().st_size, 0, "python"))
    (root / "notes.txt").write_text("plain text\n")
    files.append(SourceFile("notes.txt", 11, 0, None))
    files.append(SourceFile("missing.py", 10, 0, "python"))
    return files


def test_parallel_driver_matches_in_process(tmp_path: Path) -> None:
    files = _write_tree(tmp_path, 70)  # above the in-process threshold: worker processes
    parallel = {r.extraction.path: r for r in extract_files(tmp_path, files, jobs=2)}
    serial = {r.extraction.path: r for r in extract_files(tmp_path, files, jobs=1)}
    assert parallel.keys() == serial.keys() == {f.path for f in files}
    for path, result in serial.items():
        assert parallel[path].extraction == result.extraction
        assert [c.id for c in parallel[path].chunks] == [c.id for c in result.chunks]
    assert serial["missing.py"].status == "unreadable"
    assert serial["notes.txt"].status == "no_grammar"
    assert serial["pkg/mod3.py"].extraction.calls[0].callee == "helper_3"


def test_a_file_extracts_the_same_alone_and_after_others() -> None:
    """References starting at one byte (`self.header_factory[name].max_count` and
    `self.header_factory`) come out in one order whatever the process extracted before: the
    graph's edge log keys a file's rows by its extraction, and a from-scratch build must equal
    an update (the order used to depend on the files extracted before it)."""
    package = Path(email.__file__).parent
    everything = [
        SourceFile(p.relative_to(package.parent).as_posix(), p.stat().st_size, 0, "python")
        for p in sorted(package.glob("*.py"))
    ]
    alone = [f for f in everything if f.path == "email/policy.py"]
    first = {r.extraction.path: r.extraction for r in extract_files(package.parent, alone, 1)}
    after = {r.extraction.path: r.extraction for r in extract_files(package.parent, everything, 1)}
    refs = [(r.name, r.line) for r in first["email/policy.py"].references]
    assert refs == [(r.name, r.line) for r in after["email/policy.py"].references]
    assert refs.index(("self.header_factory[name].max_count", 106)) < refs.index(
        ("self.header_factory", 106)
    )  # the outer span first, as call sites


def test_an_update_loads_only_the_grammars_of_its_files(tmp_path: Path) -> None:
    """The report's unavailable grammars are those of the languages extracted: a one-file
    update of a Python file loads the Python grammar only (loading all of them to report
    cost the first update of every process ~1.4 s)."""
    (tmp_path / "a.py").write_text("def f():\n    return g(1)\n")
    (tmp_path / "b.c").write_text("int main(void) { return 0; }\n")
    code = (
        "import sys; from pathlib import Path; from maguyva.build.indexer import Indexer; "
        "from maguyva.extract import grammars; root = Path(sys.argv[1]); "
        "cfg = {'modalities': ['text', 'structural']}; Indexer(root, config=cfg).update(); "
        "print(sorted(grammars._loaded))"
    )
    full = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                          text=True, check=True)  # fmt: skip
    assert full.stdout.split() == ["['c',", "'python']"]  # the languages of its files
    (tmp_path / "a.py").write_text("def f():\n    return g(2)\n")
    again = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                           text=True, check=True)  # fmt: skip
    assert again.stdout.strip() == "['python']"
    assert grammars.unavailable(["python", "no-such-language"]) == {}


@st.composite
def _nested_spans(draw: st.DrawFn) -> list[tuple[int, int]]:
    """Properly nested [start, end) byte spans, as definitions are."""
    spans: list[tuple[int, int]] = []
    open_at: list[int] = []
    pos = 0
    for opens in draw(st.lists(st.booleans(), max_size=40)):
        pos += draw(st.integers(0, 3))
        if opens or not open_at:
            open_at.append(pos)
        else:
            spans.append((open_at.pop(), pos))
    while open_at:
        pos += draw(st.integers(0, 3))
        spans.append((open_at.pop(), pos))
    return [s for s in spans if s[1] > s[0]]


@settings(max_examples=200, deadline=None)
@given(_nested_spans(), st.lists(st.integers(0, 130), max_size=30))
def test_enclosing_is_the_innermost_span(spans: list[tuple[int, int]], offsets: list[int]) -> None:
    defs = []
    for number, (start, end) in enumerate(spans):
        d = _Def("function", f"f{number}", start, end, 1, 1, 1, None, False)  # type: ignore[arg-type]
        d.qualified = d.name
        defs.append(d)
    enclosing = _Enclosing(defs)
    for offset in sorted(offsets):
        around = [d for d in defs if d.start_byte <= offset < d.end_byte]
        if not around:
            assert enclosing.at(offset) is None
            continue
        tightest = max((d.start_byte, -d.end_byte) for d in around)
        innermost = {d.qualified for d in around if (d.start_byte, -d.end_byte) == tightest}
        assert enclosing.at(offset) in innermost  # identical spans: either is innermost


TS_MEMBERS = b"""export class CartStore {
  private items: Item[] = [];

  /** Adds one item. */
  addItem = (item: Item): void => {
    this.items.push(item);
  };

  removeItem = function (id: string) {
    this.items = this.items.filter((i) => i.id !== id);
  };

  get total(): number {
    return this.items.length;
  }

  set discount(value: number) {
    this.rate = value;
  }
}
"""


@pytest.mark.parametrize("language", ["typescript", "tsx", "javascript"])
def test_class_members_as_arrow_functions_and_accessors_are_methods(language: str) -> None:
    """`f = () => ...` members, getters and setters: their own definition, span and chunk,
    not the whole class (issue 22); a plain field stays a field."""
    src = TS_MEMBERS
    if language == "javascript":
        for typed, plain in ((b": Item[]", b""), (b"(item: Item): void", b"(item)"),
                             (b"(id: string)", b"(id)"), (b"(): number", b"()"),
                             (b"(value: number)", b"(value)"), (b"private items", b"items")):  # fmt: skip
            src = src.replace(typed, plain)
    result = extract_source("cart.ts", language, src)
    found = {
        d.qualified_name: (d.kind, d.start_line, d.end_line) for d in result.extraction.definitions
    }
    assert found["CartStore.addItem"] == ("method", 5, 7)
    assert found["CartStore.removeItem"] == ("method", 9, 11)
    assert found["CartStore.total"] == ("method", 13, 15)
    assert found["CartStore.discount"] == ("method", 17, 19)
    assert found["CartStore.items"][0] == "field"
    spans = {(c.start_line, c.end_line) for c in result.chunks if c.kind == "method"}
    assert {(4, 7), (9, 11), (13, 15), (17, 19)} <= spans
