"""All matching lines of a common literal, `maguyva search` beside `rg -n`, in one run (issue 21).

    .venv/bin/python benches/lines_cli.py ROOT [--literal self] [--runs 10] [--before PYTHONPATH]
        [--max-results 1000]

ROOT is indexed beforehand (`maguyva index`). Interleaved round by round: `rg -n LITERAL .`,
`maguyva search '"LITERAL"' --max-results 1000 (the CLI's cap)` through the warm server (the
server writing into the client's stdout, and with `MAGUYVA_DAEMON_FDS=0` sending the output
over the socket for the client to print) and with `--no-daemon`; the interpreter's own start
(`python -c pass`, `python -S -I -c pass`), the floor of any Python client; and with
`--before`, the same `--no-daemon` command on another checkout's `python/` (e.g. main's:
`git archive main python | tar -x -C DIR`, with this build's `_core` copied in). Wall time from
spawn to exit, stdout a pipe read by this process, p50 (min); the lines printed; whether the
outputs of the warm server equal the in-process one (and the `--before` one). Prints `uptime`
before and after, and whether `maguyva` is the native client.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

MAGUYVA = Path(sys.executable).with_name("maguyva")


def server_cpu(root: Path) -> float:
    """CPU seconds (user + system) of the warm server of ROOT so far; 0 when none runs."""
    try:
        pid = (root / ".maguyva" / "daemon.lock").read_text().strip()
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(
    cmd: list[str], cwd: Path, env: dict[str, str], check: bool = False
) -> tuple[float, float, bytes]:
    """(wall seconds, CPU seconds of the process and of the warm server, stdout); `check`:
    an exit code other than 0 and 1 stops the run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    served = server_cpu(cwd)
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, check=False)
    wall = time.perf_counter() - started
    if check and proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd}: exit {proc.returncode}: {proc.stderr.decode()[-300:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu + server_cpu(cwd) - served, proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--literal", default="self")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--max-results", default="1000")
    ap.add_argument("--before", help="PYTHONPATH of the code to compare against")
    args = ap.parse_args()
    root = args.root.resolve()
    env = dict(os.environ, MAGUYVA_DAEMON="1")
    env.pop("MAGUYVA_DAEMON_FDS", None)
    query = [f'"{args.literal}"', "--max-results", args.max_results]
    warm = "maguyva search, warm server"
    socket_env = dict(env, MAGUYVA_DAEMON_FDS="0")
    commands = {
        f"rg -n {args.literal} .": (["rg", "-n", args.literal, "."], env),
        warm: ([str(MAGUYVA), "search", *query], env),
        "  output over the socket": ([str(MAGUYVA), "search", *query], socket_env),
        "maguyva search --no-daemon": ([str(MAGUYVA), "search", *query, "--no-daemon"], env),
        "python -c pass": ([sys.executable, "-c", "pass"], env),
        "python -S -I -c pass": ([sys.executable, "-S", "-I", "-c", "pass"], env),
    }
    if args.before:
        before_env = dict(env, PYTHONPATH=args.before)
        cmd = [sys.executable, "-m", "maguyva", "search", *query, "--no-daemon"]
        commands["before: --no-daemon"] = (cmd, before_env)
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    # `maturin develop` puts the Python console script back in place of the native client
    # (`make native-client` reinstalls it): say which one is measured
    native = MAGUYVA.read_bytes()[:4] == b"\x7fELF"
    print(f"client: {MAGUYVA} ({'native' if native else 'Python console script'})")
    for _ in range(2):  # start and warm the server
        timed(commands[warm][0], root, env)
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    outputs: dict[str, bytes] = {}
    for _ in range(args.runs):
        for name, (cmd, cmd_env) in commands.items():
            seconds, cpu, out = timed(cmd, root, cmd_env)
            times[name].append(seconds)
            cpus[name].append(cpu)
            outputs[name] = out
    rg = statistics.median(times[next(iter(commands))])
    rg_cpu = statistics.median(cpus[next(iter(commands))])
    print("wall: spawn to exit; CPU: the process's and the warm server's, user + system")
    print(f"{'command':34} {'p50 ms':>8} {'min ms':>8} {'x rg':>6} {'CPU ms':>7} {'x rg':>6} "
          f"{'lines':>7}")  # fmt: skip
    for name, ts in times.items():
        p50, lines = statistics.median(ts), outputs[name].count(b"\n")
        cpu = statistics.median(cpus[name])
        print(f"{name:34} {p50 * 1e3:8.1f} {min(ts) * 1e3:8.1f} {p50 / rg:6.2f} "
              f"{cpu * 1e3:7.1f} {cpu / rg_cpu:6.2f} {lines:7d}")  # fmt: skip
    in_process = outputs["maguyva search --no-daemon"]
    print("warm outputs identical to --no-daemon:",
          outputs[warm] == in_process == outputs["  output over the socket"])  # fmt: skip
    if args.before:
        print("output identical to --before:", outputs["before: --no-daemon"] == in_process)
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
