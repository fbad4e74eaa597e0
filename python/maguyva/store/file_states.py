"""A generation's file state: `files.json` (each indexed file's size, mtime and digest),
the `files-delta.json` of a small update, and the differences between two states."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from maguyva.errors import CorruptIndexError, MaguyvaError
from maguyva.store.identity import identity, may_serve
from maguyva.support.once import OncePer
from maguyva.support.sealed import read_packed_json, read_sealed_json

log = logging.getLogger(__name__)

FILES_JSON = "files.json"
FILES_DELTA = "files-delta.json"
DELTA_KIND = "files_delta"
"""The overlay of a generation written by a small update (indexer.py): its base segments and
`files.json` are hard links to an earlier generation's; the rows of the files re-extracted
since then live in `delta/<generation>.chunks.jsonl` and `.extract.json` (the segment formats),
and `files-delta.json` says which: `index` maps each path whose rows are not in its base
segment to `[chunk offset, bytes, count, extraction offset, bytes, delta number]`, or to null
when the file left the index; `state` holds the file state's differences from the base."""


def read_delta(gen_dir: Path) -> dict[str, Any] | None:
    """The generation's `files-delta.json` (verified), or None when it has none."""
    path = Path(gen_dir) / FILES_DELTA
    if not path.exists():
        return None
    data = read_sealed_json(path, DELTA_KIND)
    if not isinstance(data, dict) or not isinstance(data.get("index"), dict):
        raise CorruptIndexError(f"{path}: not a delta index")
    return data


_STATE_MAPS = ("files", "skipped", "dirs", "ignores")


def state_delta(base: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The differences of file state `new` from `base` (both `RepoState.to_json()` forms):
    per map, the entries set (`set`) and removed (`del`); the scalars as they are."""
    out: dict[str, Any] = {k: v for k, v in new.items() if k not in _STATE_MAPS}
    for key in _STATE_MAPS:
        old, now = base.get(key, {}), new.get(key, {})
        out[key] = {
            "set": {k: v for k, v in now.items() if k not in old or old[k] != v},
            "del": sorted(k for k in old if k not in now),
        }
    return out


def apply_state_delta(base: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """`base` with `delta` (from `state_delta`) applied; `base` is not changed."""
    out = {**base, **{k: v for k, v in delta.items() if k not in _STATE_MAPS}}
    for key in _STATE_MAPS:
        merged = dict(base.get(key, {}))
        change = delta.get(key) or {}
        for k in change.get("del", ()):
            merged.pop(k, None)
        merged.update(change.get("set", {}))
        out[key] = merged
    return out


_BASE_FILES: dict[Path, tuple[tuple[int, ...], Path, dict[str, list[Any]]]] = {}
"""Per index directory, the last decoded `files.json` file map, by file identity (with the
path it was read from: `identity.may_serve`): a generation written by a small update
hard-links its predecessor's, so a reader opening it decodes only the small
`files-delta.json`."""

_UNREADABLE = OncePer()
"""Generations whose file states could not be read, per index directory (said once each)."""


def file_states(gen_dir: Path) -> dict[str, list[Any]]:
    """path -> [size, mtime_ns, digest] of a generation's indexed files; CorruptIndexError
    naming the file and why when `files.json` or its delta cannot be read."""
    path = Path(gen_dir) / FILES_JSON
    try:
        key = identity(path)
        cached = _BASE_FILES.get(Path(gen_dir).parent)
        if cached is not None and cached[0] == key and may_serve(cached[1], path, key):
            files = cached[2]
        else:
            files = read_packed_json(path, "files")["state"]["files"]
            _BASE_FILES.pop(Path(gen_dir).parent, None)
            _BASE_FILES[Path(gen_dir).parent] = (key, path, files)
            while len(_BASE_FILES) > 4:
                _BASE_FILES.pop(next(iter(_BASE_FILES)))
        delta = read_delta(gen_dir)
        if delta is None:
            return dict(files)
        change = delta["state"]["files"]
        out = dict(files)
        for p in change["del"]:
            out.pop(p, None)
        out.update(change["set"])
        return out
    except CorruptIndexError:
        raise
    except OSError as exc:
        raise CorruptIndexError(f"{exc.filename or path}: unreadable ({exc.strerror})") from exc
    except (MaguyvaError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptIndexError(f"{path}: unreadable file states ({exc!r})") from exc


def read_file_states(gen_dir: Path) -> dict[str, list[Any]]:
    """`file_states`, or {} when they cannot be read, which is said (a warning, once per
    generation): without them no result is flagged stale and `status` counts no stale file,
    and that must not pass for a fresh index."""
    try:
        return file_states(gen_dir)
    except CorruptIndexError as exc:
        if _UNREADABLE.first(str(Path(gen_dir).parent), Path(gen_dir).name):
            log.warning("%s: stale files are not flagged (run `maguyva index --rebuild` or "
                        "`maguyva fsck --repair`)", exc)  # fmt: skip
        return {}
