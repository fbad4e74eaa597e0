"""MCP round-trip latency per tool over a real stdio session (median and max of 30 calls after
a warm-up call). Usage: python benches/mcp_latency.py /path/to/indexed/repo"""

from __future__ import annotations

import statistics
import sys
import time

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

CALLS = [
    ("search", {"query": "where is dedent defined"}),
    ("search", {"query": "how are lines wrapped"}),
    ("find_symbol", {"name": "dedent"}),
    ("read_chunk", {"path": "shlex.py", "start_line": 1, "end_line": 100}),
]


async def main(root: str) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "maguyva.interfaces.cli.main", "mcp", "--root", root]
    )
    started = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        print(f"startup+initialize {time.perf_counter() - started:.2f}s")
        for name, args in CALLS:
            await session.call_tool(name, args)
            times = []
            for _ in range(30):
                begun = time.perf_counter()
                await session.call_tool(name, args)
                times.append((time.perf_counter() - begun) * 1000)
            print(
                f"{name} {args}: median {statistics.median(times):.1f} ms, max {max(times):.1f} ms"
            )


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
