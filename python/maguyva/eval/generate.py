"""`maguyva eval --generate`: draw queries from a repository, with ground truth from tools
nobody on this project wrote.

- definitions: Universal Ctags (a name defined at most twice; every definition is an answer);
- references: Jedi's `get_references` (every use outside the definition is an answer);
- literals: real string constants (error messages first), answers are every line `rg -F`
  finds; plus literals altered so that `rg` finds nothing, whose right answer is empty;
- similar code: real functions with the docstring dropped and every local name renamed
  (function, parameters, locals), re-printed by `ast.unparse`; the answer is the original.

Natural-language questions are not generated: a script cannot write them honestly.
"""

from __future__ import annotations

import ast
import random
import shutil
import subprocess
import textwrap
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from maguyva.errors import MaguyvaError
from maguyva.eval.corpora import CORPORA
from maguyva.eval.ctags import Tag, run_ctags
from maguyva.eval.queryset import Query, Span, split_for
from maguyva.repo.reader import read_text

DEF_TEMPLATES = ("where is {name} defined", "{kw} {name}", "{name}", "definition of {name}")
REF_TEMPLATES = ("who calls {name}", "usages of {name}", "where is {name} used",
                 "references to {name}")  # fmt: skip
MAX_SPANS = 60


def _is_test(path: str) -> bool:
    parts = path.split("/")
    return any(p in ("tests", "test", "testing") for p in parts[:-1]) or parts[-1].startswith(
        "test_"
    )


def _eligible(tag: Tag) -> bool:
    return (
        not tag.name.startswith("__")
        and len(tag.name) >= 4
        and not _is_test(tag.path)
        and not tag.name.startswith("test")
    )


def definition_queries(tags: list[Tag], rng: random.Random, count: int, prefix: str) -> list[Query]:
    counts = Counter(t.name for t in tags)
    pool = [t for t in tags if _eligible(t) and counts[t.name] <= 2]
    rng.shuffle(pool)
    seen: set[str] = set()
    out = []
    for tag in pool:
        if len(out) >= count or tag.name in seen:
            continue
        seen.add(tag.name)
        template = DEF_TEMPLATES[len(out) % len(DEF_TEMPLATES)]
        kw = "class" if tag.kind == "class" else "def"
        spans = tuple(Span(t.path, t.line, t.end, t.qualified) for t in tags if t.name == tag.name)
        qid = f"{prefix}-def-{len(out) + 1:03d}"
        out.append(Query(qid, template.format(name=tag.name, kw=kw), "find_definition", spans,
                         split_for(qid), "ctags"))  # fmt: skip
    return out


def reference_queries(
    root: Path, tags: list[Tag], rng: random.Random, count: int, prefix: str
) -> list[Query]:
    try:
        import jedi
    except ImportError:
        raise MaguyvaError("reference queries need Jedi: pip install jedi") from None
    counts = Counter(t.name for t in tags)
    pool = [t for t in tags if _eligible(t) and counts[t.name] == 1 and not t.name.startswith("_")]
    rng.shuffle(pool)
    project = jedi.Project(root)
    out: list[Query] = []
    for tag in pool[: count * 4]:
        if len(out) >= count:
            break
        source = read_text(root, tag.path).splitlines()
        column = source[tag.line - 1].find(tag.name) if tag.line <= len(source) else -1
        if column < 0:
            continue
        try:
            script = jedi.Script(path=str(root / tag.path), project=project)
            refs = script.get_references(tag.line, column, include_builtins=False)
        except Exception:  # Jedi can fail on unusual code; that tag is simply not used
            continue
        spans = []
        for ref in refs:
            if ref.module_path is None or ref.is_definition():
                continue
            try:
                rel = Path(ref.module_path).resolve().relative_to(root).as_posix()
            except ValueError:
                continue
            spans.append(Span(rel, ref.line, ref.line))
        spans = list(dict.fromkeys(spans))
        if not spans or len(spans) > MAX_SPANS:
            continue
        template = REF_TEMPLATES[len(out) % len(REF_TEMPLATES)]
        qid = f"{prefix}-ref-{len(out) + 1:03d}"
        out.append(Query(qid, template.format(name=tag.name), "find_references", tuple(spans),
                         split_for(qid), "jedi"))  # fmt: skip
    return out


def _string_constants(tree: ast.AST) -> list[tuple[str, bool]]:
    """(literal, inside a raise/warn/log call) for plain string constants (no f-strings)."""
    in_fstring = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    docstrings = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            docstrings.add(id(body[0].value))
    errorish: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("warn", "error", "warning", "exception", "fail", "echo")
        ):
            errorish.update(id(n) for n in ast.walk(node))
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in in_fstring
            and id(node) not in docstrings
        ):
            found.append((node.value, id(node) in errorish))
    return found


def _rg_lines(root: Path, literal: str) -> list[tuple[str, int]]:
    rg = shutil.which("rg")
    if not rg:
        raise MaguyvaError("literal queries need ripgrep (apt-get install ripgrep)")
    proc = subprocess.run(
        [rg, "-F", "-n", "--no-heading", "--with-filename", "--no-messages", "-e", literal,
         "--", "."],
        cwd=root, capture_output=True, check=False, timeout=120,
    )  # fmt: skip
    out = []
    for line in proc.stdout.decode("utf-8", errors="replace").splitlines():
        path, _, rest = line.partition(":")
        number = rest.partition(":")[0]
        if number.isdigit() and not path.startswith("./.maguyva"):
            out.append((path.removeprefix("./"), int(number)))
    return out


def literal_queries(
    root: Path, files: list[str], rng: random.Random, count: int, prefix: str
) -> list[Query]:
    candidates: dict[str, bool] = {}
    for path in files:
        try:
            tree = ast.parse(read_text(root, path))
        except (SyntaxError, ValueError):
            continue
        for value, errorish in _string_constants(tree):
            text = value.strip()
            if (10 <= len(text) <= 60 and text == value and "\n" not in text
                    and text.isprintable() and " " in text and '"' not in text):  # fmt: skip
                candidates[text] = candidates.get(text, False) or errorish
    ranked = sorted(candidates, key=lambda t: (not candidates[t], t))
    errors = [t for t in ranked if candidates[t]]
    others = [t for t in ranked if not candidates[t]]
    rng.shuffle(errors)
    rng.shuffle(others)
    out: list[Query] = []
    for literal in errors + others:
        if len(out) >= count:
            break
        hits = _rg_lines(root, literal)
        if not hits or len(hits) > MAX_SPANS:
            continue  # the constant is not written verbatim (escapes), or too common
        qid = f"{prefix}-lit-{len(out) + 1:03d}"
        spans = tuple(Span(p, n, n) for p, n in hits)
        out.append(Query(qid, f'"{literal}"', "exact_match", spans, split_for(qid), "literal"))
    empty: list[Query] = []
    for query in out[: max(1, count // 5)]:
        words = query.query.strip('"').split()
        altered = " ".join(reversed(words)) if len(words) > 1 else words[0] + " qzx"
        if _rg_lines(root, altered):
            continue
        qid = f"{prefix}-nolit-{len(empty) + 1:03d}"
        empty.append(
            Query(qid, f'"{altered}"', "exact_match", (), split_for(qid), "literal-absent")
        )
    return out + empty


class _Renamer(ast.NodeTransformer):
    """Rename the function, its parameters and its local variables to v0, v1, ..."""

    def __init__(self, names: set[str]) -> None:
        self.mapping: dict[str, str] = {}
        self.names = names

    def _new(self, name: str) -> str:
        if name not in self.mapping:
            self.mapping[name] = f"v{len(self.mapping)}"
        return self.mapping[name]

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.names:
            node.id = self._new(node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        if node.arg in self.names:
            node.arg = self._new(node.arg)
        return node


def rename_function(source: str) -> str | None:
    """The function with docstring dropped and local names renamed, or None if not possible."""
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return None
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    func = tree.body[0]
    body = func.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        func.body = body[1:] or [ast.Pass()]
    params = {a.arg for a in ast.walk(func.args) if isinstance(a, ast.arg)} - {"self", "cls"}
    stores = {
        n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    renamer = _Renamer(params | stores)
    renamer.visit(func)
    func.name = "f"
    func.decorator_list = []
    if not renamer.mapping:
        return None
    return ast.unparse(func)


def similar_queries(tags: list[Tag], root: Path, rng: random.Random, count: int,
                    prefix: str) -> list[Query]:  # fmt: skip
    pool = [t for t in tags if t.kind in ("function", "member") and _eligible(t)
            and 6 <= t.end - t.line + 1 <= 40]  # fmt: skip
    rng.shuffle(pool)
    out: list[Query] = []
    for tag in pool:
        if len(out) >= count:
            break
        lines = read_text(root, tag.path).splitlines()
        renamed = rename_function("\n".join(lines[tag.line - 1 : tag.end]))
        if renamed is None or renamed.count("\n") < 2:
            continue
        qid = f"{prefix}-sim-{len(out) + 1:03d}"
        out.append(Query(qid, renamed, "find_similar",
                         (Span(tag.path, tag.line, tag.end, tag.qualified),),
                         split_for(qid), "renamed"))  # fmt: skip
    return out


def generate_queries(
    root: Path, *, per_kind: int = 25, seed: int = 0, prefix: str | None = None
) -> tuple[list[Query], dict[str, Any]]:
    """Queries of four kinds drawn from the Python code under `root`; and counts per kind."""
    if not root.is_dir():
        raise MaguyvaError(f"{root}: not a directory")
    rng = random.Random(seed)
    prefix = prefix or root.name
    tags = run_ctags(root)
    if not tags:
        raise MaguyvaError(f"{root}: ctags found no Python definitions")
    files = sorted({t.path for t in tags if not _is_test(t.path)})
    kinds = {
        "definitions": definition_queries(tags, rng, per_kind, prefix),
        "references": reference_queries(root, tags, rng, per_kind, prefix),
        "literals": literal_queries(root, files, rng, per_kind, prefix),
        "similar": similar_queries(tags, root, rng, per_kind, prefix),
    }
    corpus = root.name if root.name in CORPORA else None
    queries = [replace(q, corpus=corpus) for qs in kinds.values() for q in qs]
    return queries, {k: len(v) for k, v in kinds.items()}
