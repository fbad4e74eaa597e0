"""The native `maguyva` client (`rust/client`, issue 21) as a real process: it sends the
Python client's request byte for byte, its answers are the in-process bytes (`--json` and
text, on the shipped query sets), and whatever it does not handle it hands to the Python
client: no server yet, a server killed mid-question, a stale server, opting out, a command
other than `search`.

The binary is the one `make setup` installed (or `target/release/maguyva`), copied with a
locator of this interpreter into a temporary directory (`maguyva.interfaces.native.install`).
Every test stops the servers it started."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from interfaces_corpus import make_corpus
from test_daemon import (
    CLIENT,
    EVAL,
    TIMEOUT,
    _alive,
    _in_process,
    _kill_once_sent,
    _server_pid,
    _stop,
    _wait_until,
    _warm,
    _without_timings,
)

from maguyva.api import Index
from maguyva.eval.corpora import fetch_corpus
from maguyva.eval.queryset import load_queries
from maguyva.interfaces import client, native

ROOT = Path(__file__).parent.parent


def _built() -> Path | None:
    """The native client `make setup` built: installed in this environment, or in target/."""
    for path in (Path(sys.executable).parent / "maguyva", ROOT / "target/release/maguyva"):
        try:
            with open(path, "rb") as fh:
                if fh.read(4) == b"\x7fELF":
                    return path
        except OSError:
            continue
    return None


@pytest.fixture(scope="module")
def binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = _built()
    if built is None:
        pytest.skip("the native client is not built (`make setup` builds it)")
    return native.install(built, tmp_path_factory.mktemp("bin"))


@pytest.fixture
def daemon_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MAGUYVA_DAEMON", raising=False)
    monkeypatch.setenv("MAGUYVA_DAEMON_IDLE", "300")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MAGUYVA_DAEMON"}
    return {**env, "MAGUYVA_DAEMON_IDLE": "300", "MAGUYVA_DAEMON_TRACE": "1", **extra}


def _native(binary: Path, cwd: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([str(binary), *argv], cwd=cwd, env=_env(**env), capture_output=True,
                          timeout=TIMEOUT, check=False)  # fmt: skip


def _untraced(err: bytes) -> bytes:
    return b"".join(
        x for x in err.splitlines(keepends=True) if not x.startswith(b"maguyva: daemon:")
    )


def _answered_natively(err: bytes) -> bool:
    return b"the server wrote into our stdout" in err and b"handing over" not in err


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = make_corpus(tmp_path_factory.mktemp("native"))
    Index.open(root).build(progress=None)
    yield root
    _stop(root / ".maguyva")


class RecordingServer:
    """A stand-in server on an index directory's socket: it keeps each request's bytes and
    the number of descriptors passed with it, and answers `0 0 0` (done, nothing to print)."""

    def __init__(self, index_dir: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(index_dir / client.SOCKET))
        self.sock.listen(4)
        self.requests: list[tuple[bytes, int]] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data, count = b"", 0
                while True:
                    block, fds, _, _ = socket.recv_fds(conn, 1 << 16, 4)
                    count += len(fds)
                    for fd in fds:
                        os.close(fd)
                    if not block:
                        break
                    data += block
                self.requests.append((data, count))
                conn.sendall(b"0 0 0\n")

    def close(self) -> None:
        self.sock.close()


@pytest.mark.parametrize("locale", ["C.UTF-8", "C"])
def test_the_request_is_the_python_clients_byte_for_byte(
    binary: Path, tmp_path: Path, daemon_env: None, locale: str
) -> None:
    root = tmp_path / "repo"
    (root / ".maguyva").mkdir(parents=True)
    (root / ".maguyva" / "manifest.json").write_text("{}")
    (root / "sub").mkdir()
    server = RecordingServer(root / ".maguyva")
    argv = ["search", '"x y"', "--json", "-C", "2", "--root=.."]
    env = {"LC_ALL": locale, "MAGUYVA_SOMETHING": "a=b", "NO_COLOR": "1"}
    try:
        native_run = _native(binary, root / "sub", *argv, **env)
        python_run = subprocess.run([sys.executable, "-c", CLIENT, *argv], cwd=root / "sub",
                                    env=_env(**env), capture_output=True, timeout=TIMEOUT,
                                    check=False)  # fmt: skip
    finally:
        server.close()
    assert native_run.returncode == python_run.returncode == 0, (native_run, python_run)
    assert _answered_natively(native_run.stderr), native_run.stderr
    (native_request, native_fds), (python_request, python_fds) = server.requests
    assert native_fds == python_fds == 3
    fields = native_request.split(b"\0")
    assert fields[:2] == [client.MAGIC.encode(), b"search"] and fields[5:8] == [b"0", b"utf-8",
                                                                               b"surrogateescape"]  # fmt: skip
    assert native_request == python_request


def test_answers_are_the_in_process_bytes_on_the_shipped_query_sets(
    binary: Path, daemon_env: None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Every query of the shipped requests sets, `--json` and text: the native client's
    output (and exit code and stderr) is the in-process one; the first ten are also asked of
    the Python client as a process."""
    root = fetch_corpus("requests-2.32.3")
    index_dir = tmp_path_factory.mktemp("requests-index")
    Index.open(root, index_dir=index_dir, modalities=["text", "structural", "graph"]).build()
    queries = load_queries(sorted(EVAL.glob("requests-2.32.3.*.jsonl")))
    assert len(queries) >= 100
    common = ["--root", str(root), "--index-dir", str(index_dir)]
    try:
        assert _warm(['"def get"', *common])[0] == 0  # a server runs
        for i, query in enumerate(queries):
            for mode in (["--json"], []):
                argv = ["search", query.query, *common, *mode]
                code, out, err = _in_process(argv)
                got = _native(binary, root, *argv)
                assert _answered_natively(got.stderr), (query.id, got.stderr)
                assert (got.returncode, _untraced(got.stderr)) == (code, err), query.id
                if mode:
                    assert _without_timings(got.stdout) == _without_timings(out), query.id
                else:
                    assert got.stdout == out, query.id
                if i < 10:
                    py = subprocess.run([sys.executable, "-c", CLIENT, *argv], cwd=root,
                                        env=_env(), capture_output=True, timeout=TIMEOUT,
                                        check=False)  # fmt: skip
                    assert py.returncode == code and _untraced(py.stderr) == err, query.id
                    assert (
                        (py.stdout == got.stdout)
                        if not mode
                        else (_without_timings(py.stdout) == _without_timings(got.stdout))
                    ), query.id
    finally:
        _stop(index_dir)


def test_the_first_question_starts_a_server_through_the_python_client(
    binary: Path, tmp_path: Path, daemon_env: None
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def first():\n    return 1\n")
    Index.open(root, modalities=["text"]).build(progress=None)
    expected = _in_process(["search", '"def first"', "--root", str(root)])
    try:
        got = _native(binary, root, "search", '"def first"')
        assert (got.returncode, got.stdout) == (0, expected[1]), got.stderr
        assert b"no server listens; handing over" in got.stderr
        pid = _server_pid(root / ".maguyva")
        assert pid is not None and _alive(pid)
        again = _native(binary, root, "search", '"def first"')
        assert (again.returncode, again.stdout) == (0, expected[1]) and _answered_natively(
            again.stderr
        )
        assert _server_pid(root / ".maguyva") == pid
    finally:
        _stop(root / ".maguyva")


def test_a_server_killed_mid_question_is_replaced(
    binary: Path, repo: Path, daemon_env: None
) -> None:
    index_dir = repo / ".maguyva"
    expected = _in_process(["search", '"def dedent"', "--root", str(repo)])
    assert _warm(['"def dedent"', "--root", str(repo)])[1] == expected[1]
    first = _server_pid(index_dir)
    assert first is not None
    os.kill(first, signal.SIGSTOP)  # it accepts nothing more: the question waits in its queue
    proc = subprocess.Popen([str(binary), "search", '"def dedent"'], cwd=repo, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    out, lines = _kill_once_sent(proc, first)
    assert proc.returncode == 0, lines
    assert out == expected[1]
    assert any("the Python client starts another server" in line for line in lines), lines
    second = _server_pid(index_dir)
    assert second is not None and second != first and _alive(second)


def test_two_repositories_get_two_servers(binary: Path, tmp_path: Path, daemon_env: None) -> None:
    roots = []
    for name in ("one", "two"):
        root = tmp_path / name
        root.mkdir()
        (root / "mod.py").write_text(f"def only_in_{name}():\n    return '{name}'\n")
        Index.open(root, modalities=["text"]).build(progress=None)
        roots.append(root)
    try:
        for root, name in zip(roots, ("one", "two"), strict=True):
            assert _warm([f'"only_in_{name}"', "--root", str(root)])[0] == 0
        pids = [_server_pid(root / ".maguyva") for root in roots]
        assert None not in pids and pids[0] != pids[1]
        for root, name, other in ((roots[0], "one", "two"), (roots[1], "two", "one")):
            got = _native(binary, root, "search", f'"only_in_{name}"')
            assert got.returncode == 0 and f"only_in_{name}".encode() in got.stdout
            assert (
                _answered_natively(got.stderr)
                and f"pid {pids[roots.index(root)]}".encode() in got.stderr
            )
            got = _native(binary, root, "search", f'"only_in_{other}"')
            assert got.returncode == 1 and got.stdout == b"" and _answered_natively(got.stderr)
        assert [_server_pid(root / ".maguyva") for root in roots] == pids
    finally:
        for root in roots:
            _stop(root / ".maguyva")


def test_a_stale_server_is_never_used(binary: Path, repo: Path, daemon_env: None) -> None:
    """The package changed on disk since the server started (as an upgrade or another index
    format would): the native client's identity is not the server's, the server answers
    nothing and exits, and a server of the current code answers (started by the Python
    client the native one hands over to)."""
    index_dir = repo / ".maguyva"
    assert _warm(['"def dedent"', "--root", str(repo)])[0] == 0
    old = _server_pid(index_dir)
    assert old is not None
    source = Path(client.__file__)
    st = source.stat()
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    try:
        got = _native(binary, repo, "search", '"def dedent"')
        new = _server_pid(index_dir)
    finally:
        os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert got.returncode == 0 and b"def dedent" in got.stdout, got.stderr
    assert b"stale server (another Maguyva build started this server)" in got.stderr
    assert new is not None and new != old
    _wait_until(lambda: not _alive(old), "the stale server to exit")


@pytest.mark.parametrize("how", ["env", "flag", "unavailable", "python-path"])
def test_without_a_server_the_process_answers(
    binary: Path, tmp_path: Path, daemon_env: None, how: str
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def first():\n    return 1\n")
    Index.open(root, modalities=["text"]).build(progress=None)
    argv, env = ["search", '"def first"'], {}
    if how == "env":
        env["MAGUYVA_DAEMON"] = "0"
    elif how == "flag":
        argv.append("--no-daemon")
    elif how == "unavailable":
        (root / ".maguyva" / client.UNAVAILABLE).write_text("no sockets here\n")
    else:
        env["PYTHONPATH"] = str(ROOT / "python")
    expected = _in_process([*argv, "--root", str(root)])
    try:
        got = _native(binary, root, *argv, **env)
        assert (got.returncode, got.stdout) == (0, expected[1]), got.stderr
        assert b"handing over to the Python client" in got.stderr
        if how != "python-path":
            assert not (root / ".maguyva" / client.SOCKET).exists()
            assert _server_pid(root / ".maguyva") is None
    finally:
        _stop(root / ".maguyva")


def test_other_commands_are_the_python_clis(binary: Path, tmp_path: Path) -> None:
    for argv in (["--help"], ["search", "--help"], ["search", '"x"', "--root", str(tmp_path)]):
        got = _native(binary, tmp_path, *argv)
        py = subprocess.run([sys.executable, "-m", "maguyva", *argv], cwd=tmp_path,
                            env=_env(MAGUYVA_DAEMON="0"), capture_output=True, timeout=TIMEOUT,
                            check=False)  # fmt: skip
        assert (got.returncode, got.stdout, _untraced(got.stderr)) == (
            py.returncode,
            py.stdout,
            _untraced(py.stderr),
        ), argv


def test_without_its_locator_the_binary_says_how_to_install_it(
    binary: Path, tmp_path: Path
) -> None:
    lone = tmp_path / "maguyva"
    lone.write_bytes(binary.read_bytes())
    lone.chmod(0o755)
    got = subprocess.run([str(lone), "search", "x"], capture_output=True, timeout=TIMEOUT,
                         check=False)  # fmt: skip
    assert got.returncode == 2 and b"maguyva.paths" in got.stderr and b"make setup" in got.stderr
