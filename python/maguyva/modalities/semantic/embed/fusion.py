"""Fused encoder ops for the int8 graph: one attention node and one GELU node per layer.

The shipped MiniLM graph was exported operator by operator: each layer's attention is some 25
nodes (reshapes and transposes of Q, K and V, two scalings, the mask added to the scores, a
softmax, a NaN guard over it, the mix, and reshapes back), and each GELU is five element-wise
nodes. onnxruntime's CPU optimizer fuses neither pattern. `fuse_encoder` rewrites them, on the
float graph before quantization, as onnxruntime's `MultiHeadAttention` (the attention mask as
its key padding mask) and `Gelu` contrib ops: the same arithmetic in a few fused kernels (the
float graph's vectors stay those of the shipped graph, `tests/test_embed_int8.py`), for
about 20 % less CPU per text (docs/semantic-embedder.md).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

CONTRIB = "com.microsoft"
MASK = "maguyva_key_padding_mask"
RESHAPES = ("Mul", "Reshape", "Transpose")
"""What lies between a projection's biased output and the attention scores (head split, the
per-side scaling by head_size ** -0.25): skipped to find Q, K and V."""


class _Graph:
    """Producer and consumer lookups over a graph's nodes."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self.producer = {out: n for n in graph.node for out in n.output}
        self.consumers: dict[str, list[Any]] = defaultdict(list)
        for node in graph.node:
            for name in node.input:
                self.consumers[name].append(node)

    def made_by(self, name: str, op: str) -> Any:
        node = self.producer.get(name)
        return node if node is not None and node.op_type == op else None

    def only(self, name: str, op: str) -> Any:
        """The one consumer of `name` that is an `op`, else None."""
        found = [n for n in self.consumers[name] if n.op_type == op]
        return found[0] if len(found) == 1 else None

    def source(self, name: str) -> str:
        """`name` followed back through head splits and scalings."""
        node = self.producer.get(name)
        while node is not None and node.op_type in RESHAPES:
            name = node.input[0]
            node = self.producer.get(name)
        return name

    def is_scalar(self, name: str) -> bool:
        return any(i.name == name and not list(i.dims) for i in self.graph.initializer)


def _attention(g: _Graph, softmax: Any, num_heads: int) -> tuple[Any, Any] | None:
    """(the node it replaces, a MultiHeadAttention) for the attention around `softmax`."""
    from onnx import helper

    masked = g.made_by(softmax.input[0], "Add")
    scores = g.made_by(masked.input[0], "MatMul") if masked is not None else None
    if scores is None:
        return None
    probs = softmax.output[0]
    guard = g.only(probs, "Where")  # the exporter's NaN guard, Where(IsNaN(p), 0, p)
    if guard is not None and g.only(probs, "IsNaN") is not None:
        probs = guard.output[0]
    mix = g.only(probs, "MatMul")
    merge = g.only(mix.output[0], "Transpose") if mix is not None else None
    out = g.only(merge.output[0], "Reshape") if merge is not None else None
    if out is None:
        return None
    q, k, v = g.source(scores.input[0]), g.source(scores.input[1]), g.source(mix.input[1])
    node = helper.make_node(
        "MultiHeadAttention", [q, k, v, "", MASK], [out.output[0]],
        name=f"{out.name}_fused_attention", domain=CONTRIB, num_heads=num_heads,
    )  # fmt: skip
    return out, node


def _gelu(g: _Graph, erf: Any) -> tuple[Any, Any] | None:
    """(the node it replaces, a Gelu) for `x * 0.5 * (1 + erf(x / sqrt 2))` around `erf`."""
    from onnx import helper

    div = g.made_by(erf.input[0], "Div")
    if div is None or not g.is_scalar(div.input[1]):
        return None
    plus = g.only(erf.output[0], "Add")
    half = g.only(plus.output[0], "Mul") if plus is not None else None
    last = g.only(half.output[0], "Mul") if half is not None else None
    if last is None or div.input[0] not in last.input:
        return None
    node = helper.make_node(
        "Gelu", [div.input[0]], [last.output[0]], name=f"{last.name}_fused_gelu", domain=CONTRIB
    )
    return last, node


def fuse_encoder(model: Any, num_heads: int) -> tuple[int, int]:
    """Rewrite `model`'s attention blocks and GELUs as fused contrib ops, in place; returns
    (attentions, gelus) fused. Nodes left unread are removed."""
    from onnx import TensorProto, helper

    g = _Graph(model.graph)
    masked = any(i.name == "attention_mask" for i in g.graph.input)
    attentions = [a for n in g.graph.node if masked and n.op_type == "Softmax"
                  if (a := _attention(g, n, num_heads))]  # fmt: skip
    gelus = [x for n in g.graph.node if n.op_type == "Erf" if (x := _gelu(g, n))]
    replaced = {id(old): new for old, new in attentions + gelus}
    nodes = [replaced.get(id(n), n) for n in g.graph.node]
    if attentions:
        nodes.insert(0, helper.make_node("Cast", ["attention_mask"], [MASK], to=TensorProto.INT32))
    del g.graph.node[:]
    g.graph.node.extend(nodes)
    _prune(g.graph)
    if replaced and not any(o.domain == CONTRIB for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(CONTRIB, 1))
    return len(attentions), len(gelus)


def _prune(graph: Any) -> None:
    """Drop the nodes and initializers that no graph output depends on."""
    needed = {o.name for o in graph.output}
    keep = []
    for node in reversed(list(graph.node)):
        if any(out in needed for out in node.output):
            keep.append(node)
            needed.update(i for i in node.input if i)
    keep.reverse()
    del graph.node[:]
    graph.node.extend(keep)
    live = [i for i in graph.initializer if i.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(live)
