"""Go uses the extraction recorded no reference for (the fresh evaluation on go-chi/chi 5.0.7,
`docs/eval-fresh.md`): a type was a reference only as a parameter's, a field's or a composite
literal's own type, and a value only as a call argument or a returned name. So a result type
(`func NewWrapResponseWriter(...) WrapResponseWriter`), a type assertion
(`handler.(*ChainHandler)` in `tree.go`), a type switch case, a slice or map element type, an
embedded type, and a package variable read in an operator, an index or a range clause
(`methodMap[method]`, `method&mALL == mALL`, `range methodMap`) had no edge."""

from __future__ import annotations

import time

import pytest

from maguyva.extract import grammars
from maguyva.extract.extractor import extract
from maguyva.query.engine import Engine
from tests.support.repos import assert_use_listed, indexed


def _refs(src: str) -> set[tuple[str, int]]:
    grammar = grammars.load("go")
    assert grammar is not None
    extraction, _ = extract(grammar, "a.go", src.encode(), time.monotonic() + 30)
    return {(r.name, r.line) for r in extraction.references}


# One construct each: the Go source (line 1 is `package p`) and the use it must record.
CONSTRUCTS = {
    "result type": ("func New() Writer { return nil }", "Writer", 2),
    "result type, generic": ("func New() List[int] { return nil }", "List", 2),
    "type assertion": ("func f() { _ = h.(*ChainHandler) }", "ChainHandler", 2),
    "type switch case": ("func f() {\nswitch h.(type) {\ncase *Mux:\n}\n}", "Mux", 4),
    "slice element type": ("func f() { _ = []Route{} }", "Route", 2),
    "map value type": ("func f() { _ = map[string]Entry{} }", "Entry", 2),
    "channel type in make": ("func f() { _ = make(chan Item) }", "Item", 2),
    "var with a type": ("func f() {\nvar v Options\n_ = v\n}", "Options", 3),
    "field of a slice type": ("type T struct {\nf []Elem\n}", "Elem", 3),
    "field of a func type": ("type T struct {\nh func(Arg) Res\n}", "Res", 3),
    "embedded struct type": ("type T struct {\nBase\n}", "Base", 3),
    "embedded interface": ("type I interface {\nBase\n}", "Base", 3),
    "interface method result": ("type I interface {\nM() Result\n}", "Result", 3),
    "receiver type": ("func (m *Mux) Get() {}", "Mux", 2),
    "qualified type, whole": ("func f() { _ = h.(http.Handler) }", "http.Handler", 2),
    "binary operand": ("func f(m int) bool { return m&mALL == mALL }", "mALL", 2),
    "index expression": ("func f(k string) { _ = methodMap[k] }", "methodMap", 2),
    "range clause": ("func f() {\nfor k := range methodMap {\n_ = k\n}\n}", "methodMap", 3),
    "assigned to": ("func f() {\nIsTTY = true\n}", "IsTTY", 3),
    "assigned from": ("func f() {\nx := defaultTimeout\n_ = x\n}", "defaultTimeout", 3),
    "package value, qualified": ("func f() {\nx := http.StatusOK\n_ = x\n}", "http.StatusOK", 3),
    "keyed element value": ("func f() { _ = Opts{Limit: defaultLimit} }", "defaultLimit", 2),
    "unary operand": ("func f() { _ = &defaultLogger }", "defaultLogger", 2),
    "case value": ("func f(e error) {\nswitch e {\ncase ErrClosed:\n}\n}", "ErrClosed", 4),
    "var initialiser": ("var global = defaultMux", "defaultMux", 2),
}


@pytest.mark.parametrize("construct", sorted(CONSTRUCTS))
def test_a_go_use_is_a_reference(construct: str) -> None:
    body, name, line = CONSTRUCTS[construct]
    assert (name, line) in _refs(f"package p\n{body}\n")


def test_names_being_declared_are_no_reference() -> None:
    src = (
        "package p\n"
        "type Writer interface{}\n"  # 2: the type's own name
        "func f() {\n"
        "\tv, ok := h.(http.Handler)\n"  # 4: `Handler` alone would be this package's
        "\t_ = v\n"  # 5: `_` is no name
        "\t_, _ = ok, 1\n"
        "}\n"
    )
    refs = _refs(src)
    assert ("Writer", 2) not in refs
    assert ("Handler", 4) not in refs and ("http.Handler", 4) in refs
    assert ("v", 4) not in refs and ("ok", 4) not in refs  # declared by `:=`
    assert "_" not in {name for name, _ in refs}


def test_a_callee_is_a_call_not_a_reference() -> None:
    refs = _refs("package p\nfunc f() { x := NewMux()\n_ = x }\n")
    assert ("NewMux", 2) not in refs


FILES = {
    "go.mod": "module example.com/router\n\ngo 1.20\n",
    "tree.go": "package router\n\ntype methodTyp uint\n\n"
    'var methodMap = map[string]methodTyp{"GET": 1}\n\nvar mALL methodTyp = 1\n\n'
    "type Handler interface{ Serve() }\n\n"
    "type ChainHandler struct{ Endpoint Handler }\n\nfunc (c *ChainHandler) Serve() {}\n",
    "mux.go": "package router\n\nfunc lookup(method string) methodTyp {\n"
    "\tm, ok := methodMap[method]\n\tif !ok {\n\t\treturn mALL | 2\n\t}\n\treturn m\n}\n\n"
    "func unwrap(h Handler) *ChainHandler {\n\tif c, ok := h.(*ChainHandler); ok {\n"
    "\t\treturn c\n\t}\n\treturn nil\n}\n",
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    return indexed(tmp_path_factory.mktemp("gouses") / "repo", FILES)


@pytest.mark.parametrize(
    ("question", "line"),
    [
        ("references to methodMap", 4),  # an index expression
        ("who uses mALL", 6),  # an operand
        ("references to ChainHandler", 12),  # a type assertion
    ],
)
def test_a_go_use_is_found_by_references(engine: Engine, question: str, line: int) -> None:
    res = engine.search(question, limit=10)
    assert res.intent == "find_references"
    assert_use_listed(res, "mux.go", line)
    # found by the graph, not only by the text fallback a graph with no edge falls back to
    (hit,) = [r for r in res.results if r.path == "mux.go"]
    assert "graph" in {p.modality for p in hit.provenance}, hit.provenance
