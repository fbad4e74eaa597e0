"""Named real corpora (PyPI source distributions) that the shipped query sets refer to.

A query set's `corpus` field names one of these; `maguyva eval` downloads the sdist once with
`pip download --no-binary :all: --no-deps` into the cache directory and indexes it there.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

from maguyva.errors import MaguyvaError

CORPORA: dict[str, str] = {
    "requests-2.32.3": "requests==2.32.3",
    "click-8.1.7": "click==8.1.7",
    "psutil-7.1.3": "psutil==7.1.3",
}
"""Corpus name -> pip requirement of its source distribution."""


def cache_dir() -> Path:
    """Where corpora are unpacked: $MAGUYVA_EVAL_CACHE, else ./.cache/eval."""
    return Path(os.environ.get("MAGUYVA_EVAL_CACHE") or Path.cwd() / ".cache" / "eval")


def fetch_corpus(name: str, cache: Path | None = None) -> Path:
    """The unpacked source tree of a named corpus, downloading it on first use."""
    if name not in CORPORA:
        raise MaguyvaError(
            f"unknown corpus {name!r} (known: {', '.join(CORPORA)}); pass --root to use your own"
        )
    cache = cache or cache_dir()
    target = cache / name
    if target.is_dir():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    requirement = CORPORA[name]
    package, version = requirement.split("==")
    archives = list(cache.glob(f"{package}-{version}.tar.gz"))
    if not archives:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
             "-d", str(cache), requirement],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        archives = list(cache.glob(f"{package}-{version}.tar.gz"))
        if proc.returncode != 0 or not archives:
            raise MaguyvaError(f"could not download {requirement}: {proc.stderr.strip()[-300:]}")
    with tarfile.open(archives[0]) as tar:
        tar.extractall(cache, filter="data")
    unpacked = cache / f"{package}-{version}"
    if unpacked != target:
        unpacked.rename(target)
    return target
