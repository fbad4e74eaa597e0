"""The shell's way to a warm answer: `maguyva search` hands its arguments to the repository's
warm server (`maguyva.interfaces.daemon`) over a Unix socket in the index directory, starting
the server on first use, and prints what the server printed, byte for byte.

This module is imported by every `maguyva search` process, so it imports little: `os.path`
strings rather than pathlib, no typing, and `maguyva.config` only when a configuration file
or variable moves the index directory. `answer` returns None whenever the warm path cannot
answer (opted out, no index yet, no server could start, unusual arguments); the caller then
searches in process, as it always did.

Protocol (one question per connection, no JSON: `json` imports `re`): the client sends
NUL-separated fields (`encode_request`) and closes its side; the server answers a line
`CODE STDOUT_BYTES STDERR_BYTES` followed by those bytes, or `stale REASON` when its code is
not the client's (it then exits). A connection that closes before the answer means the server
died: the client starts another and asks again.

With the request the client passes its stdout and stderr descriptors (SCM_RIGHTS): the server
then writes the answer straight into them, as the in-process path would, and its answer line
carries 0 and 0 bytes; no output crosses the socket, and the client only waits for the exit
code. A third descriptor, a pipe's write end, hears `+` before the server's first write into
them: a server that dies after that is not asked again (the lines would print twice). (A pipe
nobody reads, not the socket: a byte on the socket would wake the waiting client once more,
and on a loaded machine each wake-up is a wait for a core.) Without descriptors to pass (a
test's captured stream, `MAGUYVA_DAEMON_FDS=0`) the output comes over the socket as before.

The native `maguyva` (`rust/client/`, installed by `make setup`) speaks this protocol too and
computes the same `identity()`: a change to either here must be made there as well
(`tests/test_native_client.py` compares the two clients' requests byte for byte; a native
identity that differed would make every server it asks exit as stale).
"""

from __future__ import annotations

import _socket  # the C module: `socket.py` would import enum and selectors as well
import os
import sys
import time

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: every import counts on this path
if TYPE_CHECKING:
    import subprocess
    from pathlib import Path
    from typing import Any

SOCKET = "daemon.sock"
LOCK = "daemon.lock"
LOG = "daemon.log"
UNAVAILABLE = "daemon.unavailable"
"""Written by a server that could not listen (its reason inside): for UNAVAILABLE_S after it,
clients answer in process at once instead of starting a server that fails again."""
UNAVAILABLE_S = 3600.0
MAGIC = "maguyva-daemon-1"
REQUEST_FIELDS = 6
"""identity, index_dir, cwd, tty (1/0), stdout encoding, stdout errors."""
OFF_VALUES = ("0", "off", "no", "false")
START_TIMEOUT_S = 30.0
"""How long a client waits for a server it started to listen (imports on a loaded machine)."""
FORWARDED_ENV = ("NO_COLOR", "TERM", "COLUMNS", "HOME", "XDG_CONFIG_HOME")
"""Besides MAGUYVA_*, the variables the in-process path reads while it answers."""
_PATH_OPTIONS = ("--root", "--index-dir")
_MAX_SUN_PATH = 100


def enabled(argv: list[str]) -> bool:
    """False when opted out (`--no-daemon`, `MAGUYVA_DAEMON=0`)."""
    if os.environ.get("MAGUYVA_DAEMON", "").strip().lower() in OFF_VALUES:
        return False
    return "--no-daemon" not in argv


def identity() -> str:
    """What makes a server this client's: the interpreter and every source and native file of
    the installed package (path, size, mtime). A server started by another Maguyva version,
    another index format or an edited checkout has another identity and is never used. Sent
    as it is (a few kB; hashing it would import `zlib`, a shared library to load)."""
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    parts = [sys.executable, package]
    stack = [package]
    skip = len(package) + 1
    while stack:
        top = stack.pop()
        with os.scandir(top) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in ("__pycache__", "data"):
                        stack.append(entry.path)
                elif entry.name.endswith((".py", ".so", ".pyi")):
                    st = entry.stat()
                    parts.append(f"{entry.path[skip:]}:{st.st_size}:{st.st_mtime_ns}")
    return "\n".join(parts)


def _path_options(argv: list[str]) -> dict[str, str] | None:
    """`--root` and `--index-dir` from a search's arguments; None when they cannot be read
    without the full parser (an abbreviated option, `--`): the in-process path decides then."""
    found: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return None
        name, eq, value = arg.partition("=")
        if name in _PATH_OPTIONS:
            if not eq:
                if i + 1 >= len(argv):
                    return None
                value = argv[i + 1]
                i += 1
            found[name] = value
        elif (
            name.startswith("--")
            and len(name) > 2
            and any(o.startswith(name) for o in _PATH_OPTIONS)
        ):
            return None  # argparse would expand an abbreviation: leave it to argparse
        i += 1
    return found


def index_dir_of(argv: list[str]) -> str | None:
    """The index directory a search with these arguments reads, as the CLI finds it (its
    root: `--root` or the nearest indexed ancestor; then `--index-dir`, MAGUYVA_INDEX_DIR or a
    configuration file's `index_dir`, else ROOT/.maguyva)."""
    options = _path_options(argv)
    if options is None:
        return None
    cwd = os.getcwd()
    if "--root" in options:
        root = os.path.realpath(os.path.join(cwd, options["--root"]))
    else:
        root = _find_root(cwd)
    if options.get("--index-dir"):
        return os.path.abspath(os.path.join(cwd, options["--index-dir"]))
    if not os.environ.get("MAGUYVA_INDEX_DIR") and not _configures_index_dir(root):
        return os.path.join(root, ".maguyva")
    from pathlib import Path

    from maguyva.config import effective_config, index_dir_for

    try:
        values = effective_config(Path(root), {"index_dir": None}).values
    except Exception:  # a bad configuration: the in-process path reports it properly
        return None
    return os.path.abspath(index_dir_for(Path(root), values))


def _configures_index_dir(root: str) -> bool:
    """Could a configuration file set `index_dir`? (Then `maguyva.config` decides.)"""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    for path in (os.path.join(root, ".maguyva.toml"), os.path.join(root, "pyproject.toml"),
                 os.path.join(base, "maguyva", "config.toml")):  # fmt: skip
        try:
            with open(path, "rb") as fh:
                if b"index_dir" in fh.read():
                    return True
        except OSError:
            continue
    return False


def _find_root(start: str) -> str:
    """As `maguyva.interfaces.cli.main.find_root` (kept here so that the client does not
    import the CLI module's dependencies)."""
    candidate = os.path.realpath(start)
    while True:
        if os.path.isfile(os.path.join(candidate, ".maguyva", "manifest.json")):
            return candidate
        if os.path.isfile(os.path.join(candidate, ".maguyva.toml")):
            return candidate
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return os.path.realpath(start)
        candidate = parent


def socket_address(index_dir: str | Path) -> str | None:
    """The socket's address; a long index path is reached through /proc/self/fd (Unix
    socket paths are limited to ~107 bytes). None when it cannot be addressed."""
    path = os.path.join(index_dir, SOCKET)
    if len(os.fsencode(path)) <= _MAX_SUN_PATH:
        return path
    return None


def _connect(index_dir: str | Path) -> _socket.socket | None:
    address = socket_address(index_dir)
    fd = None
    if address is None:
        try:
            fd = os.open(index_dir, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return None
        address = f"/proc/self/fd/{fd}/{SOCKET}"
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(address)
    except OSError:
        sock.close()
        return None
    finally:
        if fd is not None:
            os.close(fd)
    return sock


def peer_credentials(sock: Any) -> tuple[int, int]:
    """(pid, uid) of the process at the other end of a Unix socket (SO_PEERCRED)."""
    creds = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    pid = int.from_bytes(creds[0:4], sys.byteorder, signed=True)
    return pid, int.from_bytes(creds[4:8], sys.byteorder)


def _peer_pid(sock: Any) -> int:
    pid, uid = peer_credentials(sock)
    return pid if uid == os.getuid() else -1


def _trace(message: str) -> None:
    if os.environ.get("MAGUYVA_DAEMON_TRACE"):
        sys.stderr.write(f"maguyva: daemon: {message}\n")
        sys.stderr.flush()


def start_server(index_dir: str) -> subprocess.Popen[bytes] | None:
    """Start a server for `index_dir` in its own session (it outlives this process). `-P`:
    `python -m` would put the working directory (the user's repository) first on the
    module path, and a repository's own `json.py` or `logging/` would be imported."""
    import subprocess

    argv = [sys.executable, "-P", "-m", "maguyva.interfaces.daemon", "--index-dir", index_dir]
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True,
        )  # fmt: skip
    except OSError as exc:
        _trace(f"cannot start a server: {exc}")
        return None


def _wait_for_server(index_dir: str, proc: subprocess.Popen[bytes] | None) -> Any:
    """Connect once the server listens; None when it exits first or takes too long."""
    deadline = time.monotonic() + START_TIMEOUT_S
    delay = 0.002
    while time.monotonic() < deadline:
        sock = _connect(index_dir)
        if sock is not None:
            return sock
        if proc is not None and proc.poll() is not None:
            # it exited: another server took the lock (then its socket appears) or it failed
            sock = _connect(index_dir)
            if sock is None and proc.returncode != 0:
                _trace(f"the server exited with {proc.returncode}")
                return None
            proc = None
            if sock is not None:
                return sock
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    _trace("no server listened in time")
    return None


def encode_request(op: str, fields: list[str], argv: list[str], env: dict[str, str]) -> bytes:
    """A request: NUL-separated fields (argv, environment and paths cannot hold NUL), bytes
    kept as they are (`os.fsencode`); the client then closes its side."""
    items = [MAGIC, op, *fields, str(len(argv)), *argv, *(f"{k}={v}" for k, v in env.items())]
    return b"\0".join(os.fsencode(item) for item in items)


def decode_request(data: bytes) -> tuple[str, list[str], list[str], dict[str, str]]:
    """(op, fields, argv, env) of a request; ValueError when it is not one."""
    items = [os.fsdecode(item) for item in data.split(b"\0")]
    if not items or items[0] != MAGIC:
        raise ValueError("not a Maguyva request")
    op = items[1]
    nfields = REQUEST_FIELDS if op == "search" else 0
    fields = items[2 : 2 + nfields]
    argc = int(items[2 + nfields])
    start = 3 + nfields
    argv = items[start : start + argc]
    env = dict(item.partition("=")[::2] for item in items[start + argc :])
    return op, fields, argv, env


def _request(index_dir: str, argv: list[str], ident: str) -> bytes:
    env = {k: v for k, v in os.environ.items() if k.startswith("MAGUYVA_") or k in FORWARDED_ENV}
    stdout = sys.stdout
    fields = [
        ident, index_dir, os.getcwd(), "1" if stdout is not None and stdout.isatty() else "0",
        getattr(stdout, "encoding", None) or "utf-8", getattr(stdout, "errors", None) or "strict",
    ]  # fmt: skip
    return encode_request("search", fields, argv, env)


class ServerGone(Exception):
    """The connection closed before the answer (the server died mid-question); `printed`:
    after it had begun writing into this process's stdout or stderr."""

    printed = False


def stdio_fds() -> list[int] | None:
    """This process's stdout and stderr descriptors, for the server to write the answer into;
    None when either is not a descriptor (a test's captured stream, a closed one) or when
    `MAGUYVA_DAEMON_FDS` is off."""
    if os.environ.get("MAGUYVA_DAEMON_FDS", "").strip().lower() in OFF_VALUES:
        return None
    fds = []
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
            fd = stream.fileno()
            os.fstat(fd)
        except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
            return None
        fds.append(fd)
    return fds


def _send(sock: Any, request: bytes, fds: list[int] | None) -> None:
    if not fds:
        sock.sendall(request)
        return
    rights = b"".join(fd.to_bytes(4, sys.byteorder) for fd in fds)
    sent = sock.sendmsg([request], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, rights)])
    if sent < len(request):
        sock.sendall(request[sent:])


def _ask(sock: Any, request: bytes, fds: list[int] | None = None) -> tuple[str, int, bytes, bytes]:
    """Send one question: ("ok", code, stdout, stderr) or ("stale", 0, reason, b"")."""
    data = bytearray()
    try:
        _send(sock, request, fds)
        sock.shutdown(_socket.SHUT_WR)
        _trace(f"question sent to pid {_peer_pid(sock)}")
        while b"\n" not in data:
            block = sock.recv(1 << 16)
            if not block:
                raise ServerGone("the server closed the connection")
            data += block
        head, _, rest = bytes(data).partition(b"\n")
        if head.startswith(b"stale "):
            return "stale", 0, head[6:], b""
        code, n_out, n_err = (int(x) for x in head.split())
        body = bytearray(rest)
        while len(body) < n_out + n_err:
            block = sock.recv(1 << 20)
            if not block:
                raise ServerGone("the answer was cut short")
            body += block
        return "ok", code, bytes(body[:n_out]), bytes(body[n_out : n_out + n_err])
    except (OSError, ValueError) as exc:
        if isinstance(exc, ServerGone):
            raise
        raise ServerGone(str(exc)) from None
    finally:
        sock.close()


def answer(argv: list[str]) -> int | None:
    """Answer a `search` command line through the warm server: its exit code once its output
    is written, or None when the in-process path should answer instead."""
    if not enabled(argv):
        return None
    try:
        index_dir = index_dir_of(argv[1:])
        if index_dir is None or not os.path.isfile(os.path.join(index_dir, "manifest.json")):
            return None  # no index (yet): the in-process path says so in its own words
        if _unavailable(index_dir) or not os.access(index_dir, os.W_OK):
            return None  # a server failed here lately, or could not take its lock and socket
        request = _request(index_dir, argv, identity())
    except OSError as exc:  # e.g. a working directory deleted under the shell
        _trace(f"{exc}; answering in process")
        return None  # the in-process path reports it in one line
    try:
        return _answer(index_dir, request)
    except KeyboardInterrupt:
        sys.stderr.write("maguyva: interrupted\n")
        return 130


def _unavailable(index_dir: str) -> bool:
    """Did a server fail to listen here lately (`UNAVAILABLE`)?"""
    try:
        age = time.time() - os.stat(os.path.join(index_dir, UNAVAILABLE)).st_mtime
    except OSError:
        return False
    if age < UNAVAILABLE_S:
        _trace(f"no server can listen here (see {UNAVAILABLE}); answering in process")
        return True
    return False


def _answer(index_dir: str, request: bytes) -> int | None:
    fds = stdio_fds()
    for attempt in range(3):
        sock = _connect(index_dir)
        if sock is None:
            sock = _wait_for_server(index_dir, start_server(index_dir))
            if sock is None:
                _trace("answering in process")
                return None
        begun = os.pipe() if fds else None  # the server writes `+` into it before printing
        try:
            status, code, out, err = _ask(sock, request, fds and [*fds, begun[1]])
        except ServerGone as exc:
            exc.printed = _printed(begun)
            if exc.printed:  # asking again would print its lines twice
                sys.stderr.write(f"maguyva: error: the server died while answering ({exc}; "
                                 f"see {os.path.join(index_dir, LOG)})\n")  # fmt: skip
                return 2
            _trace(f"{exc}; starting another server (attempt {attempt + 1})")
            continue
        _printed(begun)
        if status == "stale":
            _trace(f"stale server ({out.decode(errors='replace')}); starting another")
            _wait_gone(index_dir)
            continue
        _trace("the server wrote into our stdout" if fds else "the answer came over the socket")
        _write(out, err)
        return code
    _trace("no answer from a server; answering in process")
    return None


def _printed(begun: tuple[int, int] | None) -> bool:
    """Did the server begin to print (a `+` in the pipe)? The pipe is closed."""
    if begun is None:
        return False
    os.close(begun[1])
    try:
        os.set_blocking(begun[0], False)
        return os.read(begun[0], 1) == b"+"
    except BlockingIOError:
        return False
    finally:
        os.close(begun[0])


def _wait_gone(index_dir: str) -> None:
    """Wait (briefly) until the stale server has let go of the lock and socket."""
    import fcntl

    deadline = time.monotonic() + 5.0
    try:
        fd = os.open(os.path.join(index_dir, LOCK), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return
    try:
        while time.monotonic() < deadline:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                time.sleep(0.01)
    finally:
        os.close(fd)


def _write(out: bytes, err: bytes) -> None:
    if err:
        sys.stderr.flush()
        sys.stderr.buffer.write(err)
        sys.stderr.flush()
    if out:
        try:
            sys.stdout.buffer.write(out)
            sys.stdout.flush()
        except BrokenPipeError:  # `maguyva search x | head`
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())


def stop(index_dir: str | Path, timeout: float = 10.0) -> int | None:
    """Ask the server of `index_dir` to exit; its pid, or None when none answered. Returns
    once it has released its lock (tests stop theirs; `maguyva` servers also stop when idle)."""
    sock = _connect(index_dir)
    if sock is None:
        return None
    pid = -1
    try:
        pid = _peer_pid(sock)
        sock.sendall(encode_request("stop", [], [], {}))
        sock.shutdown(_socket.SHUT_WR)
        sock.recv(64)
    except OSError:
        pass
    finally:
        sock.close()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and pid > 0:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        if _reaped(pid):
            break
        time.sleep(0.01)
    return pid


def _reaped(pid: int) -> bool:
    """A server started by this process is its child: reap it so that it does not linger."""
    try:
        done, _status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return done == pid


def main() -> int:
    """The `maguyva` command: a search through the warm server when it can answer, else the
    full CLI (imported only then)."""
    if sys.argv[1:2] == ["search"]:
        code = answer(sys.argv[1:])
        if code is not None:
            return code
    from maguyva.interfaces.cli.main import main as cli_main

    return cli_main(sys.argv[1:])


__all__ = ["answer", "enabled", "identity", "index_dir_of", "main", "stop"]
