"""Receiver-type evidence beyond the calling function's own text (docs/graph.md, "Name
resolution"): a chained assignment types every target, module-level code reads the file's
text outside its functions and classes, and a closure's variable is typed by its enclosing
function; a parameter hides the module or function of its name. Each fixture has two same-named methods, so an untyped receiver would give two
candidate edges; callers known by construction, asserted exactly."""

from __future__ import annotations

import pytest
from graph_support import build_graph

from maguyva.modalities.graph import GraphSearcher
from maguyva.modalities.graph.receivers import parameters, scan
from maguyva.modalities.graph.schema import CONF_CANDIDATE, CONF_TYPED

REPO = {
    "app/__init__.py": "",
    "app/shapes.py": """
        class Font:
            def cget(self, key):
                return key


        class Widget:
            def cget(self, key):
                return key
        """,
    "app/demo.py": """
        from app.shapes import Font, Widget


        def helper():
            f = Widget()
            return f


        if __name__ == "__main__":
            f = Font()
            print(f.cget("family"))
        """,
    "app/gui.py": """
        from app.shapes import Widget


        class Dialog:
            def build(self):
                self.ok = b = Widget()
                b.cget("state")

            def later(self):
                return self.ok.cget("text")
        """,
    "app/closure.py": """
        from app import shapes


        def outer():
            font = shapes.Font()

            def inner():
                return font.cget("size")

            return inner


        def untyped(obj):
            def inner():
                return obj.cget("size")

            return inner
        """,
    "app/timer.py": """
        def cancel():
            pass


        class Job:
            def cancel(self):
                pass
        """,
    "app/params.py": """
        from app import timer
        from app.timer import cancel


        def stop(timer):
            timer.cancel()


        def run(cancel):
            cancel()


        def module_level():
            timer.cancel()
            cancel()
        """,
}


@pytest.fixture(scope="module")
def graph(tmp_path_factory) -> GraphSearcher:
    out = build_graph(tmp_path_factory.mktemp("scopes"), REPO, tmp_path_factory.mktemp("gen"))
    return GraphSearcher.open(out, {"config": {"graph_min_confidence": 0.0}})


def callees(g: GraphSearcher, name: str) -> dict[str, float]:
    return {h.symbol or "": h.score or 0.0 for h in g.callees(name)}


def refs(g: GraphSearcher, symbol: str) -> dict[str, list[int]]:
    return {h.path: h.lines for h in g.references(symbol)}


def test_chained_assignment_types_every_target():
    got = scan("    self.ok = b = Widget(parent)\n    x = y == z(1)\n")
    assert got == {"self.ok": ["Widget"], "b": ["Widget"]}


def test_chained_assignment_types_the_variable_and_the_attribute(graph):
    typed = pytest.approx(CONF_TYPED)
    assert callees(graph, "app.gui.Dialog.build") == {
        "app.shapes.Widget": pytest.approx(0.95),
        "app.shapes.Widget.cget": typed,
    }
    assert callees(graph, "app.gui.Dialog.later") == {"app.shapes.Widget.cget": typed}


def test_module_level_code_is_typed_by_module_level_assignments(graph):
    # `f = Font()` under `if __name__ == "__main__":`; `helper`'s own `f = Widget()` is not
    # module-level code and does not type it
    assert refs(graph, "Font.cget") == {"app/demo.py": [11], "app/closure.py": [8, 15]}
    assert "app/demo.py" not in refs(graph, "Widget.cget")


def test_closure_variable_is_typed_by_the_enclosing_function(graph):
    assert callees(graph, "app.closure.outer.inner") == {
        "app.shapes.Font.cget": pytest.approx(CONF_TYPED)
    }
    # a parameter of the enclosing function: no evidence, two visible candidates
    assert callees(graph, "app.closure.untyped.inner") == {
        "app.shapes.Font.cget": pytest.approx(CONF_CANDIDATE / 2**0.5),
        "app.shapes.Widget.cget": pytest.approx(CONF_CANDIDATE / 2**0.5),
    }


def test_a_parameter_hides_the_module_and_the_function_of_its_name(graph):
    # `def stop(timer): timer.cancel()` is a method call on an unknown object (the one method
    # `cancel`, a lone candidate), not the module function; `def run(cancel): cancel()` calls
    # the argument, not the imported function
    assert callees(graph, "app.params.stop") == {
        "app.timer.Job.cancel": pytest.approx(CONF_CANDIDATE)
    }
    assert callees(graph, "app.params.run") == {}
    assert refs(graph, "app.timer.cancel") == {"app/params.py": [2, 14, 15]}


def test_parameters_of_a_function_header():
    header = "@deco(x,\n  y)\nasync def f(a, b: Dict[str, int] = {}, *args, c=(1, 2), **kw) -> X:\n"
    assert parameters(header + "    def g(z): pass\n") == ["a", "b", "args", "c", "kw"]
    assert parameters("def f(a, /, b, *, c):\n    pass") == ["a", "b", "c"]
    assert parameters("class A:\n    def f(self, b):\n        pass") == []
