"""The local provider (real MiniLM int8 ONNX model), the cache and the secret filter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from maguyva.errors import ConfigError, ModelMismatchError, ProviderError
from maguyva.modalities.semantic.embed import (
    EmbeddingCache,
    MiniLMProvider,
    ProviderIdentity,
    binarize,
    content_hash,
    is_secret_path,
    make_provider,
    secret_reason,
)


@pytest.fixture(scope="module")
def minilm() -> MiniLMProvider:
    return MiniLMProvider(threads=1)


def test_importing_loads_no_model_runtime() -> None:
    code = (
        "import sys, maguyva.modalities.semantic.modality, maguyva.modalities.semantic.embed; "
        "bad = [m for m in ('onnxruntime', 'voyageai', 'tokenizers') if m in sys.modules]; "
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_local_vectors_shape_norm_and_codes(minilm: MiniLMProvider) -> None:
    texts = ["def read_file(path):\n    return open(path).read()", "x", "é" * 2000]
    result = minilm.embed(texts, "document")
    assert result.floats is not None
    assert result.codes.shape == (3, 48) and result.codes.dtype == np.uint8
    np.testing.assert_allclose(np.linalg.norm(result.floats, axis=1), 1.0, rtol=1e-4)
    np.testing.assert_array_equal(result.codes, np.packbits(result.floats > 0, axis=1))
    # Batching by length must not change a text's vector.
    alone = minilm.embed([texts[0]], "document")
    np.testing.assert_allclose(alone.floats[0], result.floats[0], atol=1e-4)
    assert result.tokens <= 3 * minilm.max_length


def test_local_vectors_carry_meaning(minilm: MiniLMProvider) -> None:
    docs = [
        "def read_config(path):\n    with open(path) as fh:\n        return json.load(fh)",
        "def sqrt(x):\n    return x ** 0.5",
        "class HttpClient:\n    def retry(self, request, attempts=3): ...",
    ]
    queries = ["load settings from a json file", "square root of a number", "retry http request"]
    d = minilm.embed(docs, "document").floats
    q = minilm.embed(queries, "query").floats
    assert list((q @ d.T).argmax(axis=1)) == [0, 1, 2]


def test_empty_input_and_bad_options(minilm: MiniLMProvider) -> None:
    assert minilm.embed([], "query").codes.shape == (0, 48)
    with pytest.raises(ProviderError, match="max_length"):
        MiniLMProvider(max_length=4)
    with pytest.raises(ConfigError, match="embedding_provider"):
        make_provider({"embedding_provider": "openai"})


def test_provider_is_lazy() -> None:
    provider = make_provider({})
    assert isinstance(provider, MiniLMProvider) and not provider.loaded
    assert provider.identity.dim == 384 and provider.identity.width == 48
    assert not provider.loaded


def test_identity_mismatch_is_refused() -> None:
    local = MiniLMProvider().identity
    other = ProviderIdentity(provider="voyage", model_id="voyage-code-3", dim=1024)
    local.check_same(ProviderIdentity.from_dict(local.to_dict()), "search")
    with pytest.raises(ModelMismatchError, match="voyage-code-3"):
        local.check_same(other, "search this index")


def test_binarize_centring() -> None:
    x = np.array([[0.5, 0.2, -0.1, 0.9, 0.0, 0.3, 0.1, 0.2]], np.float32)
    assert binarize(x)[0, 0] == 0b11010111
    assert binarize(x, np.full(8, 0.25, np.float32))[0, 0] == 0b10010100


def test_cache_round_trip_and_model_isolation(tmp_path: Path, minilm: MiniLMProvider) -> None:
    texts = ["def a(): pass", "def b(): return 1"]
    result = minilm.embed(texts, "document")
    hashes = [content_hash(t) for t in texts]
    with EmbeddingCache(tmp_path, minilm.identity) as cache:
        cache.put_many(hashes, result)
        got = cache.get_many([*hashes, content_hash("missing")])
    assert set(got) == set(hashes)
    np.testing.assert_array_equal(got[hashes[0]][0], result.codes[0])
    np.testing.assert_allclose(got[hashes[1]][1], result.floats[1], atol=1e-3)
    other = ProviderIdentity(provider="voyage", model_id="voyage-code-3", dim=1024)
    with EmbeddingCache(tmp_path, other) as cache:
        assert cache.get_many(hashes) == {} and cache.count() == 0
    assert b"def a()" not in (tmp_path / "vectors.sqlite").read_bytes()


@pytest.mark.parametrize(
    ("path", "secret"),
    [(".env", True), ("app/.env.production", True), ("deploy/server.pem", True),
     ("home/.ssh/known_hosts", True), ("config/secrets.yaml", True), ("id_ed25519", True),
     ("src/secretary.py", False), ("src/settings.py", False), ("docs/keys.md", False)],
)  # fmt: skip
def test_secret_paths(path: str, secret: bool) -> None:
    assert is_secret_path(path) is secret


@pytest.mark.parametrize(
    ("text", "kind"),
    [('AWS_ACCESS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"', "AWS access key id"),
     ("-----BEGIN OPENSSH PRIVATE KEY-----", "private key block"),
     ('api_key = "f3a9c1d27b8e4f6a9d0c"', "credential assignment"),
     ("postgres://admin:hunter2secret@db:5432/app", "password in URL"),
     ("token = request.headers['X-Token']", None),
     ('password = os.environ["DB_PASSWORD"]', None),
     ("def check_password(user, password):", None)],
)  # fmt: skip
def test_secret_content(text: str, kind: str | None) -> None:
    assert secret_reason(text) == kind


@given(st.lists(st.integers(1, 600), max_size=60), st.integers(1, 3000), st.integers(1, 70))
def test_length_batches_respect_the_token_budget(
    lengths: list[int], budget: int, rows: int
) -> None:
    from maguyva.modalities.semantic.embed.local import _batches

    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches = list(_batches(order, lengths, budget, rows))
    assert [i for b in batches for i in b] == order  # every text once, order kept
    for b in batches:
        padded = len(b) * max(lengths[i] for i in b)
        assert len(b) <= rows and (padded <= budget or len(b) == 1)


def test_bulk_threads_follow_the_setting() -> None:
    assert MiniLMProvider(threads=2).bulk_threads() == 2
    # 0/None: 2 on a machine of 2+ cores whatever the load (the build's own extraction raises it)
    assert MiniLMProvider(threads=0).bulk_threads() == (2 if (os.cpu_count() or 1) >= 2 else 1)


def test_a_repeated_query_is_embedded_once(minilm: MiniLMProvider, monkeypatch) -> None:
    """Query vectors are remembered by (provider identity, text): an agent's repeated
    question skips the model (~14 ms CPU)."""
    from maguyva.modalities.semantic import search

    calls: list[list[str]] = []
    real = minilm.embed

    def counting(texts, input_type):
        calls.append(list(texts))
        return real(texts, input_type)

    monkeypatch.setattr(minilm, "embed", counting)
    monkeypatch.setattr(search, "_QUERY_CACHE", type(search._QUERY_CACHE)())
    first = search.query_embedding(minilm, "how are redirects followed")
    again = search.query_embedding(minilm, "how are redirects followed")
    other = search.query_embedding(minilm, "where is the session closed")
    assert calls == [["how are redirects followed"], ["where is the session closed"]]
    assert again is first and not first.codes.flags.writeable
    assert not np.array_equal(first.codes, other.codes)
    monkeypatch.setattr(search, "QUERY_CACHE_SIZE", 1)
    search.query_embedding(minilm, "a third question")
    assert len(search._QUERY_CACHE) == 1
