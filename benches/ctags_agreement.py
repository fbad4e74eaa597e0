"""Agreement with Universal Ctags: the share of ctags' function/class/method definitions that
Maguyva finds at the same file, line and name, per language.

    .venv/bin/python benches/ctags_agreement.py DIR [DIR ...] [--misses N]

Ctags is the oracle (`ctags -R --output-format=json`); only definition kinds are compared
(prototypes, variables, fields and macros are left out). Misses are listed per language so
every systematic one can be explained in docs/structural.md. Names ctags invents for unnamed
code (`AnonymousFunction…`, `AnonymousClass…`, Kotlin's `<lambda>`) are counted apart, in
"unnamed": Maguyva indexes no unnamed definitions, by design.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from maguyva.extract import extract_files
from maguyva.model import SourceFile
from maguyva.repo.languages import detect_language

# ctags language -> (our language names, ctags kinds counted as function/class/method)
KINDS = {
    "Python": {"class", "function", "member"},
    "C": {"function"},
    "C++": {"function", "class"},
    "Go": {"func", "struct", "interface"},
    "Rust": {"function", "method", "struct", "interface", "enum"},
    "Java": {"class", "method", "interface", "enum"},
    "JavaScript": {"function", "class", "method"},
    "TypeScript": {"function", "class", "method", "interface"},
    "C#": {"class", "method", "interface", "struct"},
    "Ruby": {"class", "method", "module", "singletonMethod"},
    "PHP": {"class", "function", "interface", "trait"},
    "Kotlin": {"class", "method", "interface", "object"},
    "Scala": {"class", "method", "trait", "object"},
    "Sh": {"function"},
}
UNNAMED = ("AnonymousFunction", "AnonymousClass", "AnonymousObject", "<lambda>")


def ctags_tags(root: Path) -> list[dict]:
    out = subprocess.run(
        ["ctags", "-R", "--output-format=json", "--fields=+nKl", "-f", "-", "."],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    tags = []
    for line in out.splitlines():
        try:
            tag = json.loads(line)
        except ValueError:
            continue
        if tag.get("_type") == "tag" and tag.get("kind") in KINDS.get(tag.get("language"), ()):
            tags.append(tag)
    return tags


# Universal Ctags 5.9 has no Swift or Scala parser: for those, a line oracle of declaration
# keywords (after attributes and modifiers) stands in, reported as "Swift*" / "Scala*". It
# knows nothing of strings or nesting, so it is a weaker oracle than ctags.
_SWIFT_MODS = (r"(?:@\w+(?:\([^)]*\))?|public|private|fileprivate|internal|open|final|static|class"
               r"|override|mutating|nonmutating|convenience|required|indirect|dynamic|lazy"
               r"|nonisolated|optional)(?:\(set\))?")  # fmt: skip
_SCALA_MODS = (r"(?:@\w+(?:\([^)]*\))?|private|protected|final|sealed|abstract|implicit|override"
               r"|lazy|case|inline|transparent|open|infix|opaque)(?:\[[\w.]+\])?")  # fmt: skip
KEYWORD_ORACLES = {
    ".swift": ("Swift*", re.compile(
        rf"^\s*(?:{_SWIFT_MODS}\s+)*(?:(func|class|struct|enum|protocol|actor|typealias)"
        rf"\s+([A-Za-z_]\w*)|(init)[?!]?\s*[(<])")),
    ".scala": ("Scala*", re.compile(
        rf"^\s*(?:{_SCALA_MODS}\s+)*(def|class|object|trait|enum|type)\s+([A-Za-z_]\w*)")),
}  # fmt: skip


def keyword_tags(root: Path) -> list[dict]:
    tags = []
    for path in sorted(root.rglob("*")):
        oracle = KEYWORD_ORACLES.get(path.suffix)
        if oracle is None or not path.is_file():
            continue
        language, pattern = oracle
        rel = path.relative_to(root).as_posix()
        in_comment = False
        for number, line in enumerate(path.read_text("utf-8", "replace").splitlines(), 1):
            if in_comment or line.lstrip().startswith("/*"):
                in_comment = "*/" not in line
                continue
            m = pattern.match(line)
            if m:
                groups = [g for g in m.groups() if g]
                name = groups[-1]
                tags.append({"path": rel, "line": number, "name": name, "kind": groups[0],
                             "language": language})  # fmt: skip
    return tags


def ours(root: Path, paths: set[str]) -> dict[str, set[tuple[int, str]]]:
    files = []
    for rel in sorted(paths):
        p = root / rel
        files.append(SourceFile(rel, p.stat().st_size, 0, detect_language(rel)))
    found: dict[str, set[tuple[int, str]]] = defaultdict(set)
    for result in extract_files(root, files):
        for d in result.extraction.definitions:
            found[result.extraction.path].add((d.name_line or d.start_line, d.name))
    return found


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--misses", type=int, default=8)
    args = ap.parse_args()
    total: Counter[str] = Counter()
    hit: Counter[str] = Counter()
    unnamed: Counter[str] = Counter()
    misses: dict[str, list[str]] = defaultdict(list)
    for root in args.dirs:
        tags = [t for t in ctags_tags(root) + keyword_tags(root) if detect_language(t["path"])]
        found = ours(root, {t["path"] for t in tags})
        for t in tags:
            lang = t["language"]
            if t["name"].startswith(UNNAMED):
                unnamed[lang] += 1
                continue
            total[lang] += 1
            name = t["name"].split(".")[-1].split("::")[-1]
            if (t["line"], name) in found.get(t["path"], ()):
                hit[lang] += 1
            else:
                misses[lang].append(f"{root.name}/{t['path']}:{t['line']} {t['kind']} {t['name']}")
    print(f"{'language':12} {'ctags':>8} {'found':>8} {'share':>7} {'unnamed':>8}")
    for lang in sorted(total):
        share = hit[lang] / total[lang]
        print(f"{lang:12} {total[lang]:8d} {hit[lang]:8d} {share:7.4f} {unnamed[lang]:8d}")
    for lang in sorted(misses):
        print(f"\n-- {lang}: first misses of {len(misses[lang])}")
        for m in misses[lang][: args.misses]:
            print("  ", m)


if __name__ == "__main__":
    main()
