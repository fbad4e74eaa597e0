"""Fixtures shared by the test modules (the code they share lives in `tests/support/`), and
session-wide settings."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from support.corpora import copy_stdlib

from maguyva.build.indexer import build_index

# No test but tests/test_daemon.py and test_native_client.py (which re-enable it and stop
# what they start) may leave warm search servers behind: every `maguyva search` of the suite,
# in process or in a child process, answers in its own process.
os.environ["MAGUYVA_DAEMON"] = "0"


@pytest.fixture(scope="module")
def stdlib_index(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """`stdlib_index(files, config)`: a fresh root holding copies of the standard library's
    `files`, indexed with `config`; module-scoped, as every caller builds once per module."""

    def make(files: Iterable[str], config: dict[str, Any]) -> Path:
        root = copy_stdlib(tmp_path_factory.mktemp("corpus"), files)
        build_index(root, config=dict(config))
        return root

    return make
