"""find_definition Success@1 through the whole engine, ground truth from Universal Ctags.

    .venv/bin/python benches/definition_success.py [--per-language 40] [--show-failures]
    .venv/bin/python benches/definition_success.py --src python=DIR --src c=DIR ...

The corpus is copied from real sources (by default: part of the CPython standard library,
the kernel's scheduler, timers and ext4 with the headers that declare them, Debian's Go
packages cobra and gorilla/mux, and the Rust crates regex-syntax and serde). ctags lists every
definition; identifiers that ctags defines exactly once (any kind) and that are a function,
method, class, struct, interface, trait or enum become queries, in three forms in turn:
"where is X defined", "<kind word> X" (`def`, `func`, `fn`, `class`, `struct`, ...) and bare
"X". The index is built with `maguyva.build.indexer.build_index(root, config={"modalities":
["text", "structural", "graph"]})` and each query goes through `maguyva.query.engine.Engine.search`.
A query succeeds at rank r when result r's path is the definition's file and its line span
contains ctags' line.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from maguyva.build.indexer import build_index
from maguyva.query.engine import Engine
from maguyva.repo.languages import detect_language

STDLIB = Path(sysconfig.get_paths()["stdlib"])
KERNEL = Path("/work/corpora/linux-source-6.1")
DEBIAN = Path(
    "/tmp/corp/ex/usr/share"
)  # `apt-get download <pkg>; dpkg-deb -x <pkg>.deb /tmp/corp/ex`
JDK = Path("/tmp/s4src/jsrc/java.base/java")  # openjdk-17-source's lib/src.zip, unzipped
GEMS = Path("/tmp/s4src/ruby/usr/share/rubygems-integration/all/gems")  # ruby-thor, ruby-rack
DEFAULT_SOURCES = {
    "python": [STDLIB / d for d in ("asyncio", "email", "json", "http", "logging", "concurrent")],
    "c": [KERNEL / d for d in ("kernel/sched", "kernel/time", "fs/ext4", "include/linux/sched")]
    + [KERNEL / "include/linux" / f for f in ("sched.h", "hrtimer.h", "timekeeping.h", "jbd2.h")],
    "go": [DEBIAN / "gocode/src/github.com/spf13/cobra", DEBIAN / "gocode/src/github.com/gorilla/mux"],
    "rust": [DEBIAN / "cargo/registry/regex-syntax-0.6.27", DEBIAN / "cargo/registry/serde-1.0.152"],
    "java": [JDK / "util/concurrent", JDK / "lang/invoke"],
    "ruby": [GEMS / "thor-1.2.1", GEMS / "rack-2.2.22"],
}  # fmt: skip
# ctags kind -> the word a user would type before the name.
KIND_WORDS = {"function": "def", "method": "def", "func": "func", "class": "class",
              "struct": "struct", "interface": "interface", "trait": "trait", "enum": "enum",
              "implementation": "impl"}  # fmt: skip
LANG_FUNCTION_WORD = {"python": "def", "go": "func", "rust": "fn", "c": "function",
                      "java": "method", "ruby": "def"}  # fmt: skip
WANTED_KINDS = frozenset({"function", "method", "func", "class", "struct", "interface", "trait",
                          "enum", "module", "singletonMethod"})  # fmt: skip
FORMS = ("where is {name} defined", "{kind} {name}", "{name}")


@dataclass(frozen=True, slots=True)
class Case:
    language: str
    name: str
    path: str
    line: int
    kind: str
    query: str
    form: int


def prepare(sources: dict[str, list[Path]], work: Path) -> Path:
    """Copy the sources under `work/corpus/<language>/...`; returns the corpus root."""
    root = work / "corpus"
    if root.exists():
        shutil.rmtree(root)
    for language, paths in sources.items():
        for src in paths:
            if not src.exists():
                print(f"skip missing source {src}", file=sys.stderr)
                continue
            dest = root / language / src.parent.name / src.name
            if src.is_dir():
                shutil.copytree(src, dest, symlinks=False, ignore=shutil.ignore_patterns(
                    "__pycache__", "*.pyc", ".git"))  # fmt: skip
            else:
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest)
    return root


def ctags(root: Path) -> list[dict]:
    proc = subprocess.run(
        ["ctags", "--output-format=json", "--fields=+nK", "-R", "--sort=no", "-f", "-", "."],
        cwd=root, capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    tags = []
    for line in proc.stdout.splitlines():
        try:
            raw = json.loads(line)
        except ValueError:
            continue
        if raw.get("_type") == "tag":
            raw["path"] = raw["path"].removeprefix("./")
            tags.append(raw)
    return tags


def draw(tags: list[dict], per_language: int, seed: int) -> list[Case]:
    """Identifiers defined exactly once, `per_language` of each language, query forms in turn."""
    counts = Counter(t["name"] for t in tags)
    pools: dict[str, list[dict]] = defaultdict(list)
    for t in tags:
        language = t["path"].split("/", 1)[0]
        if (
            counts[t["name"]] == 1
            and t.get("kind") in WANTED_KINDS
            and len(t["name"]) >= 4
            and detect_language(t["path"]) is not None
            and not t["name"].startswith("__anon")
        ):
            pools[language].append(t)
    rng = random.Random(seed)
    cases = []
    for language in sorted(pools):
        chosen = rng.sample(pools[language], min(per_language, len(pools[language])))
        for number, t in enumerate(sorted(chosen, key=lambda t: t["name"])):
            form = number % len(FORMS)
            kind = t["kind"]
            function_like = kind in ("function", "method", "func", "singletonMethod")
            word = LANG_FUNCTION_WORD[language] if function_like else (
                KIND_WORDS.get(kind, "def"))  # fmt: skip
            query = FORMS[form].format(name=t["name"], kind=word)
            cases.append(Case(language, t["name"], t["path"], int(t["line"]), kind, query, form))
    return cases


def rank_of(case: Case, results: list) -> int | None:
    for rank, r in enumerate(results, start=1):
        if r.path == case.path and r.start_line <= case.line <= r.end_line:
            return rank
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--src", action="append", default=[], metavar="LANG=PATH",
                    help="a source directory or file (repeatable); default: see above")  # fmt: skip
    ap.add_argument("--per-language", type=int, default=40)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--work", type=Path, help="working directory (default: a temporary one)")
    ap.add_argument("--show-failures", action="store_true")
    ap.add_argument("--json", type=Path, help="write every case and its rank here")
    args = ap.parse_args()
    sources: dict[str, list[Path]] = defaultdict(list)
    for spec in args.src:
        language, _, path = spec.partition("=")
        sources[language].append(Path(path))
    work = args.work or Path(tempfile.mkdtemp(prefix="maguyva-defs-"))
    root = prepare(dict(sources) or DEFAULT_SOURCES, work)
    tags = ctags(root)
    cases = draw(tags, args.per_language, args.seed)
    started = time.perf_counter()
    summary = build_index(root, config={"modalities": ["text", "structural", "graph"]})
    build_s = time.perf_counter() - started
    engine = Engine.open(root)
    ranks: list[int | None] = []
    failures = []
    for case in cases:
        response = engine.search(case.query, limit=10)
        rank = rank_of(case, response.results)
        ranks.append(rank)
        if rank != 1:
            top = response.results[0] if response.results else None
            failures.append((case, rank, response.intent, top))
    files = sum(1 for p in root.rglob("*") if p.is_file())
    print(f"corpus {root}: {files} files; {len(tags)} ctags tags; index built in {build_s:.1f} s "
          f"(generation {summary.generation})")  # fmt: skip
    by_lang: dict[str, list[int | None]] = defaultdict(list)
    by_form: dict[int, list[int | None]] = defaultdict(list)
    for case, rank in zip(cases, ranks, strict=True):
        by_lang[case.language].append(rank)
        by_form[case.form].append(rank)

    def line(label: str, rs: list[int | None]) -> str:
        at1 = sum(1 for r in rs if r == 1) / len(rs)
        at5 = sum(1 for r in rs if r is not None and r <= 5) / len(rs)
        mrr = sum(1 / r for r in rs if r) / len(rs)
        return f"{label:28} n={len(rs):4}  S@1 {at1:.3f}  S@5 {at5:.3f}  MRR {mrr:.3f}"

    for language, rs in sorted(by_lang.items()):
        print(line(language, rs))
    for form, rs in sorted(by_form.items()):
        print(line(repr(FORMS[form]), rs))
    print(line("all", ranks))
    if args.show_failures:
        for case, rank, intent, top in failures:
            got = f"{top.path}:{top.start_line}-{top.end_line} {top.symbol}" if top else "nothing"
            print(f"  MISS {case.query!r} [{intent}] want {case.path}:{case.line} "
                  f"rank {rank}; top {got}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(
            [{"query": c.query, "path": c.path, "line": c.line, "rank": r}
             for c, r in zip(cases, ranks, strict=True)], indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
