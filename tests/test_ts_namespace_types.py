"""A TypeScript type named through a namespace import (issue 22): pyright-internal's
`sourceFile.ts` writes `const commentDiags: CommentUtils.CommentDiagnostic[] = []` after
`import * as CommentUtils from './commentUtils'`. Only the namespace (`CommentUtils`) was a
reference, so the interface's references missed the file."""

from __future__ import annotations

import time

import pytest

from maguyva.extract import grammars
from maguyva.extract.extractor import extract
from maguyva.query.engine import Engine
from tests.support.repos import assert_use_listed, indexed

FILES = {
    "src/commentUtils.ts": "export interface CommentDiagnostic {\n    message: string;\n}\n\n"
    "export function parse(text: string): CommentDiagnostic[] {\n    return [];\n}\n",
    "src/sourceFile.ts": "import * as CommentUtils from './commentUtils';\n\n"
    "export function check(text: string): number {\n"
    "    const diags: CommentUtils.CommentDiagnostic[] = [];\n"
    "    return diags.length + CommentUtils.parse(text).length;\n}\n",
}


def test_a_qualified_type_is_a_reference_whole() -> None:
    grammar = grammars.load("typescript")
    assert grammar is not None
    src = FILES["src/sourceFile.ts"].encode()
    extraction, _ = extract(grammar, "src/sourceFile.ts", src, time.thread_time() + 30)
    refs = {(r.name, r.line) for r in extraction.references}
    assert {("CommentUtils.CommentDiagnostic", 4), ("CommentUtils", 4)} <= refs
    assert ("CommentDiagnostic", 4) not in refs  # the member alone names nothing here


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    return indexed(tmp_path_factory.mktemp("tsnamespace") / "repo", FILES)


def test_a_type_through_a_namespace_import_is_found_by_references(engine: Engine) -> None:
    res = engine.search("references to CommentDiagnostic", limit=10)
    assert res.intent == "find_references"
    assert_use_listed(res, "src/sourceFile.ts", 4)
