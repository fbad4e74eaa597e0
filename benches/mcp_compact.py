"""Compact vs indented MCP answers, and what fits at budget_tokens=1000 (docs/interfaces.md).

python benches/mcp_compact.py ROOT INDEX_DIR   # with either virtual environment
"""

import json
import sys
import tempfile

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT, IDX = sys.argv[1], sys.argv[2]
QUERIES = [
    "how are redirects followed",
    "who calls merge_setting",
    "where is merge_setting defined",
    '"Invalid URL"',
]


async def go():
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "maguyva.interfaces.cli.main", "mcp", "--root", ROOT, "--index-dir", IDX],
        cwd=ROOT,
    )
    with tempfile.TemporaryFile("w+") as err:
        async with stdio_client(params, errlog=err) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            for q in QUERIES:
                big = await s.call_tool("search", {"query": q, "budget_tokens": 100000})
                text = big.content[0].text
                data = json.loads(text)
                ind = json.dumps(data, indent=2, ensure_ascii=False)
                small = await s.call_tool("search", {"query": q, "budget_tokens": 1000})
                sd = json.loads(small.content[0].text)
                bodies = sum(1 for x in sd["results"] if x.get("body"))
                print(
                    f"{q!r}: sent {len(text)} chars, compact/indented = {len(json.dumps(data, separators=(',', ':'), ensure_ascii=False)) / len(ind):.2f}; budget 1000: {len(sd['results'])} results, {bodies} bodies, sent {len(small.content[0].text)} chars"
                )


anyio.run(go)
