"""All matching lines of a common literal, `maguyva search` beside `rg -n`, in one run (issue 21).

    .venv/bin/python benches/lines_cli.py ROOT [--literal self] [--runs 10] [--before PYTHONPATH]

ROOT is indexed beforehand (`maguyva index`). Interleaved round by round: `rg -n LITERAL .`,
`maguyva search '"LITERAL"' --max-results 1000 (the CLI's cap)` through the warm server and with
`--no-daemon`, and with `--before`, the same `--no-daemon` command on another checkout's
`python/` (e.g. main's: `git archive main python | tar -x -C DIR`, with this build's
`_core` copied in). Wall time from spawn to exit, p50 (min); the lines printed; whether the
output equals the `--before` one. Then, in process, CPU ms of the question and its parts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

MAGUYVA = Path(sys.executable).with_name("maguyva")


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, bytes]:
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, check=False)
    return time.perf_counter() - started, proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--literal", default="self")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--before", help="PYTHONPATH of the code to compare against")
    args = ap.parse_args()
    root = args.root.resolve()
    env = dict(os.environ, MAGUYVA_DAEMON="1")
    query = [f'"{args.literal}"', "--max-results", "1000"]
    commands = {
        f"rg -n {args.literal} .": (["rg", "-n", args.literal, "."], env),
        "maguyva search, warm server": ([str(MAGUYVA), "search", *query], env),
        "maguyva search --no-daemon": ([str(MAGUYVA), "search", *query, "--no-daemon"], env),
    }
    if args.before:
        before_env = dict(env, PYTHONPATH=args.before)
        cmd = [sys.executable, "-m", "maguyva", "search", *query, "--no-daemon"]
        commands["before: --no-daemon"] = (cmd, before_env)
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    timed(commands["maguyva search, warm server"][0], root, env)  # start and warm the server
    times: dict[str, list[float]] = {name: [] for name in commands}
    outputs: dict[str, bytes] = {}
    for _ in range(args.runs):
        for name, (cmd, cmd_env) in commands.items():
            seconds, out = timed(cmd, root, cmd_env)
            times[name].append(seconds)
            outputs[name] = out
    rg = statistics.median(times[next(iter(commands))])
    print(f"{'command':34} {'p50 ms':>8} {'min ms':>8} {'x rg':>6} {'lines':>7}")
    for name, ts in times.items():
        p50, lines = statistics.median(ts), outputs[name].count(b"\n")
        print(f"{name:34} {p50 * 1e3:8.1f} {min(ts) * 1e3:8.1f} {p50 / rg:6.2f} {lines:7d}")
    if args.before:
        same = outputs["before: --no-daemon"] == outputs["maguyva search --no-daemon"]
        print("output identical to --before:", same)
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
