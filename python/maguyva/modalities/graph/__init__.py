"""The graph modality: a dependency and call graph of the repository (rustworkx), with
PageRank/degree centrality, callers, callees, references and impact.

Integration points: `MODALITY.build(ctx)`, `MODALITY.open(gen_dir, manifest)` ->
`GraphSearcher` (`search`, `centrality`, `callers`, `callees`, `impact`, `references`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from maguyva.modalities.graph.modality import GraphModality
    from maguyva.modalities.graph.searcher import GraphSearcher

    MODALITY: GraphModality

__all__ = ["MODALITY", "GraphModality", "GraphSearcher"]


def __getattr__(name: str) -> Any:
    """The modality and its searcher are imported on first use (PEP 562): a light submodule
    (`uselines`, `store`) imported by the query side must not pull in rustworkx and numpy
    (a literal question's process imports neither; tests/test_lazy_imports.py)."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from maguyva.modalities.graph.modality import GraphModality
    from maguyva.modalities.graph.searcher import GraphSearcher

    if name == "MODALITY":  # made once: later look-ups find it in the module's globals
        globals()["MODALITY"] = GraphModality()
    return {**globals(), "GraphModality": GraphModality, "GraphSearcher": GraphSearcher}[name]
