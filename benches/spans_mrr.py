"""Reference and impact line MRR of graph answers on a real checkout (issue 22, "spans").

    python benches/spans_mrr.py write ROOT SET.jsonl SYMBOL...   # answers from `rg -n -w`
    python benches/spans_mrr.py score ROOT INDEX_DIR SET.jsonl   # MRR@10, file and line

The sets are in `maguyva eval`'s format, so `maguyva eval SET.jsonl --root ROOT` also scores
them, with the ripgrep and BM25 baselines.

An answer line is a line of another file that names the symbol as a word (`rg -n -w`),
outside import statements (`import ... from`, `use ...;`, which are not uses) and not its
definition. A result is relevant at line level when its span holds an answer line.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

IMPORT_START = re.compile(r"^\s*(import\b|export\s+\{|export\s+\*|(pub(\(\w+\))?\s+)?use\s)")
DEFINES = r"(fn|struct|enum|trait|type|class|interface|const|let|function|mod)\s+{name}\b"


def import_lines(text: str) -> set[int]:
    """Line numbers inside import statements (to the line that ends them: `;` or `from`)."""
    out: set[int] = set()
    inside = False
    for n, line in enumerate(text.splitlines(), 1):
        if not inside and IMPORT_START.match(line):
            inside = True
        if inside:
            out.add(n)
            if line.rstrip().endswith(";") or " from " in line or line.startswith("}"):
                inside = False
    return out


def answers(root: Path, name: str) -> dict[str, list[int]]:
    proc = subprocess.run(["rg", "-n", "-w", "--no-heading", name, "."], cwd=root,
                          capture_output=True, text=True, check=False)  # fmt: skip
    found: dict[str, list[int]] = {}
    definition = re.compile(DEFINES.format(name=re.escape(name)))
    for row in proc.stdout.splitlines():
        path, line, text = row.split(":", 2)
        path = path.removeprefix("./")
        if definition.search(text) or text.lstrip().startswith(("//", "*", "/*")):
            continue
        found.setdefault(path, []).append(int(line))
    out = {}
    for path, lines in found.items():
        skip = import_lines((root / path).read_text(errors="replace"))
        kept = [n for n in lines if n not in skip]
        if kept:
            out[path] = kept
    return out


def write(root: Path, out: Path, names: list[str]) -> None:
    """A query set in `maguyva eval`'s format (each answer line a span), all held out."""
    prefix = out.name.removesuffix(".jsonl")
    with out.open("w") as f:
        for name in names:
            ans = answers(root, name)
            relevant = [{"path": p, "start": n, "end": n} for p, ns in ans.items() for n in ns]
            for intent, question in (("find_references", f"who references {name}"),
                                     ("impact_analysis", f"what is affected if {name} changes")):  # fmt: skip
                qid = f"{prefix}-{intent.split('_')[1][:3]}-{name}"
                f.write(json.dumps({"id": qid, "query": question, "intent": intent,
                                    "relevant": relevant, "split": "heldout",
                                    "source": "rg"}) + "\n")  # fmt: skip


def score(root: Path, index_dir: Path, queries: Path) -> dict[str, dict[str, float]]:
    from maguyva.query.engine import Engine

    engine = Engine.open(root, index_dir)
    sums: dict[str, list[float]] = {}
    for row in map(json.loads, queries.read_text().splitlines()):
        row["answers"] = {}
        for span in row["relevant"]:
            row["answers"].setdefault(span["path"], []).append(span["start"])
        res = engine.search(row["query"], limit=10).results
        files = line = 0.0
        for rank, r in enumerate(res, 1):
            want = row["answers"].get(r.path)
            if want and not files:
                files = 1 / rank
            if want and not line and any(r.start_line <= n <= r.end_line for n in want):
                line = 1 / rank
        s = sums.setdefault(row["intent"], [0, 0, 0])
        s[0] += files
        s[1] += line
        s[2] += 1
    return {k: {"n": v[2], "file_mrr": round(v[0] / v[2], 3), "line_mrr": round(v[1] / v[2], 3)}
            for k, v in sums.items()}  # fmt: skip


if __name__ == "__main__":
    cmd, root = sys.argv[1], Path(sys.argv[2])
    if cmd == "write":
        write(root, Path(sys.argv[3]), sys.argv[4:])
    else:
        print(json.dumps(score(root, Path(sys.argv[3]), Path(sys.argv[4]))))
