"""A generation's file state that cannot be read is said, never passed off as a fresh index:
without it no result is flagged stale and `status` counts no stale file."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from durability_support import build, write_repo

from maguyva.api import Index
from maguyva.errors import CorruptIndexError
from maguyva.store.file_states import FILES_JSON, file_states, read_file_states
from maguyva.store.generations import IndexDir

LOGGER = "maguyva.store.file_states"


def _damage(path: Path) -> None:
    """Flip the last byte in place (a later mtime: not the file a cache read)."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def test_a_damaged_or_missing_file_state_is_an_error_naming_the_file(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write_repo(root)
    build(root)
    gen = IndexDir(root / ".maguyva").current(pin=False).path
    assert "pkg/core.py" in file_states(gen)
    _damage(gen / FILES_JSON)
    with pytest.raises(CorruptIndexError, match=r"files\.json"):
        file_states(gen)
    (gen / FILES_JSON).unlink()
    with pytest.raises(CorruptIndexError, match=r"files\.json"):
        file_states(gen)


def test_an_unreadable_file_state_is_said_once_per_generation(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "repo"
    write_repo(root)
    build(root)
    gen = IndexDir(root / ".maguyva").current(pin=False).path
    (root / "pkg" / "core.py").write_text("changed = True\n")
    index = Index.open(root)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert index.status()["stale_files"] == 1
    assert caplog.text == ""
    _damage(gen / FILES_JSON)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert read_file_states(gen) == {}
        assert read_file_states(gen) == {}
    said = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(said) == 1 and "files.json" in said[0] and "stale files are not flagged" in said[0]
    assert "fsck --repair" in said[0]
