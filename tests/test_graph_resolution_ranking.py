"""Ranking the candidate methods of an unknown receiver (docs/graph.md, "Name resolution"):
the receiver's own name naming a candidate's class outweighs the calling file merely seeing
another candidate's module, and a method read without a call (a bound method kept for later)
on an unknown receiver is a candidate when the receiver's name names its class. Callers known by construction, asserted exactly."""

from __future__ import annotations

import pytest
from graph_support import build_graph

from maguyva.graph import GraphSearcher
from maguyva.graph.schema import CONF_CANDIDATE, CONF_CANDIDATE_WEAK, CONF_NAMED

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
