"""find_similar on renamed copies (issue 22): a pasted function whose names were changed is
answered with its original first, spanning the original's own chunk, whatever the fused
order of the semantic, text and structural lists was (`query/fingerprint.py`). Corpus: real
standard-library files, indexed with every modality; the snippets are their functions renamed
by the eval generator (`maguyva.eval.generate.rename_function`)."""

from __future__ import annotations

import ast
import inspect
import json.encoder
import shlex
import textwrap
from pathlib import Path

import pytest

from maguyva.eval.generate import rename_function
from maguyva.query.engine import Engine
from maguyva.query.fingerprint import NEAR_COPY, fingerprint, similarity, tokens

FILES = ["textwrap.py", "shlex.py", "fnmatch.py", "json/decoder.py", "json/encoder.py"]
MODALITIES = ["text", "structural", "graph", "semantic"]


@pytest.fixture(scope="module")
def engine(stdlib_index) -> Engine:
    return Engine.open(stdlib_index(FILES, {"modalities": MODALITIES}))


def _span(func) -> tuple[int, int]:
    lines, start = inspect.getsourcelines(func)
    return start, start + len(lines) - 1


def test_fingerprint_ignores_names_docstrings_and_comments():
    source = inspect.getsource(textwrap.dedent)
    renamed = rename_function(source)
    assert renamed is not None and "dedent" not in renamed
    assert similarity(fingerprint(renamed), fingerprint(source)) >= 0.9
    assert similarity(fingerprint(renamed), fingerprint(inspect.getsource(shlex.split))) < 0.3
    assert tokens('x.y = f("a" "b")  # note') == ["I", ".", ".y", "=", "I", "(", "S", ")"]


@pytest.mark.parametrize("func", [textwrap.dedent, shlex.shlex.sourcehook, textwrap.indent])
def test_renamed_copy_is_first_with_its_own_span(engine: Engine, func):
    snippet = rename_function(textwrap.dedent(inspect.getsource(func)))
    assert snippet is not None
    res = engine.search("", snippet=snippet, limit=10)
    assert res.intent == "find_similar" and res.fusion_strategy == "rrf"
    first = res.results[0]
    assert first.path == Path(inspect.getsourcefile(func)).name  # textwrap.py / shlex.py
    start, end = _span(func)
    assert first.start_line <= start + 1 and first.end_line >= end  # the function's chunk
    assert first.end_line - first.start_line < 2 * (end - start + 1)  # not its class's
    assert first.extra["near_copy"] >= NEAR_COPY


def test_renamed_copy_of_a_nested_function_is_found_in_its_enclosing_chunk(engine: Engine):
    # json.encoder's `_make_iterencode` defines `_iterencode_list` inside it: no chunk of its
    # own, a stretch of its enclosing function's chunk
    path = Path(json.encoder.__file__)
    tree = ast.parse(path.read_text())
    outer = next(n for n in tree.body if getattr(n, "name", "") == "_make_iterencode")
    inner = next(n for n in ast.walk(outer) if getattr(n, "name", "") == "_iterencode_list")
    snippet = rename_function(ast.get_source_segment(path.read_text(), inner) or "")
    assert snippet is not None
    res = engine.search("", snippet=snippet, limit=10)
    first = res.results[0]
    assert first.path == "json/encoder.py" and first.extra["near_copy"] >= NEAR_COPY
    assert first.start_line <= inner.lineno and first.end_line >= inner.end_lineno


def test_no_near_copy_keeps_the_fused_order(engine: Engine):
    snippet = "for item in things:\n    total += item.size\nprint(total)\n"
    assert ast.parse(snippet)
    res = engine.search("", snippet=snippet, limit=10)
    assert res.results and all("near_copy" not in r.extra for r in res.results)
