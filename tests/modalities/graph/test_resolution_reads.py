"""Resolution rules added for the CPython standard library comparison (docs/graph-measurements.md):
attribute reads anywhere in an expression, attributes every definition has (`f.__doc__`),
methods on the instance a constructor call returns (`Foo().m()`), a property redefined with its
setter, module-level instances (`_inst = Random()`), receiver names that name a subclass
inheriting the method, Python class scopes (not visible in methods), and attribute writes
reading their object (`f.__doc__ = ...`). Callers known by
construction, asserted exactly (file -> lines, callee -> confidence)."""

from __future__ import annotations

import textwrap

import pytest
from graph_support import build_graph

from maguyva.extract import grammars
from maguyva.extract.extractor import extract
from maguyva.modalities.graph import GraphSearcher
from maguyva.modalities.graph.schema import (
    CONF_CANDIDATE,
    CONF_CANDIDATE_WEAK,
    CONF_NAMED,
    CONF_QUALIFIED,
    CONF_TYPED,
    REFERENCE_FACTOR,
)

REPO = {
    "pkg/proc.py": """
        class Process:
            @property
            def authkey(self):
                return b"k"

            @property
            def daemon(self):
                return False

            @daemon.setter
            def daemon(self, value):
                pass

            def start(self):
                pass


        def current_process():
            return Process()
        """,
    "pkg/base.py": """
        class Executor:
            def shutdown(self, wait=True):
                pass

            def submit(self, fn):
                pass
        """,
    "pkg/thread.py": """
        from pkg import base


        class ThreadExecutor(base.Executor):
            def shutdown(self, wait=True):
                pass

            shutdown.__doc__ = base.Executor.shutdown.__doc__
        """,
    "pkg/reads.py": """
        from pkg.proc import Process


        def conditions(p: Process):
            if p.daemon:
                return p.authkey
            return None


        def keyword_and_compare(p: Process):
            send(key=p.authkey)
            return p.daemon == 0


        def writes(p: Process):
            p.daemon = True
            p.authkey, x = b"", 1


        def chain_prefix(p: Process):
            p.start.cache.clear()


        def send(key):
            pass
        """,
    "pkg/spawn.py": """
        from pkg import proc


        def on_a_call_result():
            key = proc.current_process().authkey
            return key


        def untyped(p):
            return p.daemon
        """,
    "pkg/rand.py": """
        class Random:
            def choices(self, seq):
                return seq


        _inst = Random()
        choices = _inst.choices


        def pick():
            return _inst.choices([1])
        """,
    "pkg/user.py": """
        from pkg import rand


        def via_alias():
            return rand.choices([1])


        def via_instance():
            return rand._inst.choices([2])
        """,
    "pkg/widgets.py": """
        class Misc:
            def configure(self, **kw):
                pass


        class Text(Misc):
            pass


        class Canvas(Misc):
            def configure(self, **kw):
                pass


        class Style:
            def configure(self, **kw):
                pass
        """,
    "pkg/ui.py": """
        from pkg import widgets


        def setup_text(text):
            text.configure(wrap=1)


        def setup_canvas(canvas):
            canvas.configure(width=1)
        """,
    "pkg/netlib.py": """
        def create_connection(addr):
            return addr
        """,
    "pkg/imap.py": """
        from pkg import netlib


        class IMAP:
            def netlib(self):
                return 1

            def connect(self):
                return netlib.create_connection("x")

            opened = netlib()


        def tagged():
            pass


        tagged.anything = "x"
        """,
    "pkg/events.py": """
        class Handle:
            def cancel(self):
                pass


        class Task:
            def cancel(self):
                pass
        """,
    "pkg/loop.py": """
        from pkg import events


        def stop_task(main_task):
            main_task.cancel()


        def stop_timer(timeout_handle):
            timeout_handle.cancel()
        """,
    "pkg/construct.py": """
        import pkg.base
        from pkg.base import Executor
        from pkg.proc import Process


        def local_class():
            Process().start()


        def qualified_class():
            pkg.base.Executor().submit(len)


        def imported_class():
            Executor(1, 2).shutdown()


        def not_a_class():
            type(len).start()
        """,
}


@pytest.fixture(scope="module")
def graph(tmp_path_factory) -> GraphSearcher:
    repo = {**REPO, "pkg/__init__.py": ""}
    out = build_graph(tmp_path_factory.mktemp("reads"), repo, tmp_path_factory.mktemp("gen"))
    return GraphSearcher.open(out, {"config": {"graph_min_confidence": 0.0}})


def refs(g: GraphSearcher, symbol: str) -> dict[str, list[int]]:
    return {h.path: h.lines for h in g.references(symbol)}


def callees(g: GraphSearcher, name: str) -> dict[str, float]:
    return {h.symbol or "": h.score or 0.0 for h in g.callees(name)}


def test_extraction_records_outermost_attribute_reads_only():
    src = textwrap.dedent("""
        def f(p, feat, models):
            if p.daemon:
                pass
            x = process.current_process().authkey
            self.x = 1
            a.b, c.d = 1, 2
            y = feat.fid == 0
            foo(k=models.SET_NULL)
            self.items.append(3)
            return self.closed
        """).encode()
    ex, _ = extract(grammars.load("python"), "x.py", src, float("inf"))
    assert [(r.name, r.line) for r in ex.references] == [
        ("p.daemon", 3),
        ("process.current_process().authkey", 5),
        ("feat.fid", 8),
        ("models.SET_NULL", 9),
        ("self.closed", 11),
    ]


def test_property_reads_in_conditions_returns_keywords_and_comparisons(graph):
    # typed receivers (annotations): every read, no write (`p.daemon = True`, tuple target)
    assert refs(graph, "Process.daemon") == {"pkg/reads.py": [5, 12], "pkg/spawn.py": [10]}
    got = refs(graph, "Process.authkey")
    assert got == {"pkg/reads.py": [6, 11], "pkg/spawn.py": [5]}


def test_property_read_on_a_call_result_is_a_candidate(graph):
    # `proc.current_process().authkey`: the receiver's type is unknown, the only property
    # named `authkey` is a candidate, with evidence (reads.py imports its module)
    hits = {h.path: (h.lines, h.extra["confidence"]) for h in graph.references("Process.authkey")}
    assert hits["pkg/spawn.py"] == ([5], pytest.approx(CONF_CANDIDATE * REFERENCE_FACTOR, abs=1e-3))


def test_a_property_with_a_setter_is_still_a_property(graph):
    # the setter redefines `daemon`: one candidate (not two), read on an unknown receiver
    hits = {h.path: (h.lines, h.extra["confidence"]) for h in graph.references("Process.daemon")}
    assert hits["pkg/spawn.py"] == (
        [10],
        pytest.approx(CONF_CANDIDATE * REFERENCE_FACTOR, abs=1e-3),
    )


def test_a_chain_prefix_is_not_a_read_of_its_own(graph):
    # `p.start.cache.clear()` is neither a call of `start` nor a property read
    assert "pkg.proc.Process.start" not in callees(graph, "pkg.reads.chain_prefix")


def test_definition_attribute_is_a_use_of_the_definition(graph):
    got = refs(graph, "pkg.base.Executor.shutdown")
    assert got == {"pkg/thread.py": [8], "pkg/construct.py": [15]}
    hits = {h.path: h.extra["confidence"] for h in graph.references("pkg.base.Executor.shutdown")}
    assert hits["pkg/thread.py"] == pytest.approx(CONF_QUALIFIED * REFERENCE_FACTOR, abs=1e-3)


def test_method_on_a_constructed_instance_is_typed(graph):
    assert callees(graph, "pkg.construct.local_class") == {
        "pkg.proc.Process": pytest.approx(0.95),
        "pkg.proc.Process.start": pytest.approx(CONF_TYPED),
    }
    assert callees(graph, "pkg.construct.qualified_class")[
        "pkg.base.Executor.submit"
    ] == pytest.approx(CONF_TYPED)
    assert callees(graph, "pkg.construct.imported_class")[
        "pkg.base.Executor.shutdown"
    ] == pytest.approx(CONF_TYPED)
    # `type(x)` returns no instance of `type`: the method stays an unknown-receiver candidate
    got = callees(graph, "pkg.construct.not_a_class")
    assert got.get("pkg.proc.Process.start", 0.0) < CONF_TYPED


def test_module_level_instance_types_its_variable(graph):
    # `_inst = Random()`: `_inst.choices` is Random.choices (typed), and so is the alias
    # `choices = _inst.choices` that other modules call
    assert refs(graph, "Random.choices") == {"pkg/rand.py": [7, 11], "pkg/user.py": [5, 9]}
    assert callees(graph, "pkg.rand.pick") == {"pkg.rand.Random.choices": pytest.approx(CONF_TYPED)}
    assert callees(graph, "pkg.user.via_instance")["pkg.rand.Random.choices"] == pytest.approx(
        CONF_TYPED
    )


def test_receiver_name_names_a_subclass_that_inherits_the_method(graph):
    # `text` names Text, which inherits Misc.configure: named + visible; the other two
    # candidates are only visible (same import), so they drop to the weak tier
    weak = pytest.approx(CONF_CANDIDATE_WEAK / 3**0.5)
    assert callees(graph, "pkg.ui.setup_text") == {
        "pkg.widgets.Misc.configure": pytest.approx(CONF_NAMED),
        "pkg.widgets.Canvas.configure": weak,
        "pkg.widgets.Style.configure": weak,
    }
    # Canvas overrides configure: `canvas` names Canvas.configure, not Misc.configure
    assert callees(graph, "pkg.ui.setup_canvas") == {
        "pkg.widgets.Canvas.configure": pytest.approx(CONF_NAMED),
        "pkg.widgets.Misc.configure": weak,
        "pkg.widgets.Style.configure": weak,
    }


def test_class_body_names_are_not_visible_in_its_methods(graph):
    # `def netlib(self)` in the class does not hide the module `netlib` inside `connect`;
    # the class body itself (`opened = netlib()`) does see the method
    assert callees(graph, "pkg.imap.IMAP.connect") == {
        "pkg.netlib.create_connection": pytest.approx(CONF_QUALIFIED)
    }
    assert refs(graph, "pkg.netlib.create_connection") == {"pkg/imap.py": [9]}
    assert callees(graph, "pkg.imap.IMAP") == {"pkg.imap.IMAP.netlib": pytest.approx(1.0)}


def test_setting_an_attribute_reads_its_object(graph):
    assert refs(graph, "pkg.imap.tagged") == {"pkg/imap.py": [18]}


def test_receiver_name_ending_with_a_class_name_names_it(graph):
    weak = pytest.approx(CONF_CANDIDATE_WEAK / 2**0.5)
    assert callees(graph, "pkg.loop.stop_task") == {
        "pkg.events.Task.cancel": pytest.approx(CONF_NAMED),
        "pkg.events.Handle.cancel": weak,
    }
    assert callees(graph, "pkg.loop.stop_timer") == {
        "pkg.events.Handle.cancel": pytest.approx(CONF_NAMED),
        "pkg.events.Task.cancel": weak,
    }
