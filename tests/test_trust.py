"""The trust boundary: a repository cannot turn Maguyva against its user (issue 20, S1 and S2).

A hostile `.maguyva.toml` sets `follow_symlinks = true` next to links to files outside the
root; another sets `embedding_provider = "voyage"` while the user's environment holds a key.
Everything runs for real: the `maguyva` CLI in a subprocess, the SDK's MCP client over stdio,
the `voyageai` client against a local server speaking Voyage's API (`test_embed_voyage`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from test_embed_voyage import VoyageServer
from test_mcp import text_of, with_session

from maguyva import config as config_module
from maguyva.api import Index
from maguyva.config import effective_config, show
from maguyva.errors import PathEscapeError

MARKER = "OUTSIDE_MARKER_7f3a"
OUTSIDE_NAMES = ("leak.py", "passwd.txt", "outdir")
LEAK_PY = f'''"""Outside the repository: nothing here may ever be answered."""

SECRET = "{MARKER}"


def outside_helper():
    return SECRET


def outside_caller():
    return outside_helper()
'''


def make_hostile(base: Path, toml: str = "follow_symlinks = true\n") -> Path:
    """`base/repo` with a hostile `.maguyva.toml`, two stdlib modules, a file that calls into
    the outside one, and links out (`leak.py`, `passwd.txt`, `outdir/`) and in (`alias.py`)."""
    base = Path(os.path.realpath(base))
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    root = base / "repo"
    (root / "pkg").mkdir(parents=True)
    for name in ("shlex", "textwrap"):
        shutil.copy(stdlib / f"{name}.py", root / f"{name}.py")
    (root / "pkg" / "inner.py").write_text("def inner_thing():\n    return 42\n")
    (root / "user.py").write_text(
        "from leak import outside_helper\n\n\ndef use():\n    return outside_helper()\n"
    )
    (root / ".maguyva.toml").write_text(toml)
    outside = base / "outside"
    outside.mkdir()
    (outside / "leak.py").write_text(LEAK_PY)
    (outside / "passwd.txt").write_text(f"root:x:0:0:{MARKER}:/root:/bin/bash\n")
    os.symlink(outside / "leak.py", root / "leak.py")
    os.symlink(outside / "passwd.txt", root / "passwd.txt")
    os.symlink(outside, root / "outdir")
    os.symlink("pkg/inner.py", root / "alias.py")
    return root


def cli_env(tmp: Path, **extra: str) -> dict[str, str]:
    """A clean environment: no user config of the machine's, no inherited MAGUYVA_* setting
    (but no warm search server left behind either, where the CLI has one)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAGUYVA_", "VOYAGE_"))}
    env.update(NO_COLOR="1", XDG_CONFIG_HOME=str(tmp / "xdg"), MAGUYVA_DAEMON="0", **extra)
    return env


def maguyva(root: Path, *args: str, env: dict[str, str], timeout: float = 600) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "maguyva.interfaces.cli.main", *args],
        cwd=root, env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def leaked(text: str) -> bool:
    """Does an answer show anything of the outside files (content or their link paths)?"""
    return MARKER in text or "root:x:0" in text or "def outside_helper" in text


def outside_path(path: str) -> bool:
    return path in OUTSIDE_NAMES or path.startswith("outdir/")


# -- the configuration layer ----------------------------------------------------------------


def test_repo_config_cannot_widen_but_user_layers_can(tmp_path: Path, monkeypatch, caplog):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv(config_module.TRUST_ENV, raising=False)
    config_module._warned.clear()
    root = tmp_path / "r"
    root.mkdir()
    (root / ".maguyva.toml").write_text(
        'follow_symlinks = true\nembedding_provider = "voyage"\nallow_large = ["*.bin"]\n'
        'index_dir = "/tmp/elsewhere"\nmax_file_bytes = 99999999\nlimit = 3\n'
        'voyage_base_url = "http://attacker.example/v1"\n'
    )
    (root / "pyproject.toml").write_text("[tool.maguyva]\nfollow_symlinks = true\n")
    with caplog.at_level("WARNING", logger="maguyva.config"):
        values = effective_config(root).values
    assert values["follow_symlinks"] is False and values["embedding_provider"] == "local"
    assert values["allow_large"] == [] and values["index_dir"] is None
    assert values["max_file_bytes"] == 1 << 20 and "voyage_base_url" not in values
    assert values["limit"] == 3  # a key that only narrows or shapes answers is honoured
    refused = [r.getMessage() for r in caplog.records if "--trust-repo-config" in r.getMessage()]
    keys = ("follow_symlinks", "embedding_provider", "allow_large", "index_dir",
            "max_file_bytes", "voyage_base_url")  # fmt: skip
    for key in keys:  # one line each, naming the key, the file and the flag
        assert [m for m in refused if repr(key) in m and ".maguyva.toml" in m], key
    assert [m for m in refused if "pyproject.toml" in m and "follow_symlinks" in m]
    assert all("\n" not in m for m in refused)
    shown = {row["key"]: row["source"] for row in show(effective_config(root))}
    assert shown["follow_symlinks"].startswith("default; ignored from ")
    assert shown["follow_symlinks"].endswith(".maguyva.toml (--trust-repo-config)")
    caplog.clear()
    with caplog.at_level("WARNING", logger="maguyva.config"):
        effective_config(root)
    assert not [r for r in caplog.records if "--trust-repo-config" in r.getMessage()]  # once
    # Narrowing from the repository is honoured; widening from the user's layers is too.
    (root / ".maguyva.toml").write_text('max_file_bytes = 1000\nindex_dir = "idx"\n')
    (root / "pyproject.toml").unlink()
    values = effective_config(root).values
    assert values["max_file_bytes"] == 1000 and values["index_dir"] == str(root / "idx")
    user = tmp_path / "xdg" / "maguyva" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("follow_symlinks = true\n")
    assert effective_config(root).values["follow_symlinks"] is True
    monkeypatch.setenv("MAGUYVA_EMBEDDING_PROVIDER", "voyage")
    assert effective_config(root, {"allow_large": ["*.bin"]}).values["embedding_provider"] == (
        "voyage"
    )
    # --trust-repo-config: the option, and the environment variable the CLI flag sets.
    user.unlink()
    (root / ".maguyva.toml").write_text("follow_symlinks = true\n")
    assert effective_config(root, {"trust_repo_config": True}).values["follow_symlinks"] is True
    assert Index.open(root, trust_repo_config=True).config["follow_symlinks"] is True  # the API
    assert Index.open(root).config["follow_symlinks"] is False
    monkeypatch.setenv(config_module.TRUST_ENV, "1")
    assert effective_config(root).values["follow_symlinks"] is True
    assert "trust_repo_config" not in effective_config(root).values


# -- S1: nothing outside the root is indexed or answered ------------------------------------


def probes() -> list[tuple[str, dict[str, Any]]]:
    """MCP calls aimed at the outside files: every tool that returns a path or a body."""
    queries = [f'"{MARKER}"', MARKER, '"root:x:0"', "root:x:0", "outside_helper",
               "where is outside_helper defined", "who calls outside_helper", "/OUTSIDE_\\w+/",
               "sym:outside_helper", "def outside_caller", "file:leak.py SECRET",
               "code similar to: def outside_helper():\n    return SECRET", "SECRET"]  # fmt: skip
    calls: list[tuple[str, dict[str, Any]]] = []
    for q in queries:
        calls.append(("search", {"query": q}))
        calls.append(("search", {"query": q, "preset": "thorough"}))
        calls.append(("search", {"query": q, "modalities": ["text"]}))
    for name in ("outside_helper", "outside_caller", "SECRET"):
        calls.append(("find_symbol", {"name": name}))
        calls.append(("find_references", {"symbol": name}))
        calls.append(("impact", {"symbol": name}))
    for path in ("leak.py", "passwd.txt", "outdir/leak.py", "outdir/passwd.txt", "outdir",
                 "./leak.py", "pkg/../leak.py", "../outside/leak.py", "alias.py/../leak.py"):  # fmt: skip
        calls.append(("read_chunk", {"path": path, "start_line": 1}))
    return calls


def run_probes(root: Path, extra: tuple[str, ...] = ()) -> tuple[int, list[str]]:
    """(calls made, the calls whose answer showed outside content)."""
    calls = probes()

    async def scenario(session: ClientSession) -> list[str]:
        bad = []
        for name, args in calls:
            result = await session.call_tool(name, args)
            out = result.structured_content or {}
            # the answers themselves (a search echoes its query, which names the marker)
            shown = out["results"] if "results" in out else [out, text_of(result)]
            paths = [r.get("path", "") for r in out.get("results", [])] + [out.get("path", "")]
            if leaked(json.dumps(shown)) or [p for p in paths if outside_path(p)]:
                bad.append(f"{name} {args}: {json.dumps(shown)[:200]}")
        return bad

    return len(calls), with_session(root, scenario, extra)


@pytest.mark.parametrize("trusted", [False, True], ids=["untrusted", "trusted"])
def test_hostile_follow_symlinks_reads_nothing_outside(tmp_path: Path, trusted: bool):
    root = make_hostile(tmp_path)
    env = cli_env(tmp_path)
    flag = ("--trust-repo-config",) if trusted else ()
    built = maguyva(root, "index", "--modalities", "text,structural,graph", "--json", *flag,
                    env=env)  # fmt: skip
    assert built.returncode == 0, built.stderr
    if not trusted:
        assert "follow_symlinks" in built.stderr and "--trust-repo-config" in built.stderr
    files = set(Index.open(root).indexed_files())
    assert not files & set(OUTSIDE_NAMES) and not [f for f in files if f.startswith("outdir/")]
    # trusted: links inside the root are followed, links out of it never
    assert ("alias.py" in files) is trusted
    status = json.loads(built.stdout)
    assert leaked(json.dumps(status)) is False
    for query in (f'"{MARKER}"', "root:x:0", "outside_helper", "sym:outside_helper"):
        found = maguyva(root, "search", query, "--json", *flag, env=env)
        assert found.returncode in (0, 1), found.stderr
        answers = [line for line in found.stdout.splitlines() if '"type":"summary"' not in line]
        assert not leaked("\n".join(answers)), found.stdout  # the summary echoes the query
        human = maguyva(root, "search", query, "-C", "3", *flag, env=env)
        assert not leaked(human.stdout), human.stdout
    calls, bad = run_probes(root, flag)
    assert calls == len(probes()) >= 50 and bad == [], bad


def test_file_swapped_for_an_outside_link_after_indexing_is_not_answered(tmp_path: Path):
    root = make_hostile(tmp_path, toml="")
    victim = root / "victim.py"
    victim.write_text('VICTIM = "VICTIM_MARKER_91"\n\n\ndef victim_fn():\n    return VICTIM\n')
    env = cli_env(tmp_path)
    built = maguyva(root, "index", "--modalities", "text,structural", env=env)
    assert built.returncode == 0, built.stderr
    index = Index.open(root)
    assert [r.path for r in index.search('"VICTIM_MARKER_91"').results] == ["victim.py"]
    victim.unlink()
    os.symlink(tmp_path / "outside" / "leak.py", victim)  # after the index: no reindex
    index = Index.open(root)
    assert index.search('"VICTIM_MARKER_91"').results == []
    assert index.find_symbol("victim_fn") == []
    with pytest.raises(PathEscapeError, match="outside the repository root"):
        index.read_chunk("victim.py")
    human = maguyva(root, "search", "victim_fn", "-C", "5", env=env)
    assert not leaked(human.stdout) and "victim.py" not in human.stdout


# -- S2: a repository's config does not send code to a remote embedder ----------------------


@pytest.mark.parametrize("trusted", [False, True], ids=["untrusted", "trusted"])
def test_repo_config_cannot_choose_a_remote_embedder(tmp_path: Path, trusted: bool):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("def handler(event):\n    return {'ok': event}\n")
    (root / ".maguyva.toml").write_text('embedding_provider = "voyage"\n')
    server = VoyageServer()
    try:
        env = cli_env(tmp_path, VOYAGE_API_KEY="pa-test-key-0123456789abcdef0123456789",
                      MAGUYVA_VOYAGE_BASE_URL=server.url)  # fmt: skip
        flag = ("--trust-repo-config",) if trusted else ()
        built = maguyva(root, "index", "--modalities", "text,semantic", "--json", *flag, env=env)
        assert built.returncode == 0, built.stderr
        if trusted:  # the control: the same setup does reach the server when allowed
            assert server.requests
        else:
            assert server.requests == []
            assert "embedding_provider" in built.stderr and "--trust-repo-config" in built.stderr
            assert ".maguyva.toml" in built.stderr
    finally:
        server.close()
