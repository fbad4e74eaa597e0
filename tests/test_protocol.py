"""Each modality's searcher offers the optional capabilities the engine and the API rely on,
declared once in `modalities/protocol.py` (a renamed or removed method fails here, not as a
silently missing note or a `ModalityUnavailable` at a user's question)."""

from __future__ import annotations

import pytest

from maguyva.modalities import protocol
from maguyva.modalities.graph.searcher import GraphSearcher
from maguyva.modalities.semantic.search import SemanticSearcher
from maguyva.modalities.structural.symbol_search import StructuralSearcher
from maguyva.modalities.text.modality import TextSearcher

OFFERED = {
    TextSearcher: {protocol.Greps},
    StructuralSearcher: {protocol.Warms},
    GraphSearcher: {protocol.CallGraph, protocol.ReportsBehind},
    SemanticSearcher: {protocol.Warms, protocol.ReportsCoverage, protocol.KeysByChunk},
}
CAPABILITIES = {protocol.Greps, protocol.Warms, protocol.CallGraph, protocol.ReportsBehind,
                protocol.ReportsCoverage, protocol.KeysByChunk}  # fmt: skip


@pytest.mark.parametrize("searcher", list(OFFERED), ids=lambda c: c.__name__)
def test_searcher_offers_exactly_its_capabilities(searcher: type) -> None:
    offered = {cap for cap in CAPABILITIES if isinstance(searcher, cap)}
    assert offered == OFFERED[searcher]
    assert callable(searcher.search)  # the one required method of `protocol.Searcher`
