"""The Voyage provider against a local HTTP server speaking Voyage's embeddings protocol.

The real `voyageai` client makes real HTTP requests here; only the server is ours (the API is
unreachable from this machine). A canary key is planted and must never leak.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from maguyva.errors import ModalityUnavailable, ProviderError
from maguyva.modalities.protocol import BuildContext
from maguyva.modalities.semantic.embed import EmbeddingCache, VoyageProvider, content_hash
from maguyva.modalities.semantic.modality import SemanticModality
from maguyva.model import Chunk

CANARY = "pa-CANARY-4f1d9e2b7c3a8d6e5f0a1b2c3d4e5f60"
DIM = 256


def code_for(text: str, dim: int = DIM) -> bytes:
    """A deterministic fake `ubinary` vector (the server's stand-in for the model)."""
    rng = np.random.default_rng(int(content_hash(text)[:8], 16))
    return rng.integers(0, 256, size=dim // 8, dtype=np.uint8).tobytes()


class VoyageServer:
    """Scripted responses: each request pops the next behaviour ("ok" when the script is
    empty). Behaviours: ok, 429, 500, 401, slow, truncated, wrong_dim."""

    def __init__(self) -> None:
        self.script: list[str] = []
        self.requests: list[dict] = []
        self.auth: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.auth.append(self.headers.get("Authorization", ""))
                action = server.script.pop(0) if server.script else "ok"
                if action in ("429", "500", "401"):
                    detail = {"429": "rate limited", "500": "boom", "401": "bad key"}[action]
                    return self._send(int(action), json.dumps({"detail": detail}).encode())
                if action == "slow":
                    time.sleep(0.8)
                dim = DIM // 2 if action == "wrong_dim" else body.get("output_dimension", DIM)
                data = [
                    {"object": "embedding", "index": i,
                     "embedding": base64.b64encode(code_for(t, dim)).decode()}
                    for i, t in enumerate(body["input"])
                ]  # fmt: skip
                payload = json.dumps({"object": "list", "data": data, "model": body["model"],
                                      "usage": {"total_tokens": 7 * len(data)}}).encode()  # fmt: skip
                if action == "truncated":
                    payload = payload[: len(payload) // 2]
                self._send(200, payload)

            def _send(self, status: int, payload: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[VoyageServer]:
    s = VoyageServer()
    yield s
    s.close()


@pytest.fixture
def provider(server: VoyageServer) -> Callable[..., VoyageProvider]:
    def make(**kw: object) -> VoyageProvider:
        options = {"dim": DIM, "base_url": server.url, "backoff": 0.01, "timeout": 0.4}
        options.update(kw)
        return VoyageProvider(CANARY, **options)  # type: ignore[arg-type]

    return make


def test_embeds_ubinary_with_input_type(server: VoyageServer, provider) -> None:
    result = provider().embed(["def a(): pass", "class B: ..."], "document")
    assert result.codes.dtype == np.uint8 and result.codes.shape == (2, DIM // 8)
    assert result.codes[0].tobytes() == code_for("def a(): pass")
    body = server.requests[0]
    assert body["output_dtype"] == "ubinary" and body["input_type"] == "document"
    assert body["model"] == "voyage-code-3" and body["output_dimension"] == DIM
    assert server.auth[0] == f"Bearer {CANARY}"
    provider().embed(["where is auth"], "query")
    assert server.requests[-1]["input_type"] == "query"


def test_batches_respect_text_and_token_limits(server: VoyageServer, provider) -> None:
    texts = [f"def f{i}(): return {i}" * 3 for i in range(25)]
    result = provider(max_texts=10, max_tokens=10_000).embed(texts, "document")
    assert [len(r["input"]) for r in server.requests] == [10, 10, 5]
    big = ["x" * 3000] * 4  # ~1000 tokens each by the conservative estimate
    server.requests.clear()
    provider(max_tokens=2500).embed(big, "document")
    assert [len(r["input"]) for r in server.requests] == [2, 2]
    assert result.codes.shape == (25, DIM // 8)


def test_429_then_200_is_retried(server: VoyageServer, provider) -> None:
    server.script = ["429", "429"]
    result = provider().embed(["a"], "document")
    assert len(server.requests) == 3 and result.codes.shape == (1, DIM // 8)


@pytest.mark.parametrize("failure", ["500", "truncated", "slow"])
def test_persistent_failures_give_up_after_bounded_attempts(
    server: VoyageServer, provider, failure: str
) -> None:
    server.script = [failure] * 10
    with pytest.raises(ProviderError, match="after 3 attempts"):
        provider(max_attempts=3).embed(["a", "b"], "document")
    assert len(server.requests) == 3


def test_wrong_dimension_is_rejected(server: VoyageServer, provider) -> None:
    server.script = ["wrong_dim"]
    with pytest.raises(ProviderError, match="expected 1 of 32"):
        provider().embed(["a"], "document")


def test_bad_or_missing_key(server: VoyageServer, provider, monkeypatch) -> None:
    server.script = ["401"]
    with pytest.raises(ProviderError, match="rejected the API key"):
        provider().embed(["a"], "document")
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    with pytest.raises(ProviderError, match="VOYAGE_API_KEY"):
        VoyageProvider()


def _ctx(tmp_path: Path, chunks: list[Chunk]) -> BuildContext:
    out = tmp_path / "gen"
    out.mkdir(exist_ok=True)
    return BuildContext(root=tmp_path, out_dir=out, files=[], chunks=chunks, extraction={},
                        config={}, cache_dir=tmp_path / "cache")  # fmt: skip


def _chunks(n: int) -> list[Chunk]:
    return [
        Chunk(id=f"c{i:03d}", path=f"m{i}.py", start_line=1, end_line=3, kind="function",
              header=f"m{i}.py f{i}", text=f"def f{i}():\n    return {i}\n")
        for i in range(n)
    ]  # fmt: skip


def test_failure_mid_build_leaves_pending_and_commits_nothing_wrong(
    tmp_path: Path, server: VoyageServer, provider
) -> None:
    modality = SemanticModality(lambda config: provider(max_attempts=2))
    chunks = _chunks(150)  # three groups of 64, 64, 22
    server.script = ["ok", "wrong_dim"]
    report = modality.build(_ctx(tmp_path, chunks))
    assert report["embedded"] == 64 and report["pending"] == 86
    assert "nothing was stored" in report["error"]
    ident = provider().identity
    with EmbeddingCache(tmp_path / "cache" / "embeddings", ident) as cache:
        assert cache.count() == 64  # the wrong-dimension batch was never cached
    # The next build resumes: cached vectors are reused, only the pending ones are sent.
    server.requests.clear()
    report = modality.build(_ctx(tmp_path, chunks))
    assert report["pending"] == 0 and report["new"] == 86 and report["from_cache"] == 64
    assert sum(len(r["input"]) for r in server.requests) == 86
    # Nothing embeddable at all: the modality reports itself unavailable.
    server.script = ["500"] * 10
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    with pytest.raises(ModalityUnavailable, match="no chunk could be embedded"):
        modality.build(_ctx(fresh, _chunks(3)))


def test_secrets_are_never_sent(tmp_path: Path, server: VoyageServer, provider) -> None:
    chunks = [
        *_chunks(2),
        Chunk(id="env", path=".env", start_line=1, end_line=1, text="DEBUG=1"),
        Chunk(id="pem", path="certs/site.pem", start_line=1, end_line=1, text="MIIB"),
        Chunk(id="aws", path="cfg.py", start_line=1, end_line=1,
              text='AWS_ACCESS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"'),
    ]  # fmt: skip
    modality = SemanticModality(lambda config: provider())
    report = modality.build(_ctx(tmp_path, chunks))
    sent = [t for r in server.requests for t in r["input"]]
    assert len(sent) == 2 and not any("AKIA" in t or "DEBUG" in t for t in sent)
    assert report["excluded"] == {"secret path": 2, "AWS access key id": 1}
    dry = modality.dry_run(_ctx(tmp_path, chunks))
    assert dry["to_embed"] == 0 and dry["cached"] == 2 and dry["remote"]


def test_canary_key_never_leaks(
    tmp_path: Path, server: VoyageServer, provider, capfd, caplog, monkeypatch
) -> None:
    monkeypatch.setenv("VOYAGE_API_KEY", CANARY)
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    for script in (["429", "ok"], ["500"] * 5, ["401"], ["truncated"] * 5, ["wrong_dim"]):
        server.script = list(script)
        try:
            provider(max_attempts=2).embed(["def a(): pass"], "document")
        except ProviderError as exc:
            seen += [str(exc), repr(exc), repr(exc.__cause__), repr(exc.__context__)]
    modality = SemanticModality(lambda config: provider())
    modality.build(_ctx(tmp_path, _chunks(3)))
    seen.append(repr(provider()))
    out, err = capfd.readouterr()
    seen += [out, err, caplog.text]
    for path in tmp_path.rglob("*"):
        if path.is_file():
            seen.append(path.read_bytes().decode("latin-1"))
    assert server.auth and all(a == f"Bearer {CANARY}" for a in server.auth)
    assert not [s for s in seen if CANARY in s]
