"""Ranking the candidate methods of an unknown receiver (docs/graph.md, "Name resolution"):
the receiver's own name naming a candidate's class outweighs the calling file merely seeing
another candidate's module. Callers known by construction, asserted exactly."""

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
