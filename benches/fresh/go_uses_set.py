"""A blind reference and impact set for a Go repository: names drawn by a seed, not by hand.

    python benches/fresh/go_uses_set.py ROOT CORPUS OUT.jsonl [PER_KIND] [SEED]

Names: what Universal Ctags defines once in ROOT's .go files (functions, types, package
variables and constants; at least 5 characters, not a method, not in a test file). Uses: each
other line naming it as a whole word, outside comments, block comments and string literals,
where it is not only a member selected on a value (`x.name`) or a key (`name: v`); 2-30 such
lines. A seeded draw gives PER_KIND reference and PER_KIND impact questions, phrasings
rotated. The draw does not look at what Maguyva finds, so a change cannot be tuned to it.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

KINDS = {"func", "struct", "interface", "type", "var", "const", "alias"}
_STRING = re.compile(r'"(?:\\.|[^"\\])*"|`[^`]*`|\'(?:\\.|[^\'\\])*\'')
REF = ("references to {}", "who uses {}", "where is {} used", "callers of {}")
IMPACT = ("impact of changing {}", "what breaks if I rename {}", "what depends on {}")


def definitions(root: Path) -> dict[str, list[tuple[str, int, str]]]:
    out = subprocess.run(
        ["ctags", "-R", "--languages=Go", "--output-format=json", "--fields=+nKZ", "-f", "-", "."],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    names: dict[str, list[tuple[str, int, str]]] = {}
    for line in out.splitlines():
        tag = json.loads(line)
        if tag.get("_type") == "tag":
            names.setdefault(tag["name"], []).append(
                (tag["path"].removeprefix("./"), tag["line"], tag.get("kind", ""))
            )
    return names


def code_lines(path: Path) -> list[str]:
    """Each line with comments and string literals blanked (block comments too)."""
    out, in_block = [], False
    for text in path.read_text("utf-8", "replace").splitlines():
        code = ""
        rest = text
        while rest:
            if in_block:
                if "*/" not in rest:
                    rest = ""
                    break
                rest, in_block = rest.split("*/", 1)[1], False
            else:
                rest = _STRING.sub('""', rest)
                cut = min((i for i in (rest.find("//"), rest.find("/*")) if i >= 0), default=-1)
                if cut < 0:
                    code += rest
                    break
                code += rest[:cut]
                if rest[cut : cut + 2] == "//":
                    break
                rest, in_block = rest[cut + 2 :], True
        out.append(code)
    return out


def uses(root: Path, name: str, skip: set[tuple[str, int]]) -> list[tuple[str, int]]:
    word = re.compile(r"(?<![\w.])" + re.escape(name) + r"\b(?!\s*:[^=])")
    found = []
    for path in sorted(root.rglob("*.go")):
        rel = path.relative_to(root).as_posix()
        for number, code in enumerate(code_lines(path), start=1):
            if (rel, number) not in skip and word.search(code):
                found.append((rel, number))
    return found


def main() -> int:
    root, corpus, out = Path(sys.argv[1]).resolve(), sys.argv[2], Path(sys.argv[3])
    per_kind = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    rng = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 0)
    names = definitions(root)
    pool = []
    for name, defs in sorted(names.items()):
        if len(defs) != 1 or len(name) < 5:
            continue
        path, line, kind = defs[0]
        if kind not in KINDS or path.endswith("_test.go"):
            continue
        found = uses(root, name, {(path, line)})
        if 2 <= len(found) <= 30:
            pool.append((name, found))
    drawn = rng.sample(pool, min(len(pool), 2 * per_kind))
    queries = []
    for i, (name, found) in enumerate(drawn):
        impact = i >= per_kind
        phrasing = (IMPACT if impact else REF)[i % (3 if impact else 4)]
        queries.append({
            "id": f"{corpus}-{'imp' if impact else 'ref'}-{name}", "query": phrasing.format(name),
            "intent": "impact_analysis" if impact else "find_references",
            "relevant": [{"path": p, "start": n, "end": n} for p, n in found],
            "split": "heldout", "source": "rg", "corpus": corpus,
        })  # fmt: skip
    out.write_text("".join(json.dumps(q) + "\n" for q in queries), "utf-8")
    print(f"{len(queries)} queries from a pool of {len(pool)} names -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
