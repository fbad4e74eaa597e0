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

from maguyva.build.indexer import build_index
from maguyva.eval.generate import rename_function
from maguyva.query.engine import Engine
from maguyva.query.fingerprint import (
    NEAR_COPY,
    fingerprint,
    literal_names,
    near_copies_first,
    similarity,
    tokens,
)

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


# Two crypto providers with the same function, alike but for the provider's own names (as
# rustls's `crypto/ring/tls13.rs` and `crypto/aws_lc_rs/tls13.rs`): their shapes tie, the
# names a renaming keeps tell them apart.
PROVIDER = """use super::{}::hkdf;

pub(crate) struct {}Expander {{
    alg: hkdf::Algorithm,
    prk: hkdf::Prk,
}}

impl {}Hkdf {{
    pub(crate) fn expander_for_secret(&self, salt: Option<&[u8]>, secret: &[u8]) -> Box<{}Expander> {{
        let zeroes = [0u8; 64];
        let salt = match salt {{
            Some(salt) => salt,
            None => &zeroes[..self.0.len()],
        }};
        Box::new({}Expander {{
            alg: self.0,
            prk: hkdf::Salt::new(self.0, salt).extract(secret),
        }})
    }}
}}
"""
PROVIDERS = {"ring": "Ring", "aws_lc_rs": "AwsLc"}


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    root = tmp_path_factory.mktemp("providers")
    for module, prefix in PROVIDERS.items():
        path = root / "src" / "crypto" / module / "tls13.rs"
        path.parent.mkdir(parents=True)
        path.write_text(PROVIDER.format(module, prefix, prefix, prefix, prefix))
    build_index(root, config={"modalities": ["text", "structural", "graph"]})
    return Engine.open(root)


def _renamed_from(module: str) -> str:
    prefix = PROVIDERS[module]
    body = PROVIDER.format(module, prefix, prefix, prefix, prefix)
    method = body[body.index("    pub(crate) fn") : body.index("\n    }\n") + 6]
    return method.replace("expander_for_secret", "f").replace("salt", "v0").replace("secret", "v1")


def test_literal_names_are_the_names_a_renaming_keeps():
    names = literal_names(_renamed_from("ring"))
    assert {"RingExpander", "hkdf", "Salt", "extract", "Option", "Box"} <= names
    assert not names & {"f", "v0", "v1", "zeroes", "fn", "let"}
    assert literal_names('x = os.path.join(v0, "sep")') == {"path", "join", '"sep"'}


@pytest.mark.parametrize("module", list(PROVIDERS))
def test_tied_near_copies_are_ordered_by_the_names_they_share(providers: Engine, module: str):
    snippet = _renamed_from(module)
    want = f"src/crypto/{module}/tls13.rs"
    res = providers.search("", snippet=snippet, limit=10)
    both = [r for r in res.results if "near_copy" in r.extra]
    assert {r.path for r in both} == {f"src/crypto/{m}/tls13.rs" for m in PROVIDERS}
    assert both[0].extra["near_copy"] == both[1].extra["near_copy"]  # the shapes tie
    assert res.results[0].path == want
    # whatever order fusion handed over: the other provider first
    other = [r for r in res.results if r.path != want]
    mine = [r for r in res.results if r.path == want]
    found = {r.path: {c.id for c in providers.chunks.by_path(r.path)} for r in res.results}
    reordered = near_copies_first(snippet, other + mine, providers.chunks, found)
    assert reordered[0].path == want
    assert reordered[0].extra["shared_names"] > reordered[1].extra["shared_names"]
