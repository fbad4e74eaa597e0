"""What a written name says before any lookup: its parts (`split_chain`), whether a Python
variable renames or instantiates something, receiver words, decorators, and the name sets
(builtins, self names, class kinds) that resolution tests against."""

from __future__ import annotations

import builtins
import functools
import re

from maguyva.extract.types import Definition, FileExtraction
from maguyva.modalities.graph.modules import family_of

CLASS_KINDS = frozenset(
    {"class", "struct", "interface", "trait", "enum", "impl", "type", "object", "record",
     "module", "protocol", "union", "namespace"}
)  # fmt: skip
_BRACKETS = re.compile(r"[()\[\]{}<>]")
SELF_NAMES = frozenset({"self", "cls", "this", "Self", "@"})
PY_BUILTINS = frozenset(dir(builtins))
BUILTIN_TYPES = frozenset(f"builtins.{n}" for n in ("dict", "list", "set", "frozenset", "tuple",
                          "str", "bytes", "bytearray", "int", "float", "complex", "bool"))  # fmt: skip
# Families whose bare names are visible across files without an import (linker / package scope).
GLOBAL_SCOPE_FAMILIES = frozenset({"c", "x", "jvm", "cs"})

PROPERTY_DECORATORS = frozenset({"property", "cached_property", "functools.cached_property",
                                 "abc.abstractproperty", "classproperty"})  # fmt: skip

# Attributes every Python function or class has: `f.__doc__` is a use of `f`.
DEF_ATTRIBUTES = frozenset({"__doc__", "__name__", "__qualname__", "__module__", "__wrapped__",
                            "__func__", "__code__", "__defaults__", "__kwdefaults__",
                            "__annotations__", "__dict__"})  # fmt: skip
# Bases that add no methods a call on an instance could reach (for duck typing).
CLOSED_BASES = frozenset({"object", "Generic", "Protocol", "ABC", "abc.ABC", "typing.Generic",
                          "typing.Protocol", "Exception", "BaseException"})  # fmt: skip
# Calls whose result is not an instance of the called name.
NOT_CONSTRUCTORS = frozenset({"type", "super", "object", "getattr", "vars", "iter", "next"})


def _qualifier(qualified_name: str, name: str) -> str | None:
    """`Store.Get` (a Go method, no parent recorded) -> `Store`."""
    if qualified_name.endswith("." + name):
        return qualified_name[: -len(name) - 1]
    return None


def split_chain(written: str) -> list[str]:
    """`self.a.b` -> [self, a, b]; `pkg::f` -> [pkg, f]; `$this->m` -> [this, m];
    `super().m` -> [super(), m]; `a.b().c` -> [a, b(), c]."""
    text = written.strip().replace("?.", ".").replace("::", ".").replace("->", ".")
    text = text.replace("$", "").replace("new ", "")
    if not _BRACKETS.search(text):
        return [p for p in (x.strip() for x in text.split(".")) if p]
    parts: list[str] = []
    depth = 0
    cur = []
    for ch in text:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth = max(0, depth - 1)
            if depth == 0:
                cur.append("()" if ch == ")" else "[]")
                continue
        if depth:
            continue
        if ch == ".":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    parts = [p.strip() for p in parts]
    if parts and parts[0] == "super()":
        return parts
    return [p for p in parts if p]


_ALIAS = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]+)?=\s*([A-Za-z_][\w.]*)\s*$")


def alias_of(d: Definition, family: str) -> str:
    """`isfuture = base_futures.isfuture` -> "base_futures.isfuture": a Python variable that
    only renames another name (a re-export or an alias); "" for anything else."""
    if family != "py" or d.kind != "variable" or not d.signature:
        return ""
    m = _ALIAS.match(d.signature)
    return m.group(2) if m and m.group(1) == d.name and m.group(2) != d.name else ""


_INSTANCE = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]+)?=\s*([A-Za-z_][\w.]*)\s*\(")


def instance_of(d: Definition, family: str) -> str:
    """`_inst = Random()` (a module-level Python variable made by a call) -> "Random": the
    name called, which resolution then checks is a class; "" for anything else."""
    if family != "py" or d.kind != "variable" or d.parent or not d.signature:
        return ""
    m = _INSTANCE.match(d.signature)
    return m.group(2) if m and m.group(1) == d.name and m.group(2) not in NOT_CONSTRUCTORS else ""


_CLASS_AFFIXES = ("base", "mixin", "impl", "abc", "abstract", "generic", "default")
_MIN_RECEIVER_WORD = 3


def _receiver_word(recv: tuple[str, ...]) -> str:
    """The receiver's own name, normalised (`self._form_set` -> `formset`; `obj2` -> `obj`);
    "" when it is a call, a subscript, `self` or too short to say anything."""
    if not recv:
        return ""
    last = recv[-1]
    if not last.isidentifier() or last in SELF_NAMES:
        return ""
    word = last.lower().replace("_", "").rstrip("0123456789")
    return word if len(word) >= _MIN_RECEIVER_WORD else ""


def _class_words(name: str) -> tuple[str, ...]:
    """A class name and its forms without a Base/Mixin/... prefix or suffix, lowercased."""
    low = name.lower().replace("_", "")
    out = {low}
    for affix in _CLASS_AFFIXES:
        if low.endswith(affix) and len(low) > len(affix):
            out.add(low[: -len(affix)])
        if low.startswith(affix) and len(low) > len(affix):
            out.add(low[len(affix) :])
    return tuple(sorted(out))


def _looks_like_class(dotted: str) -> bool:
    """A library name that is probably a class (so `x = Name()` makes an instance of it)."""
    last = dotted.rsplit(".", 1)[-1]
    return last[:1].isupper() or dotted in BUILTIN_TYPES


@functools.lru_cache(maxsize=1 << 16)
def _split_cached(written: str) -> tuple[str, ...]:
    return tuple(split_chain(written))


def _decorated(ex: FileExtraction, family: str) -> dict[str, frozenset[str]]:
    """Python decorators by definition: the names referenced between a definition's first
    line (its decorators) and the line of its name."""
    if family != "py":
        return {}
    spans: dict[str, list[tuple[int, int]]] = {}
    for d in ex.definitions:  # a name defined twice (a getter and its setter): every span
        if d.name_line > d.start_line:
            spans.setdefault(d.qualified_name, []).append((d.start_line, d.name_line))
    out: dict[str, set[str]] = {}
    for ref in ex.references:
        for lo, hi in spans.get(ref.context or "", ()):
            if lo <= ref.line < hi:
                out.setdefault(ref.context or "", set()).add(ref.name)
    return {k: frozenset(v) for k, v in out.items()}


def _is_property(decorators: frozenset[str], name: str) -> bool:
    """`@property`, `@cached_property`, ... or `@name.setter` / `.getter` / `.deleter` (a
    property defined again with its setter: the name is read as an attribute)."""
    return bool(decorators & PROPERTY_DECORATORS) or any(
        d in decorators for d in (f"{name}.setter", f"{name}.getter", f"{name}.deleter")
    )


def family_for(language: str | None) -> str:
    return family_of(language)


def rust_relative(mods: list[str], parts: tuple[str, ...] | list[str]) -> list[str]:
    """A `self::`/`super::` path written inside the inline modules `mods` (outermost first)
    as a path from the file's module: in `mod a { mod b { .. } }`, `self::f` -> `self::a::b::f`,
    `super::f` -> `self::a::f`, `super::super::super::f` -> `super::f`."""
    segs = list(parts)
    if segs[:1] == ["self"]:
        return ["self", *mods, *segs[1:]]
    k = 0
    while k < len(segs) and segs[k] == "super":
        k += 1
    m = len(mods)
    return ["self", *mods[: m - k], *segs[k:]] if k <= m else ["super"] * (k - m) + segs[k:]
