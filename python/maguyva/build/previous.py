"""Reading and reusing the previous generation: which generation a build may start from,
its file state (the scan's starting point), and its segments' rows when the next build can
link or slice them instead of extracting again. A long-running writer remembers what it
committed last (`WriterMemo`), so it does not decode `files.json` on every update."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from maguyva.errors import CorruptIndexError, IndexVersionError, MaguyvaError
from maguyva.repo.changes import RACY_NS, RepoState
from maguyva.store import blocks
from maguyva.store.chunks import SEGMENTS, delta_file
from maguyva.store.fileindex import SEGMENT_INDEX_VERSION, FileIndex, read_file_index
from maguyva.store.generations import Generation, IndexDir, write_sealed_atomic
from maguyva.store.views import segment_name
from maguyva.support import sealed

log = logging.getLogger("maguyva.index")

SCAN_STATE = "scan.json"  # the last no-op check's state, so the next check starts from it


@dataclass(slots=True)
class Previous:
    """What the next build reuses of the current generation: its directory, each file's
    digest and index entry (`index`: where its rows are, segment or delta), and the layout:
    the base `files.json` (its state and index) and the delta over it."""

    path: Path
    digests: dict[str, str]
    index: dict[str, list[int]]
    base_state: dict[str, Any] = field(default_factory=dict)
    base_index: dict[str, list[int]] = field(default_factory=dict)
    delta: dict[str, list[int] | None] = field(default_factory=dict)
    delta_sizes: dict[int, int] = field(default_factory=dict)
    base_counts: list[int] = field(default_factory=list)


def same_state(old: RepoState, new: RepoState) -> bool:
    """Equal apart from the scan time, and no file recent enough to be re-hashed next time."""
    if (old.files, old.skipped, old.dirs, old.ignores) != (
        new.files, new.skipped, new.dirs, new.ignores):  # fmt: skip
        return False
    racy = old.scanned_at_ns - RACY_NS
    return all(r[1] < racy for r in old.files.values())


def current_generation(index: IndexDir) -> Generation | None:
    """The current generation, or None when there is none we may build on (missing, older
    format, damaged: the next build is then a full one). A newer format is refused."""
    try:
        return index.current(pin=False)
    except IndexVersionError as exc:
        if "newer" in str(exc):
            raise
        log.warning("%s; rebuilding", exc)
    except CorruptIndexError as exc:
        log.warning("%s; rebuilding from scratch", exc)
    except MaguyvaError:
        pass
    return None


def save_scan_state(
    index_path: Path, current: Generation, previous: RepoState | None, state: RepoState
) -> None:
    """Remember a no-op check's directory mtimes and touched files, so the next check
    need not walk or hash again."""
    if previous is not None and same_state(previous, state):
        return
    payload = sealed.dumps_json({"generation": current.number, "state": state.to_json()})
    try:
        write_sealed_atomic(index_path / SCAN_STATE, "scan", payload)
    except OSError as exc:
        log.warning("could not save the scan state: %s", exc)


class WriterMemo:
    """What a writer knows of the generation it committed last (or checked last): the
    generation's (number, commit time), its file state, its index and layout, and the
    generation whose segments it wrote or checked."""

    def __init__(self) -> None:
        self.key: tuple[int, Any] | None = None
        self.state: RepoState | None = None
        self.prev: Previous | None = None
        self.verified: int | None = None  # a generation whose segments we wrote or checked
        self._loaded: tuple[tuple[int, Any], FileIndex] | None = None

    def about(self, current: Generation) -> bool:
        """Is what this writer remembers (state, index) about `current`? A generation is
        immutable, and another writer's commit or a repair gives another number or time."""
        return self.key == (current.number, current.manifest.get("committed_at"))

    def checked(self, current: Generation, state: RepoState) -> None:
        """A no-op check found `current` up to date with `state`."""
        if not self.about(current):
            self.key = (current.number, current.manifest.get("committed_at"))
            self.prev = None
        self.state = state

    def committed(self, generation: Generation, state: RepoState, prev: Previous) -> None:
        """What the next update needs of the generation just committed."""
        self.verified = generation.number
        self.key = (generation.number, generation.manifest.get("committed_at"))
        self.state = state
        self.prev = prev

    def _file_index(self, current: Generation) -> FileIndex:
        key = (current.number, current.manifest.get("committed_at"))
        if self._loaded is None or self._loaded[0] != key:
            self._loaded = (key, read_file_index(current.path))
        return self._loaded[1]

    def previous_state(self, index_path: Path, current: Generation | None) -> RepoState | None:
        """The file state the scan starts from: remembered, the last no-op check's, or the
        current generation's; None (walk again) when there is none or it is unusable."""
        if current is None:
            return None
        if self.about(current) and self.state is not None:
            return self.state
        try:
            saved = sealed.read_sealed_json(index_path / SCAN_STATE, "scan")
            if saved.get("generation") == current.number:
                return RepoState.from_json(saved["state"])
        except (MaguyvaError, KeyError, TypeError):
            pass
        try:
            return RepoState.from_json(self._file_index(current).state)
        except (MaguyvaError, KeyError, TypeError, ValueError, AttributeError) as exc:
            log.warning("%s: unusable file state (%s); walking again", current.path, exc)
            return None

    def reusable(self, current: Generation, extractor: str) -> Previous | None:
        """The current generation's per-file digests and segment index, when its segments can
        be linked or sliced: same extractor, segmented, with an index, every segment and delta
        file sound. None otherwise (every file is then extracted again)."""
        if current.manifest.get("built_for", {}).get("extractor") != extractor:
            return None
        if self.about(current) and self.prev is not None:
            return self.prev
        try:
            fi = self._file_index(current)
            if fi.version != SEGMENT_INDEX_VERSION:
                return None  # an older layout: extract again once
            digests = {p: r[2] for p, r in fi.state["files"].items() if p in fi.index}
            if self.verified != current.number:  # checksums of what we may link, once
                version = blocks.ROWS_VERSION
                for n in range(SEGMENTS):
                    for kind in ("chunks", "extract"):
                        sealed.read_sealed(current.path / segment_name(n, kind), kind, version)
                for d in {e[5] for e in fi.delta.values() if e is not None}:
                    for kind in ("chunks", "extract"):
                        sealed.read_sealed(current.path / delta_file(d, kind), kind, version)
                self.verified = current.number
        except (MaguyvaError, KeyError, TypeError, ValueError, AttributeError) as exc:
            log.warning("%s: previous extraction unusable (%s); extracting again", current.path,
                        exc)  # fmt: skip
            return None
        finally:
            self._loaded = None
        return Previous(current.path, digests, fi.index, fi.base_state, fi.base_index,
                        fi.delta, fi.delta_sizes)  # fmt: skip
