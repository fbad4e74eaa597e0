"""The package's shape, for docs/design.md's "Measure": modules per folder, the largest files,
import cycles between modules, the longest functions and the function-level imports.

    python benches/layout_measure.py            # the working tree
    python benches/layout_measure.py db777ad    # a commit (read with git show, nothing checked out)

A cycle is counted over module-level imports (what runs at import time) and, separately, over
every import including those inside functions (what a cycle "closed by a late import" hides)."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import Counter
from pathlib import Path

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


def main(argv: list[str]) -> None:
    rev = argv[0] if argv else None
    files = sources(rev)
    trees = {path: ast.parse(text) for path, text in files.items()}
    modules = {module_of(p) for p in files} | {"maguyva._core"}  # the native module
    PACKAGES.update(module_of(p) for p in files if p.endswith("__init__.py"))
    print(f"# {rev or 'working tree'}: {len(files)} modules")
    per_folder = Counter(str(Path(p).parent) + "/" for p in files)
    for folder, n in sorted(per_folder.items()):
        print(f"{n:4d}  {folder}")
    lines = sorted(((len(t.splitlines()), p) for p, t in files.items()), reverse=True)
    total = sum(n for n, _ in lines)
    print(f"lines: {total}; largest: " + ", ".join(f"{p} {n}" for n, p in lines[:5]))
    long_modules = [f"{p} {n}" for n, p in lines if n > 600]
    print(
        f"modules over 600 lines: {len(long_modules)}"
        + "".join(f"\n      {m}" for m in long_modules)
    )
    for top_only in (True, False):
        graph = {
            module_of(p): imports(t, module_of(p), modules, top_only) - {module_of(p)}
            for p, t in trees.items()
        }
        found = cycles(graph)
        what = "module-level imports" if top_only else "all imports"
        print(f"import cycles ({what}): {len(found)}" + "".join(f"\n      {c}" for c in found))
    funcs = sorted(
        ((n.end_lineno or n.lineno) - n.lineno + 1, f"{module_of(p)}.{n.name}")
        for p, t in trees.items()
        for n in ast.walk(t)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    )[::-1]
    print("longest functions: " + ", ".join(f"{name} {n}" for n, name in funcs[:6]))
    long_funcs = [f"{name} {n}" for n, name in funcs if n > 80]
    print(f"functions over 80 lines: {len(long_funcs)} of {len(funcs)}"
          + "".join(f"\n      {f}" for f in long_funcs))  # fmt: skip
    late = sum(
        isinstance(node, ast.Import | ast.ImportFrom)
        for t in trees.values()
        for f in ast.walk(t)
        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
        for node in ast.walk(f)
    )
    print(f"function-level imports: {late}")


if __name__ == "__main__":
    main(sys.argv[1:])
