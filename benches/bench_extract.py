"""Extraction throughput against Universal Ctags on the same files (2 cores).

    .venv/bin/python benches/bench_extract.py DIR [--limit N] [--jobs J]   # prints a table
    .venv/bin/python -m pytest benches/bench_extract.py --benchmark-only   # pytest-benchmark

Maguyva runs `extract_files` (parse, queries, extraction and syntax-aware chunks) on all
cores; ctags runs `ctags -L list -f - >/dev/null` (single process, as users run it). The file set
is the same: every file under DIR that both know, up to --limit (sorted by path).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from maguyva.extract import extract_files
from maguyva.model import SourceFile
from maguyva.repo.languages import detect_language

SKIP_DIRS = {"site-packages", "__pycache__", ".git"}


def collect(root: Path, limit: int | None) -> list[SourceFile]:
    files = []
    for dirpath, dirnames, names in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(names):
            path = Path(dirpath) / name
            lang = detect_language(name)
            if lang and path.is_file() and not path.is_symlink():
                size = path.stat().st_size
                if size <= 1 << 20:
                    files.append(SourceFile(str(path.relative_to(root)), size, 0, lang))
    return files[:limit] if limit else files


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def run_maguyva(root: Path, files: list[SourceFile], jobs: int | None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process and its workers)."""
    cpu, start = _cpu(), time.perf_counter()
    count = sum(1 for _ in extract_files(root, files, jobs=jobs))
    assert count == len(files)
    return time.perf_counter() - start, _cpu() - cpu


def run_ctags(root: Path, files: list[SourceFile]) -> tuple[float, float]:
    with tempfile.NamedTemporaryFile("w", suffix=".list") as fh:
        fh.write("\n".join(f.path for f in files))
        fh.flush()
        cpu, start = _cpu(), time.perf_counter()
        # `-f /dev/null` fails on some kernel files (ctags rewrites its tag file); stdout
        # to /dev/null costs the same.
        subprocess.run(["ctags", "-L", fh.name, "-f", "-"], cwd=root, check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip
        return time.perf_counter() - start, _cpu() - cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--jobs", type=int)
    ap.add_argument("--rounds", type=int, default=3, help="alternating runs; best of each")
    args = ap.parse_args()
    files = collect(args.root, args.limit)
    mb = sum(f.size for f in files) / 1e6
    ours: list[tuple[float, float]] = []
    theirs: list[tuple[float, float]] = []
    for _ in range(args.rounds):  # alternate so that both see the same machine load
        ours.append(run_maguyva(args.root, files, args.jobs))
        theirs.append(run_ctags(args.root, files))
    print(f"{len(files)} files, {mb:.1f} MB, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    best = {}
    for label, runs in (("maguyva", ours), ("ctags", theirs)):
        wall, cpu = min(w for w, _ in runs), min(c for _, c in runs)
        best[label] = (wall, cpu)
        print(f"{label:8} wall {wall:7.2f} s  {len(files) / wall:7.0f} files/s  "
              f"{mb / wall:6.2f} MB/s   cpu {cpu:7.2f} s  ({mb / cpu:5.2f} MB per cpu-s)")  # fmt: skip
    wall_ratio = best["maguyva"][0] / best["ctags"][0]
    cpu_ratio = best["maguyva"][1] / best["ctags"][1]
    print(f"ratio maguyva/ctags: wall {wall_ratio:.2f}, cpu {cpu_ratio:.2f} "
          f"(idle 2-core wall estimate {cpu_ratio / 2:.2f})")  # fmt: skip


STDLIB = Path(sysconfig.get_paths()["stdlib"])


def test_extract_stdlib(benchmark) -> None:
    files = collect(STDLIB, 400)
    benchmark.pedantic(run_maguyva, args=(STDLIB, files, None), rounds=3, iterations=1)


def test_ctags_stdlib(benchmark) -> None:
    files = collect(STDLIB, 400)
    benchmark.pedantic(run_ctags, args=(STDLIB, files), rounds=3, iterations=1)


if __name__ == "__main__":
    main()
