"""The int8-compute graph of the local model (embed/int8_graph.py) and the defaults that
docs/semantic-embedder.md states: built from the shipped file with the same integers, cached,
vectors close to the shipped graph's, one text per run."""

from __future__ import annotations

import re
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from maguyva.errors import ProviderError
from maguyva.modalities.semantic.embed import MiniLMProvider, local
from maguyva.modalities.semantic.embed.fusion import fuse_encoder
from maguyva.modalities.semantic.embed.int8_graph import (
    DISABLED_OPTIMIZERS,
    NUM_HEADS,
    build_int8_graph,
    fold_weight_dequantization,
    int8_graph,
)

DOCS = Path(__file__).resolve().parents[1] / "docs" / "semantic-embedder.md"
SAMPLE = [
    "def read_json(path):\n    with open(path) as fh:\n        return json.load(fh)",
    "def sqrt(x):\n    return x ** 0.5",
    "class Retry:\n    def __init__(self, total=3):\n        self.total = total",
    "fn parse(input: &str) -> Result<Ast, Error> {\n    Parser::new(input).run()\n}",
    "x",
    "async def fetch(session, url):\n    async with session.get(url) as r:\n        return await r.text()",
]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = tmp_path_factory.mktemp("models")
    return int8_graph(local.model_path(), local.MODEL_SHA256, cache)


def _initializers(path: Path) -> dict[str, np.ndarray]:
    import onnx
    from onnx import numpy_helper

    return {i.name: numpy_helper.to_array(i) for i in onnx.load(str(path)).graph.initializer}


def test_the_int8_graph_keeps_the_shipped_integers(built: Path) -> None:
    import onnx

    ops = [n.op_type for n in onnx.load(str(built)).graph.node]
    assert ops.count("MatMulInteger") == 36 and "DynamicQuantizeLinear" in ops
    shipped, derived = _initializers(local.model_path()), _initializers(built)
    weights = [name[: -len("_q")] for name, a in shipped.items()
               if name.endswith("_q") and a.ndim == 2 and f"{name[:-2]}_quantized" in derived]  # fmt: skip
    assert len(weights) == 36
    for name in weights:
        np.testing.assert_array_equal(derived[f"{name}_quantized"], shipped[f"{name}_q"])


def test_each_layer_runs_one_fused_attention_and_gelu(built: Path) -> None:
    import onnx

    ops = [n.op_type for n in onnx.load(str(built)).graph.node]
    assert ops.count("MultiHeadAttention") == 6 and ops.count("Gelu") == 6
    assert not {"Softmax", "Erf", "IsNaN", "Transpose", "Where"} & set(ops)


def _hidden(model: bytes | str, texts: list[str]) -> list[np.ndarray]:
    """The last hidden state of each text, one run per text, on a plain float session."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    vocab = resources.files(local.TOKENIZER[0]).joinpath(local.TOKENIZER[1])
    tokenizer = Tokenizer.from_str(vocab.read_text(encoding="utf-8"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(local.MAX_LENGTH)
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    out = []
    for text in texts:
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        mask, types = np.ones_like(ids), np.zeros_like(ids)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        out.append(session.run(None, feeds)[0][0])
    return out


def test_the_fused_float_graph_computes_what_the_shipped_graph_does() -> None:
    """The rewrite alone (before quantization) changes no arithmetic that matters: every hidden
    state of the fused float graph is the shipped graph's to float rounding."""
    import onnx

    model = onnx.load(str(local.model_path()))
    assert fold_weight_dequantization(model) == 36
    assert fuse_encoder(model, NUM_HEADS) == (6, 6)
    fused = _hidden(model.SerializeToString(), SAMPLE)
    shipped = _hidden(str(local.model_path()), SAMPLE)
    for a, b in zip(fused, shipped, strict=True):
        np.testing.assert_allclose(a, b, atol=2e-4)


def test_the_session_keeps_residual_adds_and_layer_norms_apart(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """onnxruntime's SkipLayerNormalization fusion is off in the int8 session (it was slower)."""
    import onnx

    monkeypatch.setenv("MAGUYVA_MODEL_CACHE", str(built.parent))
    saved = tmp_path / "optimized.onnx"
    provider = MiniLMProvider(threads=1, session_options={"optimized_model_filepath": str(saved)})
    provider.embed(["def f(): pass"], "document")
    ops = {n.op_type for n in onnx.load(str(saved)).graph.node}
    assert DISABLED_OPTIMIZERS == ("SkipLayerNormFusion",)
    assert "SkipLayerNormalization" not in ops and "LayerNormalization" in ops
    assert "MultiHeadAttention" in ops


def test_the_graph_is_built_once(built: Path) -> None:
    stamp = built.stat().st_mtime_ns
    assert int8_graph(local.model_path(), local.MODEL_SHA256, built.parent) == built
    assert built.stat().st_mtime_ns == stamp


def test_missing_onnx_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ProviderError, match="pip install onnx"):
        build_int8_graph(local.model_path(), tmp_path / "m.onnx")
    assert not list(tmp_path.iterdir())


def test_int8_vectors_stay_close_to_the_shipped_graph(
    built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAGUYVA_MODEL_CACHE", str(built.parent))
    fast = MiniLMProvider(threads=1).embed(SAMPLE, "document").floats
    exact = MiniLMProvider(threads=1, graph="weight-only").embed(SAMPLE, "document").floats
    assert fast is not None and exact is not None
    cosines = (fast * exact).sum(axis=1)
    assert cosines.min() >= 0.98 and cosines.mean() >= 0.99
    assert cosines.min() < 0.99999  # the int8 arithmetic really ran: not the same vectors


def test_a_text_embeds_the_same_alone_and_in_bulk(
    built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAGUYVA_MODEL_CACHE", str(built.parent))
    provider = MiniLMProvider(threads=1)
    bulk = provider.embed(SAMPLE, "document").floats
    assert bulk is not None
    for i, text in enumerate(SAMPLE):
        np.testing.assert_array_equal(provider.embed([text], "document").floats[0], bulk[i])


def test_concurrent_runs_give_the_same_vectors(
    built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAGUYVA_MODEL_CACHE", str(built.parent))
    texts = SAMPLE * 4
    serial = MiniLMProvider(threads=1).embed(texts, "document")
    parallel = MiniLMProvider(threads=2).embed(texts, "document")
    assert parallel.floats is not None and serial.floats is not None
    np.testing.assert_array_equal(parallel.floats, serial.floats)
    assert parallel.tokens == serial.tokens


def test_identities_differ_and_bad_graphs_are_refused() -> None:
    assert (
        MiniLMProvider().identity.cache_key
        != MiniLMProvider(graph="weight-only").identity.cache_key
    )
    # the first int8 graph's vectors (unfused, before GRAPH_VERSION 2) are never reused
    assert MiniLMProvider().model_id == f"{local.MODEL_ID}-compute-v2"
    with pytest.raises(ProviderError, match="graph must be one of"):
        MiniLMProvider(graph="fp16")


def test_defaults_are_what_the_docs_say() -> None:
    """The "Defaults" paragraph of docs/semantic-embedder.md names the settings in force."""
    text = DOCS.read_text(encoding="utf-8")
    start = text.index("Defaults (`embed/local.py`")
    line = text[start : text.index("\n\n", start)].replace("\n", " ")
    provider = MiniLMProvider(threads=1)
    provider.embed(["def f(): pass"], "document")
    options = provider._sessions[1].get_session_options()
    assert options.graph_optimization_level.name == "ORT_ENABLE_ALL"
    spinning = options.get_session_config_entry("session.intra_op.allow_spinning")
    assert (provider.graph, provider.max_length) == (local.GRAPH, local.MAX_LENGTH)
    assert (provider.batch_size, provider.batch_tokens) == (local.BATCH_SIZE, local.BATCH_TOKENS)
    stated = dict(re.findall(r"(\w[\w-]*) `([^`]+)`", line))
    assert stated == {
        "graph": local.GRAPH,
        "max_length": str(local.MAX_LENGTH),
        "rows": str(local.BATCH_SIZE),
        "tokens": str(local.BATCH_TOKENS),
        "optimization": "ORT_ENABLE_ALL",
        "spinning": spinning,
        "fusion": ",".join(DISABLED_OPTIMIZERS),
    }
