"""Type stubs of Maguyva's native module (`maguyva._core`). Users import from `maguyva`;
this module is private. Every function here releases the GIL while it computes."""

__version__: str

# -- fusion -------------------------------------------------------------------------------------

DEMOTION_FACTOR: float

def fuse(
    lists: list[tuple[float, list[tuple[str, str]]]],
    centrality: dict[str, float],
    k: float,
    limit: int,
) -> list[tuple[str, str, float, float, bool, list[tuple[int, int, float]], list[str]]]:
    """Weighted Reciprocal Rank Fusion.

    `lists` holds one `(weight, [(key, path), ...])` per modality, best first. An item at 0-based
    `rank` contributes `weight / (k + rank + 1)`; contributions are summed per key, multiplied
    by `centrality_boost(centrality[key] or centrality[path] or 0)` and by `DEMOTION_FACTOR`
    when `is_demoted_path(path)`. Only the best key per path is kept. Returns at most `limit`
    tuples `(key, path, score, boost, demoted, [(list, rank, contribution)], folded_keys)`,
    best first, ties broken by path then key. Raises ValueError if `k` is negative or not finite.
    """

def centrality_boost(c: float) -> float:
    """`min(1 + 0.3 * ln(1 + c), 1.5)`; negative or NaN centrality counts as 0."""

def is_demoted_path(path: str) -> bool:
    """True for vendored, built, archived, minified or generated paths."""
