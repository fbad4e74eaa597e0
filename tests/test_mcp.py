"""The MCP server end to end: the SDK's own client over a real stdio subprocess, against a
real indexed repository. Every tool, progress notifications, the token budget and cursor,
concurrent calls, bad arguments, the path-escape matrix (fixed and generated), tool-schema
snapshots, and a protocol-only stdout.

Regenerate the schema snapshot with `MAGUYVA_UPDATE_SNAPSHOTS=1` and review the diff."""

from __future__ import annotations

import json
import os
import random
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from interfaces_corpus import COMPONENTS, escape_matrix, make_corpus, oracle_inside
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from maguyva.api import Index

SNAPSHOT = Path(__file__).parent / "snapshots" / "mcp" / "tools.json"
TOOLS = {"search", "find_symbol", "find_references", "impact", "read_chunk", "index_status",
         "reindex"}  # fmt: skip


def with_session(
    root: Path, scenario: Callable[[ClientSession], Awaitable[Any]], extra: tuple[str, ...] = ()
) -> Any:
    """Start `maguyva mcp --root ROOT [EXTRA]` as a subprocess, run `scenario` in a session."""

    async def go() -> Any:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "maguyva.interfaces.cli.main", "mcp", "--root", str(root), *extra],
            cwd=str(root), env={"NO_COLOR": "1", "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        with tempfile.TemporaryFile("w+") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await scenario(session)

    return anyio.run(go)


def text_of(result: Any) -> str:
    return result.content[0].text if result.content else ""


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = make_corpus(tmp_path_factory.mktemp("mcp"))
    Index.open(root).build()
    return root


def test_tool_schemas_match_snapshot(root: Path):
    async def scenario(session: ClientSession):
        return (await session.list_tools()).tools

    tools = with_session(root, scenario)
    assert {t.name for t in tools} == TOOLS
    current = {
        t.name: {
            "title": t.title,
            "description": t.description,
            "input_schema": t.input_schema,
            "output_schema": t.output_schema,
            "annotations": t.annotations.model_dump(exclude_none=True) if t.annotations else None,
        }
        for t in sorted(tools, key=lambda t: t.name)
    }
    rendered = json.dumps(current, indent=1, sort_keys=True) + "\n"
    if os.environ.get("MAGUYVA_UPDATE_SNAPSHOTS") or not SNAPSHOT.exists():
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_text(rendered)
    assert rendered == SNAPSHOT.read_text(), "tool schemas changed: regenerate and review"
    search = current["search"]["input_schema"]["properties"]
    assert search["k"]["maximum"] == 100 and search["budget_tokens"]["minimum"] == 500
    assert current["reindex"]["annotations"]["read_only_hint"] is False
    assert current["search"]["annotations"]["read_only_hint"] is True


def test_every_tool(root: Path):
    async def scenario(session: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        calls = {
            "search": {"query": "where is dedent defined", "budget_tokens": 4000},
            "find_symbol": {"name": "dedent"},
            "find_references": {"symbol": "dedent"},
            "impact": {"symbol": "dedent", "depth": 2},
            "read_chunk": {"path": "textwrap.py", "start_line": 1, "end_line": 5},
            "index_status": {},
        }
        for name, args in calls.items():
            result = await session.call_tool(name, args)
            assert not result.is_error, (name, text_of(result))
            assert json.loads(text_of(result)) == result.structured_content  # same value twice
            out[name] = result.structured_content
        progress: list[tuple[float, float | None, str | None]] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append((value, total, message))

        (root / "added.py").write_text("def freshly_added():\n    return 1\n")
        result = await session.call_tool("reindex", {}, progress_callback=on_progress)
        assert not result.is_error, text_of(result)
        out["reindex"] = result.structured_content
        out["progress"] = progress
        found = await session.call_tool("find_symbol", {"name": "freshly_added"})
        out["after"] = found.structured_content
        (root / "added.py").unlink()
        await session.call_tool("reindex", {})
        return out

    out = with_session(root, scenario)
    search = out["search"]
    assert search["intent"] == "find_definition" and search["fusion_strategy"] == "direct"
    top = search["results"][0]
    assert (top["path"], top["symbol"], top["start_line"]) == ("textwrap.py", "dedent", 419)
    assert top["signature"].startswith("def dedent") and "Remove any common" in top["body"]
    assert top["provenance"][0]["modality"] == "structural" and not search["truncated"]
    assert [h["path"] for h in out["find_symbol"]["results"]] == ["textwrap.py"]
    assert "pkg/__init__.py" in {h["path"] for h in out["find_references"]["results"]}
    assert "pkg/__init__.py" in {h["path"] for h in out["impact"]["results"]}
    chunk = out["read_chunk"]
    assert chunk["start_line"] == 1 and chunk["end_line"] == 5 and chunk["text"].count("\n") == 4
    status = out["index_status"]
    assert status["indexed"] and status["files"] == 9 and status["stale_files"] == 0
    assert status["modalities"]["semantic"]["built"] is False
    assert out["reindex"]["files"] == 10
    values = [p[0] for p in out["progress"]]
    assert values and values == sorted(set(values))  # strictly increasing
    assert [h["path"] for h in out["after"]["results"]] == ["added.py"]


def test_budget_signatures_first_and_cursor(root: Path):
    async def scenario(session: ClientSession) -> list[Any]:
        pages = []
        for budget in (500, 1000, 20000):
            r = await session.call_tool(
                "search", {"query": '"return"', "k": 6, "budget_tokens": budget}
            )
            assert not r.is_error, text_of(r)
            pages.append((budget, r.structured_content, len(text_of(r))))
        first = pages[0][1]
        follow = await session.call_tool(
            "search",
            {"query": '"return"', "k": 6, "budget_tokens": 500, "cursor": first["next_cursor"]},
        )
        other = await session.call_tool(
            "search", {"query": "indent", "k": 6, "cursor": first["next_cursor"]}
        )
        return [pages, follow.structured_content, other]

    pages, follow, other = with_session(root, scenario)
    for budget, _page, size in pages:
        assert size <= budget * 4, (budget, size)
    small, big = pages[0][1], pages[2][1]
    assert small["truncated"] and small["next_cursor"], json.dumps(small)[:3000]
    assert len(small["results"]) < len(big["results"])
    assert all(h["signature"] for h in small["results"])
    assert any(h["body"] for h in big["results"]) and not big["truncated"]
    seen = [(h["path"], h["start_line"]) for h in small["results"]]
    more = [(h["path"], h["start_line"]) for h in follow["results"]]
    assert more and not set(seen) & set(more)
    expected = [(h["path"], h["start_line"]) for h in big["results"]]
    assert (seen + more)[: len(expected)] == expected[: len(seen + more)]
    assert other.is_error and "different query" in text_of(other)


def test_concurrent_calls_agree_with_sequential(root: Path):
    calls = [("search", {"query": q}) for q in
             ("where is dedent defined", '"No closing quotation"', "who calls translate")]  # fmt: skip
    calls += [("find_symbol", {"name": "shlex"}), ("impact", {"symbol": "translate"}),
              ("read_chunk", {"path": "shlex.py", "start_line": 10, "end_line": 30})]  # fmt: skip

    def strip(content: dict[str, Any]) -> Any:
        return {k: v for k, v in content.items() if k not in ("timings_ms", "total_ms")}

    async def scenario(session: ClientSession):
        sequential = [strip((await session.call_tool(n, a)).structured_content) for n, a in calls]
        results: list[Any] = [None] * (len(calls) * 3)

        async def one(i: int) -> None:
            name, args = calls[i % len(calls)]
            results[i] = await session.call_tool(name, args)

        async with anyio.create_task_group() as tg:
            for i in range(len(results)):
                tg.start_soon(one, i)
        return sequential, results

    sequential, concurrent = with_session(root, scenario)
    for i, result in enumerate(concurrent):
        assert not result.is_error, text_of(result)
        assert strip(result.structured_content) == sequential[i % len(sequential)]


def test_bad_arguments_are_tool_errors(root: Path):
    bad = [
        ("search", {}, "query"),
        ("search", {"query": ""}, "at least 1 character"),
        ("search", {"query": "x", "k": 0}, "greater than or equal to 1"),
        ("search", {"query": "x", "k": "ten"}, "valid integer"),
        ("search", {"query": "x", "preset": "turbo"}, "quick"),
        ("search", {"query": "x", "modalities": ["vectors"]}, "semantic"),
        ("search", {"query": "/(/"}, "invalid regular expression"),
        ("search", {"query": "x", "budget_tokens": 10}, "greater than or equal to 500"),
        ("search", {"query": "x", "cursor": "garbage!"}, "invalid cursor"),
        ("find_symbol", {"name": "x", "limit": 10_000}, "less than or equal to 200"),
        ("impact", {"symbol": "x", "depth": 99}, "less than or equal to 6"),
        ("read_chunk", {"path": "textwrap.py", "start_line": 9, "end_line": 2}, "end_line"),
        ("read_chunk", {"path": "textwrap.py", "start_line": 10**6}, "past the end"),
        ("read_chunk", {"path": ".maguyva.toml"}, "not an indexed file"),
        ("no_such_tool", {}, "no_such_tool"),
    ]

    async def scenario(session: ClientSession):
        outcomes = [(await session.call_tool(n, a), m) for n, a, m in bad]
        alive = await session.call_tool("find_symbol", {"name": "dedent"})
        return outcomes, alive

    outcomes, alive = with_session(root, scenario)
    for result, message in outcomes:
        assert result.is_error and message in text_of(result), (message, text_of(result))
        assert "Traceback" not in text_of(result)
    assert not alive.is_error  # the session survived every bad call


def test_path_escape_matrix_mcp(root: Path):
    fixed = [*escape_matrix(root), str(root / "textwrap.py")]  # absolute, even inside: refused
    rng = random.Random(8)
    generated = [
        "/".join(rng.choice(COMPONENTS) for _ in range(rng.randint(1, 6))) for _ in range(60)
    ]

    async def scenario(session: ClientSession):
        reads = {p: await session.call_tool("read_chunk", {"path": p}) for p in fixed + generated}
        reindex = [await session.call_tool("reindex", {"paths": [p]}) for p in fixed[:4]]
        return reads, reindex

    reads, reindex = with_session(root, scenario)
    for path in fixed:
        assert reads[path].is_error, path
        assert text_of(reads[path]).endswith(f"{path!r}: path is outside the repository root")
    for result in reindex:
        assert result.is_error and "outside the repository root" in text_of(result)
    for path in generated:
        escaped = "outside the repository root" in text_of(reads[path])
        assert escaped == (not oracle_inside(root, path) or path.startswith("/")), path
        assert "OUTSIDE_SECRET" not in text_of(reads[path])


def test_unindexed_root_then_reindex(tmp_path: Path):
    root = make_corpus(tmp_path)

    async def scenario(session: ClientSession):
        status = await session.call_tool("index_status", {})
        before = await session.call_tool("search", {"query": "dedent"})
        built = await session.call_tool("reindex", {})
        after = await session.call_tool("search", {"query": "where is dedent defined"})
        return status, before, built, after

    status, before, built, after = with_session(root, scenario)
    assert status.structured_content["indexed"] is False
    assert before.is_error and "reindex" in text_of(before)
    assert not built.is_error and built.structured_content["files"] == 9
    assert after.structured_content["results"][0]["path"] == "textwrap.py"


def test_stdout_carries_only_protocol_messages(root: Path):
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "search", "arguments": {"query": "where is dedent defined"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "read_chunk", "arguments": {"path": "../outside/secret.txt"}}},
    ]  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "maguyva.interfaces.cli.main", "mcp", "--root", str(root), "--log-level", "DEBUG"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    replies: list[dict[str, Any]] = []
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        proc.stdin.flush()
        deadline = time.monotonic() + 120
        while len([r for r in replies if "id" in r]) < 3 and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if ready:
                line = proc.stdout.readline()
                if not line:
                    break
                if line.strip():
                    replies.append(json.loads(line))  # every stdout line is JSON-RPC
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    assert all(r.get("jsonrpc") == "2.0" for r in replies)
    by_id = {r["id"]: r for r in replies if "id" in r}
    assert set(by_id) == {1, 2, 3}
    assert by_id[2]["result"]["structuredContent"]["results"][0]["path"] == "textwrap.py"
    assert by_id[3]["result"]["isError"] is True


async def _until(check: Callable[[], Awaitable[Any]], timeout: float = 120.0) -> Any:
    """Poll `check` until it returns something truthy (or fail after `timeout` seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = await check()
        if found:
            return found
        await anyio.sleep(0.2)
    raise AssertionError(f"not within {timeout}s")


def test_watch_option_keeps_the_index_current(tmp_path: Path):
    root = make_corpus(tmp_path)  # not indexed: the watcher builds the first generation

    async def scenario(session: ClientSession):
        async def indexed():
            status = await session.call_tool("index_status", {})
            return status.structured_content["indexed"] and status.structured_content

        first = await _until(indexed)

        async def defined(name: str):
            found = await session.call_tool("find_symbol", {"name": name})
            return [r for r in found.structured_content["results"] if r["symbol"] == name]

        (root / "pkg" / "fresh.py").write_text("def freshly_watched(x):\n    return x\n")
        added = await _until(lambda: defined("freshly_watched"))
        with (root / "textwrap.py").open("a") as fh:  # an edit of a known file: a hinted check
            fh.write("\n\ndef edited_while_serving():\n    return 1\n")
        edited = await _until(lambda: defined("edited_while_serving"))

        async def settled():
            # the generation the test means: both files in, nothing stale, and no modality
            # behind (the graph follows the structural answer one generation later, so a
            # search right after `edited` may come from the generation before its follow-up)
            status = (await session.call_tool("index_status", {})).structured_content
            behind = any(m.get("behind") for m in status["modalities"].values())
            done = status["files"] == 10 and status["stale_files"] == 0 and not behind
            return done and status

        settled_status = await _until(settled)
        search = await session.call_tool("search", {"query": "where is edited_while_serving"})
        last = await session.call_tool("index_status", {})
        return (first, added, edited, search.structured_content, last.structured_content,
                settled_status)  # fmt: skip

    first, added, edited, search, last, settled = with_session(root, scenario, ("--watch",))
    assert first["files"] == 9
    assert added[0]["path"] == "pkg/fresh.py"
    assert edited[0]["path"] == "textwrap.py"
    assert search["results"][0]["path"] == "textwrap.py"
    assert search["generation"] == last["generation"] == settled["generation"]
    assert last["generation"] >= first["generation"] + 2
    assert last["stale_files"] == 0 and last["files"] == 10


def test_watching_server_exits_when_the_client_goes(tmp_path: Path):
    root = make_corpus(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "maguyva.interfaces.cli.main", "mcp", "--root", str(root), "--watch"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not (root / ".maguyva" / "manifest.json").exists():  # the watcher's first build
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.1)
        assert proc.stdin is not None
        proc.stdin.close()  # the client disconnects
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert proc.stderr is not None and proc.stdout is not None
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    proc.stdout.close()
    assert proc.returncode == 0, err
    assert not list((root / ".maguyva").glob("gen-*.tmp-*"))


def test_server_warms_the_index_at_startup(root: Path):
    """Before any question: every modality and chunk segment loaded in the background (the
    log line lists what it loaded), so the first question does not pay for it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "maguyva.interfaces.cli.main", "mcp", "--root", str(root), "--log-level", "INFO"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    seen = ""
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 120
        while "warm:" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stderr], [], [], 1.0)
            if ready:
                line = proc.stderr.readline()
                if not line:
                    break
                seen += line
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    warm = next(line for line in seen.splitlines() if "warm:" in line)
    for part in ("'text'", "'structural'", "'graph'", "'chunks'"):
        assert part in warm, warm
