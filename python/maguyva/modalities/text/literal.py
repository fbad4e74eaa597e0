"""The text modality's literal ranking: the chunks that contain a literal (or a regex's
matches), definition lines and whole-word matches first, then match density, then shorter
paths, with tests, vendored and generated files after the implementation.

The search, the grouping of matching lines by enclosing chunk and the choice of the best `k`
groups run in Rust (`TextIndex.literal_top`, `rust/src/trigram/rank.rs`); Python decides what
the `regex` crate cannot decide as `re` would (a definition line that is not ASCII), orders
the few groups returned and builds their hits.
"""

from __future__ import annotations

import re
from typing import Any

from maguyva import _core
from maguyva.errors import BadQueryError
from maguyva.modalities.protocol import RetrieverQuery
from maguyva.model import Hit

MAX_FILES_RANKED = 2000
MAX_LINES_PER_FILE = 200
CASES = ("sensitive", "insensitive", "smart")

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEF_WORDS = (
    r"def|class|fn|func|function|struct|enum|trait|interface|type|impl|const|let|var|static|"
    r"module|object|record|namespace|macro_rules!|#\s*define|typedef|val|package"
)
_TESTISH = re.compile(
    r"(^|/)(tests?|testing|spec|__tests__|fixtures?)(/|$)|(^|/)test_[^/]*$|_test\.\w+$"
)


def is_demoted(path: str) -> bool:
    return bool(_core.is_demoted_path(path) or _TESTISH.search(path))


def demoted_flags(paths: list[str]) -> bytes:
    """One flag per path (`is_demoted`), for `TextIndex.literal_top`."""
    return bytes(is_demoted(p) for p in paths)


def definition_source(target: str) -> str | None:
    """The pattern of a definition line of `target`'s last name (`re` syntax), or None."""
    name = target.rsplit(".", 1)[-1].strip()
    if not IDENT.fullmatch(name):
        return None
    return (
        rf"^\s*(?:(?:export|pub(?:\([\w:]+\))?|public|private|protected|static|async|abstract"
        rf"|final|default|inline|virtual|override)\s+)*(?:{_DEF_WORDS})\b[^\n]*?\b{re.escape(name)}\b"
    )


def definition_pattern(target: str) -> re.Pattern[str] | None:
    source = definition_source(target)
    return None if source is None else re.compile(source)


_ASCII = {r"\s": r"[\t\n\x0b\x0c\r \x1c-\x1f]", r"\w": "0-9A-Za-z_", r"\b": r"(?-u:\b)"}
"""`definition_source`'s escapes in ASCII (its one `\\w` is inside a class)."""
_ESCAPE = re.compile(r"\\[sbw]")


def rust_dialect(definition: str | re.Pattern[str] | None) -> str | None:
    """The definition pattern for the `regex` crate, which decides ASCII lines only (the
    others go to `re`): `\\s`, `\\w` and `\\b` as ASCII classes and boundary, which on ASCII
    lines match as Python's Unicode ones (`\\s` also `\\x1c`-`\\x1f`, as `str.isspace`):
    the crate builds Unicode `\\w` and `\\b` from large tables, ~0.1-1 ms per new name."""
    if definition is None:
        return None
    source = definition if isinstance(definition, str) else definition.pattern
    return _ESCAPE.sub(lambda m: _ASCII[m.group(0)], source)


WORD_BYTES = bytes(
    1 if (chr(b).isalnum() or chr(b) == "_") else 0 for b in range(256)
)  # what `any_whole_word` sees glued to a match: a byte decoded as latin-1


def any_whole_word(text: str, columns: list[tuple[int, int]]) -> bool:
    """True when one of the byte ranges `columns` of the line is not glued to a word
    character (the line is encoded once for all of them)."""
    raw = text.encode("utf-8", "surrogateescape")
    for start, end in columns:
        before = raw[start - 1 : start].decode("latin-1") if start > 0 else ""
        after = raw[end : end + 1].decode("latin-1")
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return True
    return False


def literal_hits(index: Any, query: RetrieverQuery, k: int, demoted: bytes) -> list[Hit]:
    """The best `k` chunks of `index` (a `_core.TextIndex`) holding `query.target` (or its
    regex), ranked; `demoted` holds `demoted_flags` of the index's paths. With
    `query.first_per_file`, only each file's first hit carries its snippet, lines and extra
    (`_ranked_hits`)."""
    target = query.target if query.regex else query.target.strip()
    source = None if query.regex else definition_source(target)
    definition: re.Pattern[str] | None = None  # compiled for a line that is not ASCII only
    case = query.case
    if case not in CASES:
        raise BadQueryError(f"case must be one of {', '.join(CASES)}, got {case!r}")
    options = dict(
        definition=rust_dialect(source), word=WORD_BYTES, demoted=demoted, k=k,
        regex=query.regex, case=case, whole_word=query.whole_word, path_glob=query.path_glob,
        max_lines=MAX_FILES_RANKED * MAX_LINES_PER_FILE, max_files=MAX_FILES_RANKED,
        max_lines_per_file=MAX_LINES_PER_FILE,
    )  # fmt: skip
    try:
        ranked = None
        if query.first_per_file:  # a line that is not ASCII: Python's `re` decides, as below
            decide = None if source is None else _decider(source)
            ranked = index.literal_ranked(target, **options, decide=decide)
        if ranked is not None:
            return _ranked_hits(*ranked)
        # Rust groups each file's lines by enclosing chunk and keeps the best k groups (and
        # those whose definition flag `re` must decide): a common literal matches thousands
        # of chunks, and only these cross the binding.
        files, groups, _ = index.literal_top(target, **options)
    except BadQueryError:
        raise
    except ValueError as exc:
        raise BadQueryError(str(exc)) from exc
    # The groups come in search order; a stable sort on the key orders them as a sort of
    # every group would (the best k decided ones are exactly those of the full ranking).
    ranked: list[tuple[tuple[Any, ...], tuple[Any, ...], bool]] = []
    for group in groups:
        slot, start, end, _chunk_id, _snippet, _lines, columns, whole, is_def, texts = group
        path, _, demoted_file = files[slot]
        if source is None:
            is_def = False
        elif is_def is None:  # a line that is not ASCII: Python's `re` decides
            definition = definition or re.compile(source)
            is_def = any(definition.search(text) for text in texts)
        density = len(columns) / max(1, end - start + 1)
        sort_key = (not is_def, demoted_file, not whole, -density, len(path), path, start)
        ranked.append((sort_key, group, is_def))
    ranked.sort(key=lambda entry: entry[0])
    hits = []
    for sort_key, group, is_def in ranked[:k]:
        slot, start, end, chunk_id, snippet, group_lines, columns, whole = group[:8]
        path, file_lines, _ = files[slot]
        score = 2.0 * is_def + 1.0 * whole + min(-sort_key[3], 1.0)
        hits.append(
            Hit(
                path=path,
                start_line=start,
                end_line=end,
                key=chunk_id,
                score=round(score, 4),
                snippet=snippet,
                lines=group_lines,
                extra={
                    "columns": columns,
                    "definition": is_def,
                    "whole_word": whole,
                    # every matching line of the file, also those of chunks ranked below k:
                    # answers list each match, as ripgrep does (one list per file, shared)
                    "file_lines": file_lines,
                },
            )
        )
    return hits


def _decider(source: str) -> Any:
    """Whether a group whose lines are `texts` holds a definition, as `literal_hits` decides
    (`source` compiled on the first line that is not ASCII only)."""
    compiled: list[re.Pattern[str]] = []

    def decide(texts: list[str]) -> bool:
        if not compiled:
            compiled.append(re.compile(source))
        return any(compiled[0].search(text) for text in texts)

    return decide


def _ranked_hits(files: list[Any], firsts: list[Any], slots: list[int]) -> list[Hit]:
    """`literal_hits` from `TextIndex.literal_ranked`: each file's first group (in ranked
    order) as a hit with its details, and every ranked group as its file's first hit (a
    direct answer shows a file by its first hit, fused by file, and a key repeated in one
    list counts at its first rank only: the fused results are those of every group as its
    own hit, but a common literal's 5,000 groups make and cross ~400, not 5,000; `present`
    takes a file's lines from `file_lines`). `tests/test_lines_batched.py` holds it to the
    full hits' answers."""
    first: list[Hit] = []
    for (path, file_lines, _), group in zip(files, firsts, strict=True):
        start, end, chunk_id, n_columns, whole, is_def, (snippet, group_lines, columns) = group
        score = round(2.0 * is_def + 1.0 * whole + min(n_columns / max(1, end - start + 1), 1.0), 4)
        extra = {"columns": columns, "definition": is_def, "whole_word": whole,
                 "file_lines": file_lines}  # fmt: skip
        first.append(Hit(path=path, start_line=start, end_line=end, key=chunk_id, score=score,
                         snippet=snippet, lines=group_lines, extra=extra))  # fmt: skip
    return [first[slot] for slot in slots]
