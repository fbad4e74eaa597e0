"""`maguyva search` as a process, side by side with ripgrep in one run (issue 21).

    .venv/bin/python benches/warm_cli.py ROOT [ROOT...] [--runs 30] [--literal TEXT]
        [--question TEXT] [--json OUT] [--in-process-only] [--profile INTENT]

Run it with the package's bytecode compiled (`python -m compileall python/maguyva`), as an
installed wheel has it: with PYTHONDONTWRITEBYTECODE set and no `__pycache__`, every client
start compiles its modules again.

For each indexed ROOT (indexed beforehand with `maguyva index`), in one run, interleaved
round by round so that a change in the machine's load hits every command alike:

- `rg -n LITERAL .`                                   the peer
- `maguyva search '"LITERAL"'`, warm server           (started and warmed before timing),
  through the native client (`rust/client`, when `make setup` installed it as `maguyva`) and
  through the Python client (a console script of `maguyva.interfaces.client:main`, as pip
  writes it)
- `maguyva search '"LITERAL"' --no-daemon`            in process, no server
- `maguyva search QUESTION`, warm server              a natural-language question, both clients
- `python -c pass`                                    the interpreter's own start: the floor
  of any Python client

Wall time is from spawn to exit (`subprocess.run`), p50 and p90 over `--runs` rounds; the
ratio is against rg's p50 of the same rounds. Then, in process and warm (`Index.search`),
p50/p99 of mixed questions: natural language, definition, references and literal, each
intent's figures over its own questions cycled `--runs` times, wall and CPU (every thread of
the process: on a loaded machine the wall time is mostly waiting for a core).
`--in-process-only` skips the processes, `--processes-only` the in-process figures;
`--profile INTENT` (e.g. `literal`) then prints
where that intent's warm questions spend their time (cProfile, by own time).
Prints `uptime`'s load before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import lines_cli  # noqa: E402  (the timing helper, beside this script)

MAGUYVA = Path(sys.executable).with_name("maguyva")
CONSOLE_SCRIPT = """import sys
from maguyva.interfaces.client import main
if __name__ == '__main__':
    sys.exit(main())
"""
"""The Python client as pip's console script runs it (`maguyva` before the native client)."""


def is_native(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def python_client(directory: Path) -> list[str]:
    script = directory / "maguyva-python"
    script.write_text(CONSOLE_SCRIPT)
    return [sys.executable, str(script)]


MIXED = {
    "natural language": ["how are redirects followed", "where are cookies merged into a request",
                         "how is a connection pool closed", "how are headers made case insensitive"],
    "definition": ["where is merge_setting defined", "where is HTTPAdapter defined",
                   "where is namedtuple defined", "where is OrderedDict defined"],
    "references": ["who calls merge_setting", "who calls urlparse", "who calls dedent",
                   "who calls get_terminal_size"],
    "literal": ['"Invalid URL"', '"maxsize="', '"def __init__(self"', '"raise ValueError"'],
}  # fmt: skip


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and of ROOT's warm server), stdout a pipe."""
    seconds, cpu, _ = lines_cli.timed(cmd, cwd, env, check=True)
    return seconds, cpu


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def processes(root: Path, runs: int, literal: str, question: str, scratch: Path) -> dict:
    env = {**os.environ}
    env.pop("MAGUYVA_DAEMON", None)
    env.pop("MAGUYVA_DAEMON_FDS", None)
    rg = shutil.which("rg")
    python = python_client(scratch)
    commands: dict[str, tuple[list[str], dict[str, str]]] = {}
    if rg:
        commands["rg -n literal"] = ([rg, "-n", literal, "."], env)
    if is_native(MAGUYVA):
        commands["maguyva literal, warm, native client"] = (
            [str(MAGUYVA), "search", f'"{literal}"'], env)  # fmt: skip
    warm = [*python, "search", f'"{literal}"']
    commands["maguyva literal, warm, Python client"] = (warm, env)
    commands["maguyva literal, no server"] = ([str(MAGUYVA), "search", f'"{literal}"',
                                               "--no-daemon"], env)  # fmt: skip
    if is_native(MAGUYVA):
        commands["maguyva question, warm, native client"] = (
            [str(MAGUYVA), "search", question], env)  # fmt: skip
    commands["maguyva question, warm, Python client"] = ([*python, "search", question], env)
    commands["python -c pass (the floor)"] = ([sys.executable, "-c", "pass"], env)
    for cmd, cmd_env in commands.values():  # start and warm the server; first runs of each
        for _ in range(2):
            timed(cmd, root, cmd_env)
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, (cmd, cmd_env) in commands.items():
            seconds, cpu = timed(cmd, root, cmd_env)
            times[name].append(seconds)
            cpus[name].append(cpu)
    base = statistics.median(times["rg -n literal"]) if rg else None
    base_cpu = statistics.median(cpus["rg -n literal"]) if rg else None
    rows = {}
    for name, values in times.items():
        p50, cpu = statistics.median(values), statistics.median(cpus[name])
        rows[name] = {"p50_ms": round(p50 * 1e3, 1), "p90_ms": round(pct(values, 0.9) * 1e3, 1),
                      "x_rg": round(p50 / base, 2) if base else None,
                      "cpu_p50_ms": round(cpu * 1e3, 1),
                      "cpu_x_rg": round(cpu / base_cpu, 2) if base_cpu else None}  # fmt: skip
    subprocess.run([sys.executable, "-m", "maguyva.interfaces.daemon", "--stop",
                    "--index-dir", str(root / ".maguyva")], capture_output=True, check=False)  # fmt: skip
    return rows


def in_process(root: Path, runs: int, profile: str | None = None) -> dict:
    """Warm `Index.search` p50/p99 per intent, the intents' questions interleaved (mixed);
    the query-embedding cache is emptied before each question (each is new to it), and a
    separate row gives a natural-language question asked again (served by that cache)."""
    from maguyva.api import Index
    from maguyva.modalities.semantic import search as semantic_search

    index = Index.open(root)
    index.warm()
    order = [(name, q) for qs in zip(*MIXED.values(), strict=True)
             for name, q in zip(MIXED, qs, strict=True)]  # fmt: skip
    for _, q in order:  # first answers (lazy segments, tables) are not the warm figure
        index.search(q)
    took: dict[str, list[float]] = {name: [] for name in MIXED}
    cpu: dict[str, list[float]] = {name: [] for name in MIXED}
    for _ in range(runs):
        for name, q in order:
            semantic_search._QUERY_CACHE.clear()
            started, cpu_started = time.perf_counter(), time.process_time()
            index.search(q)
            took[name].append(time.perf_counter() - started)
            cpu[name].append(time.process_time() - cpu_started)
    again, again_cpu = [], []
    for _ in range(runs * 4):
        started, cpu_started = time.perf_counter(), time.process_time()
        index.search(MIXED["natural language"][0])
        again.append(time.perf_counter() - started)
        again_cpu.append(time.process_time() - cpu_started)
    took["natural language, asked again"] = again
    cpu["natural language, asked again"] = again_cpu
    if profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(runs):
            for q in MIXED[profile]:
                semantic_search._QUERY_CACHE.clear()
                index.search(q)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(18)
    return {name: {"p50_ms": round(statistics.median(v) * 1e3, 2),
                   "p99_ms": round(pct(v, 0.99) * 1e3, 2),
                   "cpu_p50_ms": round(statistics.median(cpu[name]) * 1e3, 2)}
            for name, v in took.items()}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--literal", action="append",
                        help="per ROOT, in order (default: Invalid URL)")  # fmt: skip
    parser.add_argument("--question", action="append",
                        help="per ROOT, in order (default: how are redirects followed)")  # fmt: skip
    parser.add_argument("--json", type=Path)
    parser.add_argument("--in-process-only", action="store_true")
    parser.add_argument("--processes-only", action="store_true")
    parser.add_argument("--profile", choices=sorted(MIXED))
    args = parser.parse_args()
    report = {
        "load_before": load(),
        "cpus": os.cpu_count(),
        "native": is_native(MAGUYVA),
        "roots": {},
    }
    print(report["load_before"])
    literals = args.literal or ["Invalid URL"]
    questions = args.question or ["how are redirects followed"]
    for i, root in enumerate(args.roots):
        root = root.resolve()
        literal = literals[min(i, len(literals) - 1)]
        question = questions[min(i, len(questions) - 1)]
        report.setdefault("asked", {})[str(root)] = {"literal": literal, "question": question}
        with tempfile.TemporaryDirectory() as scratch:
            procs = {} if args.in_process_only else processes(root, args.runs, literal,
                                                              question, Path(scratch))  # fmt: skip
        inproc = {} if args.processes_only else in_process(root, args.runs, args.profile)
        report["roots"][str(root)] = {"processes": procs, "in_process": inproc}
        print(f"\n{root}: literal {literal!r}, question {question!r}")
        for name, row in procs.items():
            ratio = f"{row['x_rg']:.2f}x rg" if row["x_rg"] else ""
            cpu_ratio = f"{row['cpu_x_rg']:.2f}x rg" if row["cpu_x_rg"] else ""
            print(f"  {name:<40} p50 {row['p50_ms']:8.1f} ms  p90 {row['p90_ms']:8.1f} ms  "
                  f"{ratio:>9}  CPU {row['cpu_p50_ms']:6.1f} ms {cpu_ratio:>9}")  # fmt: skip
        for name, row in inproc.items():
            print(f"  in process, {name:<30} p50 {row['p50_ms']:8.2f} ms  "
                  f"p99 {row['p99_ms']:8.2f} ms  CPU p50 {row['cpu_p50_ms']:8.2f} ms")  # fmt: skip
    report["load_after"] = load()
    print("\n" + report["load_after"])
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
