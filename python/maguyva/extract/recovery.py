"""Definitions in the parts of a shell script that tree-sitter-bash gives up on.

One construct the grammar misreads (a `[[ $cur =~ ^(\\$\\{[#!]?)... ]]` regex, an extglob
pattern) can turn the rest of a file into one ERROR node, or into string content:
bash-completion's `bash_completion` (2,300 lines) lost every function after line 635. Scripts
are written as top-level blocks that end with a `}` in column 0, so each such block inside a
top-level ERROR node is parsed again on its own, through tree-sitter's included ranges
(positions stay the file's): a misread block loses only itself. Only definitions are taken
from the blocks; their calls and references stay lost."""

from __future__ import annotations

import re
from collections.abc import Iterator

import tree_sitter as ts

from maguyva.extract.grammars import Grammar

_BLOCK_END = re.compile(rb"^\}[ \t]*(?:[;&|#].*)?$", re.M)
_FUNCTION_HEAD = re.compile(rb"^[ \t]*(?:function[ \t]+[^\s(]+|[^\s(){}=#$\"']+[ \t]*\(\))", re.M)


def shell_blocks(grammar: Grammar, data: bytes, root: ts.Node) -> Iterator[ts.Node]:
    """The root of each block, parsed alone, of the top-level ERROR nodes that holds a
    function header; none when the tree has no error at the top."""
    if not root.has_error:
        return
    errors = [root] if root.type == "ERROR" else [c for c in root.children if c.type == "ERROR"]
    for error in errors:
        start = _line_start(data, error.start_byte)
        line = data.count(b"\n", 0, start)
        for end_match in _BLOCK_END.finditer(data, start, error.end_byte):
            end = end_match.end()
            if _FUNCTION_HEAD.search(data, start, end):
                end_line = line + data.count(b"\n", start, end)
                end_column = end - _line_start(data, end)
                start_column = start - _line_start(data, start)
                block = ts.Range((line, start_column), (end_line, end_column), start, end)
                tree = ts.Parser(grammar.language, included_ranges=[block]).parse(data)
                yield tree.root_node
            line += data.count(b"\n", start, end)
            start = end


def _line_start(data: bytes, offset: int) -> int:
    return data.rfind(b"\n", 0, offset) + 1
