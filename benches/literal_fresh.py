"""Literal questions each asked once, in process and warm: what no per-question cache sees.

    .venv/bin/python benches/literal_fresh.py ROOT [--json OUT]
    PYTHONPATH=BEFORE/python .venv/bin/python benches/literal_fresh.py ROOT

`warm_cli.py` cycles its four literals, so whatever an answer keeps (chunk records, decoded
rows, decoded content) serves the same question again. Here the index is warmed with
`warm_cli.py`'s mixed questions, then each of `FRESH` (literals common in Python code, not
those the code was tuned on) is asked once, in this order; p50 and p90 of `Index.search`,
wall and CPU (every thread of the process). Prints `uptime`'s load before and after.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from warm_cli import MIXED, load, pct

FRESH = [
    "return None", "import os", "self._lock", "except KeyError", "isinstance(",
    "raise TypeError", "def __repr__(self", "if __name__ ==", "yield from", "with open(",
    "os.path.join", "sys.stdout", "TODO", "encoding=", "lambda x", "@property",
    "super().__init__", "NotImplementedError", "threading.Lock", "time.monotonic",
    "struct.pack", "re.compile", "socket.socket", "warnings.warn", "__slots__",
    "except Exception", "return True", "self.assertEqual", "for i in range", "len(self",
    "raise RuntimeError", "def __eq__(self", "import sys", "@classmethod", "is not None",
    "except OSError", "kwargs", "self.name", "errno.", "finally:",
]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from maguyva.api import Index

    print("load before:", load())
    index = Index.open(args.root)
    index.warm()
    for qs in MIXED.values():
        for q in qs:
            index.search(q)
    wall, cpu = [], []
    for literal in FRESH:
        started, cpu_started = time.perf_counter(), time.process_time()
        index.search(f'"{literal}"')
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - cpu_started)
    row = {"questions": len(FRESH),
           "p50_ms": round(statistics.median(wall) * 1e3, 2), "p90_ms": round(pct(wall, 0.9) * 1e3, 2),
           "cpu_p50_ms": round(statistics.median(cpu) * 1e3, 2),
           "cpu_p90_ms": round(pct(cpu, 0.9) * 1e3, 2)}  # fmt: skip
    print(f"  {len(FRESH)} literals, each once: p50 {row['p50_ms']:.2f} ms  p90 {row['p90_ms']:.2f} "
          f"ms  CPU p50 {row['cpu_p50_ms']:.2f} ms  p90 {row['cpu_p90_ms']:.2f} ms")  # fmt: skip
    print("load after:", load())
    if args.json:
        args.json.write_text(json.dumps(row, indent=1))


if __name__ == "__main__":
    main()
