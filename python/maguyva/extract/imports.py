"""Turn an import match into `Import` records, per language where the shape needs it.

Queries capture `@import` (the statement), `@import.module`, `@import.name`, `@import.alias`,
`@import.wildcard` and, for nested forms (Rust `use a::{b, c as d}`), `@import.tree`.
"""

from __future__ import annotations

import re

import tree_sitter as ts

from maguyva.extract.types import Import

_QUOTES = "\"'`<>"
_SPACE = re.compile(r"\s+")


def _text(data: bytes, node: ts.Node) -> str:
    return _SPACE.sub("", data[node.start_byte : node.end_byte].decode("utf-8", "replace"))


def build(language: str, data: bytes, caps: dict[str, list[ts.Node]]) -> list[Import]:
    """The imports one match describes."""
    stmt = caps["import"][0]
    line = stmt.start_point[0] + 1
    if "import.tree" in caps:
        return [
            Import(module, name, alias, line)
            for module, name, alias in _use_tree(data, caps["import.tree"][0])
        ]
    if language == "scala":
        return _scala(data, stmt)
    module = _text(data, caps["import.module"][0]).strip(_QUOTES) if "import.module" in caps else ""
    name = _text(data, caps["import.name"][0]).strip(_QUOTES) if "import.name" in caps else None
    alias = _text(data, caps["import.alias"][0]).strip(_QUOTES) if "import.alias" in caps else None
    if "import.wildcard" in caps:
        name = "*"
    if "import.default" in caps:  # JS `import x from "m"`: x is the module's default export
        name, alias = "default", _text(data, caps["import.default"][0])
    level = 0
    if language == "python":
        stripped = module.lstrip(".")
        level = len(module) - len(stripped)
        module = stripped
    elif language in ("java", "kotlin", "scala", "csharp") and name is None and "." in module:
        # `import a.b.C` binds C: record it as from-module a.b, name C.
        if module.endswith(".*"):
            module, name = module[:-2], "*"
        elif language != "csharp":
            module, name = module.rsplit(".", 1)
    elif language == "php" and name is None and "\\" in module:
        module, name = module.rsplit("\\", 1)
    if alias == name:
        alias = None
    if not module and not name:
        return []
    return [Import(module, name, alias, line, level)]


def _use_tree(data: bytes, node: ts.Node) -> list[tuple[str, str | None, str | None]]:
    """Flatten a Rust use tree: `a::b::{c, d as e, f::*}` -> (a::b, c), (a::b, d, e), (a::b::f, *).

    Iterative (an explicit stack) so that absurd nesting cannot exhaust Python's stack.
    """
    out: list[tuple[str, str | None, str | None]] = []
    stack: list[tuple[str, ts.Node]] = [("", node)]
    while stack:
        prefix, cur = stack.pop()
        kind = cur.type
        if kind == "scoped_use_list":
            path = cur.child_by_field_name("path")
            sub = _join(prefix, _text(data, path)) if path is not None else prefix
            lst = cur.child_by_field_name("list")
            if lst is not None:
                stack.extend((sub, child) for child in reversed(lst.named_children))
        elif kind == "use_list":
            stack.extend((prefix, child) for child in reversed(cur.named_children))
        elif kind == "use_as_clause":
            path = cur.child_by_field_name("path")
            alias = cur.child_by_field_name("alias")
            if path is not None:
                module, name = _split(_join(prefix, _text(data, path)))
                out.append((module, name, _text(data, alias) if alias is not None else None))
        elif kind == "use_wildcard":
            text = _text(data, cur).removesuffix("::*").removesuffix("*")
            out.append((_join(prefix, text), "*", None))
        elif kind in ("scoped_identifier", "identifier", "crate", "self", "super", "metavariable"):
            full = _join(prefix, _text(data, cur))
            module, name = _split(full)
            out.append((module, name, None))
    return out


def _join(prefix: str, rest: str) -> str:
    return f"{prefix}::{rest}" if prefix and rest else prefix or rest


def _split(path: str) -> tuple[str, str | None]:
    if "::" in path:
        module, name = path.rsplit("::", 1)
        return module, name
    return path, None


def _scala(data: bytes, stmt: ts.Node) -> list[Import]:
    """`import a.b.c`, `import a.b.{c, d => e}`, `import a.b._` (path fields, then selectors)."""
    line = stmt.start_point[0] + 1
    path: list[str] = []
    out: list[Import] = []
    for index, child in enumerate(stmt.children):
        field = stmt.field_name_for_child(index)
        if field == "path" and child.is_named:
            path.append(_text(data, child))
        elif child.type == "namespace_wildcard":
            out.append(Import(".".join(path), "*", None, line))
        elif child.type == "namespace_selectors":
            for sel in child.named_children:
                if sel.type == "arrow_renamed_identifier":
                    name, alias = sel.child_by_field_name("name"), sel.child_by_field_name("alias")
                    out.append(
                        Import(
                            ".".join(path),
                            _text(data, name) if name else None,
                            _text(data, alias) if alias else None,
                            line,
                        )
                    )
                elif sel.type in ("identifier", "namespace_wildcard"):
                    name = "*" if sel.type == "namespace_wildcard" else _text(data, sel)
                    out.append(Import(".".join(path), name, None, line))
    if not out and path:
        out.append(Import(".".join(path[:-1]), path[-1], None, line))
    return out
