"""Run code or the `maguyva` CLI in this process with a fault-injecting file layer installed.

    python tests/support/faulty_run.py SPEC -c CODE [ARG...]
    python tests/support/faulty_run.py SPEC cli [ARG...]

The kill -9 tests start their children through this file: fault injection is test code, so
the package offers no environment variable to turn it on."""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[1] not in ("-c", "cli") or (argv[1] == "-c" and len(argv) < 3):
        print("usage: faulty_run.py SPEC (-c CODE | cli) [ARG...]", file=sys.stderr)
        return 2
    sys.path[0] = str(Path(__file__).resolve().parents[1])  # tests/, so `support` imports
    from support import faults

    faults.store.FILES = faults.parse(argv[0])
    if argv[1] == "-c":
        sys.argv = ["-c", *argv[3:]]
        exec(compile(argv[2], "<faulty_run>", "exec"), {"__name__": "__main__"})
        return 0
    from maguyva.interfaces.cli.main import main as cli

    sys.argv = ["maguyva", *argv[2:]]
    return cli(argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
