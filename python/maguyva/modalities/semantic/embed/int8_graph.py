"""An int8-compute graph of the shipped MiniLM, built once from it and kept in the user cache.

The shipped `model.onnx` is weight-only int8: each MatMul weight is stored as int8 with one scale
per output column and turned back into float (Cast, Mul) when the session loads, so every
MatMul runs in fp32. Here those weights are folded into float and re-quantized by onnxruntime's
dynamic quantization (int8, symmetric, per column: it reproduces the stored integers exactly),
with the activations quantized to uint8 per run: the 36 weight MatMuls run on the CPU's int8
instructions (VNNI where present) for about half the CPU (docs/semantic-embedder.md has the
numbers and the MRR it costs). Each layer's attention and GELU become one fused node each (`fusion.py`).
Needs the `onnx` package, only to build the file.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from maguyva.errors import ProviderError
from maguyva.modalities.semantic.embed.fusion import fuse_encoder

GRAPH_VERSION = 2
"""Bump when the conversion or the session's arithmetic changes (`DISABLED_OPTIMIZERS`): the
cached file's name and the provider's model id carry it, so an index or embedding cache made
with another version re-embeds instead of mixing vectors. 1: quantized MatMuls only; 2: fused
attention and GELU (`fusion.py`), onnxruntime's SkipLayerNormalization fusion off."""

NUM_HEADS = 12
"""Attention heads of the shipped MiniLM (hidden 384 = 12 x 32)."""

DISABLED_OPTIMIZERS = ("SkipLayerNormFusion",)
"""onnxruntime graph fusions the int8 graph's session turns off. SkipLayerNormalization, what
onnxruntime makes of a residual Add and LayerNormalization, measured 5x slower on the CPU than
the two nodes it replaces (352 vs 66 us for 128 x 384, onnxruntime 1.32): ~15 % of a text's
CPU (docs/semantic-embedder.md)."""


def model_cache_dir() -> Path:
    """Where derived model files live: $MAGUYVA_MODEL_CACHE, else $XDG_CACHE_HOME/maguyva/models
    (default ~/.cache/maguyva/models)."""
    explicit = os.environ.get("MAGUYVA_MODEL_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "maguyva" / "models"


def fold_weight_dequantization(model: Any) -> int:
    """Replace every `MatMul(x, Mul(Cast(int8 W), scale))` weight by its float initializer,
    in place; returns how many were folded. Other Cast/Mul nodes (the embedding tables) stay."""
    import numpy as np
    from onnx import numpy_helper

    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    dropped: set[int] = set()
    folded = []
    for node in graph.node:
        if node.op_type != "MatMul":
            continue
        mul = producer.get(node.input[1])
        if mul is None or mul.op_type != "Mul" or mul.input[1] not in inits:
            continue
        cast = producer.get(mul.input[0])
        if cast is None or cast.op_type != "Cast" or cast.input[0] not in inits:
            continue
        weight = numpy_helper.to_array(inits[cast.input[0]]).astype(np.float32)
        scale = numpy_helper.to_array(inits[mul.input[1]]).astype(np.float32)
        folded.append(numpy_helper.from_array(weight * scale, node.input[1]))
        dropped |= {id(mul), id(cast)}
    kept = [n for n in graph.node if id(n) not in dropped]
    del graph.node[:]
    graph.node.extend(kept)
    graph.initializer.extend(folded)
    used = {name for n in graph.node for name in n.input}
    live = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(live)
    return len(folded)


def build_int8_graph(source: Path, target: Path) -> None:
    """Write the int8-compute graph of `source` to `target` (atomically: a reader never sees
    half a file). ProviderError when `onnx` is missing or the graph has no foldable weight."""
    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise ProviderError(
            f"the int8 graph of the local model needs {exc.name}: pip install onnx"
        ) from None
    model = onnx.load(str(source))
    if fold_weight_dequantization(model) == 0:
        raise ProviderError(f"{source}: no weight-only int8 MatMul to convert")
    fuse_encoder(model, NUM_HEADS)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=target.name, suffix=".tmp", dir=target.parent)
    os.close(fd)
    logging.disable(logging.WARNING)  # the quantizer's advice to pre-process, on the root logger
    try:
        quantize_dynamic(
            model, tmp, op_types_to_quantize=["MatMul"], per_channel=True,
            weight_type=QuantType.QInt8, extra_options={"MatMulConstBOnly": True},
        )  # fmt: skip
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the file from other users
        os.replace(tmp, target)
    finally:
        logging.disable(logging.NOTSET)
        if os.path.exists(tmp):
            os.unlink(tmp)


def int8_graph(source: Path, sha256: str, cache: Path | None = None) -> Path:
    """The cached int8-compute graph of `source` (whose content hash is `sha256`), built on
    first use; keyed by that hash, onnxruntime's version (its quantizer) and GRAPH_VERSION."""
    import onnxruntime as ort

    cache = cache or model_cache_dir()
    target = cache / f"minilm-{sha256[:16]}-dynint8-v{GRAPH_VERSION}-ort{ort.__version__}.onnx"
    if not target.is_file():
        try:
            build_int8_graph(source, target)
        except OSError as exc:
            raise ProviderError(f"cannot write the int8 model graph to {cache}: {exc}") from None
    return target
