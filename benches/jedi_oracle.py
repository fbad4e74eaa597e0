"""Jedi's answers for the graph-vs-Jedi comparison, computed once and cached in a JSON file.

    nice .venv/bin/python benches/jedi_oracle.py ROOT --cache jedi-ROOTNAME.json \
        [--samples 120] [--impact-samples 40] [--jobs 2] [--exclude PREFIX ...] [--only DIR ...]

Independent of Maguyva: the definitions come from Python's `ast`, the references from Jedi's
`Script.get_references(scope="project")`. Candidates are functions and methods (not dunder)
whose name occurs as a word in 2-40 files, shuffled with a fixed seed; they are asked to Jedi in
that order, in batches over `--jobs` processes, until `--samples` of them have 2-30 referencing
files. For the first `--impact-samples` of those, Jedi is also asked for the references of every
definition enclosing one of the references (impact at depth 2, Jedi applied transitively).
Every answer is written to the cache after each batch, so a rerun (or an interrupted run)
only asks Jedi what it has not answered yet. benches/graph_vs_jedi.py reads the cache.

Jedi's project search is truncated by default: it opens at most 2 000 files of the project (in
directory-walk order) and parses at most 30 files that contain the name
(`jedi.inference.references._OPENED_FILE_LIMIT` / `_PARSED_FILE_LIMIT`). On Django (2 823
files) that silently drops real callers (`translation.activate(...)` in
`django/core/management/base.py`, `get_finders()` in `django/contrib/staticfiles/checks.py`),
which then count as our false positives. The oracle lifts both limits so Jedi searches every
file; `--jedi-default-limits` keeps Jedi's defaults (the cache records which).

`--only DIR` (repeatable) takes a sample of modules and `--exclude PREFIX` (repeatable; also
matches at any directory boundary: `test/` drops `unittest/test/`) leaves files out: candidates
come from the selected files and Jedi's project search is confined to exactly those files (the
modules keep their real paths, so imports resolve as usual); graph_vs_jedi.py then builds the
graph from the same files. Exhaustive Jedi over the whole CPython standard library (with its
test suite and site-packages) took over a minute per query here; the standard-library
comparison in docs/graph-measurements.md uses the library without its test suites:

    --exclude site-packages/ --exclude test/ --exclude tests/ --exclude idle_test/

`--no-stubs` makes Jedi infer the corpus from its own sources instead of typeshed's stubs (it
keeps the stubs of `builtins`, `typing` and `types`, which it cannot infer), and
`--samples-from CACHE` asks exactly another cache's samples and impact keys: together they give
a second opinion on the standard-library samples (docs/graph-measurements.md), not the target's oracle.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

MIN_FILES, MAX_FILES = 2, 30
BATCH = 16

_project = None
_root: Path | None = None


def python_files(root: Path, exclude: list[str], only: list[str] | None = None) -> list[str]:
    out = []
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        if "__pycache__" in rel or any(rel.startswith(e) or f"/{e}" in f"/{rel}" for e in exclude):
            continue
        if only and not any(rel.startswith(d.rstrip("/") + "/") for d in only):
            continue
        out.append(rel)
    return out


def definitions(root: Path, rel: str) -> list[tuple[str, str, int, int, int, int]]:
    """(kind, qualified name, def line, name column, first line, last line) of every def/class."""
    try:
        tree = ast.parse((root / rel).read_bytes())
    except (SyntaxError, ValueError):
        return []
    out = []

    def visit(node: ast.AST, prefix: str, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                q = f"{prefix}.{child.name}" if prefix else child.name
                is_cls = isinstance(child, ast.ClassDef)
                kind = "class" if is_cls else ("method" if in_class else "function")
                col = child.col_offset + (6 if is_cls else 4)
                if isinstance(child, ast.AsyncFunctionDef):
                    col += 6
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                end = child.end_lineno or child.lineno
                out.append((kind, q, child.lineno, col, first, end))
                visit(child, q, is_cls)
            else:
                visit(child, prefix, in_class)

    visit(tree, "", False)
    return out


# With --no-stubs, the stubs Jedi still reads: the language core it cannot infer from source.
CORE_STUBS = frozenset({"builtins", "typing", "typing_extensions", "_typeshed", "types"})


def _init(
    root: str, exhaustive: bool = True, selected: list[str] | None = None, stubs: bool = True
) -> None:
    global _project, _root
    import jedi
    import jedi.inference.references as jedi_refs

    if not stubs:
        # Jedi answers the standard library through typeshed's stubs (where tkinter's widget
        # classes each redefine `configure`, `open()` returns `IO`, ...); without them it
        # infers from the very sources the graph reads, except the language core
        import jedi.inference.gradual.typeshed as typeshed

        load = typeshed.try_to_load_stub_cached

        def core_only(inference_state, import_names, *args, **kwargs):
            if import_names and import_names[0] in CORE_STUBS:
                return load(inference_state, import_names, *args, **kwargs)
            return None

        typeshed.try_to_load_stub_cached = core_only

    if exhaustive:
        jedi_refs._OPENED_FILE_LIMIT = jedi_refs._PARSED_FILE_LIMIT = 10**9
    if selected is not None:
        from jedi.file_io import FileIO

        paths = [Path(root) / rel for rel in selected]

        def confined(inference_state, module_contexts):
            except_ = {str(m.py__file__()) for m in module_contexts}
            for path in paths:
                if str(path) not in except_:
                    yield FileIO(str(path))

        jedi_refs._find_project_modules = confined

    _root = Path(root)
    _project = jedi.Project(_root, added_sys_path=[root])


def _ask(key: str) -> tuple[str, list[list] | None, float]:
    """Jedi's non-definition references of the name at `path:line:col`, inside the root."""
    import jedi

    path, line, col = key.rsplit(":", 2)
    t = time.perf_counter()
    try:
        script = jedi.Script(path=_root / path, project=_project)
        refs = script.get_references(int(line), int(col), scope="project")
    except Exception:  # Jedi's own failures are recorded as "no answer"
        return key, None, time.perf_counter() - t
    out = set()
    for r in refs:
        if r.module_path is None or r.is_definition():
            continue
        try:
            rel = Path(r.module_path).resolve().relative_to(_root).as_posix()
        except ValueError:
            continue
        out.add((rel, r.line))
    return key, sorted([p, n] for p, n in out), time.perf_counter() - t


def enclosing(defs, line: int):
    best = None
    for d in defs:
        inside = d[4] <= line <= d[5] and d[2] != line
        if inside and (best is None or d[5] - d[4] < best[5] - best[4]):
            best = d
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--cache", type=Path, required=True)
    ap.add_argument("--samples", type=int, default=120)
    ap.add_argument("--impact-samples", type=int, default=40)
    ap.add_argument("--exclude", action="append", default=[])
    ap.add_argument("--only", action="append", default=[], help="a sample of modules: DIR")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--no-stubs",
        action="store_true",
        help="Jedi infers the corpus from its sources, not typeshed's stubs (builtins, typing kept)",
    )
    ap.add_argument(
        "--samples-from",
        type=Path,
        help="ask exactly the samples (and impact keys) of this cache, e.g. again with --no-stubs",
    )
    ap.add_argument(
        "--jedi-default-limits",
        action="store_true",
        help="keep Jedi's 2000-opened / 30-parsed file limits (truncated answers)",
    )
    args = ap.parse_args()
    root = args.root.resolve()
    cache = json.loads(args.cache.read_text()) if args.cache.exists() else {}
    exhaustive = not args.jedi_default_limits
    if cache and cache.get("exhaustive", False) != exhaustive:
        sys.exit(f"{args.cache} was made with exhaustive={cache.get('exhaustive', False)}")
    answers: dict[str, list | None] = cache.get("answers", {})
    seconds: list[float] = cache.get("seconds", [])

    files = python_files(root, args.exclude, args.only)
    defs = {rel: definitions(root, rel) for rel in files}
    word_files: dict[str, int] = {}
    for rel in files:
        text = (root / rel).read_text(encoding="utf-8", errors="replace")
        for w in set(re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", text)):
            word_files[w] = word_files.get(w, 0) + 1
    cands = [
        (rel, d)
        for rel in files
        for d in defs[rel]
        if d[0] != "class"
        and not d[1].rsplit(".", 1)[-1].startswith("__")
        and 2 <= word_files.get(d[1].rsplit(".", 1)[-1], 0) <= 40
    ]
    random.Random(args.seed).shuffle(cands)
    print(f"{len(files)} files, {len(cands)} candidates", file=sys.stderr)

    def key(rel: str, d) -> str:
        return f"{rel}:{d[2]}:{d[3]}"

    def save() -> None:
        tmp = args.cache.with_suffix(".tmp")
        tmp.write_text(json.dumps({"root": str(root), "files": files, "exclude": args.exclude, "only": args.only,
                                   "seed": args.seed, "samples": samples, "answers": answers,
                                   "seconds": seconds, "exhaustive": exhaustive,
                                   "confined": bool(args.only or args.exclude),
                                   "stubs": not args.no_stubs}))  # fmt: skip
        tmp.replace(args.cache)

    samples: list[dict] = []
    if args.samples_from:
        samples = json.loads(args.samples_from.read_text())["samples"]
    # --only / --exclude: Jedi's project search reads exactly the selected files (in sorted
    # order), the same files graph_vs_jedi.py builds the graph from
    selected = files if (args.only or args.exclude) else None
    with ProcessPoolExecutor(
        args.jobs, initializer=_init, initargs=(str(root), exhaustive, selected, not args.no_stubs)
    ) as pool:

        def run(keys: list[str]) -> None:
            todo = [k for k in dict.fromkeys(keys) if k not in answers]
            for k, refs, s in pool.map(_ask, todo):
                answers[k] = refs
                if refs is not None:
                    seconds.append(round(s, 3))
            if todo:
                save()

        if args.samples_from:
            run([s["key"] for s in samples] + [k for s in samples for k in s.get("second", [])])
            print(f"done: {len(samples)} samples, {len(answers)} Jedi answers", file=sys.stderr)
            return
        pos = 0
        while len(samples) < args.samples and pos < len(cands):
            batch = cands[pos : pos + BATCH]
            pos += BATCH
            run([key(r, d) for r, d in batch])
            for rel, d in batch:
                refs = answers.get(key(rel, d))
                n = len({p for p, _ in refs}) if refs else 0
                if refs is not None and MIN_FILES <= n <= MAX_FILES and len(samples) < args.samples:
                    samples.append({"path": rel, "qname": d[1], "kind": d[0], "line": d[2],
                                    "key": key(rel, d), "files": n})  # fmt: skip
            print(f"asked {pos}/{len(cands)}, kept {len(samples)}", file=sys.stderr, flush=True)
        save()
        for s in samples[: args.impact_samples]:
            second = []
            for p, line in answers[s["key"]] or []:
                enc = enclosing(defs.get(p, []), line)
                if enc is not None:
                    second.append(key(p, enc))
            s["second"] = sorted(set(second))
            run(s["second"])
            print(f"impact {s['qname']}: {len(s['second'])} enclosing", file=sys.stderr, flush=True)
        save()
    print(f"done: {len(samples)} samples, {len(answers)} Jedi answers", file=sys.stderr)


if __name__ == "__main__":
    main()
