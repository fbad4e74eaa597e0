"""The interface every modality implements, and the context the indexer hands it.

A modality has two halves. `build(ctx)` writes its part of a new index generation into
`ctx.out_dir / <modality>` and returns a small report. `open(gen_dir, manifest)` loads that part
read-only and returns an object that answers `search(query, k)`. The engine never knows more
about a modality than this file says.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

from maguyva.model import Chunk, Hit, SourceFile
from maguyva.repo.reader import read_text


@dataclass(slots=True)
class RetrieverQuery:
    """What a retriever is asked. `target` is the classifier's extraction (the identifier or
    literal to look for); `terms` are the salient words of a natural-language question."""

    text: str
    intent: str
    target: str
    terms: list[str] = field(default_factory=list)
    snippet: str | None = None
    case: str = "smart"  # "sensitive" | "insensitive" | "smart"
    whole_word: bool = False
    regex: bool = False
    path_glob: str | None = None
    language: str | None = None
    kind: str | None = None  # a definition kind asked for ("class", "function", ...)
    depth: int = 2  # graph traversal depth for impact/callers
    first_per_file: bool = False
    """Set by the engine when only each file's first hit is read in full (one list answered
    directly, shown by file): a retriever may then leave the others' snippets and lines out."""


@dataclass(slots=True)
class BuildContext:
    """Everything the indexer knows when a modality builds its part of a generation.

    `extraction` maps a path to the structural modality's per-file extraction (definitions,
    imports, calls); it is empty when structural extraction is not available. `chunks` always
    holds the chunks of every file (syntax-aware when a grammar exists, line windows otherwise).

    Both are read-only views backed by the generation's segments (`indexer.SegmentChunks`, a
    Sequence that decodes one segment at a time while iterated; `indexer.SegmentExtraction`, a
    Mapping that decodes one file per access): iterate them, index them, take `len()`, but do
    not copy them whole (`list(ctx.chunks)`, `dict(ctx.extraction)`) unless the modality really
    needs every record at once, since that is what makes a build's memory grow with the
    repository. Plain lists and dicts are accepted too (tests, tools).
    """

    root: Path
    out_dir: Path
    files: list[SourceFile]
    chunks: Sequence[Chunk]
    extraction: Mapping[str, Any]
    config: dict[str, Any]
    cache_dir: Path
    progress: Callable[[str, int, int], None] = lambda phase, done, total: None
    previous_dir: Path | None = None  # the generation being replaced, for reuse
    changes: Any = None  # changes.ChangeSet since previous_dir (None: build everything)

    def read_text(self, path: str) -> str:
        """Read a file of the repository as text (invalid UTF-8 replaced)."""
        return read_text(self.root, path)


@runtime_checkable
class Searcher(Protocol):
    """The read side of a modality, loaded from one generation directory."""

    modality: ClassVar[str]

    def search(self, query: RetrieverQuery, k: int) -> list[Hit]:
        """Return at most `k` hits, best first. Must be thread-safe; release the GIL in
        native code so that modalities of one query really overlap."""
        ...


# -- optional capabilities of a searcher ---------------------------------------------------------
# The engine and the API check these once per call with `isinstance` (runtime-checkable: the
# methods are present), never by probing names: a modality that offers a capability says so by
# implementing the method, and this file is the list of what can be offered.


@runtime_checkable
class Warms(Protocol):
    """Builds, ahead of the first question, tables it would otherwise build on it."""

    def warm(self) -> None: ...


@runtime_checkable
class ReportsBehind(Protocol):
    """May answer from an earlier generation than the index's (the graph follows an update)."""

    def behind_note(self) -> str | None:
        """A one-line note when its answers are behind the index, else None."""
        ...


@runtime_checkable
class ReportsCoverage(Protocol):
    """Covers only part of the repository while a build fills it in (semantic never gates)."""

    def coverage(self) -> dict[str, Any]:
        """Counts: `chunks`, `embedded`, `head_only`, pending and texts left."""
        ...

    def coverage_note(self) -> str | None:
        """A one-line note while the coverage is partial, else None."""
        ...


@runtime_checkable
class KeysByChunk(Protocol):
    """Its hits' keys are this generation's chunk ids already: the engine skips the look-up."""

    chunk_keys: ClassVar[bool]


@runtime_checkable
class CallGraph(Protocol):
    """References, callers, callees and impact of a symbol (the graph modality)."""

    def references(self, symbol: str) -> list[Hit]: ...

    def callers(self, symbol: str, depth: int = 1) -> list[Hit]: ...

    def callees(self, symbol: str) -> list[Hit]: ...

    def impact(self, symbol: str, depth: int = 2) -> list[Hit]: ...


@runtime_checkable
class Greps(Protocol):
    """ripgrep-like matching lines (the text modality)."""

    def grep(
        self,
        pattern: str,
        *,
        regex: bool = False,
        case: str = "smart",
        whole_word: bool = False,
        path_glob: str | None = None,
        max_results: int = 1000,
    ) -> list[Any]: ...


class Modality(Protocol):
    """The build side and the loader of a modality (implemented as a class with classmethods
    or a module-level object)."""

    name: ClassVar[str]

    def build(self, ctx: BuildContext) -> dict[str, Any]:
        """Write this modality's files under `ctx.out_dir / name`; return a JSON-able report
        (counts, timings, skipped files) that is stored in the manifest."""
        ...

    def open(self, gen_dir: Path, manifest: dict[str, Any]) -> Searcher:
        """Load this modality read-only; raise `ModalityUnavailable` if it was not built."""
        ...


@runtime_checkable
class VerifiableModality(Protocol):
    """Optional third part of a modality, used by `maguyva fsck`: a modality whose `MODALITY`
    object has `verify` is checked by it; one without is checked by the generation's
    checksums only (every file's size and CRC-32, which catch any bit flip or truncation)."""

    def verify(self, directory: Path) -> list[str]:
        """Problems of this modality's files under `directory` (`<generation>/<name>/`), one
        human-readable line each; [] when sound. Checks what only the modality knows (internal
        offsets, counts that must agree, a model or dimension mismatch). Must not raise for
        damaged input."""
        ...


def chunk_spans(chunks: Iterable[Chunk]) -> Iterator[tuple[str, int, int, str]]:
    """`(path, start_line, end_line, id)` of every chunk of `ctx.chunks`, without the chunks'
    text: what a modality needs to map a line to its chunk, at a fraction of the memory of
    the chunks themselves (a segment-backed view never builds the `Chunk` objects)."""
    spans = getattr(chunks, "spans", None)
    if callable(spans):
        return spans()
    return ((c.path, c.start_line, c.end_line, c.id) for c in chunks)


def iter_lines(text: str) -> Iterable[tuple[int, str]]:
    """Yield (1-based line number, line) pairs."""
    return enumerate(text.splitlines(), start=1)
