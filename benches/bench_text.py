"""Text modality against ripgrep, side by side on the same tree, warm cache.

As a script (the figures in docs/text.md):
    .venv/bin/python benches/bench_text.py [CORPUS_DIR] [--runs 20]
builds the index (build MB/s, sizes), then times each query with Maguyva's index and with
`rg` (p50/p99 over the runs). With pytest-benchmark (`make bench`), the same queries run
over the standard library as paired benchmarks.
"""

from __future__ import annotations

import argparse
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
from maguyva.walk import walk_repository

STDLIB = Path(sysconfig.get_paths()["stdlib"])
# rare (few files), common (most files), absent
LITERALS = [
    "ECONNREFUSED",
    "EXPORT_SYMBOL_GPL(",
    "spin_lock_irqsave",
    "getaddrinfo",
    "Traceback (most recent call last)",
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


def build(corpus: Path, out: Path) -> dict:
    t = time.perf_counter()
    walked = walk_repository(corpus)
    walk_s = time.perf_counter() - t
    t = time.perf_counter()
    report = dict(
        _core.build_text_index(str(corpus), str(out), [(f.path, []) for f in walked.files])
    )
    build_s = time.perf_counter() - t
    report.pop("skipped_files")
    mb = report["content_bytes"] / 1e6
    return {
        **report,
        "walk_s": round(walk_s, 2),
        "build_s": round(build_s, 2),
        "build_MB_per_s": round(mb / build_s, 1),
        "postings_ratio": round(report["index_bytes"] / report["content_bytes"], 3),
        "total_ratio": round(
            (report["index_bytes"] + report["stored_bytes"]) / report["content_bytes"], 3
        ),
    }


def rg_files(corpus: Path, pattern: str, regex: bool) -> set[str]:
    args = ["rg", "-l", "--no-messages", "-s"] + ([] if regex else ["-F"]) + ["--", pattern, "."]
    out = subprocess.run(args, cwd=corpus, capture_output=True, text=True).stdout
    return {line.removeprefix("./") for line in out.splitlines()}


def ours_files(index: _core.TextIndex, pattern: str, regex: bool) -> set[str]:
    """Matching files, one line each (what `rg -l` reports)."""
    files, _, _ = index.search(
        pattern, regex=regex, case="sensitive", max_lines=1 << 60, max_lines_per_file=1
    )
    return {f[0] for f in files}


def timed(fn, runs: int) -> tuple[float, float]:
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.99))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", nargs="?", default=str(STDLIB))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rg-runs", type=int, default=5)
    args = ap.parse_args()
    corpus = Path(args.corpus)
    with tempfile.TemporaryDirectory() as tmp:
        report = build(corpus, Path(tmp) / "text")
        print("build:", report)
        index = _core.TextIndex(str(Path(tmp) / "text"))
        print(
            f"{'query':40} {'files':>6} {'ours p50':>9} {'ours p99':>9} {'rg p50':>9} {'rg p99':>9} {'x':>6}"
        )
        for pattern, regex in [(p, False) for p in LITERALS] + [(p, True) for p in REGEXES]:
            ours = ours_files(index, pattern, regex)
            theirs = rg_files(corpus, pattern, regex) if shutil.which("rg") else ours
            # rg also searches files the walker refuses (too many trigrams, >1 MiB): compare on ours.
            agree = "" if ours == theirs & set(index.paths()) else " MISMATCH"
            o50, o99 = timed(lambda p=pattern, r=regex: ours_files(index, p, r), args.runs)
            r50, r99 = timed(lambda p=pattern, r=regex: rg_files(corpus, p, r), args.rg_runs)
            label = ("re " if regex else "lit ") + pattern
            print(
                f"{label[:40]:40} {len(ours):6} {o50:9.2f} {o99:9.2f} {r50:9.1f} {r99:9.1f} {r50 / o50:6.0f}{agree}"
            )
        sys.stdout.flush()


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
