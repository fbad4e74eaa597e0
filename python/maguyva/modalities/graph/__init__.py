"""The graph modality: a dependency and call graph of the repository (rustworkx), with
PageRank/degree centrality, callers, callees, references and impact.

Integration points: `MODALITY.build(ctx)`, `MODALITY.open(gen_dir, manifest)` ->
`GraphSearcher` (`search`, `centrality`, `callers`, `callees`, `impact`, `references`).
"""

from __future__ import annotations

from maguyva.modalities.graph.modality import GraphModality
from maguyva.modalities.graph.searcher import GraphSearcher

MODALITY = GraphModality()

__all__ = ["MODALITY", "GraphModality", "GraphSearcher"]
