"""The static embedding tier: the Rust pooling against its references, and the provider's
contract (shape, determinism, meaning). Throughput is measured in
benches/static_tier/eval_static.py, not asserted here."""

from __future__ import annotations

import numpy as np
import pytest

from maguyva import _core
from maguyva.config import load_config
from maguyva.errors import ConfigError
from maguyva.modalities.semantic.embed import MiniLMProvider
from maguyva.modalities.semantic.embed.static import (
    StaticProvider,
    pack_table,
    pool_reference,
    static_embed,
    static_first,
)


def _table(vocab: int = 50, dim: int = 24, seed: int = 1):
    rng = np.random.default_rng(seed)
    q, scales = pack_table(rng.normal(size=(vocab, dim)).astype(np.float32))
    weights = rng.random(vocab).astype(np.float32)
    weights[0] = 0.0
    return q, scales, weights


def test_rust_pooling_matches_numpy_and_scalar_reference() -> None:
    q, scales, weights = _table()
    rng = np.random.default_rng(2)
    ids = rng.integers(0, 50, 400).astype(np.uint32)
    offsets = np.array([0, 0, 5, 5, 130, 399, 400], np.int64)
    fast = _core.static_pool(q, scales, weights, ids, offsets)
    slow = _core.static_pool(q, scales, weights, ids, offsets, reference=True)
    oracle = pool_reference(q, scales, weights, ids, offsets)
    assert fast.shape == (6, 24) and fast.dtype == np.float32
    np.testing.assert_allclose(fast, slow, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fast, oracle, rtol=1e-4, atol=1e-5)
    assert not fast[0].any() and not fast[2].any()  # empty texts pool to zeros


@pytest.mark.parametrize(
    ("ids", "offsets", "message"),
    [
        ([50], [0, 1], "outside the table"),
        ([1, 2], [0, 1], "end at len"),
        ([1, 2], [0, 2, 1, 2], "decrease"),
    ],
)
def test_rust_pooling_rejects_bad_input(ids: list[int], offsets: list[int], message: str) -> None:
    q, scales, weights = _table()
    with pytest.raises(ValueError, match=message):
        _core.static_pool(q, scales, weights, np.array(ids, np.uint32), np.array(offsets, np.int64))


def test_rust_pooling_rejects_mismatched_table() -> None:
    q, scales, weights = _table()
    with pytest.raises(ValueError, match="table"):
        _core.static_pool(q, scales[:-1], weights, np.zeros(1, np.uint32), np.array([0, 1]))


def test_codes_have_the_transformer_tier_width() -> None:
    provider = StaticProvider()
    out = provider.embed(["def add(a, b):\n    return a + b", "", "x" * 50_000], "document")
    assert provider.identity.dim == MiniLMProvider().identity.dim
    assert provider.identity.width == MiniLMProvider().identity.width
    assert out.codes.shape == (3, provider.identity.width) and out.codes.dtype == np.uint8
    assert out.floats is not None and out.floats.shape == (3, provider.identity.dim)
    norms = np.linalg.norm(out.floats, axis=1)
    np.testing.assert_allclose(norms, 1.0, rtol=1e-4)  # the empty text too (bias direction)
    provider.check_result(out, 3)


def test_identical_texts_give_identical_codes() -> None:
    text = "def read_config(path):\n    with open(path) as fh:\n        return json.load(fh)"
    one = StaticProvider().embed([text, "something else entirely", text], "document")
    again = StaticProvider().embed([text], "query")
    assert np.array_equal(one.codes[0], one.codes[2])
    assert np.array_equal(one.codes[0], again.codes[0])


PARAPHRASES = [
    ("open a file and read its json contents", "load the json data stored in a file"),
    ("sort the list of users by their age", "order users by age ascending"),
    ("send an http request and return the response", "perform a web request, get the reply"),
    ("compute the sha256 hash of a byte string", "hash bytes with sha256 and return digest"),
    ("parse command line arguments", "read the options given on the command line"),
    ("remove all files in a temporary directory", "delete every file under the temp folder"),
    ("connect to the database and run a query", "execute an sql query over a db connection"),
    ("resize an image to a thumbnail", "scale a picture down to a small preview"),
]


def test_paraphrases_are_nearer_than_unrelated_texts() -> None:
    left = [a for a, _ in PARAPHRASES]
    right = [b for _, b in PARAPHRASES]
    out = StaticProvider().embed(left + right, "document")
    assert out.floats is not None
    sims = out.floats[: len(left)] @ out.floats[len(left) :].T
    pair = np.diag(sims).mean()
    other = (sims.sum() - np.trace(sims)) / (sims.size - len(left))
    assert pair > other + 0.1, (pair, other)
    codes = out.codes
    bits = np.unpackbits(codes[: len(left), None] ^ codes[None, len(left) :], axis=-1).sum(-1)
    assert np.diag(bits).mean() < (bits.sum() - np.trace(bits)) / (bits.size - len(left))


def test_static_codes_are_comparable_with_the_transformer() -> None:
    """Fitted to MiniLM's space: a text's static code is nearer its own MiniLM code than the
    MiniLM codes of the other texts, so both tiers can share one Hamming index."""
    texts = [a for a, _ in PARAPHRASES]
    static = StaticProvider().embed(texts, "document")
    minilm = MiniLMProvider().embed(texts, "document")
    bits = np.unpackbits(static.codes[:, None] ^ minilm.codes[None, :], axis=-1).sum(-1)
    assert (bits.argmin(axis=1) == np.arange(len(texts))).mean() >= 0.75


def test_hook_and_setting(tmp_path, monkeypatch) -> None:
    assert static_first({})  # the default
    assert not static_first({"embedding_tier": "transformer"})
    assert static_first({"embedding_tier": "static"})
    assert not static_first({"embedding_tier": "static", "embedding_provider": "voyage"})
    with pytest.raises(ConfigError, match="embedding_tier"):
        static_first({"embedding_tier": "fast"})
    assert load_config(tmp_path, {"embedding_tier": "static"})["embedding_tier"] == "static"
    with pytest.raises(ConfigError, match="embedding_tier"):
        load_config(tmp_path, {"embedding_tier": "quick"})
    monkeypatch.setenv("MAGUYVA_EMBEDDING_TIER", "transformer")
    assert not static_first(load_config(tmp_path))
    out = static_embed(["a", "b"])
    assert out.codes.shape == (2, 48)


def _repo(root):
    """Six small modules, each one function about something else."""
    bodies = {
        "jsonish": "def decode_document(text):\n    '''Parse a JSON document into objects.'''\n"
        "    import json\n    return json.loads(text)\n",
        "packing": "def compress_bytes(data):\n    '''Compress bytes with zlib.'''\n"
        "    import zlib\n    return zlib.compress(data, 9)\n",
        "hashing": "def digest_file(path):\n    '''The sha256 of a file, read in blocks.'''\n"
        "    import hashlib\n    h = hashlib.sha256()\n    with open(path, 'rb') as f:\n"
        "        for block in iter(lambda: f.read(65536), b''):\n            h.update(block)\n"
        "    return h.hexdigest()\n",
        "dates": "def parse_timestamp(value):\n    '''Read an ISO 8601 date and time.'''\n"
        "    import datetime\n    return datetime.datetime.fromisoformat(value)\n",
        "web": "def fetch_page(url):\n    '''Download a web page over HTTP.'''\n"
        "    import urllib.request\n    return urllib.request.urlopen(url).read()\n",
        "shell": "def run_command(args):\n    '''Run a program and return its output.'''\n"
        "    import subprocess\n    return subprocess.run(args, capture_output=True).stdout\n",
    }
    root.mkdir()
    for name, body in bodies.items():
        (root / f"{name}.py").write_text(body)
    return root


def test_pending_chunks_answer_by_the_static_tier_until_the_transformer_reaches_them(
    tmp_path,
) -> None:
    """A capped build leaves chunks pending: each has a static row, a question by meaning
    finds them (marked `tier: static`) and the coverage counts them; the next capped build
    links the rows instead of embedding them again; the build that embeds the last chunk
    drops them; `embedding_tier = "transformer"` writes none."""
    import json

    from maguyva.build.indexer import Indexer
    from maguyva.query.engine import Engine
    from maguyva.store.generations import IndexDir

    root = _repo(tmp_path / "repo")
    config = {"modalities": ["text", "semantic"], "semantic_phases": "full",
              "embedding_threads": 1}  # fmt: skip

    def current() -> tuple[dict, object]:
        sem = IndexDir(root / ".maguyva").current().path / "semantic"
        return json.loads((sem / "meta.json").read_text()), sem

    Indexer(root, config={**config, "semantic_max_chunks": 2}).update()
    meta, sem = current()
    assert meta["pending"] >= 3 and meta["static"] == meta["pending"]
    response = Engine.open(root).search("download a web page", modalities=["semantic"])
    tiers = {r.path: r.extra.get("tier") for r in response.results}
    assert "static" in tiers.values(), tiers
    assert response.coverage["semantic"]["static"] == meta["pending"]
    inode = (sem / "static.ids.json").stat().st_ino

    Indexer(root, config={**config, "semantic_max_chunks": 1}).update()
    meta2, sem2 = current()
    assert sem2 != sem and meta2["pending"] == meta["pending"] - 1
    assert (sem2 / "static.ids.json").stat().st_ino == inode  # linked, not embedded again
    assert meta2["static"] == meta2["pending"]

    Indexer(root, config=config).update()
    meta3, sem3 = current()
    assert meta3["pending"] == 0 and not (sem3 / "static.ids.json").exists()
    response = Engine.open(root).search("download a web page", modalities=["semantic"])
    assert response.results  # every chunk embedded: the transformer answers them all
    assert {r.extra.get("tier") for r in response.results} == {"transformer"}

    other = _repo(tmp_path / "other")
    Indexer(other, config={**config, "semantic_max_chunks": 2,
                           "embedding_tier": "transformer"}).update()  # fmt: skip
    sem4 = IndexDir(other / ".maguyva").current().path / "semantic"
    assert not (sem4 / "static.ids.json").exists()
    assert json.loads((sem4 / "meta.json").read_text())["static"] == 0


def test_a_table_fitted_on_split_camel_case_embeds_split_text() -> None:
    from maguyva.modalities.semantic.embed.static import split_camel

    assert split_camel("getUserName(HTTPServer, x2Y)") == "get User Name(HTTPServer, x2 Y)"
    provider = StaticProvider()
    table, _ = provider._load()
    texts = ["def getUserName(self):", "def get User Name(self):"]
    plain = provider.embed(texts, "document").floats
    assert not np.allclose(plain[0], plain[1])
    table.meta["split_camel"] = True
    try:
        split = provider.embed(texts, "document").floats
    finally:
        del table.meta["split_camel"]
    assert np.allclose(split[0], split[1])
