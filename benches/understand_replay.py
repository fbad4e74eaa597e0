"""understand_code per question with the retrievers' lists computed once, variants replayed.

    .venv/bin/python benches/understand_replay.py ROOT IDX SET.jsonl [SET.jsonl ...] \
        [--variants base,pathc+t3s1,...] [--all] [--lists] [--fresh structural]

Every understand_code question of the sets is asked once through the real `Engine.search`;
each modality's list is cached (by modality and question) and every later ask of a variant
gets a copy of it, so a variant costs the fusion and presentation only (`--fresh` names the
modalities a variant changes, which are asked again). Printed per variant (`a+b`: both):
file MRR of the tune half, the held-out half and the blind questions (`-blind-` in the id),
then the first right file's rank per question; tune questions only, unless `--all`. With
`--lists`, each question's right-file rank in every retriever's list (by file) and its fused
rank. The variants are named in `VARIANTS` (docs/eval-rust-ts-2.md, branch undpy5, says
what each measured).
"""

from __future__ import annotations

import argparse
import copy
import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from maguyva.query import carry, routing
from maguyva.query import engine as engine_module
from maguyva.query.engine import Engine


def _questions(paths: list[Path]) -> list[dict[str, Any]]:
    out = []
    for path in paths:
        for line in path.read_text().splitlines():
            if line.strip() and (q := json.loads(line)).get("intent") == "understand_code":
                out.append(q)
    return out


def _cached_run(engine: Engine, fresh: set[str]) -> None:
    """Memoise `engine._run` by (modality, question); modalities in `fresh` always run."""
    cache: dict[tuple[str, str, str], Any] = {}
    real = engine._run

    def run(modalities, request, depth, timings, unavailable):  # type: ignore[no-untyped-def]
        out = {}
        missing = []
        for name in modalities:
            key = (name, request.text, request.intent)
            if name not in fresh and key in cache:
                out[name] = copy.deepcopy(cache[key])
            else:
                missing.append(name)
        if missing:
            got = real(missing, request, depth, timings, unavailable)
            for name, hits in got.items():
                cache[(name, request.text, request.intent)] = copy.deepcopy(hits)
                out[name] = hits
        return out

    engine._run = run  # type: ignore[method-assign]


@contextmanager
def _patched(obj: Any, name: str, value: Any) -> Iterator[None]:
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


def _weights(**w: float) -> Callable[[], Any]:
    def variant() -> Any:
        profile = {**routing.WEIGHTS["understand_code"], **w}
        return _patched(routing, "WEIGHTS", {**routing.WEIGHTS, "understand_code": profile})

    return variant


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _file_centrality(pick: str) -> Callable[[], Any]:
    """Every chunk of a file boosted alike: by the file's own centrality (`path`), the chunk
    the first list to find the file ranks best (`first`), the least central listed chunk
    (`min`), or no boost at all (`none`)."""

    def variant() -> Any:
        real = Engine._centrality

        def centrality(self: Engine, lists: dict[str, list[Any]]) -> dict[str, float]:
            values = real(self, lists)
            if pick == "none":
                return {}
            paths = {h.path for hits in lists.values() for h in hits}
            out = {p: values[p] for p in paths if p in values}
            if pick == "path":
                return out
            chosen: dict[str, float] = {}
            for name in ("semantic", "text", "structural"):
                for h in lists.get(name, []):
                    c = values.get(h.key or "", values.get(h.path, 0.0))
                    if pick == "first":
                        chosen.setdefault(h.path, c)
                    else:
                        chosen[h.path] = min(chosen.get(h.path, c), c)
            for hits in lists.values():
                for h in hits:
                    if h.key and h.path in chosen:
                        out[h.key] = chosen[h.path]
            return out

        return _patched(Engine, "_centrality", centrality)

    return variant


VARIANTS: dict[str, Callable[[], Any]] = {
    "lines50": lambda: _patched(carry, "MAX_IMPL_LINES", 50),
    "pathc": _file_centrality("path"),
    "firstc": _file_centrality("first"),
    "minc": _file_centrality("min"),
    "noboost": _file_centrality("none"),
    "base": _nothing,
    "t3s1": _weights(text=0.3, structural=0.1),
    "t3s2": _weights(text=0.3, structural=0.2),
    "t25s15": _weights(text=0.25, structural=0.15),
    "t35s1": _weights(text=0.35, structural=0.1),
    "t4s1": _weights(text=0.4, structural=0.1),
    "t3s15": _weights(text=0.3, structural=0.15),
    "t25s1": _weights(text=0.25, structural=0.1),
    "t2s1": _weights(text=0.2, structural=0.1),
    "t3s05": _weights(text=0.3, structural=0.05),
}


def _rank(paths: list[str], wanted: set[str]) -> int | None:
    paths = list(dict.fromkeys(paths))
    return next((i + 1 for i, p in enumerate(paths) if p in wanted), None)


def _mrr(ranks: dict[str, int | None], ids: list[str]) -> float:
    return sum(1 / r for i in ids if (r := ranks[i])) / len(ids) if ids else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("index_dir", type=Path)
    parser.add_argument("sets", type=Path, nargs="+")
    parser.add_argument("--variants", default="base")
    parser.add_argument("--fresh", default="", help="modalities never cached (comma list)")
    parser.add_argument("--lists", action="store_true")
    parser.add_argument("--all", action="store_true", help="held-out and blind questions too")
    args = parser.parse_args()
    engine = Engine.open(args.root, args.index_dir)
    _cached_run(engine, set(filter(None, args.fresh.split(","))))
    questions = [q for q in _questions(args.sets) if args.all or q.get("split") == "tune"]
    groups = {
        "tune": [q["id"] for q in questions if q.get("split") == "tune"],
        "held-out": [
            q["id"] for q in questions if q.get("split") != "tune" and "-blind-" not in q["id"]
        ],
        "blind": [q["id"] for q in questions if "-blind-" in q["id"]],
    }
    for name in args.variants.split(","):
        ranks: dict[str, int | None] = {}
        with ExitStack() as stack:  # "a+b": both variants
            for part in name.split("+"):
                stack.enter_context(VARIANTS[part]())
            for q in questions:
                wanted = {span["path"] for span in q["relevant"]}
                response = engine.search(q["query"])
                ranks[q["id"]] = _rank([r.path for r in response.results], wanted)
                if args.lists:
                    _print_lists(engine, q, wanted, ranks[q["id"]])
        summary = "  ".join(
            f"{g} ({len(ids)}) {_mrr(ranks, ids):.3f}" for g, ids in groups.items() if ids
        )
        print(f"{name}: {summary}")
        print("   ", " ".join(f"{i.split('-', 1)[-1][-9:]}:{r}" for i, r in ranks.items()))


def _print_lists(engine: Engine, q: dict[str, Any], wanted: set[str], fused: int | None) -> None:
    """The right file's rank in each retriever's cached list (by file)."""
    ranks = []
    for m in ("semantic", "text", "structural"):
        cached = engine._run([m], _request(engine, q["query"]), 50, {}, {})  # type: ignore[arg-type]
        hits = cached.get(m, [])
        ranks.append(f"{m[:4]} {_rank([h.path for h in hits], wanted)}")
    print(f"  {q['id']}: fused {fused}; " + ", ".join(ranks))


def _request(engine: Engine, text: str) -> Any:
    verdict, _ = engine._understand(text, None, None, False, {})
    _, request = engine._plan(text, verdict, {}, "default", None, None, None)
    return request


if __name__ == "__main__":
    engine_module.DEFAULT_LIMIT = 10
    main()
