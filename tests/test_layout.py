"""The package is laid out as the pipeline: each folder one stage, imports only downwards.

`docs/design.md` opens with the code map; these tests keep it and the import order true."""

from __future__ import annotations

import ast
import graphlib
import re
from collections.abc import Iterator
from pathlib import Path

from maguyva.store import extraction

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "maguyva"

# Lowest first: a module may import from its own stage or from a stage listed before it.
STAGES: list[set[str]] = [
    {"errors", "model", "config", "_core"},
    {"support"},
    {"repo"},
    {"extract"},
    {"store"},
    {"modalities"},
    {"build"},
    {"query"},
    {"api"},
    {"scale", "eval"},
    {"interfaces", "__main__"},
]
RANK = {name: rank for rank, names in enumerate(STAGES) for name in names}


def stage_of(module: str) -> str:
    """`maguyva.store.chunks` -> `store`; `from maguyva import _core` is the lowest stage."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "_core"


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(parts)


def imports_of(path: Path) -> list[str]:
    """Every `maguyva` module a file imports, at any depth (function-level imports too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "maguyva":
                found += [f"maguyva.{a.name}" for a in node.names]
            elif node.module.startswith("maguyva."):
                found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("maguyva")]
    return found


def test_no_module_imports_a_higher_stage():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = module_name(path)
        here = stage_of(importer)
        if importer == "maguyva":  # the package re-exports the API
            continue
        assert here in RANK, f"{importer}: stage {here!r} is missing from STAGES"
        for imported in imports_of(path):
            there = stage_of(imported)
            if RANK.get(there, 0) > RANK[here]:
                wrong.append(f"{importer} -> {imported}")
    assert wrong == []


def test_no_relative_imports():
    """Absolute imports only: a moved module's importers say where it lives now."""
    relative = [
        f"{module_name(p)}:{node.lineno}"
        for p in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.level > 0
    ]
    assert relative == []


def test_the_code_map_names_every_folder_and_nothing_else():
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    table = design.split("<!-- code-map:start -->")[1].split("<!-- code-map:end -->")[0]
    listed = set()
    for cell in re.findall(r"^\| ([^|]+) \|", table, re.M):
        listed |= {p.rstrip("/") for p in re.findall(r"`([^`]+/)`", cell)}
    python_listed = {p for p in listed if p.startswith("python/")}
    folders = {
        str(d.relative_to(ROOT))
        for d in [PACKAGE, *PACKAGE.rglob("*")]
        if d.is_dir() and (d / "__init__.py").exists()
    }
    # a folder may be covered by its parent's line when the parent names it (`embed/`)
    covered = python_listed | {
        f for f in folders if any(f.startswith(p + "/") for p in python_listed)
    }
    assert folders - covered == set(), "folders missing from the code map"
    assert python_listed - folders == set(), "the code map names folders that do not exist"
    for rust in (p for p in listed if p.startswith("rust/")):
        assert (ROOT / rust).is_dir(), rust


def test_fingerprint_sources_exist():
    """The extraction and builder fingerprints hash source files by path: a path left behind
    by a move would silently stop invalidating caches when that code changes."""
    for path in [*extraction.extractor_sources(), *extraction.builder_sources()]:
        assert path.is_file(), path
    assert len(extraction.extractor_sources()) > 5


DOC_LIMIT = 500
LONG_PAGES: set[str] = set()  # pages still to be split (none since issue 19)


def test_doc_pages_stay_short():
    """A page a newcomer reads whole: ~500 lines at most (history goes to docs/changelog.md)."""
    long = {
        p.name: n
        for p in (ROOT / "docs").glob("*.md")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > DOC_LIMIT
    }
    assert set(long) <= LONG_PAGES, long


def test_every_docs_page_named_exists():
    """A page split or renamed leaves no reference to it behind, in the docs or the code."""
    sources = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *PACKAGE.rglob("*.py")]
    sources += [*(ROOT / "benches").glob("*.py"), *(ROOT / "tests").glob("*.py")]
    sources += [*(ROOT / "rust").rglob("*.rs")]
    missing = set()
    for path in sources:
        text = path.read_text(encoding="utf-8")
        # a quoted "docs/x.md" is a path in a test corpus, not a reference
        for name in re.findall(r"(?<![\"'])docs/([A-Za-z0-9_-]+\.md)", text):
            if not (ROOT / "docs" / name).is_file():
                missing.add(f"{path.relative_to(ROOT)}: docs/{name}")
        if path.parent.name == "docs":  # relative links between pages: [x](other.md#anchor)
            for name in re.findall(r"\]\(([A-Za-z0-9_-]+\.md)(?:#[^)]*)?\)", text):
                if not (ROOT / "docs" / name).is_file():
                    missing.add(f"{path.relative_to(ROOT)}: {name}")
    assert missing == set()


def test_the_native_stub_names_every_binding():
    """`_core.pyi` lists what the module exports (`make lint` runs stubtest for the signatures)."""
    from maguyva import _core

    stub = ast.parse((PACKAGE / "_core.pyi").read_text(encoding="utf-8"))
    declared = next(
        ast.literal_eval(node.value)
        for node in stub.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__"
    )
    assert sorted(declared) == sorted(_core.__all__)


def _module_level_imports(tree: ast.Module, modules: set[str]) -> set[str]:
    """Package modules imported when the module runs (not inside functions or TYPE_CHECKING):
    `from a.b import c` is `a.b.c` when that is a module, else `a.b`."""
    stack, found = list(tree.body), set()
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
            stack += [*node.body, *node.orelse]
        elif isinstance(node, ast.Try):
            stack += [*node.body, *node.orelse, *node.finalbody]
            stack += [n for h in node.handlers for n in h.body]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                for a in node.names
            }
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found & modules


def test_no_import_cycle_at_module_level():
    """Within a stage too (the stage order above cannot see a cycle inside one folder). Cycles
    closed by imports inside functions are counted in docs/design.md, "Measure"."""
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    graph = {
        module_name(p): _module_level_imports(ast.parse(p.read_text(encoding="utf-8")), modules)
        - {module_name(p)}
        for p in paths
    }
    graphlib.TopologicalSorter(graph).prepare()  # raises CycleError naming the cycle


MODULE_LINES, FUNCTION_LINES = 600, 80
LONG_BECAUSE = "Long because:"
"""A function may pass FUNCTION_LINES when a line of its docstring starts with this and says
why (a table, a dispatch that reads best whole)."""


def _functions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method with its qualified name (`Class.method`, `outer.inner`)."""
    stack: list[tuple[str, ast.AST]] = [("", tree)]
    while stack:
        prefix, node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    yield name, child
                stack.append((f"{name}.", child))
            else:
                stack.append((prefix, child))


def _says_why(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    doc = ast.get_docstring(function) or ""
    return any(line.strip().startswith(LONG_BECAUSE) for line in doc.splitlines())


def too_long(path: Path, root: Path = PACKAGE) -> list[str]:
    """The module itself when over MODULE_LINES, and each function over FUNCTION_LINES
    (from `def` to its last line) whose docstring does not say why."""
    rel = path.relative_to(root).as_posix()
    text = path.read_text(encoding="utf-8")
    found = [rel] if len(text.splitlines()) > MODULE_LINES else []
    for name, function in _functions(ast.parse(text)):
        length = (function.end_lineno or function.lineno) - function.lineno + 1
        if length > FUNCTION_LINES and not _says_why(function):
            found.append(f"{rel}::{name}")
    return found


def test_modules_and_functions_stay_short():
    """A module a newcomer reads whole (~600 lines), a function read at a glance (~80 lines);
    a longer function says why in its docstring, on a line starting "Long because:"."""
    found = {entry for path in sorted(PACKAGE.rglob("*.py")) for entry in too_long(path)}
    assert found == set(), "too long (split it, or say why in its docstring)"


def test_the_length_check_finds_what_is_too_long(tmp_path: Path):
    """The check above can fail: long methods, nested and async functions and long modules
    are found; a docstring's reason excuses its own function only."""

    def body(indent: int, lines: int = FUNCTION_LINES) -> str:
        return "\n".join(f"{' ' * indent}x{i} = {i}" for i in range(lines))

    (tmp_path / "funcs.py").write_text(
        f"class A:\n    def long(self):\n{body(8)}\n\n"
        f"async def outer():\n    def inner():\n{body(8)}\n\n"
        f'def excused():\n    """{LONG_BECAUSE} a table."""\n{body(4)}\n\n'
        f"def at_the_limit():\n{body(4, FUNCTION_LINES - 1)}\n",
        encoding="utf-8",
    )
    (tmp_path / "big.py").write_text("x = 1\n" * (MODULE_LINES + 1), encoding="utf-8")
    (tmp_path / "fits.py").write_text("x = 1\n" * MODULE_LINES, encoding="utf-8")
    found = {e for p in sorted(tmp_path.glob("*.py")) for e in too_long(p, tmp_path)}
    assert found == {"big.py", "funcs.py::A.long", "funcs.py::outer", "funcs.py::outer.inner"}
