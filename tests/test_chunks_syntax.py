"""Syntax-aware chunks: coverage, stable content-addressed ids, splitting of long definitions."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from maguyva.extract import extract_source
from maguyva.extract.chunks import MAX_CHUNK_LINES, source_lines

SOURCE = '''"""Module doc."""
import os

LIMIT = 3


class Store:
    """Keeps things."""

    size = 0

    def get(self, key):
        return self.items[key]

    def put(self, key, value):
        self.items[key] = value


def helper(x):
    return os.path.join(x, "y")


if __name__ == "__main__":
    helper("z")
'''


def chunks_of(text: str, path: str = "m.py"):
    return extract_source(path, "python", text.encode()).chunks


def test_one_chunk_per_definition_and_class_skeleton() -> None:
    chunks = chunks_of(SOURCE)
    by_name = {c.qualified_name: c for c in chunks if c.qualified_name}
    assert set(by_name) == {"Store", "Store.get", "Store.put", "helper"}
    skeleton = by_name["Store"].text
    assert "size = 0" in skeleton and "def get(self, key) …" in skeleton
    assert "return self.items[key]" not in skeleton  # methods live in their own chunks
    assert by_name["Store.get"].header.startswith("m.py: method Store.get\ndef get(self, key)")
    top = [c for c in chunks if c.kind == "module"]
    assert [c.start_line for c in top] == [1, 23]


RUST_IMPLS = """/// A point.
pub struct Point { x: i32, y: i32 }

/// Inherent methods.
impl Point {
    pub const ORIGIN: Point = Point { x: 0, y: 0 };

    pub fn norm(&self) -> i32 {
        self.x * self.x + self.y * self.y
    }
}

impl std::fmt::Display for Point {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "({}, {})", self.x, self.y)
    }
}
"""


def test_rust_impl_and_swift_extension_get_their_own_chunk() -> None:
    chunks = extract_source("p.rs", "rust", RUST_IMPLS.encode()).chunks
    impls = [c for c in chunks if c.kind == "impl"]
    assert [(c.start_line, c.end_line) for c in impls] == [(4, 11), (13, 17)]
    assert impls[0].header == "p.rs: impl Point\nimpl Point"
    assert "ORIGIN" in impls[0].text and "pub fn norm(&self) -> i32 …" in impls[0].text
    assert impls[1].header.endswith("\nimpl std::fmt::Display for Point")
    assert not [c for c in chunks if c.kind == "module"]  # no impl header left in top-level code
    methods = {c.qualified_name: (c.start_line, c.end_line) for c in chunks if c.kind == "method"}
    assert methods == {"Point.norm": (8, 10), "Point.fmt": (14, 16)}
    swift = "struct P {}\n\nextension P {\n    func twice() -> Int { 2 }\n}\n"
    chunks = extract_source("p.swift", "swift", swift.encode()).chunks
    assert [(c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("struct", 1, 1), ("extension", 3, 5), ("method", 4, 4)]  # fmt: skip


def test_every_nonblank_line_is_in_a_chunk() -> None:
    chunks = chunks_of(SOURCE)
    for number, line in enumerate(source_lines(SOURCE), start=1):
        if line.strip():
            assert any(c.start_line <= number <= c.end_line for c in chunks), number


def test_ids_stable_when_unchanged_and_only_edited_function_changes() -> None:
    before = {c.qualified_name or f"#{c.start_line}": c.id for c in chunks_of(SOURCE)}
    again = {c.qualified_name or f"#{c.start_line}": c.id for c in chunks_of(SOURCE)}
    assert before == again
    edited = SOURCE.replace("return self.items[key]", "return self.items.get(key, None)")
    after = {c.qualified_name or f"#{c.start_line}": c.id for c in chunks_of(edited)}
    changed = {k for k in before if before[k] != after.get(k)}
    assert changed == {"Store.get"}


def test_ids_survive_moving_code_down() -> None:
    ids = {c.qualified_name: c.id for c in chunks_of(SOURCE) if c.qualified_name}
    moved = {c.qualified_name: c.id for c in chunks_of("\n\n\n" + SOURCE) if c.qualified_name}
    assert ids == moved


def test_long_function_split_at_statements_with_overlap() -> None:
    body = "".join(f"    total += step_{i}(total)\n" for i in range(300))
    text = f"def long_one(total):\n{body}    return total\n"
    parts = [c for c in chunks_of(text) if c.qualified_name == "long_one"]
    assert len(parts) >= 3
    assert parts[0].start_line == 1 and parts[-1].end_line == 302
    for a, b in itertools.pairwise(parts):
        assert b.start_line <= a.end_line + 1  # contiguous or overlapping
        assert a.end_line - b.start_line < 5  # the overlap is small
    assert all(c.end_line - c.start_line < MAX_CHUNK_LINES for c in parts)
    assert "(part 2/" in parts[1].header
    assert len({c.id for c in parts}) == len(parts)


def test_identical_definitions_get_distinct_ids() -> None:
    text = "if a:\n    def f():\n        return 1\nelse:\n    def f():\n        return 1\n"
    chunks = chunks_of(text)
    assert len({c.id for c in chunks}) == len(chunks)


_names = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)


@st.composite
def programs(draw) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["def", "class", "stmt", "blank", "junk"]))
        name = draw(_names)
        if kind == "def":
            n = draw(st.integers(1, 150))
            parts.append(f"def {name}(x):\n" + "    x += 1\n" * n + "    return x\n")
        elif kind == "class":
            methods = "".join(
                f"    def {draw(_names)}(self):\n        return {i}\n"
                for i in range(draw(st.integers(0, 4)))
            )
            parts.append(f"class {name.title()}:\n    attr = 1\n{methods}")
        elif kind == "stmt":
            parts.append(f"{name} = {draw(st.integers())}\n")
        elif kind == "junk":
            parts.append(draw(st.text(alphabet="(){}[]:=\n abc'\"#", max_size=40)) + "\n")
        else:
            parts.append("\n")
    return "".join(parts)


@settings(max_examples=60, deadline=None)
@given(programs())
def test_property_coverage_and_unique_ids(text: str) -> None:
    chunks = chunks_of(text)
    lines = source_lines(text)
    assert len({c.id for c in chunks}) == len(chunks)
    for c in chunks:
        assert 1 <= c.start_line <= c.end_line <= max(len(lines), 1)
    for number, line in enumerate(lines, start=1):
        if line.strip():
            assert any(c.start_line <= number <= c.end_line for c in chunks), number
    assert chunks_of(text) == chunks  # deterministic
