"""The warm per-repository server behind `maguyva search` (as build daemons and language
servers do): it keeps the index open, so a question from the shell costs a connection and the
search, not an interpreter start, imports and opened modalities.

    python -m maguyva.interfaces.daemon --index-dir PATH [--idle SECONDS]   (the client starts it)
    python -m maguyva.interfaces.daemon --index-dir PATH --stop

One server per index directory: it holds `daemon.lock` (flock, released when it dies) and
listens on `daemon.sock` (mode 0600; peers of another uid are refused). It answers one
question at a time by running the CLI's own `main()` on the client's arguments, working
directory, environment and terminal, so the bytes are the ones the in-process path prints.
The newest committed generation is used for every question (`Index.engine`). It exits after
`MAGUYVA_DAEMON_IDLE` seconds without a question (default 600), when asked to stop, when a
client of other code asks (its identity differs: it is stale), or when its socket or index
directory disappears. Its stderr goes to `daemon.log` in the index directory.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import io
import json
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from maguyva.interfaces import client

DEFAULT_IDLE_S = 600.0
TICK_S = 1.0
"""How often an idle server checks that its socket and index directory are still there."""
REQUEST_TIMEOUT_S = 10.0
"""How long a connected client may take to send its question (the server answers one at a
time: a stuck client must not hold the others)."""
LOCK_WAIT_S = 10.0
"""How long a second server waits for the lock before leaving the first one to serve."""

log = logging.getLogger("maguyva.daemon")


class _Stdout(io.TextIOWrapper):
    """The client's stdout as the CLI sees it: its encoding and whether it is a terminal."""

    def __init__(self, buffer: Any, encoding: str, errors: str, tty: bool) -> None:
        super().__init__(buffer, encoding=encoding, errors=errors, newline="\n")
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


class _ClientFd(io.RawIOBase):
    """A descriptor the client passed (its stdout or stderr): the answer is written straight
    into it. Before the first write the client is told (`+` into the pipe it passed): a server
    that dies after that point must not be asked again, or the lines would print twice."""

    def __init__(self, fd: int, begun: Callable[[], None]) -> None:
        super().__init__()
        self._fd = fd
        self._begun = begun

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def write(self, data: Any) -> int:
        self._begun()
        return os.write(self._fd, data)


class _CurrentStderr(logging.StreamHandler):  # type: ignore[type-arg]
    """A log handler writing to whatever `sys.stderr` is now: the asking client's."""

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


class Server:
    """Answers the questions of one index directory until idle."""

    def __init__(self, index_dir: Path, idle_s: float) -> None:
        self.index_dir = Path(index_dir)
        self.idle_s = idle_s
        self.identity = client.identity()
        self.indexes: dict[tuple[str, str, str], Any] = {}
        self.sock: socket.socket | None = None
        self.sock_ino: int | None = None
        self._warmed = False

    # -- the warm indexes ----------------------------------------------------------------

    def open_index(self, root: Path, *, index_dir: Any = None, **overrides: Any) -> Any:
        """`Index.open` for the CLI, reusing an open Index (and its engine) when the root,
        index directory and effective configuration are the same."""
        from maguyva.api import Index

        index = Index.open(root, index_dir=index_dir, **overrides)
        key = (str(index.root), str(index.index_dir), json.dumps(index.config, sort_keys=True,
                                                               default=str))  # fmt: skip
        cached = self.indexes.get(key)
        if cached is not None:
            return cached
        if len(self.indexes) >= 8:
            self.indexes.pop(next(iter(self.indexes)))
        self.indexes[key] = index
        return index

    def _warm_later(self) -> None:
        """After the first answer, open every modality in the background (the embedder
        too), so that the next question of any intent finds it ready."""
        if self._warmed or not self.indexes:
            return
        self._warmed = True
        index = next(iter(self.indexes.values()))

        def warm() -> None:
            try:
                index.warm()
            except Exception as exc:  # a modality that cannot open says so in its answers
                log.warning("warming failed: %s", exc)

        threading.Thread(target=warm, name="maguyva-warm", daemon=True).start()

    # -- serving ------------------------------------------------------------------------

    def bind(self) -> None:
        address = client.socket_address(self.index_dir)
        path = self.index_dir / client.SOCKET
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # a dead server's; we hold the lock, so no live one owns it
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            if address is not None:
                sock.bind(address)
            else:  # too long for sun_path: bind relative to the index directory
                cwd = os.getcwd()
                os.chdir(self.index_dir)
                try:
                    sock.bind(client.SOCKET)
                finally:
                    os.chdir(cwd)
        finally:
            os.umask(old_umask)
        sock.listen(64)
        sock.settimeout(TICK_S)
        self.sock = sock
        self.sock_ino = os.stat(path).st_ino

    def still_mine(self) -> bool:
        try:
            return os.stat(self.index_dir / client.SOCKET).st_ino == self.sock_ino
        except OSError:
            return False

    def serve(self) -> None:
        assert self.sock is not None
        from maguyva.interfaces.cli import main as cli

        cli.WARM.update(open_index=self.open_index, parser=cli.build_parser())
        last = time.monotonic()
        while True:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                if time.monotonic() - last > self.idle_s:
                    log.info("idle for %.0f s: exiting", self.idle_s)
                    return
                if not self.still_mine() or not (self.index_dir / "manifest.json").exists():
                    log.info("socket or index gone: exiting")
                    return
                continue
            last = time.monotonic()
            with conn:
                conn.settimeout(REQUEST_TIMEOUT_S)
                if not self._same_user(conn):
                    continue
                keep_going = self.handle(conn, cli)
            last = time.monotonic()
            if not keep_going:
                return
            self._warm_later()

    def _same_user(self, conn: socket.socket) -> bool:
        return client.peer_credentials(conn)[1] == os.getuid()

    def handle(self, conn: socket.socket, cli: Any) -> bool:
        """One request; False when the server should exit."""
        data = bytearray()
        fds: list[int] = []  # the client's stdout, stderr and "begun" pipe, when it passed them
        try:
            while True:  # the client closes its side after the request
                block, got, _, _ = socket.recv_fds(conn, 1 << 16, 3, socket.MSG_CMSG_CLOEXEC)
                fds.extend(got)
                if not block:
                    break
                data += block
        except OSError:  # a client that sends nothing within REQUEST_TIMEOUT_S, or resets
            data.clear()
        try:
            return self._handle(conn, cli, bytes(data), fds)
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _handle(self, conn: socket.socket, cli: Any, data: bytes, fds: list[int]) -> bool:
        if not data:  # a probe (`_take_lock` of a second server) or a client that gave up
            return True
        conn.settimeout(None)  # the client reads the whole answer before printing it
        try:
            op, fields, argv, env = client.decode_request(data)
        except (ValueError, IndexError):  # another protocol's client: make way for its server
            self._send(conn, b"stale unreadable request\n")
            return False
        if op == "stop":
            with contextlib.suppress(OSError):
                conn.sendall(b"stopping\n")
            return False
        if op != "search" or len(fields) != client.REQUEST_FIELDS:
            return True
        ident, index_dir, cwd, tty, encoding, errors = fields
        if ident != self.identity:
            self._send(conn, b"stale another Maguyva build started this server\n")
            return False
        if os.path.abspath(index_dir) != os.path.abspath(self.index_dir):
            self._send(conn, b"stale this server serves another index directory\n")
            return True
        request = {"argv": argv, "cwd": cwd, "env": env, "tty": tty == "1",
                   "encoding": encoding, "errors": errors}  # fmt: skip
        if len(fds) == 3:
            code = self.run_into(request, cli, fds)
            out = err = b""
        else:
            code, out, err = self.run(request, cli)
        self._send(conn, b"%d %d %d\n" % (code, len(out), len(err)) + out + err)
        return True

    def _send(self, conn: socket.socket, data: bytes) -> None:
        with contextlib.suppress(OSError):  # the client went away (Ctrl-C): nothing to do
            conn.sendall(data)

    def run(self, request: dict[str, Any], cli: Any) -> tuple[int, bytes, bytes]:
        """Run the CLI on the request's arguments as if in the client's process; its output
        is returned, to be sent over the socket."""
        out_buffer, err_buffer = io.BytesIO(), io.BytesIO()
        code = self._run(request, cli, out_buffer, err_buffer)
        return code, out_buffer.getvalue(), err_buffer.getvalue()

    def run_into(self, request: dict[str, Any], cli: Any, fds: list[int]) -> int:
        """Run the CLI with its output written straight into the client's stdout and stderr
        (`fds[0]`, `fds[1]`); the pipe `fds[2]` hears `+` before the first byte is written."""
        begun = []

        def tell() -> None:
            if not begun:
                begun.append(True)
                with contextlib.suppress(OSError):
                    os.write(fds[2], b"+")

        out = io.BufferedWriter(_ClientFd(fds[0], tell), buffer_size=1 << 16)
        err = io.BufferedWriter(_ClientFd(fds[1], tell))
        try:
            return self._run(request, cli, out, err)
        finally:  # before the descriptors are closed (and their numbers reused)
            for stream in (out, err):
                with contextlib.suppress(OSError, ValueError):
                    stream.close()

    def _run(self, request: dict[str, Any], cli: Any, out: Any, err: Any) -> int:
        stdout = _Stdout(out, request.get("encoding") or "utf-8",
                         request.get("errors") or "strict", bool(request.get("tty")))  # fmt: skip
        stderr = _Stdout(err, "utf-8", "backslashreplace", False)
        stderr.reconfigure(line_buffering=True)
        with _client_environment(request), contextlib.redirect_stdout(stdout), \
                contextlib.redirect_stderr(stderr):  # fmt: skip
            try:
                code = cli.main(list(request.get("argv") or []))
            except SystemExit as exc:
                code = int(exc.code or 0) if isinstance(exc.code, int) else 2
            for stream in (stdout, stderr):
                try:
                    stream.flush()
                except BrokenPipeError:  # `| head`: the reader has gone; quietly, as ripgrep
                    _to_devnull(stream)
                with contextlib.suppress(OSError, ValueError):
                    stream.detach()  # the buffer stays usable (and the wrapper's end silent)
        return int(code)


def _to_devnull(stream: Any) -> None:
    """Point a closed pipe's descriptor (the server's copy of it) at /dev/null, so that what
    is still buffered for it goes nowhere instead of failing again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)


@contextlib.contextmanager
def _client_environment(request: dict[str, Any]) -> Iterator[None]:
    """The client's working directory and the environment variables the CLI reads, for the
    duration of one question (questions are answered one at a time)."""
    saved_env = {k: v for k, v in os.environ.items()
                 if k.startswith("MAGUYVA_") or k in client.FORWARDED_ENV}  # fmt: skip
    wanted = dict(request.get("env") or {})
    cwd = os.getcwd()
    for key in saved_env:
        if key not in wanted:
            del os.environ[key]
    os.environ.update(wanted)
    try:
        os.chdir(request.get("cwd") or cwd)
        yield
    finally:
        os.chdir(cwd)
        for key in wanted:
            os.environ.pop(key, None)
        os.environ.update(saved_env)


def _take_lock(index_dir: Path) -> int | None:
    """The server lock's descriptor, or None when another server holds it past LOCK_WAIT_S."""
    fd = os.open(index_dir / client.LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            probe = client._connect(index_dir)
            if probe is not None:
                probe.close()
            if time.monotonic() >= deadline or probe is not None:
                os.close(fd)
                return None  # a server listens (or will): leave it to serve
            time.sleep(0.02)
            continue
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return fd


def run_server(index_dir: Path, idle_s: float) -> int:
    index_dir = Path(os.path.abspath(index_dir))
    if not (index_dir / "manifest.json").is_file():
        print(f"maguyva: error: no index at {index_dir}", file=sys.stderr)
        return 2
    lock = _take_lock(index_dir)
    if lock is None:
        return 0
    log_fd = os.open(index_dir / client.LOG, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    root_logger = logging.getLogger()
    handler = _CurrentStderr()
    handler.setFormatter(logging.Formatter("maguyva: %(levelname)s: %(message)s"))
    root_logger.addHandler(handler)
    root_logger.setLevel(logging.WARNING)
    server = Server(index_dir, idle_s)
    try:
        try:
            server.bind()
        except OSError as exc:  # no Unix sockets here: tell clients not to try for a while
            log.warning("cannot listen on %s: %s", index_dir / client.SOCKET, exc)
            with contextlib.suppress(OSError):
                (index_dir / client.UNAVAILABLE).write_text(f"{exc}\n")
            return 1
        (index_dir / client.UNAVAILABLE).unlink(missing_ok=True)
        server.serve()
    finally:
        if server.sock is not None:
            if server.still_mine():
                with contextlib.suppress(OSError):
                    (index_dir / client.SOCKET).unlink()
            server.sock.close()
        os.close(lock)
    return 0


def idle_seconds() -> float:
    try:
        return float(os.environ.get("MAGUYVA_DAEMON_IDLE") or DEFAULT_IDLE_S)
    except ValueError:
        return DEFAULT_IDLE_S


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m maguyva.interfaces.daemon")
    parser.add_argument("--index-dir", type=Path, required=True)
    parser.add_argument("--idle", type=float, help="seconds without a question before exiting")
    parser.add_argument("--stop", action="store_true", help="stop the running server")
    args = parser.parse_args(argv)
    if args.stop:
        pid = client.stop(args.index_dir)
        print(f"stopped {pid}" if pid else "no server")
        return 0
    return run_server(args.index_dir, args.idle if args.idle is not None else idle_seconds())


if __name__ == "__main__":
    sys.exit(main())
