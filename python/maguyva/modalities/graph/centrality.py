"""PageRank and degree at index time, and their scaling into the boost's `c`.

The fusion boost is `min(1 + 0.3 ln(1 + c), 1.5)`; it reaches its cap at
`c = C_MAX = e^(5/3) - 1 ≈ 4.29`. Raw PageRank is heavy-tailed and its magnitude depends on the
size of the graph, so it is not used directly. Instead, each definition's weighted PageRank is
turned into its percentile `q` among the repository's definitions (ties share the lower
percentile, so every never-referenced leaf gets `q = 0`), and

    c = C_MAX * q ** SHAPE

With SHAPE = 3.4 the median definition gets a boost of about 1.10, the 90th percentile about
1.42 and the top 1% the cap: a hub outranks a leaf at equal relevance, and a leaf is never
penalised below 1.0. docs/graph-measurements.md shows the measured distribution on real corpora.
"""

from __future__ import annotations

import math

import numpy as np
import rustworkx as rx

C_MAX = math.exp(5.0 / 3.0) - 1.0
SHAPE = 3.4
ALPHA = 0.85


def boost(c: float | np.ndarray) -> float | np.ndarray:
    """The fusion formula, for documentation and tests (fusion itself lives in Rust)."""
    return np.minimum(1.0 + 0.3 * np.log1p(c), 1.5)


TOL = 1e-9  # PageRank stops when an iteration moves the vector by less than n * TOL (L1)
MAX_ITER = 200


def pagerank(n: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Weighted PageRank over dependency edges (dependent -> dependency): power iteration in
    numpy (α = ALPHA; a node's out-edges share its rank by weight, parallel edges add up;
    dangling nodes spread theirs uniformly), from the uniform vector until an iteration
    moves it by less than n * TOL (L1; rustworkx's criterion, which this replaces, with a
    tolerance 10x tighter). Deterministic: equal inputs give equal bits, so a patched build
    and a from-scratch one agree exactly. Standard library: 0.04 s against rustworkx's 0.36 s."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    weight = np.asarray(weight, dtype=np.float64)
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    out_w = np.bincount(src, weights=weight, minlength=n)
    dangling = np.flatnonzero(out_w == 0)
    share = weight / np.where(out_w[src] > 0, out_w[src], 1.0)
    x = np.full(n, 1.0 / n)
    for _ in range(MAX_ITER):
        last = x
        spread = last[dangling].sum() / n
        x = ALPHA * (np.bincount(dst, weights=last[src] * share, minlength=n) + spread)
        x += (1.0 - ALPHA) / n
        if np.abs(x - last).sum() < n * TOL:
            break
    return x


def percentile_scale(raw: np.ndarray, population: np.ndarray,
                     at: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """Scale `raw` scores to `c` by their percentile among `raw[population]` (of `raw[at]`
    only, when given: the rest stays 0)."""
    c = np.zeros(len(raw), dtype=np.float32)
    pop = np.sort(raw[population])
    if len(pop) == 0:
        return c
    values = raw if at is None else raw[at]
    below = np.searchsorted(pop, values, side="left")
    q = below / max(len(pop) - 1, 1)
    scaled = C_MAX * np.clip(q, 0.0, 1.0) ** SHAPE
    if at is None:
        c[:] = scaled
    else:
        c[at] = scaled
    return c


def strongly_connected(n: int, src: np.ndarray, dst: np.ndarray) -> list[list[int]]:
    """Components of more than one node (mutual recursion, import cycles), each once, in
    order of their smallest node. A node without an edge from and an edge to another node
    still in the graph is in no such component: those are pruned first (a few numpy passes),
    and the components are found among the rest (a few percent of a repository's nodes)."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    other = src != dst
    src, dst = src[other], dst[other]
    alive = np.ones(n, dtype=bool)
    for _ in range(32):  # each pass peels one layer of sources and sinks; the rest is exact
        live = alive[src] & alive[dst]
        src, dst = src[live], dst[live]
        now = alive & (np.bincount(src, minlength=n) > 0) & (np.bincount(dst, minlength=n) > 0)
        if np.array_equal(now, alive):
            break
        alive = now
    nodes = np.flatnonzero(alive)
    if len(nodes) < 2:
        return []
    local = np.full(n, -1, dtype=np.int64)
    local[nodes] = np.arange(len(nodes))
    live = alive[src] & alive[dst]
    graph = rx.PyDiGraph(multigraph=False)
    graph.add_nodes_from(range(len(nodes)))
    graph.extend_from_edge_list(
        list(zip(local[src[live]].tolist(), local[dst[live]].tolist(), strict=True))
    )
    comps = [
        sorted(nodes[list(c)].tolist())
        for c in rx.strongly_connected_components(graph)
        if len(c) > 1
    ]
    comps.sort(key=lambda c: c[0])
    return comps
