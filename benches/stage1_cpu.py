"""CPU seconds per phase of a staged first build up to "every chunk searchable by meaning"
(the stage-1 generations: text over line windows, then the static rows of every window), the
build stopped as the next stage's extraction starts (`build.staged`).

    .venv/bin/python benches/stage1_cpu.py /work/corpora/linux [--profile out.prof] [--json f]

Each phase's window runs from its first progress event to the next phase's first event;
CPU is this process's user + system time (its threads included: the Rust pools) and its
children's; peak memory is the tree's (this process and its window workers, proportional set
size sampled every 0.1 s: `build.memory.RssSampler`), overall and per phase. The load average is printed beside the figures: wall times under load are not
idle wall times, CPU seconds nearly are."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


class Stop(Exception):
    """Raised from the progress callback as the second stage's extraction starts."""


def cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


class Clock:
    """A progress callback recording (phase, wall, cpu) at each phase's first event."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.c0 = cpu()
        self.marks: list[tuple[str, float, float]] = []
        self.extracts = 0

    def __call__(self, phase: str, done: int, total: int) -> None:
        if self.marks and self.marks[-1][0] == phase:
            return
        if phase == "extract" and done == 0:
            self.extracts += 1
            if self.extracts == 2:
                self.mark("end")
                raise Stop
            self.mark(phase)
        elif done == 0 or not self.marks or self.marks[-1][0] != phase:
            self.mark(phase)

    def mark(self, phase: str) -> None:
        self.marks.append((phase, time.perf_counter() - self.t0, cpu() - self.c0))

    def rows(self, sampler: Any = None) -> list[dict[str, Any]]:
        out = []
        for (name, w, c), (_n, w2, c2) in itertools.pairwise(self.marks):
            row = {"phase": name, "wall_s": round(w2 - w, 3), "cpu_s": round(c2 - c, 3)}
            if sampler is not None:  # the sampler's clock started with this one, give or take
                row["peak_mib"] = sampler.peak_between(w, w2) >> 20
            out.append(row)
        return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--index-dir", type=Path, default=None)
    ap.add_argument("--profile", type=Path, default=None, help="cProfile output")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--memory", default=None, help="the build's memory budget (`--memory`)")
    args = ap.parse_args(argv)
    from maguyva.build.indexer import build_index

    tmp = Path(tempfile.mkdtemp(prefix="stage1-cpu-"))
    index_dir = args.index_dir or tmp / "index"
    if index_dir.exists():
        shutil.rmtree(index_dir)
    config: dict[str, Any] = {"first_build_stages": True, "index_dir": str(index_dir)}
    if args.memory:
        config["memory"] = args.memory
    load0 = os.getloadavg()
    clock = Clock()
    prof = None
    if args.profile:
        import cProfile

        prof = cProfile.Profile(time.process_time)  # CPU, the pools included
        prof.enable()
    from maguyva.build.memory import RssSampler, parse_size, run_within_budget

    def build() -> None:
        with contextlib.suppress(Stop):
            build_index(args.root.resolve(), config=config, progress=clock)

    with RssSampler(interval_s=0.1) as sampler:
        if args.memory:  # as `maguyva index --memory` runs it: stopped when over the budget
            run_within_budget(build, parse_size(args.memory))
        else:
            build()
    if prof is not None:
        prof.disable()
        prof.dump_stats(str(args.profile))
    load1 = os.getloadavg()
    rows = clock.rows(sampler)
    total_w = sum(r["wall_s"] for r in rows)
    total_c = sum(r["cpu_s"] for r in rows)
    print(f"{args.root}: load {load0[0]:.1f} -> {load1[0]:.1f}, "
          f"{time.strftime('%H:%M UTC', time.gmtime())}")  # fmt: skip
    for r in rows:
        print(f"  {r['phase']:<12} wall {r['wall_s']:8.2f} s  cpu {r['cpu_s']:8.2f} s  "
              f"peak {r['peak_mib']:6,} MiB")  # fmt: skip
    print(f"  {'total':<12} wall {total_w:8.2f} s  cpu {total_c:8.2f} s  "
          f"peak {sampler.peak >> 20:6,} MiB (the process tree)")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"root": str(args.root), "load": [load0, load1],
                                         "peak_mib": sampler.peak >> 20, "phases": rows},
                                        indent=1))  # fmt: skip
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
