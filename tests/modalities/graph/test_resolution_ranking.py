"""Ranking the candidate methods of an unknown receiver (docs/graph.md, "Name resolution"):
the receiver's own name naming a candidate's class outweighs the calling file merely seeing
another candidate's module, and a method read without a call (a bound method kept for later)
on an unknown receiver is a candidate when the receiver's name names its class; the other
methods called on the same receiver rule out classes that lack them (duck typing, through the
subclasses that mix a method in). Callers known by construction, asserted exactly."""

from __future__ import annotations

import pytest
from graph_support import build_graph

from maguyva.modalities.graph import GraphSearcher
from maguyva.modalities.graph.schema import CONF_CANDIDATE, CONF_CANDIDATE_WEAK, CONF_NAMED

REPO = {
    "aio/__init__.py": "",
    "aio/transports.py": """
        class SubprocessTransport:
            def kill(self):
                pass
        """,
    "aio/procs.py": """
        class Popen:
            def kill(self):
                pass
        """,
    "aio/protocol.py": """
        from aio import procs


        class SubprocessProtocol:
            def connection_made(self, transport):
                self._transport = transport

            def stop(self):
                self._transport.kill()

            def stop_popen(self, popen):
                popen.kill()

            def stop_thing(self, thing):
                thing.kill()
        """,
    "aio/result.py": """
        class XView:
            def xview(self):
                pass


        class Text(XView):
            pass


        class Canvas:
            def xview(self):
                pass
        """,
    "aio/case.py": """
        def run(result, thing, text):
            add = result.xview
            other = thing.xview
            return dict(command=text.xview)
        """,
    "duck/__init__.py": "",
    "duck/events.py": """
        import threading


        class Handle:
            def cancel(self):
                pass

            def cancelled(self):
                pass


        class Task:
            def cancel(self):
                pass

            def done(self):
                pass


        class Timer(threading.Timer):
            def cancel(self):
                pass
        """,
    "duck/widgets.py": """
        class Misc:
            def cget(self, key):
                pass


        class Pack:
            def pack(self):
                pass


        class Widget(Misc, Pack):
            pass


        class Font:
            def cget(self, key):
                pass

            def measure(self, text):
                pass


        class Path:
            def stat(self):
                pass

            def chmod(self, mode):
                pass


        class Stat:
            def chmod(self, mode):
                pass
        """,
    "duck/fsys.py": """
        def stat(path):
            pass
        """,
    "duck/net.py": """
        class Connection:
            def putrequest(self, url):
                pass

            def getresponse(self):
                pass


        class Pool:
            def getresponse(self):
                pass
        """,
    "duck/use.py": """
        from duck import events, fsys, widgets


        def stop(t):
            if not t.done():
                t.cancel()


        def stop_any(t):
            t.cancel()


        def padding(w):
            w.pack()
            return w.cget("padx")


        def width(f):
            return f.measure("x") + f.cget("size")


        def mode(p):
            fsys.stat(p)
            fsys.chmod(p, 1)


        def fetch(h):
            h.putrequest("/")
            return h.getresponse()
        """,
}


@pytest.fixture(scope="module")
def graph(tmp_path_factory) -> GraphSearcher:
    out = build_graph(tmp_path_factory.mktemp("ranking"), REPO, tmp_path_factory.mktemp("gen"))
    return GraphSearcher.open(out, {"config": {"graph_min_confidence": 0.0}})


def callees(g: GraphSearcher, name: str) -> dict[str, float]:
    return {h.symbol or "": h.score or 0.0 for h in g.callees(name)}


def test_a_named_candidate_outranks_a_merely_visible_one(graph):
    # `_transport` names SubprocessTransport (not imported here); `procs` is imported, so
    # Popen.kill is visible: the name wins, the visible-only candidate drops to the weak tier
    weak = pytest.approx(CONF_CANDIDATE_WEAK / 2**0.5)
    assert callees(graph, "aio.protocol.SubprocessProtocol.stop") == {
        "aio.transports.SubprocessTransport.kill": pytest.approx(CONF_CANDIDATE),
        "aio.procs.Popen.kill": weak,
    }
    # named and visible: CONF_NAMED; no name: visibility alone decides
    assert callees(graph, "aio.protocol.SubprocessProtocol.stop_popen") == {
        "aio.procs.Popen.kill": pytest.approx(CONF_NAMED),
        "aio.transports.SubprocessTransport.kill": weak,
    }
    assert callees(graph, "aio.protocol.SubprocessProtocol.stop_thing") == {
        "aio.procs.Popen.kill": pytest.approx(CONF_CANDIDATE),
        "aio.transports.SubprocessTransport.kill": weak,
    }


def refs(g: GraphSearcher, symbol: str) -> dict[str, list[int]]:
    return {h.path: h.lines for h in g.references(symbol)}


def test_a_method_read_on_a_receiver_naming_its_class_is_a_reference(graph):
    # `text.xview` (Text inherits XView.xview) is a reference; `thing.xview` names nothing
    # and `xview` is no property: no candidate; `result` names no class with an `xview`
    assert refs(graph, "XView.xview") == {"aio/case.py": [4]}
    assert refs(graph, "Canvas.xview") == {}


def test_other_methods_called_on_the_receiver_rule_out_classes_without_them(graph):
    # `t.done(); t.cancel()`: Handle has no `done`; Timer's base is outside the repository, so
    # it may have one. Three visible candidates, two fit: they share the evidence
    fits, other = CONF_CANDIDATE / 2**0.5, CONF_CANDIDATE_WEAK / 3**0.5
    assert callees(graph, "duck.use.stop") == {
        "duck.events.Task.done": pytest.approx(CONF_CANDIDATE),
        "duck.events.Task.cancel": pytest.approx(fits),
        "duck.events.Timer.cancel": pytest.approx(fits),
        "duck.events.Handle.cancel": pytest.approx(other),
    }
    # no other call on `t`: all three share the evidence
    assert (
        sorted(callees(graph, "duck.use.stop_any").values())
        == [pytest.approx(CONF_CANDIDATE / 3**0.5)] * 3
    )


def test_duck_typing_sees_the_classes_that_mix_a_method_in(graph):
    # Misc has no `pack`, but Widget(Misc, Pack) inherits Misc.cget and has it: Misc.cget
    # fits, Font does not; `f.measure(); f.cget()` fits Font only
    weak = pytest.approx(CONF_CANDIDATE_WEAK / 2**0.5)
    got = callees(graph, "duck.use.padding")
    assert (got["duck.widgets.Misc.cget"], got["duck.widgets.Font.cget"]) == (
        pytest.approx(CONF_CANDIDATE),
        weak,
    )
    got = callees(graph, "duck.use.width")
    assert (got["duck.widgets.Font.cget"], got["duck.widgets.Misc.cget"]) == (
        pytest.approx(CONF_CANDIDATE),
        weak,
    )


def test_a_module_receiver_is_no_duck(graph):
    # `fsys.stat(p); fsys.chmod(p)`: `fsys` is a module without `chmod`, not an object whose
    # other methods say anything; Path (which has `stat`) is not preferred to Stat
    weak = pytest.approx(CONF_CANDIDATE / 2**0.5)
    assert {k: v for k, v in callees(graph, "duck.use.mode").items() if "chmod" in k} == {
        "duck.widgets.Path.chmod": weak,
        "duck.widgets.Stat.chmod": weak,
    }


def test_the_one_class_that_fits_is_a_lone_candidate(graph):
    # neither class is visible from use.py; only Connection has `putrequest` too: like a lone
    # candidate it keeps CONF_CANDIDATE_WEAK (shown at the default threshold), the other not
    assert {k: v for k, v in callees(graph, "duck.use.fetch").items() if "getresponse" in k} == {
        "duck.net.Connection.getresponse": pytest.approx(CONF_CANDIDATE_WEAK),
        "duck.net.Pool.getresponse": pytest.approx(CONF_CANDIDATE_WEAK / 2**0.5),
    }
