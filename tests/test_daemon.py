"""The warm server behind `maguyva search` (issue 21): the client/server path answers what the
in-process path answers, byte for byte; a server killed mid-question is replaced; each
repository gets its own server; a server of other code is never used; a new generation is
seen before the next answer; opting out starts nothing; idle servers exit by themselves.

Every test stops the servers it started (and the session runs with MAGUYVA_DAEMON=0 for
every other test: `tests/conftest.py`)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from interfaces_corpus import make_corpus

from maguyva.api import Index
from maguyva.eval.corpora import fetch_corpus
from maguyva.eval.queryset import load_queries
from maguyva.interfaces import client
from maguyva.interfaces.cli.main import main

EVAL = Path(__file__).parent.parent / "eval"
TIMEOUT = 120.0
"""Generous: the machine running the tests may be loaded."""


def _server_pid(index_dir: Path) -> int | None:
    """The pid written in the lock by the server holding it (None when no server holds it)."""
    import fcntl

    try:
        fd = os.open(index_dir / client.LOCK, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 32, 0).decode().strip()
            return int(text) if text.isdigit() else None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_until(predicate, what: str, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _stop(index_dir: Path) -> None:
    """Stop the server of `index_dir` and wait until it is gone."""
    pid = _server_pid(index_dir)
    client.stop(index_dir)
    if pid is not None and _alive(pid):
        os.kill(pid, signal.SIGKILL)
        _wait_until(lambda: not _alive(pid), f"server {pid} to exit")


@pytest.fixture
def daemon_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MAGUYVA_DAEMON", raising=False)
    monkeypatch.setenv("MAGUYVA_DAEMON_IDLE", "300")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = make_corpus(tmp_path_factory.mktemp("daemon"))
    Index.open(root).build(progress=None)
    yield root
    _stop(root / ".maguyva")


def _capture(run, argv: list[str]) -> tuple[int | None, bytes, bytes]:
    """Run `run(argv)` with stdout/stderr as non-terminal UTF-8 streams; their bytes."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="\n")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="\n")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(argv)
        out.flush()
        err.flush()
    return code, out.buffer.getvalue(), err.buffer.getvalue()  # type: ignore[attr-defined]


def _in_process(argv: list[str]) -> tuple[int | None, bytes, bytes]:
    return _capture(main, argv)


def _warm(argv: list[str]) -> tuple[int | None, bytes, bytes]:
    return _capture(lambda a: client.answer(["search", *a]), argv)


TIMING_FIELDS = {("elapsed_total",), ("stats", "elapsed"), ("maguyva", "timings_ms"),
                 ("maguyva", "total_ms")}  # fmt: skip


def _without_timings(output: bytes) -> list[dict]:
    """The JSON Lines with the timing fields (and only those) removed."""
    rows = []
    for line in output.decode().splitlines():
        row = json.loads(line)
        for path in TIMING_FIELDS:
            node = row["data"]
            for key in path[:-1]:
                node = node.get(key, {})
            node.pop(path[-1], None)
        rows.append(row)
    return rows


def test_client_answers_as_the_process_does(repo: Path, daemon_env: None) -> None:
    argv = ["search", "who calls dedent", "--root", str(repo)]
    expected = _in_process(argv)
    got = _warm(argv[1:])
    assert got == expected
    assert _server_pid(repo / ".maguyva") is not None  # started on first use


@pytest.fixture(scope="module")
def requests_corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    root = fetch_corpus("requests-2.32.3")
    index_dir = tmp_path_factory.mktemp("requests-index")
    Index.open(root, index_dir=index_dir, modalities=["text", "structural", "graph"]).build()
    yield root, index_dir
    _stop(index_dir)


def test_json_is_byte_identical_on_the_shipped_query_sets(
    requests_corpus: tuple[Path, Path], daemon_env: None
) -> None:
    """Every query of the shipped requests sets, `--json`, in process and through the
    server: the same bytes once the timing fields are removed (and the same exit code and
    stderr). The text output of the hand-written questions is compared as it is."""
    root, index_dir = requests_corpus
    queries = load_queries(sorted(EVAL.glob("requests-2.32.3.*.jsonl")))
    assert len(queries) >= 100
    common = ["--root", str(root), "--index-dir", str(index_dir)]
    for query in queries:
        argv = [query.query, *common, "--json"]
        code, out, err = _in_process(["search", *argv])
        warm = _warm(argv)
        assert warm[0] == code and warm[2] == err, query.id
        assert _without_timings(warm[1]) == _without_timings(out), query.id
        raw_lines = [json.loads(x) for x in out.decode().splitlines()]
        assert any(r["type"] == "summary" for r in raw_lines)
    for query in queries[:20]:
        argv = [query.query, *common, "--explain"]
        expected = _in_process(["search", *argv])
        got = _warm(argv)
        strip = [b"timings:"]  # the one timing line of --explain
        assert [x for x in got[1].splitlines() if not x.startswith(tuple(strip))] == [
            x for x in expected[1].splitlines() if not x.startswith(tuple(strip))
        ], query.id


def _client_process(cwd: Path, *argv: str, trace: bool = False) -> subprocess.Popen[str]:
    env = {**os.environ, "MAGUYVA_DAEMON_IDLE": "300"}
    env.pop("MAGUYVA_DAEMON", None)
    if trace:
        env["MAGUYVA_DAEMON_TRACE"] = "1"
    code = "import sys; from maguyva.interfaces.client import main; sys.exit(main())"
    return subprocess.Popen(
        [sys.executable, "-c", code, "search", *argv], cwd=cwd, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def _kill_once_sent(proc: subprocess.Popen, server: int) -> tuple[bytes, list[str]]:
    """Kills `server` as soon as the traced client `proc` says its question was sent; then
    waits for the client. Returns its stdout and its stderr lines (either stream mode)."""
    sent = threading.Event()
    lines: list[str] = []

    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line if isinstance(line, str) else line.decode(errors="replace"))
            if "question sent" in lines[-1]:
                sent.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        assert sent.wait(TIMEOUT), lines
    finally:
        os.kill(server, signal.SIGKILL)  # dies holding the question
    assert proc.stdout is not None
    out = proc.stdout.read()  # stderr is the reader thread's alone
    proc.wait(TIMEOUT)
    reader.join(TIMEOUT)
    return (out if isinstance(out, bytes) else out.encode()), lines


def test_a_server_killed_mid_question_is_replaced(repo: Path, daemon_env: None) -> None:
    index_dir = repo / ".maguyva"
    expected = _in_process(["search", '"def dedent"', "--root", str(repo)])
    assert _warm(['"def dedent"', "--root", str(repo)])[1] == expected[1]
    first = _server_pid(index_dir)
    assert first is not None
    os.kill(first, signal.SIGSTOP)  # it accepts nothing more: the question waits in its queue
    proc = _client_process(repo, '"def dedent"', trace=True)
    out, lines = _kill_once_sent(proc, first)
    assert proc.returncode == 0, lines
    assert out == expected[1]
    assert any("starting another server" in line for line in lines), lines
    second = _server_pid(index_dir)
    assert second is not None and second != first and _alive(second)


def test_two_repositories_get_two_servers(tmp_path: Path, daemon_env: None) -> None:
    roots = []
    for name in ("one", "two"):
        root = tmp_path / name
        root.mkdir()
        (root / "mod.py").write_text(f"def only_in_{name}():\n    return '{name}'\n")
        Index.open(root, modalities=["text"]).build(progress=None)
        roots.append(root)
    try:
        pids = []
        for root, name in zip(roots, ("one", "two"), strict=True):
            code, out, _ = _warm([f'"only_in_{name}"', "--root", str(root)])
            assert code == 0 and f"only_in_{name}".encode() in out
            code, out, _ = _warm(['"only_in_two"' if name == "one" else '"only_in_one"',
                                  "--root", str(root)])  # fmt: skip
            assert code == 1 and out == b""
            pids.append(_server_pid(root / ".maguyva"))
        assert None not in pids and pids[0] != pids[1]
        assert all(_alive(pid) for pid in pids if pid is not None)
    finally:
        for root in roots:
            _stop(root / ".maguyva")


def test_clients_starting_together_share_one_server(tmp_path: Path, daemon_env: None) -> None:
    """Three first questions at once: each may start a server; one takes the lock and
    serves, the others leave (a second server's probe does not disturb the first)."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def first():\n    return 1\n")
    Index.open(root, modalities=["text"]).build(progress=None)
    expected = _in_process(["search", '"def first"', "--root", str(root)])
    try:
        procs = [_client_process(root, '"def first"', trace=True) for _ in range(3)]
        results = [p.communicate(timeout=TIMEOUT) for p in procs]
        for proc, (out, err) in zip(procs, results, strict=True):
            assert proc.returncode == 0 and out.encode() == expected[1], err
            assert "answering in process" not in err, err
        pid = _server_pid(root / ".maguyva")
        assert pid is not None
        assert _warm(['"def first"', "--root", str(root)])[1] == expected[1]
        assert _server_pid(root / ".maguyva") == pid  # the one server is still serving
    finally:
        _stop(root / ".maguyva")


def test_a_stale_server_is_never_used(repo: Path, daemon_env: None) -> None:
    """A server started by other code (here: the package changed on disk since it started,
    as an upgrade or another index format would) answers no question: it is told so, exits,
    and a server of the client's code answers."""
    index_dir = repo / ".maguyva"
    assert _warm(['"def dedent"', "--root", str(repo)])[0] == 0
    old = _server_pid(index_dir)
    assert old is not None
    source = Path(client.__file__)
    st = source.stat()
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    try:
        code, out, _ = _warm(['"def dedent"', "--root", str(repo)])
        new = _server_pid(index_dir)
    finally:
        os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert code == 0 and b"def dedent" in out
    assert new is not None and new != old
    _wait_until(lambda: not _alive(old), "the stale server to exit")


def test_the_server_sees_a_new_generation(tmp_path: Path, daemon_env: None) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def first():\n    return 1\n")
    index = Index.open(root, modalities=["text"])
    index.build(progress=None)
    try:
        assert _warm(['"def first"', "--root", str(root)])[0] == 0
        assert _warm(['"def second"', "--root", str(root)])[0] == 1
        pid = _server_pid(root / ".maguyva")
        (root / "b.py").write_text("def second():\n    return 2\n")
        index.build(progress=None)  # another writer commits a generation
        code, out, _ = _warm(['"def second"', "--root", str(root)])
        assert code == 0 and b"b.py" in out
        assert _server_pid(root / ".maguyva") == pid  # the same, warm server
    finally:
        _stop(root / ".maguyva")


@pytest.mark.parametrize("how", ["env", "flag"])
def test_opting_out_starts_no_server(
    tmp_path: Path, daemon_env: None, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def first():\n    return 1\n")
    Index.open(root, modalities=["text"]).build(progress=None)
    argv = ['"def first"', "--root", str(root)]
    if how == "env":
        monkeypatch.setenv("MAGUYVA_DAEMON", "0")
    else:
        argv.append("--no-daemon")
    assert client.answer(["search", *argv]) is None  # the caller answers in process
    assert main(["search", *argv, "-q"]) == 0
    assert not (root / ".maguyva" / client.SOCKET).exists()
    assert _server_pid(root / ".maguyva") is None


def test_an_idle_server_exits(tmp_path: Path, daemon_env: None, monkeypatch) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def first():\n    return 1\n")
    Index.open(root, modalities=["text"]).build(progress=None)
    monkeypatch.setenv("MAGUYVA_DAEMON_IDLE", "1")
    try:
        assert _warm(['"def first"', "--root", str(root)])[0] == 0
        pid = _server_pid(root / ".maguyva")
        assert pid is not None
        _wait_until(lambda: not _alive(pid), "the idle server to exit")
        assert not (root / ".maguyva" / client.SOCKET).exists()
    finally:
        _stop(root / ".maguyva")


def test_no_server_can_start_so_the_process_answers(tmp_path: Path, daemon_env: None) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def first():\n    return 1\n")
    Index.open(root, modalities=["text"]).build(progress=None)
    (root / ".maguyva" / client.SOCKET).mkdir()  # the server cannot bind: it exits
    proc = _client_process(root, '"def first"', trace=True)
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0 and "a.py" in out
    assert "answering in process" in err
    assert _server_pid(root / ".maguyva") is None
    # the failure is remembered: the next question does not start a server to fail again
    assert (root / ".maguyva" / client.UNAVAILABLE).is_file()
    proc = _client_process(root, '"def first"', trace=True)
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0 and "a.py" in out
    assert "no server can listen here" in err and "question sent" not in err
    shutil.rmtree(root / ".maguyva" / client.SOCKET)
    (root / ".maguyva" / client.UNAVAILABLE).unlink()
    assert _warm(['"def first"', "--root", str(root)])[0] == 0  # a server again
    assert not (root / ".maguyva" / client.UNAVAILABLE).exists()
    _stop(root / ".maguyva")


def test_a_deleted_working_directory_is_left_to_the_process(
    tmp_path: Path, daemon_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    assert client.answer(["search", '"x"']) is None  # no traceback: the CLI says it in a line
    code, _, err = _in_process(["search", '"x"'])
    assert code == 2 and err.count(b"\n") == 1, err


PROBE = """
import sys
from maguyva.interfaces.client import answer
code = answer(sys.argv[1:])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {"numpy", "onnxruntime",
    "tokenizers", "tree_sitter", "rustworkx"} or m in {"maguyva.api", "maguyva.query.engine",
    "maguyva.interfaces.cli.main", "json", "typing"})
print(code, ",".join(heavy))
"""


def test_the_client_imports_nothing_heavy(repo: Path, daemon_env: None) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MAGUYVA_DAEMON"}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, "search", '"def dedent"', "-q"], cwd=repo, env=env,
        capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    code, heavy = proc.stdout.split(" ", 1)
    assert code == "0"  # answered by the server
    assert heavy.strip() == ""


def _client_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MAGUYVA_DAEMON"}
    return {**env, "MAGUYVA_DAEMON_IDLE": "300", "MAGUYVA_DAEMON_TRACE": "1", **extra}


CLIENT = "import sys; from maguyva.interfaces.client import main; sys.exit(main())"


@pytest.mark.parametrize("fds", ["1", "0"])
def test_the_server_writes_into_the_clients_stdout(
    requests_corpus: tuple[Path, Path], daemon_env: None, fds: str
) -> None:
    """The client passes its stdout and stderr (SCM_RIGHTS) and the server prints into them:
    the bytes are the in-process ones, text and `--json`, with the lines of a common literal;
    with `MAGUYVA_DAEMON_FDS=0` (or no descriptor to pass) they come over the socket."""
    root, index_dir = requests_corpus
    common = ["--root", str(root), "--index-dir", str(index_dir), "--max-results", "1000"]
    for argv in (['"self"', *common, "-C", "3"], ['"Invalid URL"', *common, "--json", "-C", "2"]):
        code, expected, _ = _in_process(["search", *argv])
        proc = subprocess.run([sys.executable, "-c", CLIENT, "search", *argv], cwd=root,
                              env=_client_env(MAGUYVA_DAEMON_FDS=fds), capture_output=True,
                              timeout=TIMEOUT, check=False)  # fmt: skip
        err = proc.stderr.decode()
        assert proc.returncode == code == 0, err
        if "--json" not in argv:
            assert len(expected) > 1 << 17  # more than a pipe holds
        else:
            expected, proc.stdout = (_without_timings(x) for x in (expected, proc.stdout))
        assert proc.stdout == expected
        said = "the server wrote into our stdout" if fds == "1" else "came over the socket"
        assert said in err and "answering in process" not in err, err


def test_a_closed_pipe_ends_the_answer_quietly(
    requests_corpus: tuple[Path, Path], daemon_env: None
) -> None:
    """`maguyva search '"self"' | head -1`: the reader goes away after one line; the client
    exits 0 without a word on stderr, as ripgrep does, and the server goes on serving."""
    root, index_dir = requests_corpus
    argv = ['"self"', "--root", str(root), "--index-dir", str(index_dir), "--max-results", "1000",
            "-C", "3"]  # fmt: skip
    expected = _in_process(["search", *argv])[1]
    assert len(expected) > 1 << 17
    proc = subprocess.Popen([sys.executable, "-c", CLIENT, "search", *argv], cwd=root,
                            env=_client_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(TIMEOUT) == 0, err
    assert first == expected.split(b"\n", 1)[0] + b"\n"
    assert [x for x in err.splitlines() if not x.startswith("maguyva: daemon:")] == []
    pid = _server_pid(index_dir)
    assert pid is not None and _alive(pid)
    again = subprocess.run([sys.executable, "-c", CLIENT, "search", *argv], cwd=root,
                           env=_client_env(), capture_output=True, timeout=TIMEOUT, check=False)  # fmt: skip
    assert again.returncode == 0 and again.stdout == expected
    assert _server_pid(index_dir) == pid
    assert "Traceback" not in (index_dir / client.LOG).read_text()


def test_the_server_never_imports_the_repositorys_modules(tmp_path: Path, daemon_env: None) -> None:
    """The server is started from the user's working directory (the repository); a module of
    the repository named as one of the standard library's must not shadow it there."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def first():\n    return 1\n")
    for name in ("json", "argparse", "logging"):
        (root / f"{name}.py").write_text("raise SystemExit('imported from the repository')\n")
    Index.open(root, modalities=["text"]).build(progress=None)
    try:
        proc = _client_process(root, '"def first"', trace=True)
        out, err = proc.communicate(timeout=TIMEOUT)
        assert proc.returncode == 0 and "a.py" in out, err
        assert "answering in process" not in err and "wrote into our stdout" in err, err
    finally:
        _stop(root / ".maguyva")


def _wchan(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return ""


def test_a_server_killed_while_printing_is_not_asked_again(
    requests_corpus: tuple[Path, Path], daemon_env: None
) -> None:
    """The server has begun writing into the client's stdout (blocked on a full pipe) when it
    dies: asking another server would print those lines twice, so the client says so and
    exits 2; what reached stdout is a prefix of the answer, never a repeat."""
    root, index_dir = requests_corpus
    argv = ['"self"', "--root", str(root), "--index-dir", str(index_dir), "--max-results", "1000",
            "-C", "3"]  # fmt: skip
    expected = _in_process(["search", *argv])[1]
    assert _warm(argv)[0] == 0  # a server runs
    pid = _server_pid(index_dir)
    assert pid is not None
    if not _wchan(pid):
        pytest.skip("no /proc/PID/wchan here: cannot see the server wait on the pipe")
    proc = subprocess.Popen([sys.executable, "-c", CLIENT, "search", *argv], cwd=root,
                            env=_client_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        _wait_until(lambda: "pipe_write" in _wchan(pid), "the server to fill the pipe")
    finally:
        os.kill(pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 2, err
    assert "the server died while answering" in err.decode()
    assert 0 < len(out) < len(expected) and expected.startswith(out)
    assert "starting another server" not in err.decode()
