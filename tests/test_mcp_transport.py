"""`maguyva mcp` over a real stdio pipe: a line the SDK cannot decode gets a JSON-RPC error
reply (it used to get none, and the client waited for ever), and the server keeps answering."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from maguyva.interfaces.mcp_stdio import error_for, top_level_id

TIMEOUT_S = 60.0  # generous: a loaded machine; a missing reply fails here instead of hanging

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}}  # fmt: skip
DEEP = 10_000

BAD = {  # name: (raw line, expected error code, expected id)
    "lone surrogate": (
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call",'
        b'"params":{"name":"search","arguments":{"query":"\\ud800"}}}',
        -32600, 2,
    ),
    "malformed JSON": (b'{"jsonrpc":"2.0","id":3,', -32700, None),
    "batch array": (b'[{"jsonrpc":"2.0","id":4,"method":"tools/list"}]', -32600, None),
    "deep arguments": (
        b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"search",'
        b'"arguments":{"query":"x","deep":' + b"[" * DEEP + b"]" * DEEP + b"}}}",
        -32600, 5,
    ),
    "object id": (b'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}', -32600, None),
}  # fmt: skip


class Wire:
    """`maguyva mcp --root R` on pipes: raw lines in, parsed replies out."""

    def __init__(self, root: Path) -> None:
        cmd = [sys.executable, "-m", "maguyva.interfaces.cli.main", "mcp", "--root", str(root)]
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.replies: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.replies.put(json.loads(line))

    def send(self, raw: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def reply(self) -> dict:
        try:
            return self.replies.get(timeout=TIMEOUT_S)
        except queue.Empty:
            pytest.fail("no reply: the client would hang")

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=TIMEOUT_S)


@pytest.fixture
def wire(tmp_path):
    (tmp_path / "a.py").write_text("def hello():\n    return 1\n")
    w = Wire(tmp_path)
    w.send(json.dumps(INIT).encode())
    assert w.reply()["id"] == 1
    w.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    yield w
    assert w.close() == 0


def _still_serves(wire: Wire, request_id: int) -> None:
    wire.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}).encode())
    reply = wire.reply()
    assert reply["id"] == request_id and reply["result"]["tools"], reply


@pytest.mark.parametrize("name", list(BAD))
def test_each_undecodable_request_gets_an_error_reply_and_serving_goes_on(wire, name):
    raw, code, request_id = BAD[name]
    wire.send(raw)
    reply = wire.reply()
    assert reply["jsonrpc"] == "2.0" and reply["id"] == request_id, reply
    assert reply["error"]["code"] == code and reply["error"]["message"], reply
    _still_serves(wire, 100)


def test_all_in_one_session_and_a_bad_notification_gets_no_reply(wire):
    for n, (raw, code, request_id) in enumerate(BAD.values()):
        wire.send(raw)
        reply = wire.reply()
        assert (reply["id"], reply["error"]["code"]) == (request_id, code), reply
        _still_serves(wire, 200 + n)
    # JSON-RPC: a notification is never answered, not even with an error; the next request is
    wire.send(b'{"jsonrpc":"2.0","method":"notifications/initialized","params":{"x":"\\udc00"}}')
    _still_serves(wire, 300)


def test_the_guard_passes_what_the_sdk_decodes():
    for line in [json.dumps(INIT), '{"jsonrpc":"2.0","method":"notifications/initialized"}',
                 '{"jsonrpc":"2.0","id":"s","result":{}}', "   "]:  # fmt: skip
        assert error_for(line) is None, line
    nested_id = '{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":1}}'
    assert error_for(nested_id) is None
    assert top_level_id('{"params":{"id":7},"id":"top"}') == "top"
    assert top_level_id('{"id":true}') is None and top_level_id("[1]") is None
