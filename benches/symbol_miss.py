"""CPU time of a structural look-up by a name that is nowhere, beside names that are there,
on a real symbol index; and a digest of every answer, so two builds can be compared for
"no result change".

    python benches/symbol_miss.py INDEX_OR_STRUCTURAL_DIR [--rounds 5] [--reps 200]

Run it with each build's interpreter on the same index, alternated in the same minutes:

    /work/main/.venv/bin/python benches/symbol_miss.py /tmp/house/structural
    .venv/bin/python benches/symbol_miss.py /tmp/house/structural

Names: 40 present ones (every n-th distinct name of the index), 40 missing ones made from them
(a suffix, a prefix, two joined: checked to be in no segment), 10 prefixes of present names.
Each is asked as `find_symbol(name)` and as a definition question (`search`); the figure is
the median over rounds of the CPU time per call (`time.process_time`), after the look-ups
that make the branch build its name tables (`names.RENT`; counted and timed apart)."""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from pathlib import Path

from maguyva.modalities.protocol import RetrieverQuery
from maguyva.modalities.structural import symbol_search


def _structural_dir(where: Path) -> Path:
    if (where / "meta.json").exists():
        return where
    manifest = json.loads((where / "manifest.json").read_bytes().split(b"\n", 1)[1])
    return where / manifest["dir"] / "structural"


def _names(searcher: symbol_search.StructuralSearcher) -> tuple[list[str], list[str], list[str]]:
    every = sorted({n for seg in searcher._segs for n in seg.exact if n.isidentifier()})
    step = max(1, len(every) // 40)
    present = every[::step][:40]
    lowered = {n.lower() for n in every}
    missing: list[str] = []
    for i, name in enumerate(present):
        for candidate in (f"{name}_zqx", f"zqx_{name}", f"{name}{present[i - 1].title()}Zq"):
            low = candidate.lower()
            if not any(k.startswith(low) for k in lowered):
                missing.append(candidate)
                break
    prefixes = [n[: max(3, len(n) // 2)] for n in present[::4]]
    return present, missing, prefixes


def _per_call(fn, names: list[str], reps: int) -> float:
    """CPU seconds per call of `fn` over `names`, repeated `reps` times."""
    start = time.process_time()
    for _ in range(reps):
        for name in names:
            fn(name)
    return (time.process_time() - start) / (reps * len(names))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("where", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=100)
    args = parser.parse_args(argv)
    searcher = symbol_search.load(_structural_dir(args.where))
    for seg in searcher._segs:  # what `warm` does on main (the branch's also builds AllNames)
        seg.terms()
    present, missing, prefixes = _names(searcher)
    start = time.process_time()
    looked = 0  # look-ups until the branch has built its name tables (main never does)
    while getattr(searcher, "_all", True) is None and looked < 10_000:
        searcher.find_symbol(missing[looked % len(missing)])
        looked += 1
    first = time.process_time() - start

    def ask(name: str) -> list:
        return searcher.search(RetrieverQuery(text=name, intent="find_definition", target=name), 50)

    digest = hashlib.sha256()
    for name in present + missing + prefixes:
        found = [(h.path, h.start_line, h.symbol, h.score) for h in searcher.find_symbol(name)]
        asked = [(h.path, h.start_line, h.symbol, h.score) for h in ask(name)]
        digest.update(json.dumps([name, found, asked]).encode())
    assert all(not searcher.find_symbol(n) for n in missing), "a missing name was found"
    rows = {}
    for label, names in (("missing", missing), ("present", present), ("prefix", prefixes)):
        for how, fn in (("find_symbol", searcher.find_symbol), ("search", ask)):
            runs = [_per_call(fn, names, args.reps) for _ in range(args.rounds)]
            rows[f"{label} {how}"] = statistics.median(runs)
    print(f"python {sys.executable}; symbols {len(searcher)}, segments {len(searcher._segs)}; "
          f"name tables built after {looked} look-ups ({1e3 * first:.1f} ms CPU in all)")  # fmt: skip
    for key, value in rows.items():
        print(f"{key:24s} {1e6 * value:8.1f} us CPU per call")
    print(f"answers digest {digest.hexdigest()[:16]} ({len(present)} present, "
          f"{len(missing)} missing, {len(prefixes)} prefixes)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
