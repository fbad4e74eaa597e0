"""Red-team probes: every hostile repository of `tests/support/hostile.py` indexed by the real
CLI, then asked about its control file by the CLI and by an MCP client over stdio. The table
of docs/trust.md.

    python benches/hostile_probes.py [CASE ...] [--timeout S]   # with the python to measure

Per case: the exit code and last stderr line of `maguyva index` (and of an update), whether
any command printed a traceback or an internal error, wall and CPU seconds and peak RSS of the
build (`/usr/bin/time`), whether the control function is still found (CLI and MCP), and
whether a program named by a hostile `.git/config` ran.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from support.hostile import CASES, CONTROL_NAME, MARK, make_case
from test_mcp import with_session
from test_trust import cli_env

BAD = ("Traceback", "internal error", "RecursionError", "Segmentation", "panicked")


def timed(cmd: list[str], root: Path, env: dict[str, str], timeout: float) -> dict[str, Any]:
    """Run `cmd` under /usr/bin/time: rc, wall, cpu, peak RSS (MB), stderr."""
    full = ["/usr/bin/time", "-f", "TIME %e %U %S %M", *cmd]
    started = time.monotonic()
    try:
        proc = subprocess.run(full, cwd=root, env=env, capture_output=True, text=True,
                              timeout=timeout, errors="replace")  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"rc": "timeout", "wall": round(time.monotonic() - started, 1), "err": "",
                "out": "", "cpu": None, "rss": None}  # fmt: skip
    lines = proc.stderr.splitlines()
    stats = [ln for ln in lines if ln.startswith("TIME ")]
    err = "\n".join(ln for ln in lines if not ln.startswith(("TIME ", "Command exited")))
    out: dict[str, Any] = {"rc": proc.returncode, "err": err, "out": proc.stdout}
    if stats:
        wall, user, sys_, rss = stats[-1].split()[1:]
        out.update(wall=float(wall), cpu=round(float(user) + float(sys_), 1),
                   rss=round(int(rss) / 1024))  # fmt: skip
    return out


def mcp_control(root: Path) -> bool:
    """Over one MCP session: the control function is found by search and find_symbol, and
    its file is readable."""

    async def scenario(session: Any) -> bool:
        found = await session.call_tool("search", {"query": CONTROL_NAME})
        paths = [r["path"] for r in (found.structured_content or {}).get("results", [])]
        sym = await session.call_tool("find_symbol", {"name": CONTROL_NAME})
        chunk = await session.call_tool("read_chunk", {"path": "control.py", "start_line": 1})
        body = json.dumps(chunk.structured_content or {})
        return "control.py" in paths and CONTROL_NAME in json.dumps(
            sym.structured_content or {}) and CONTROL_NAME in body  # fmt: skip

    return bool(with_session(root, scenario))


def probe(name: str, timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        made = time.monotonic()
        root = make_case(base, name)
        made = time.monotonic() - made
        env = cli_env(base)
        cli = [sys.executable, "-m", "maguyva.interfaces.cli.main"]
        build = timed([*cli, "index", "--modalities", "text,structural,graph"], root, env, timeout)
        update = timed([*cli, "index"], root, env, timeout) if build["rc"] == 0 else build
        search = timed([*cli, "search", CONTROL_NAME, "--json"], root, env, timeout)
        human = timed([*cli, "search", "def", "--max-results", "50"], root, env, timeout)
        found = "control.py" in search["out"]
        try:
            mcp = mcp_control(root) if build["rc"] == 0 else False
        except Exception as exc:  # the probe reports; it must not stop the other cases
            mcp = f"error {type(exc).__name__}"
        pwned = base / "pwned.log"
        texts = [r["err"] for r in (build, update, search, human)]
        return {
            "case": name, "made_s": round(made, 1),
            "index_rc": build["rc"], "index_err": build["err"].splitlines()[-1:] ,
            "update_rc": update["rc"], "wall": build.get("wall"), "cpu": build.get("cpu"),
            "rss_mb": build.get("rss"), "trace": any(b in t for t in texts for b in BAD),
            "control_cli": found, "control_mcp": mcp,
            "esc_printed": "\x1b" in human["out"],
            "git_ran": pwned.read_text().count(MARK) if pwned.exists() else 0,
        }  # fmt: skip


def main(argv: list[str]) -> None:
    timeout = 600.0
    if "--timeout" in argv:
        i = argv.index("--timeout")
        timeout = float(argv[i + 1])
        del argv[i : i + 2]
    names = argv or [n for n, c in CASES.items() if not c.slow]
    for name in names:
        print(json.dumps(probe(name, timeout)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
