"""Ctrl-C during `maguyva index`: the process stops promptly with exit code 130, the
previous generation keeps answering, and the next run takes the extraction finished before
the interrupt from the extraction cache instead of redoing it.

Real subprocesses and a real corpus (a few hundred files of the CPython standard library).
The 2 s figure the issue demands is measured here and recorded in docs/durability.md; the
assertion allows a generous margin for a loaded shared machine.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from maguyva.build.indexer import extractor_fingerprint
from maguyva.extract.cache import ExtractCache
from maguyva.extract.driver import caching, encode_row, extract_files, extract_source
from maguyva.repo.walk import walk_repository
from maguyva.store.generations import IndexDir, default_index_dir

MARGIN_S = 5.0  # the target is 2 s; the machine is shared and often at load 10+
CORPUS_FILES = 400
CONFIG = 'modalities = ["text", "structural"]\njobs = 2\n'
SEED = {
    "seed/alpha.py": "def needle_in_haystack():\n    return 'previous generation'\n",
    "seed/beta.py": "from seed.alpha import needle_in_haystack\n\nneedle_in_haystack()\n",
}


def _stdlib_files(n: int) -> list[Path]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    found = sorted(p for p in stdlib.glob("*.py") if p.stat().st_size > 4000)
    found += sorted(p for p in stdlib.glob("*/*.py") if p.stat().st_size > 4000)
    return found[:n]


def _cli(root: Path, *args: str, **kw: object) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "maguyva.interfaces.cli.main", *args, str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        **kw,  # type: ignore[arg-type]
    )


def _search(root: Path, query: str) -> str:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "maguyva.interfaces.cli.main",
            "search",
            query,
            "--root",
            str(root),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _cache_entries(index: Path) -> int:
    base = index / "cache" / "extract"
    return sum(1 for p in base.rglob("*") if p.is_file()) if base.is_dir() else 0


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for rel, text in SEED.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / ".maguyva.toml").write_text(CONFIG)
    return root


def test_ctrl_c_stops_fast_keeps_previous_and_resumes(repo: Path) -> None:
    first = _cli(repo, "index", "--quiet")
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    before = _search(repo, "needle_in_haystack")
    assert "seed/alpha.py" in before
    index = default_index_dir(repo)
    gen_before = IndexDir(index).current(pin=False).number

    for i, src in enumerate(_stdlib_files(CORPUS_FILES)):
        dest = repo / "big" / f"{i // 50:02d}" / src.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)

    run = _cli(repo, "index", "--quiet")
    # Interrupt once extraction is under way (some files cached), or after 8 s at most.
    deadline = time.monotonic() + 8.0
    while time.monotonic() < deadline and run.poll() is None and _cache_entries(index) < 20:
        time.sleep(0.05)
    assert run.poll() is None, "the build finished before it could be interrupted"
    sent = time.monotonic()
    run.send_signal(signal.SIGINT)
    try:
        _, err = run.communicate(timeout=60)
    finally:
        run.kill()
    elapsed = time.monotonic() - sent
    print(f"\nSIGINT -> exit in {elapsed:.2f} s (rc {run.returncode})")
    assert run.returncode == 130, err
    assert "interrupted" in err
    assert "Traceback" not in err
    assert elapsed < MARGIN_S, f"took {elapsed:.2f} s to stop after SIGINT"

    # The previous generation is untouched and answers as before; nothing half-written.
    assert IndexDir(index).current(pin=False).number == gen_before
    assert not list(index.glob("gen-*.tmp-*"))
    after = _search(repo, "needle_in_haystack")
    assert "seed/alpha.py" in after and "big/" not in after
    kept = _cache_entries(index)
    assert kept > 0

    # The next run resumes: the files extracted before the interrupt come from the cache.
    again = _cli(repo, "index", "--quiet")
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    current = IndexDir(index).current(pin=False)
    assert current.number > gen_before
    report = current.manifest["extract"]
    assert report["extract_cached"] > 0
    assert report["extract_cached"] <= kept
    added = sum(1 for p in (repo / "big").rglob("*.py"))
    assert report["files"] == added  # only the new files were extracted at all
    assert _cache_entries(index) == 0  # committed: the generation now holds them
    assert "seed/alpha.py" in _search(repo, "needle_in_haystack")


def test_cached_extraction_equals_fresh(tmp_path: Path) -> None:
    """A result served from the cache is the result extraction gives (bar the timing)."""
    root = tmp_path / "r"
    root.mkdir()
    for src in _stdlib_files(60)[:60]:
        shutil.copyfile(src, root / src.name)
    files = walk_repository(root).files
    cache = ExtractCache.open(tmp_path / "cache", extractor_fingerprint())
    with caching(cache) as counts:
        fresh = {r.extraction.path: r for r in extract_files(root, files, jobs=2)}
    assert counts == {"cached": 0, "extracted": len(files)}
    with caching(cache) as counts:
        cached = {r.extraction.path: r for r in extract_files(root, files, jobs=2)}
    assert counts == {"cached": len(files), "extracted": 0}
    assert fresh.keys() == cached.keys()
    for path, r in fresh.items():
        c = cached[path]
        assert c.cached and not r.cached
        assert (c.extraction, c.chunks, c.status, c.size) == (
            r.extraction,
            r.chunks,
            r.status,
            r.size,
        )
    # An edited file is a miss; a damaged entry is ignored, not trusted.
    victim = files[0]
    (root / victim.path).write_bytes((root / victim.path).read_bytes() + b"\n# edited\n")
    for entry in cache.directory.rglob("*"):
        if entry.is_file():
            entry.write_bytes(entry.read_bytes()[:-3] + b"xyz")
            break
    with caching(cache) as counts:
        list(extract_files(root, files, jobs=1))
    assert counts["extracted"] == 2
    assert counts["cached"] == len(files) - 2


def test_stale_extractor_versions_are_dropped(tmp_path: Path) -> None:
    old = ExtractCache.open(tmp_path, "old-version")
    row = encode_row(extract_source("a.py", "python", b"x = 1\n"))
    old.put("a.py", b"x = 1\n", row)
    assert old.get("a.py", b"x = 1\n") == row
    assert old.get("a.py", b"x = 2\n") is None
    ExtractCache.open(tmp_path, "new-version")
    assert not old.directory.exists()


def test_rust_text_build_stops_on_sigint(tmp_path: Path) -> None:
    """`_core.build_text_index` polls for signals between batches: a long build ends with
    KeyboardInterrupt soon after SIGINT instead of running to completion."""
    script = f"""
import sys, time, sysconfig
from pathlib import Path
from maguyva import _core
stdlib = Path(sysconfig.get_paths()["stdlib"])
files = [str(p.relative_to(stdlib)) for p in sorted(stdlib.rglob("*.py"))][:3000]
inputs = [(f, [(1, 1, f"c{{i}}")]) for i in range(20) for f in files]
print("ready", flush=True)
started = time.monotonic()
try:
    _core.build_text_index(str(stdlib), {str(tmp_path / "out")!r}, inputs)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
print("finished", time.monotonic() - started, flush=True)
"""
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    elapsed = time.monotonic() - sent
    print(f"\ntext build: SIGINT -> exit in {elapsed:.2f} s; {out.strip()}")
    if "finished" in out:
        pytest.skip("the build finished within a second; nothing to interrupt")
    assert proc.returncode == 130, err
    assert "interrupted" in out
    # Stopped mid-way: the content store was begun, the index itself never written (a build
    # that ran to completion and only then raised would have written it).
    assert (tmp_path / "out" / "content.bin").exists()
    assert not (tmp_path / "out" / "trigram.idx").exists()
    assert elapsed < MARGIN_S


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_ctrl_c_lost_in_a_finalizer_is_kept_for_the_next_progress_call() -> None:
    """Python drops an exception raised while a finalizer runs, so a Ctrl-C landing in one
    would vanish; `maguyva index` keeps it in an event that its progress callback re-raises."""
    from maguyva.interfaces.cli.main import _sigint_latch

    class Finalized:
        def __del__(self) -> None:
            signal.raise_signal(signal.SIGINT)
            sum(range(1000))  # the handler runs here, inside the finalizer, and is dropped

    before = signal.getsignal(signal.SIGINT)
    with _sigint_latch() as interrupted:
        try:
            Finalized()
            sum(range(1000))
        except KeyboardInterrupt:
            pass  # the handler ran after the finalizer returned: raised normally, also fine
        assert interrupted.is_set()
    assert signal.getsignal(signal.SIGINT) is before
