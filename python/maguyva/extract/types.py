"""What structural extraction produces for one file; the graph and the chunker consume it.

Lines are 1-based and inclusive. Names are as written in the source; `qualified_name` joins the
enclosing definitions with `.` (`Session.request`, `pkg.mod.func` is NOT implied: it is relative
to the file). Everything here is plain data so that it crosses process boundaries (extraction
runs in worker processes) and serialises to JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Definition:
    """A named definition: function, method, class, struct, interface, enum, trait, ...

    `parent` is the qualified name of the enclosing definition, if any.
    """

    kind: str
    name: str
    qualified_name: str
    start_line: int
    end_line: int
    signature: str = ""
    doc: str = ""
    parent: str | None = None
    bases: list[str] = field(default_factory=list)  # superclasses / implemented interfaces
    name_line: int = 0  # line of the name itself (ctags' line; start_line includes decorators)
    declaration: bool = False  # a declaration without a body (prototype, signature, stub)


@dataclass(slots=True)
class Import:
    """An import: `module` is what is imported from (`os.path`, `./util`, `fmt`, `crate::x`),
    `name` the imported name (None for a whole-module import), `alias` the local name bound."""

    module: str
    name: str | None
    alias: str | None
    line: int
    level: int = 0  # Python relative-import dots


@dataclass(slots=True)
class Call:
    """A call site: `callee` is the called name or attribute chain as written (`self.f`,
    `os.path.join`, `foo`); `caller` the qualified name of the enclosing definition."""

    callee: str
    line: int
    caller: str | None = None


@dataclass(slots=True)
class Reference:
    """A use of a name that is not a call or a definition (type annotations, arguments, ...)."""

    name: str
    line: int
    context: str | None = None  # qualified name of the enclosing definition


@dataclass(slots=True)
class FileExtraction:
    """Everything extracted from one file. `error` is set (and the lists may be partial) when
    the file could not be fully parsed within its budget."""

    path: str
    language: str | None
    definitions: list[Definition] = field(default_factory=list)
    imports: list[Import] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    error: str | None = None
