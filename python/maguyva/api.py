"""The Python API: one `Index` per repository, with the same options as the CLI.

>>> import pathlib, tempfile
>>> repo = pathlib.Path(tempfile.mkdtemp())
>>> _ = (repo / "greet.py").write_text(
...     "def greet(name):\\n    return f'hello {name}'\\n\\n\\ndef main():\\n    greet('you')\\n")
>>> index = Index.open(repo)
>>> index.build(progress=None).files
1
>>> response = index.search("where is greet defined")
>>> response.intent, response.results[0].path, response.results[0].start_line
('find_definition', 'greet.py', 1)
>>> [hit.path for hit in index.find_symbol("greet")]
['greet.py']
>>> index.read_chunk("greet.py", 1, 2).text
"def greet(name):\\n    return f'hello {name}'"
>>> index.read_chunk("../etc/passwd", 1, 2)
Traceback (most recent call last):
  ...
maguyva.errors.PathEscapeError: '../etc/passwd': path is outside the repository root
>>> import shutil; shutil.rmtree(repo)

Queries accept the Zoekt-like syntax of `query_syntax` (`"phrase"`, `/regex/`, `file:`,
`lang:`, `case:`, `sym:`, `-term`); pass `syntax=False` to send the words as written.
`Index` is thread-safe: searches may run concurrently, and a search after `build()` (or after
another process committed a new generation) uses the newest generation.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from maguyva.config import SCHEMA, effective_config, index_dir_for
from maguyva.errors import BadQueryError, MaguyvaError, ModalityUnavailable
from maguyva.modalities.protocol import CallGraph, Greps
from maguyva.model import Hit, Response, Result
from maguyva.query.filters import check_kind, check_language, check_path_glob, normalize_language
from maguyva.query.pasted import parse_pasted
from maguyva.query.syntax import ParsedQuery, parse, path_matches
from maguyva.repo.languages import detect_language
from maguyva.repo.paths import confine, contained_paths, relative, resolve_root, under
from maguyva.repo.reader import read_bytes
from maguyva.store.generations import MANIFEST, IndexDir

if TYPE_CHECKING:  # imported lazily at run time: opening an index need not load the builder
    from maguyva.build.indexer import BuildSummary
    from maguyva.query.engine import Engine

Progress = Callable[[str, int, int], None]

CASE_VALUES = ("smart", "sensitive", "insensitive")

MAX_FILTER_FETCH = 3200
"""Deepest fused candidate list a filtered search looks at before it answers short."""


@dataclass(slots=True)
class ChunkText:
    """Lines `start_line..end_line` (1-based, inclusive) of one file, as `read_chunk` returns."""

    path: str
    start_line: int
    end_line: int
    total_lines: int
    text: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class Filters:
    """Result filters applied after fusion (the authority, whatever the retrievers honour)."""

    paths: list[str] = field(default_factory=list)
    globs: list[str] = field(default_factory=list)  # query `file:` terms: every one must match
    any_globs: list[str] = field(default_factory=list)  # -g / path_glob: one must match (rg)
    exclude_globs: list[str] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)
    exclude_languages: list[str] = field(default_factory=list)
    exclude_terms: list[str] = field(default_factory=list)
    case_sensitive: bool = False

    def active(self) -> bool:
        return any((self.paths, self.globs, self.any_globs, self.exclude_globs, self.languages,
                    self.exclude_languages, self.exclude_terms))  # fmt: skip

    def single_glob(self) -> str | None:
        """The one include glob a retriever can apply itself, when there is exactly one."""
        both = self.globs + self.any_globs
        return both[0] if len(both) == 1 else None

    def keep(self, path: str, text: str) -> bool:
        if self.paths and not under(path, self.paths):
            return False
        if any(not path_matches(path, g) for g in self.globs):
            return False
        if self.any_globs and not any(path_matches(path, g) for g in self.any_globs):
            return False
        if any(path_matches(path, g) for g in self.exclude_globs):
            return False
        language = detect_language(path)
        if self.languages and language not in self.languages:
            return False
        if language in self.exclude_languages:
            return False
        if self.exclude_terms:
            hay = text if self.case_sensitive else text.lower()
            for term in self.exclude_terms:
                if (term if self.case_sensitive else term.lower()) in hay:
                    return False
        return True


class Index:
    """One repository and its index. Open with `Index.open(path)`."""

    def __init__(self, root: Path, index_dir: Path, config: dict[str, Any]) -> None:
        self.root = root
        self.index_dir = index_dir
        self.config = config
        self._engine: Engine | None = None
        self._manifest_key: tuple[int, ...] | None = None
        self._lock = threading.Lock()

    @classmethod
    def open(cls, path: str | os.PathLike[str] = ".", *, index_dir: str | os.PathLike[str]
             | None = None, **config: Any) -> Index:  # fmt: skip
        """Bind to the repository at `path` (the index need not exist yet: see `build`).
        Keyword arguments override the configuration (see `maguyva.config`)."""
        root = resolve_root(path)
        if not root.is_dir():
            raise MaguyvaError(f"{os.fspath(path)}: not a directory")
        overrides = {**config, "index_dir": os.fspath(index_dir) if index_dir else None}
        values = effective_config(root, overrides).values
        return cls(root, index_dir_for(root, values), values)

    def exists(self) -> bool:
        return IndexDir(self.index_dir).exists()

    # -- building ---------------------------------------------------------------------------

    def build(
        self,
        *,
        progress: Progress | None = None,
        wait: bool = False,
        paths: Sequence[str] | None = None,
        modalities: Sequence[str] | None = None,
        rebuild: bool = False,
    ) -> BuildSummary:
        """Bring the index up to date (incrementally; a no-op when nothing changed; from
        scratch with `rebuild`); returns the indexer's `BuildSummary`.

        `paths` (root-relative, confined) are checked and passed on when the indexer accepts
        them (it finds changes by itself otherwise). `progress(phase, done, total)`
        is called as work proceeds."""
        from maguyva.build.indexer import build_index

        config = dict(self.config)
        params = inspect.signature(build_index).parameters
        if modalities:
            config["modalities"] = list(modalities)
        elif config.get("modalities") == SCHEMA["modalities"].default:
            # not chosen: the indexer keeps what the index was built with
            config.pop("modalities", None)
        config["index_dir"] = str(self.index_dir)
        kwargs: dict[str, Any] = {}
        if paths:
            checked = [relative(self.root, p) for p in paths]
            if "paths" in params:
                kwargs["paths"] = checked
        if rebuild and "rebuild" in params:
            kwargs["rebuild"] = True
        summary = build_index(
            self.root, config=config, progress=progress, wait_for_lock=wait, **kwargs
        )
        with self._lock:
            self._engine = None
        return summary

    # -- the engine, kept on the newest generation -------------------------------------------

    def engine(self) -> Engine:
        """The query engine on the newest committed generation (reopened when it changes)."""
        from maguyva.query.engine import Engine

        key = _manifest_key(self.index_dir)
        with self._lock:
            if key is not None and key == self._manifest_key and self._engine is not None:
                return self._engine  # the manifest file is the one read last time
        manifest = IndexDir(self.index_dir).read_manifest()
        with self._lock:
            if self._engine is None or self._engine.generation.number != manifest["generation"]:
                self._engine = Engine.open(self.root, self.index_dir)
            self._manifest_key = key  # taken before the read: a commit since is seen next time
            return self._engine

    def warm(self) -> dict[str, float]:
        """Open the newest generation's engine with every modality and chunk segment loaded
        (`Engine.warm`); `{}` when there is no index yet. For long-running callers, off the
        query path: the next question finds the engine ready."""
        if not self.exists():
            return {}
        return self.engine().warm()

    def searcher(self, modality: str) -> Any:
        """A modality's searcher; `ModalityUnavailable` (with the reason) when it is not built."""
        return self.engine().searcher(modality)

    # -- questions ----------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        preset: str | None = None,
        modalities: Sequence[str] | None = None,
        weights: dict[str, float] | None = None,
        k: int | None = None,
        limit: int | None = None,
        snippet: str | None = None,
        intent: str | None = None,
        case: str | None = None,
        whole_word: bool = False,
        regex: bool = False,
        fixed_strings: bool = False,
        globs: Sequence[str] = (),
        path_glob: str | None = None,
        language: str | None = None,
        languages: Sequence[str] = (),
        kind: str | None = None,
        depth: int | None = None,
        paths: Sequence[str] = (),
        syntax: bool = True,
    ) -> Response:
        """Answer `query`. Options mirror the CLI flags: `case` ("smart", "sensitive",
        "insensitive"; -S/-s/-i), `whole_word` (-w), `regex`, `fixed_strings` (-F: the query
        is one literal), `globs` (-g; a leading `!` excludes), `language`/`languages` (-t),
        `paths` (root-relative, confined), plus the engine's preset/modalities/weights/k."""
        if not isinstance(query, str):
            raise BadQueryError("query must be a string")
        limit = int(limit if limit is not None else self.config.get("limit", 10))
        preset = preset or self.config.get("preset", "default")
        if case is not None and case not in CASE_VALUES:
            raise BadQueryError(f"case must be one of {', '.join(CASE_VALUES)}, got {case!r}")
        if kind is not None:
            check_kind(kind)
        parsed = ParsedQuery(text=query)
        # a pasted error or log line is text, not query syntax (`(got -1)` is no `-term`)
        if syntax and not fixed_strings and not regex and snippet is None:
            parsed = parse(query) if parse_pasted(query) is None else parsed
        if fixed_strings:  # searched as typed (the engine does not classify it)
            intent = intent or "exact_match"
        filters = self._filters(parsed, globs, path_glob, language, languages, paths, case)
        options: dict[str, Any] = {
            "case": parsed.case or case,
            "whole_word": whole_word or None,
            "regex": bool(regex or parsed.regex is not None) or None,
            "kind": kind,
            "depth": depth,
            "language": filters.languages[0] if len(filters.languages) == 1 else None,
            "path_glob": filters.single_glob(),
        }
        if options["regex"]:
            intent = intent or "exact_match"
        if parsed.symbol is not None:
            intent = intent or "find_definition"
        engine = self.engine()
        fetch = max(limit * 5, 50) if filters.active() else limit
        while True:
            response = engine.search(
                parsed.text, preset=preset, modalities=parsed.modalities or modalities,
                weights=weights, k=k, limit=fetch, snippet=snippet, intent=intent,
                fixed_strings=fixed_strings,
                **{key: value for key, value in options.items() if value is not None},
            )  # fmt: skip
            if not filters.active():
                response.results = self._inside(response.results)
                return response
            kept = [r for r in response.results if filters.keep(r.path, _chunk_text(engine, r))]
            # Filters apply after fusion: when they leave fewer than asked and the candidates
            # were not exhausted, look deeper (4x) rather than answer short.
            if len(kept) >= limit or len(response.results) < fetch or fetch >= MAX_FILTER_FETCH:
                break
            fetch = min(MAX_FILTER_FETCH, fetch * 4)
        dropped = len(response.results) - len(kept)
        if dropped:
            response.notes.append(f"filters removed {dropped} result(s)")
        response.results = self._inside(kept)[:limit]
        return response

    def _inside(self, items: list[Any]) -> list[Any]:
        """Every answer's path passes the one confinement check (`paths.contained`) on its
        real path before it is returned: a file swapped for a link out of the root after it
        was indexed is not answered from."""
        paths = [getattr(item, "path", None) for item in items]
        verdict = contained_paths(self.root, (p for p in paths if p))
        return [item for item, path in zip(items, paths, strict=True) if not path or verdict[path]]

    def _filters(
        self,
        parsed: ParsedQuery,
        globs: Sequence[str],
        path_glob: str | None,
        language: str | None,
        languages: Sequence[str],
        paths: Sequence[str],
        case: str | None,
    ) -> Filters:
        include = list(parsed.files)
        any_of = [path_glob] if path_glob is not None else []
        exclude = list(parsed.exclude_files)
        for glob in globs:
            (exclude if glob.startswith("!") else any_of).append(glob.lstrip("!"))
        for glob in (*include, *any_of, *exclude):  # none that can match nothing, silently
            check_path_glob(glob, "glob")
        langs = [check_language(x) for x in [*parsed.languages, *languages]]
        if language is not None:
            langs.append(check_language(language))
        rel_paths = [relative(self.root, p) for p in paths]
        return Filters(
            paths=[p for p in rel_paths if p] if "" not in rel_paths else [],
            globs=include, any_globs=any_of, exclude_globs=exclude, languages=sorted(set(langs)),
            exclude_languages=[check_language(x) for x in parsed.exclude_languages],
            exclude_terms=parsed.exclude_terms,
            case_sensitive=(parsed.case or case) == "sensitive",
        )  # fmt: skip

    def find_symbol(self, name: str, kind: str | None = None, limit: int = 20) -> list[Hit]:
        """Definitions named `name` (exact, then case/spelling variants), best first."""
        _require_name(name, "name")
        if kind is not None:
            check_kind(kind)
        return self._inside(
            list(self.searcher("structural").find_symbol(name, kind=kind, limit=limit))
        )

    def find_references(self, symbol: str, depth: int = 1, limit: int = 50) -> list[Hit]:
        """Files that reference `symbol` (calls, imports, subclassing: depth 1), or its
        transitive callers up to `depth`, from the call graph."""
        _require_name(symbol, "symbol")
        graph = self._call_graph("list callers")
        if depth == 1:
            return self._inside(list(graph.references(symbol)))[:limit]
        return self._inside(list(graph.callers(symbol, depth=depth)))[:limit]

    def callees(self, symbol: str, limit: int = 50) -> list[Hit]:
        """What `symbol` calls."""
        _require_name(symbol, "symbol")
        graph = self._call_graph("list callees")
        return self._inside(list(graph.callees(symbol)))[:limit]

    def impact(self, symbol: str, depth: int = 2, limit: int = 100) -> list[Hit]:
        """What depends on `symbol`, transitively up to `depth` (its blast radius)."""
        _require_name(symbol, "symbol")
        graph = self._call_graph("compute impact")
        return self._inside(list(graph.impact(symbol, depth=depth)))[:limit]

    def _call_graph(self, what: str) -> CallGraph:
        graph = self.searcher("graph")
        if not isinstance(graph, CallGraph):
            raise ModalityUnavailable(f"the graph modality in this index cannot {what}")
        return graph

    def grep(
        self,
        pattern: str,
        *,
        regex: bool = False,
        case: str = "smart",
        whole_word: bool = False,
        path_glob: str | None = None,
        max_results: int = 100,
    ) -> list[Any]:
        """Exact (or regex) text matches from the trigram index, verified against content."""
        if not pattern:
            raise BadQueryError("empty pattern")
        text = self.searcher("text")
        if not isinstance(text, Greps):
            raise ModalityUnavailable("the text modality in this index cannot grep")
        return self._inside(list(text.grep(pattern, regex=regex, case=case, whole_word=whole_word,
                                        path_glob=path_glob, max_results=max_results)))  # fmt: skip

    def read_chunk(self, path: str, start_line: int = 1, end_line: int | None = None) -> ChunkText:
        """Lines of an indexed file. `path` is root-relative; anything resolving outside the
        root is refused (`PathEscapeError`), as is a file the index does not hold."""
        rel = relative(self.root, path)
        if not isinstance(start_line, int) or start_line < 1:
            raise BadQueryError("start_line must be an integer >= 1")
        if end_line is not None and (not isinstance(end_line, int) or end_line < start_line):
            raise BadQueryError("end_line must be an integer >= start_line")
        if rel not in self.indexed_files():
            raise MaguyvaError(
                f"{path!r}: not an indexed file (missing, ignored, hidden, binary, or added "
                "since the last index: reindex first)"
            )
        try:
            data = read_bytes(self.root, rel, shown=path)
        except MaguyvaError:
            raise
        except OSError as exc:
            raise MaguyvaError(f"{path!r}: cannot read ({exc.strerror})") from None
        lines = data.decode("utf-8", errors="replace").splitlines()
        total = len(lines)
        if start_line > max(total, 1):
            raise BadQueryError(f"start_line {start_line} is past the end ({total} lines)")
        end = min(end_line if end_line is not None else total, total)
        return ChunkText(rel, start_line, end, total, "\n".join(lines[start_line - 1 : end]))

    def indexed_files(self) -> dict[str, list[Any]]:
        """Root-relative path -> recorded state ([size, mtime_ns, digest]) of every file in the
        current generation."""
        from maguyva.store.file_states import read_file_states

        engine = self.engine()
        states = read_file_states(engine.generation.path)
        return states or {path: [] for path in engine.chunks.paths()}

    def status(self) -> dict[str, Any]:
        """What is indexed and how fresh it is (stale = content changed or file deleted since
        indexed; a `touch` alone is not stale)."""
        engine = self.engine()
        generation = engine.generation
        manifest = generation.manifest
        flags = engine.stale_of(list(self.indexed_files()))
        stale = sorted(path for path, is_stale in flags.items() if is_stale)
        modalities = {
            name: {
                "built": bool(s.get("built")),
                "reason": s.get("reason"),
                **({"behind": s["behind"]} if s.get("behind") else {}),
                **({"pending": True} if s.get("pending") else {}),
            }
            for name, s in manifest.get("modalities", {}).items()
        }
        for name, reason in self._damage(engine).items():  # fsck's checks, per modality
            if name in modalities:
                modalities[name]["damaged"] = reason
        from maguyva.build.progress import read_progress
        from maguyva.modalities.semantic.coverage import coverage

        semantic = manifest.get("modalities", {}).get("semantic", {})
        if semantic.get("built") and semantic.get("report"):
            modalities["semantic"]["coverage"] = coverage(semantic["report"])
        build = read_progress(self.index_dir)
        return {
            "root": str(self.root),
            "index_dir": str(self.index_dir),
            "generation": generation.number,
            "build": build if build is not None and build["alive"] else None,
            "committed_at": manifest.get("committed_at"),
            "age_s": round(time.time() - float(manifest.get("committed_at", time.time())), 1),
            "commit": manifest.get("commit"),
            "files": manifest.get("files"),
            "chunks": manifest.get("chunks"),
            "skipped": manifest.get("skipped") or {},
            "large": manifest.get("large") or {"over_cap": 0, "generated": 0},
            "modalities": modalities,
            "embedding": manifest.get("embedding"),
            "stale_files": len(stale),
            "stale_sample": stale[:20],
        }

    def _damage(self, engine: Any) -> dict[str, str]:
        """Built modalities that fail their checks (files against CHECKSUMS, the modality's
        verifier, its loader), each with the reason and the fix."""
        from maguyva.build.fsck import modality_damage
        from maguyva.query.notes import FIX

        generation = engine.generation
        found = {n: f"{r} ({FIX})" for n, r in
                 modality_damage(generation.path, generation.manifest).items()}  # fmt: skip
        for name in generation.manifest.get("modalities", {}):
            if name not in found and name != "semantic":  # semantic's open loads a model
                with contextlib.suppress(MaguyvaError):
                    engine.searcher(name)
        return {**engine.damaged(), **found}


def _manifest_key(index_dir: Path) -> tuple[int, ...] | None:
    """The manifest file's identity (device, inode, size, mtime, ctime): a commit replaces it
    by a rename, so a new one differs. One stat (15 µs at load 11) instead of reading and
    checking the sealed manifest on every question (183 µs)."""
    try:
        st = os.stat(Path(index_dir) / MANIFEST)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _require_name(value: Any, label: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise BadQueryError(f"{label} must be a non-empty string")


def _chunk_text(engine: Any, result: Result) -> str:
    chunk = engine.chunks.enclosing(result.path, result.start_line)
    return chunk.text if chunk is not None else result.snippet


def confine_paths(root: Path, paths: Sequence[str]) -> list[Path]:
    """Confine several user paths at once (the CLI's positional PATH arguments)."""
    return [confine(root, p, allow_absolute=True) for p in paths]


__all__ = ["ChunkText", "Index", "normalize_language"]
