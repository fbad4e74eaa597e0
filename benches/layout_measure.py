"""The package's shape, for docs/design.md's "Measure": modules per folder, the largest files,
import cycles between modules, the longest functions and the function-level imports.

    python benches/layout_measure.py            # the working tree
    python benches/layout_measure.py db777ad    # a commit (read with git show, nothing checked out)
    python benches/layout_measure.py --table db777ad [REV]   # docs/design.md's table, in Markdown

A cycle is counted over module-level imports (what runs at import time) and, separately, over
every import including those inside functions (what a cycle "closed by a late import" hides)."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "python/maguyva"


def sources(rev: str | None) -> dict[str, str]:
    """Path -> text of every .py file of the package, at `rev` or in the working tree."""
    if rev is None:
        return {
            str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
            for p in sorted((ROOT / PACKAGE).rglob("*.py"))
        }
    names = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", rev, PACKAGE],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    return {
        name: subprocess.run(
            ["git", "show", f"{rev}:{name}"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        for name in names
        if name.endswith(".py")
    }


def module_of(path: str) -> str:
    parts = Path(path).with_suffix("").parts[1:]
    return ".".join(p for p in parts if p != "__init__")


def imports(tree: ast.Module, here: str, modules: set[str], top_only: bool) -> set[str]:
    """The package modules a file imports: `from a.b import c` is `a.b.c` when that is a
    module, else `a.b`; relative imports are resolved against `here`'s package."""
    nodes: list[ast.AST] = list(ast.walk(tree))
    if top_only:  # module level, including under `if`/`try` (but not TYPE_CHECKING blocks)
        stack, nodes = list(tree.body), []
        while stack:
            node = stack.pop()
            nodes.append(node)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.If | ast.Try):
                stack += [*node.body, *node.orelse, *getattr(node, "handlers", [])]
    package = here if here in PACKAGES else here.rpartition(".")[0]
    found = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([base] if base else [])])
            for a in node.names:
                full = f"{base}.{a.name}"
                found.add(full if full in modules else base)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found & modules


PACKAGES: set[str] = set()


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def measure(rev: str | None) -> dict[str, Any]:
    """The package's shape at `rev` (the working tree when None)."""
    files = sources(rev)
    trees = {path: ast.parse(text) for path, text in files.items()}
    modules = {module_of(p) for p in files} | {"maguyva._core"}  # the native module
    PACKAGES.clear()
    PACKAGES.update(module_of(p) for p in files if p.endswith("__init__.py"))
    lines = sorted(((len(t.splitlines()), p) for p, t in files.items()), reverse=True)
    found_cycles = {}
    for top_only in (True, False):
        graph = {
            module_of(p): imports(t, module_of(p), modules, top_only) - {module_of(p)}
            for p, t in trees.items()
        }
        found_cycles["module-level imports" if top_only else "all imports"] = cycles(graph)
    funcs = sorted(
        ((n.end_lineno or n.lineno) - n.lineno + 1, f"{module_of(p)}.{n.name}")
        for p, t in trees.items()
        for n in ast.walk(t)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    )[::-1]
    late = sum(
        isinstance(node, ast.Import | ast.ImportFrom)
        for t in trees.values()
        for f in ast.walk(t)
        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
        for node in ast.walk(f)
    )
    return {
        "rev": rev or "working tree",
        "modules": len(files),
        "per_folder": Counter(str(Path(p).parent) + "/" for p in files),
        "lines": lines,
        "cycles": found_cycles,
        "funcs": funcs,
        "late_imports": late,
    }


def report(m: dict[str, Any]) -> None:
    """The plain listing: every folder, every long module and function, every cycle."""
    print(f"# {m['rev']}: {m['modules']} modules")
    for folder, n in sorted(m["per_folder"].items()):
        print(f"{n:4d}  {folder}")
    lines, funcs = m["lines"], m["funcs"]
    total = sum(n for n, _ in lines)
    print(f"lines: {total}; largest: " + ", ".join(f"{p} {n}" for n, p in lines[:5]))
    long_modules = [f"{p} {n}" for n, p in lines if n > 600]
    print(
        f"modules over 600 lines: {len(long_modules)}"
        + "".join(f"\n      {m}" for m in long_modules)
    )
    for what, found in m["cycles"].items():
        print(f"import cycles ({what}): {len(found)}" + "".join(f"\n      {c}" for c in found))
    print("longest functions: " + ", ".join(f"{name} {n}" for n, name in funcs[:6]))
    long_funcs = [f"{name} {n}" for n, name in funcs if n > 80]
    print(f"functions over 80 lines: {len(long_funcs)} of {len(funcs)}"
          + "".join(f"\n      {f}" for f in long_funcs))  # fmt: skip
    print(f"function-level imports: {m['late_imports']}")


def _cells(m: dict[str, Any]) -> list[str]:
    """One table column: the same rows for every revision."""
    short = lambda p: p.removeprefix(PACKAGE + "/")  # noqa: E731
    folders = ", ".join(
        f"`{short(f.rstrip('/')) if f != PACKAGE + '/' else 'top level'}` {n}"
        for f, n in sorted(m["per_folder"].items())
    )
    lines, funcs = m["lines"], m["funcs"]
    lengths = sorted(n for n, _ in funcs)
    cycles_all = m["cycles"]["all imports"]
    return [
        f"{m['modules']}: {folders}",
        f"{sum(n for n, _ in lines):,}".replace(",", " "),
        ", ".join(f"`{short(p)}` {n:,}".replace(",", " ") for n, p in lines[:5]),
        str(sum(1 for n, _ in lines if n > 600)),
        str(len(m["cycles"]["module-level imports"])),
        f"{len(cycles_all)}"
        + (": " if cycles_all else "")
        + "; ".join(" ↔ ".join(x.removeprefix("maguyva.") for x in c) for c in cycles_all),
        f"{lengths[len(lengths) // 2]} / {lengths[len(lengths) * 9 // 10]} / {lengths[-1]}",
        f"{sum(1 for n, _ in funcs if n > 80)} of {len(funcs)}",
        ", ".join(f"`{name.removeprefix('maguyva.')}` {n}" for n, name in funcs[:3]),
        str(m["late_imports"]),
    ]


ROWS = [
    "modules (per folder)",
    "lines of Python",
    "largest files",
    "modules over 600 lines",
    "import cycles, module-level imports",
    "import cycles counting imports inside functions",
    "function length: median / 90th percentile / longest",
    "functions over 80 lines",
    "longest functions",
    "function-level imports",
]


def table(before: dict[str, Any], after: dict[str, Any]) -> None:
    """docs/design.md's "Measure" table, before and after, in Markdown."""
    print(f"| | `{before['rev']}` | `{after['rev']}` |")
    print("|---|---|---|")
    for row, old, new in zip(ROWS, _cells(before), _cells(after), strict=True):
        print(f"| {row} | {old} | {new} |")


def main(argv: list[str]) -> None:
    if argv[:1] == ["--table"]:
        rest = argv[1:]
        table(measure(rest[0]), measure(rest[1] if len(rest) > 1 else None))
        return
    report(measure(argv[0] if argv else None))


if __name__ == "__main__":
    main(sys.argv[1:])
