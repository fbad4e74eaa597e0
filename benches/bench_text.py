"""Text modality against ripgrep, side by side on the same tree, warm cache.

As a script (the figures in docs/text-measurements.md):
    .venv/bin/python benches/bench_text.py [CORPUS_DIR] [--runs 20]
builds the index (build MB/s, sizes), then times each query with Maguyva's index and with
`rg` (p50/p99 over the runs), and what `Index.grep` runs (the first 100 lines, exact counts). With pytest-benchmark (`make bench`), the same queries run
over the standard library as paired benchmarks.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import pytest

from maguyva import _core
from maguyva.repo.walk import walk_repository

STDLIB = Path(sysconfig.get_paths()["stdlib"])
# rare (few files), common (most files), absent
LITERALS = [
    "ECONNREFUSED",
    "EXPORT_SYMBOL_GPL(",
    "spin_lock_irqsave",
    "getaddrinfo",
    "Traceback (most recent call last)",
    "scheduling while atomic",
    "return",
    "include",
    "zq_absent_literal_zq",
]
REGEXES = [
    r"ECONN[A-Z]+",
    r"def\s+test_\w+_error",
    r"struct\s+\w+_ops\s*\{",
    r"(?:get|set)_[a-z]+_timeout",
    r"[0-9a-f]{8}-[0-9a-f]{4}",
]


def machine() -> str:
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def build(corpus: Path, out: Path, zstd_level: int = 0) -> dict:
    t = time.perf_counter()
    walked = walk_repository(corpus)
    walk_s = time.perf_counter() - t
    t, cpu = time.perf_counter(), time.process_time()
    files = [(f.path, []) for f in walked.files]
    report = dict(_core.build_text_index(str(corpus), str(out), files, zstd_level=zstd_level))
    build_s = time.perf_counter() - t
    # CPU seconds of every thread of the build: on a machine shared with other jobs, wall
    # time measures the contention; MB per CPU second x 2 is what 2 free cores would give.
    build_cpu = time.process_time() - cpu
    report.pop("skipped_files")
    mb = report["content_bytes"] / 1e6
    return {
        **report,
        "walk_s": round(walk_s, 2),
        "build_s": round(build_s, 2),
        "build_cpu_s": round(build_cpu, 2),
        "build_MB_per_s": round(mb / build_s, 1),
        "build_MB_per_cpu_s": round(mb / build_cpu, 1),
        "postings_ratio": round(report["index_bytes"] / report["content_bytes"], 3),
        "total_ratio": round(
            (report["index_bytes"] + report["stored_bytes"]) / report["content_bytes"], 3
        ),
    }


def rg_files(corpus: Path, pattern: str, regex: bool, multiline: bool = False) -> set[str]:
    r"""`rg -l`; `multiline` (-U) lets `\s` match newlines as ours does (the file set to
    compare with), the default line mode is what is timed."""
    flags = ["-U"] if multiline else []
    mode = [] if regex else ["-F"]
    args = ["rg", "-l", "--no-messages", "-s", *flags, *mode, "--", pattern, "."]
    out = subprocess.run(args, cwd=corpus, capture_output=True, text=True).stdout
    return {line.removeprefix("./") for line in out.splitlines()}


def ours_files(index: _core.TextIndex, pattern: str, regex: bool) -> set[str]:
    """Matching files, one line each, stopping at a file's first match (what `rg -l` does)."""
    return ours_files_candidates(index, pattern, regex)[0]


def ours_files_candidates(
    index: _core.TextIndex, pattern: str, regex: bool
) -> tuple[set[str], int]:
    """`ours_files` and the number of candidate documents verified."""
    files, candidates, _ = index.search(
        pattern,
        regex=regex,
        case="sensitive",
        max_lines=1 << 60,
        max_lines_per_file=1,
        count_all=False,
    )
    return {f[0] for f in files}, candidates


def ours_grep(index: _core.TextIndex, pattern: str, regex: bool) -> int:
    """What `Index.grep` (`maguyva search`) runs: smart case, the first 100 matching lines
    with exact counts."""
    files, _, _ = index.search(pattern, regex=regex, case="smart", max_lines=100)
    return sum(len(f[3]) for f in files)


def cpu_ms() -> float:
    """CPU time of this process (all threads) and of its finished children (rg), in ms."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime) * 1000


def timed(fn, runs: int) -> tuple[float, float, float]:
    """Wall p50 and p99 and mean CPU ms per run (CPU time does not count waiting for a core,
    which on a shared machine is most of the wall time)."""
    samples = []
    cpu = cpu_ms()
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    cpu = (cpu_ms() - cpu) / runs
    samples.sort()
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
    return statistics.median(samples), p99, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", nargs="?", default=str(STDLIB))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rg-runs", type=int, default=5)
    ap.add_argument("--zstd-level", type=int, default=0, help="0: LZ4 content store")
    ap.add_argument("--build-only", action="store_true", help="build throughput and size only")
    args = ap.parse_args()
    corpus = Path(args.corpus)
    print("machine:", machine(), "| load average:", os.getloadavg())
    with tempfile.TemporaryDirectory() as tmp:
        report = build(corpus, Path(tmp) / "text", args.zstd_level)
        print("build:", report, "| load average:", os.getloadavg())
        if args.build_only:
            return
        index = _core.TextIndex(str(Path(tmp) / "text"))
        print(
            f"{'query':40} {'files':>6} {'cands':>6} {'ours p50':>9} {'ours p99':>9} {'ours cpu':>9} "
            f"{'rg p50':>9} {'rg p99':>9} {'rg cpu':>9} {'x p50':>6} {'x cpu':>6} {'grep p50':>9}"
        )
        for pattern, regex in [(p, False) for p in LITERALS] + [(p, True) for p in REGEXES]:
            ours, candidates = ours_files_candidates(index, pattern, regex)
            theirs = (
                rg_files(corpus, pattern, regex, multiline=True) if shutil.which("rg") else ours
            )
            # rg also searches files the walker refuses (too many trigrams, >1 MiB): compare on ours.
            agree = "" if ours == theirs & set(index.paths()) else " MISMATCH"
            o50, o99, ocpu = timed(lambda p=pattern, r=regex: ours_files(index, p, r), args.runs)
            r50, r99, rcpu = timed(lambda p=pattern, r=regex: rg_files(corpus, p, r), args.rg_runs)
            g50, _, _ = timed(lambda p=pattern, r=regex: ours_grep(index, p, r), args.runs)
            label = ("re " if regex else "lit ") + pattern
            print(
                f"{label[:40]:40} {len(ours):6} {candidates:6} {o50:9.2f} {o99:9.2f} {ocpu:9.2f} "
                f"{r50:9.1f} {r99:9.1f} {rcpu:9.1f} {r50 / o50:6.0f} {rcpu / max(ocpu, 1e-3):6.0f}"
                f" {g50:9.2f}{agree}"
            )
            sys.stdout.flush()
        print("load average after:", os.getloadavg())


@pytest.fixture(scope="module")
def stdlib_index(tmp_path_factory: pytest.TempPathFactory) -> _core.TextIndex:
    out = tmp_path_factory.mktemp("bench") / "text"
    build(STDLIB, out)
    return _core.TextIndex(str(out))


@pytest.mark.parametrize("pattern", LITERALS)
def test_literal_maguyva(benchmark, stdlib_index: _core.TextIndex, pattern: str) -> None:
    benchmark.group = f"literal {pattern}"
    benchmark(ours_files, stdlib_index, pattern, False)


@pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep not installed")
@pytest.mark.parametrize("pattern", LITERALS)
def test_literal_ripgrep(benchmark, pattern: str) -> None:
    benchmark.group = f"literal {pattern}"
    benchmark.pedantic(rg_files, args=(STDLIB, pattern, False), rounds=5)


if __name__ == "__main__":
    main()
