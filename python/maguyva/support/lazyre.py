"""Regular expressions compiled on first use.

The query classifier and its helpers hold ~140 module-level patterns that cost ~45 ms to
compile at import; a process answering one quoted literal from the shell uses a handful.
A lazy pattern compiles on its first method call and then keeps the compiled pattern's
bound methods on itself, so later calls cost what a compiled pattern's do.
"""

from __future__ import annotations

import re
from typing import Any, cast

_METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split")


class _LazyPattern:
    def __init__(self, source: str, flags: int) -> None:
        self._source = source
        self._flags = flags

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        compiled = re.compile(self._source, self._flags)
        for method in _METHODS:
            setattr(self, method, getattr(compiled, method))
        self.pattern = compiled.pattern
        self.flags = compiled.flags
        self.groupindex = compiled.groupindex
        self.groups = compiled.groups
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy_compile({self._source!r}, {self._flags!r})"


def lazy_compile(source: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile(source, flags)`, compiled when first used."""
    return cast("re.Pattern[str]", _LazyPattern(source, int(flags)))
