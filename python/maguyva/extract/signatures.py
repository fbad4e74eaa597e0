"""What a definition's text gives beyond its name: its signature, its doc comment (or
docstring) and where its statements start (for the chunker)."""

from __future__ import annotations

import re

import tree_sitter as ts

from maguyva.extract.grammars import Grammar

MAX_SIGNATURE = 240
MAX_DOC = 1200


def _text(data: bytes, node: ts.Node) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", "replace")


_SPACE = re.compile(r"\s+")


_BODY_TYPES = frozenset(
    {"block", "body", "compound_statement", "declaration_list", "class_body", "field_declaration_list",
     "statement_block", "function_body", "enum_body", "interface_body", "body_statement",
     "template_body", "do_group", "enum_member_declaration_list", "protocol_body",
     "enum_class_body", "class_declaration_list", "template_declaration_list"}
)  # fmt: skip


def _outer(node: ts.Node) -> ts.Node:
    """Climb wrappers that hold only this definition (`type X struct` in Go, `export`,
    `const f = () => ...`) so that doc comments and the chunk start at the real start."""
    parent = node.parent
    while (
        parent is not None
        and parent.type in _WRAPPERS
        and parent.named_child_count <= 2
        and node.prev_named_sibling is None
    ) or (parent is not None and parent.type in _WRAPPERS and parent.named_child_count == 1):
        node, parent = parent, parent.parent
    return node


def _core(node: ts.Node) -> ts.Node:
    """The definition proper inside wrappers (Python decorators, export statements)."""
    inner = node.child_by_field_name("definition") or node.child_by_field_name("declaration")
    return inner if inner is not None else node


def _body(node: ts.Node) -> ts.Node | None:
    body = node.child_by_field_name("body")
    if body is not None:
        return body
    for child in node.named_children:
        if child.type in _BODY_TYPES:
            return child
    return None


def _signature(data: bytes, node: ts.Node) -> str:
    """A definition node's header (up to its body or first line), whitespace collapsed."""
    core = _core(node)
    body = _body(core)
    end = body.start_byte if body is not None and body.start_byte > core.start_byte else None
    if end is None:
        line_end = data.find(b"\n", core.start_byte)
        end = core.end_byte if line_end < 0 else min(line_end, core.end_byte)
    sig = _SPACE.sub(" ", data[core.start_byte : end].decode("utf-8", "replace")).strip()
    sig = sig.rstrip("{:=").rstrip()
    return sig if len(sig) <= MAX_SIGNATURE else sig[: MAX_SIGNATURE - 1] + "…"


_COMMENT_MARK = re.compile(r"^\s*(?:/\*\*?|\*/|\*|///?!?|#+|--)\s?")


def _clean_comment(text: str) -> str:
    lines = []
    for line in text.splitlines():
        line = _COMMENT_MARK.sub("", line.rstrip())
        line = line.removesuffix("*/").rstrip()
        lines.append(line)
    return "\n".join(lines).strip()


def _doc(grammar: Grammar, data: bytes, node: ts.Node) -> tuple[str, int | None]:
    """The docstring (Python) or the contiguous comments just above the definition, and the
    first line of those comments (so that the chunk can start there)."""
    core = _core(node)
    if grammar.spec.doc_style == "docstring":
        body = _body(core)
        if body is not None and body.named_child_count:
            first = body.named_children[0]
            if first.type == "expression_statement" and first.named_child_count:
                first = first.named_children[0]
            if first.type == "string":
                raw = _text(data, first)
                return _clean_docstring(raw)[:MAX_DOC], None
        return "", None
    prev = node.prev_named_sibling
    comments: list[ts.Node] = []
    line = node.start_point[0]
    while prev is not None and prev.end_point[0] >= line - 1:
        if prev.type in grammar.spec.comment_types:
            comments.append(prev)
        elif prev.type not in _ATTRIBUTES or comments:
            break
        line = prev.start_point[0]
        prev = prev.prev_named_sibling
    if not comments:
        return "", None
    comments.reverse()
    text = "\n".join(_clean_comment(_text(data, c)) for c in comments)
    return text[:MAX_DOC], comments[0].start_point[0] + 1


_WRAPPERS = frozenset(
    {"export_statement", "decorated_definition", "template_declaration", "ambient_declaration",
     "type_declaration", "const_declaration", "var_declaration", "lexical_declaration",
     "variable_declaration", "expression_statement", "field_declaration", "property_declaration",
     "declaration", "type_definition"}
)  # fmt: skip
# Siblings between a doc comment and its definition (Rust `#[derive]`, Java/C# attributes).
_ATTRIBUTES = frozenset({"attribute_item", "attribute_list", "annotation", "marker_annotation"})


def _clean_docstring(raw: str) -> str:
    text = raw.strip()
    text = re.sub(r"^[rRbBuUfF]*('''|\"\"\"|'|\")", "", text)
    text = re.sub(r"('''|\"\"\"|'|\")$", "", text)
    lines = text.strip().splitlines()
    return "\n".join(line.strip() for line in lines).strip()


def _statement_starts(node: ts.Node) -> list[int]:
    """1-based lines where the direct statements of a definition's body start (split points
    for large definitions), one level down into a lone nested block."""
    body = _body(_core(node))
    if body is None:
        return []
    children = body.named_children
    if len(children) == 1 and _body(children[0]) is not None:
        inner = _body(children[0])
        children = inner.named_children if inner is not None else children
    return [c.start_point[0] + 1 for c in children]
