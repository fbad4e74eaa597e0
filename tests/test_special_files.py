"""Nothing blocks on a special file (issue 20, C2): FIFOs, sockets and devices are skipped by
the walker and refused by every reader with a clear message.

A FIFO with no writer blocks a plain `open()` forever and a `/dev/zero` node never ends, so
every subprocess and MCP call here runs under a generous timeout: a hang fails the test
instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import re
import socket
import stat
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from test_mcp import text_of, with_session
from test_trust import cli_env, maguyva

from maguyva.api import Index
from maguyva.errors import PathEscapeError
from maguyva.repo.reader import SpecialFileError, read_bytes
from maguyva.repo.walk import walk_repository

TIMEOUT = 180  # seconds; a prompt answer takes a few, a hang takes forever


def make_repo(base: Path) -> Path:
    root = base / "repo"
    root.mkdir(parents=True)
    (root / "x.py").write_text("def a():\n    return 1\n")
    (root / "y.py").write_text("def b():\n    return a()\n")
    return root


def special_nodes(root: Path) -> list[str]:
    """A FIFO, a listening Unix socket and, when allowed, an endless device (/dev/zero's)."""
    os.mkfifo(root / "pipe.py")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "sock.py"))
    made = ["pipe.py", "sock.py"]
    try:
        os.mknod(root / "zero.py", stat.S_IFCHR | 0o600, os.makedev(1, 5))
        made.append("zero.py")
    except (PermissionError, OSError):
        pass
    return made


def test_walker_skips_fifos_sockets_and_devices(tmp_path: Path):
    root = make_repo(tmp_path)
    made = special_nodes(root)
    walked = walk_repository(root, {})
    assert [f.path for f in walked.files] == ["x.py", "y.py"]
    assert sorted(p for p, r in walked.skipped_files if r == "not_regular") == sorted(made)
    env = cli_env(tmp_path)
    built = maguyva(root, "index", "--modalities", "text,structural", env=env, timeout=TIMEOUT)
    assert built.returncode == 0, built.stderr
    assert set(Index.open(root).indexed_files()) == {"x.py", "y.py"}


def test_reader_refuses_special_files_without_blocking(tmp_path: Path):
    root = make_repo(tmp_path)
    made = special_nodes(root)
    assert read_bytes(root, "x.py") == b"def a():\n    return 1\n"
    kinds = {"pipe.py": "a FIFO", "sock.py": "a socket", "zero.py": "a character device"}
    for name in made:
        with pytest.raises(
            SpecialFileError, match=re.escape(f"'{name}': is {kinds[name]}, not a regular")
        ):
            read_bytes(root, name)
    os.symlink(tmp_path, root / "up")
    (tmp_path / "out.txt").write_text("outside\n")
    with pytest.raises(PathEscapeError, match="outside the repository root"):
        read_bytes(root, "up/out.txt")
    os.symlink("x.py", root / "link.py")
    assert read_bytes(root, "link.py") == read_bytes(root, "x.py")
    with pytest.raises(OSError):
        read_bytes(root, "link.py", follow_symlinks=False)


def test_indexed_file_replaced_by_a_fifo_hangs_nothing(tmp_path: Path):
    root = make_repo(tmp_path)
    env = cli_env(tmp_path)
    built = maguyva(root, "index", "--modalities", "text,structural,graph", env=env,
                    timeout=TIMEOUT)  # fmt: skip
    assert built.returncode == 0, built.stderr
    (root / "x.py").unlink()
    os.mkfifo(root / "x.py")  # no writer: a blocking open of it would never return
    # search, human output (reads the file's lines) and JSON
    for args in (("search", "def a"), ("search", "def a", "-C", "2"), ("search", "a", "--json"),
                 ("search", '"return 1"'), ("status",)):  # fmt: skip
        done = maguyva(root, *args, env=env, timeout=TIMEOUT)
        assert done.returncode in (0, 1), (args, done.stderr)
        assert "Traceback" not in done.stderr
    with pytest.raises(SpecialFileError, match=r"'x\.py': is a FIFO, not a regular file"):
        Index.open(root).read_chunk("x.py")

    async def scenario(session: ClientSession) -> dict[str, object]:
        out = {}
        with anyio.fail_after(TIMEOUT):
            for name, args in (
                ("read_chunk", {"path": "x.py", "start_line": 1}),
                ("search", {"query": "def a"}),
                ("search", {"query": "where is a defined"}),
                ("find_symbol", {"name": "a"}),
                ("read_chunk", {"path": "y.py", "start_line": 1}),
            ):
                result = await session.call_tool(name, args)
                out[f"{name} {json.dumps(args)}"] = (result.is_error, text_of(result))
        return out

    answers = with_session(root, scenario)
    is_error, message = answers['read_chunk {"path": "x.py", "start_line": 1}']
    assert is_error and "is a FIFO, not a regular file" in message
    assert not answers['read_chunk {"path": "y.py", "start_line": 1}'][0]  # the server lives on
    # the next index notices the FIFO and drops the file, promptly
    again = maguyva(root, "index", "--json", env=env, timeout=TIMEOUT)
    assert again.returncode == 0, again.stderr
    assert set(Index.open(root).indexed_files()) == {"y.py"}


def test_a_fifo_for_git_head_does_not_stall_a_build(tmp_path: Path):
    root = make_repo(tmp_path)
    (root / ".git" / "refs" / "heads").mkdir(parents=True)
    os.mkfifo(root / ".git" / "HEAD")
    env = cli_env(tmp_path)
    built = maguyva(root, "index", "--modalities", "text", "--json", env=env, timeout=TIMEOUT)
    assert built.returncode == 0, built.stderr
    assert set(Index.open(root).indexed_files()) == {"x.py", "y.py"}


def test_a_fifo_for_the_repository_config_is_a_clear_error(tmp_path: Path):
    root = make_repo(tmp_path)
    os.mkfifo(root / ".maguyva.toml")
    done = maguyva(root, "index", "--root", str(root), env=cli_env(tmp_path), timeout=TIMEOUT)
    assert done.returncode == 2
    assert done.stderr.strip().endswith(".maguyva.toml: not a regular file; not read")
    assert len(done.stderr.strip().splitlines()) == 1
