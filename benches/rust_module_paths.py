"""How many Rust module-path call sites (`a::f()`, `crate::x::f()`, `super::f()`,
`self::f()`, `Self::f()`) resolve to a definition of the repository (issue 22).

    .venv/bin/python benches/rust_module_paths.py /tmp/rustls-copy/rustls

Extracts the repository with one process, declares every file in a `GraphBuilder` and
resolves each call whose callee is written with `::`, as the graph build does. Prints the
counts per path head (`crate`, `super`, `self`, `Self`, a module or type name) and overall:
resolved to a definition (an edge to the repository), to a library name (external), or not
at all. A path whose head is a type (`Vec::new`, `Binder::empty`) counts too: it is written
the same way.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from maguyva.modalities.graph.resolve.builder import GraphBuilder
from maguyva.modalities.structural.modality import extract_repository
from maguyva.repo.walk import walk_repository


def head_of(callee: str) -> str:
    head = callee.split("::", 1)[0].split("<", 1)[0].strip()
    return head if head in ("crate", "super", "self", "Self") else "name"


def main(root: Path) -> None:
    files = [f for f in walk_repository(root).files if f.path.endswith(".rs")]
    extraction, _chunks, _ = extract_repository(root, files, {"jobs": 1})
    builder = GraphBuilder(extraction)
    builder.declare()
    counts: Counter[tuple[str, str]] = Counter()
    for fid, body in enumerate(builder.bodies):
        for callee, _line, caller in body.iter_calls() if body else ():
            if "::" not in callee:
                continue
            res = builder.resolve_name(fid, caller, callee)
            if res is None:
                outcome = "unresolved"
            elif not res[1]:
                outcome = "candidates"
            else:
                outcome = "definition" if res[0][0][0][0] != "ext" else "external"
            counts[(head_of(callee), outcome)] += 1
    heads = sorted({h for h, _ in counts})
    outcomes = ("definition", "external", "candidates", "unresolved")
    print(f"{'head':8} " + " ".join(f"{o:>11}" for o in outcomes) + "       all")
    for h in [*heads, "all"]:
        row = [sum(v for (hh, o), v in counts.items() if o == oc and h in (hh, "all"))
               for oc in outcomes]  # fmt: skip
        print(f"{h:8} " + " ".join(f"{n:>11}" for n in row) + f" {sum(row):>9}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
