"""The ONNX graph of a packaged text embedder's transformer, written from its weight files alone.

The graph is built with ``onnx.helper`` from ``model.safetensors`` (read by ``safetensors.numpy``)
and ``config.json``, so no process that embeds text imports torch. Two families are built: BERT
(all-MiniLM-L6-v2) and MPNet (all-mpnet-base-v2, whose attention adds a learnt bias per bucket of
relative position). The graph takes ``input_ids`` and ``attention_mask`` (int64, [batch, tokens])
and gives ``last_hidden_state`` (float32, [batch, tokens, hidden]) as the graph that torch exported
did, node for node where it matters: ONNX Runtime's transformer fusions (``onnx_text._fuse``) find
their patterns (GELU with its bias, residual add with layer norm) in the same shapes.

The arithmetic follows Hugging Face transformers' ``modeling_bert.py`` and ``modeling_mpnet.py``;
``tests/test_text_graph.py`` holds it to sentence-transformers in torch.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perception.onnx_models import onnx_model

BUILDER = "text-graph-1"  # in the cache's key: a graph torch exported, or an older builder wrote, is built again
FAMILIES = ("bert", "mpnet")
_MASKED = float(np.finfo(np.float32).min)  # what transformers adds to the scores of padding tokens
MPNET_MAX_DISTANCE = 128  # modeling_mpnet.relative_position_bucket's default


@dataclass(frozen=True)
class TransformerShape:
    """What ``config.json`` says about the graph to build."""

    family: str
    layers: int
    hidden: int
    heads: int
    eps: float
    max_positions: int
    pad_id: int
    buckets: int

    @property
    def head_size(self) -> int:
        return self.hidden // self.heads


def read_shape(model_dir: Path) -> TransformerShape:
    """The transformer's shape from ``model_dir/config.json``; a ValueError names what is not built."""
    path = model_dir / "config.json"
    try:
        config = json.loads(path.read_text())
        family = config["model_type"]
        shape = TransformerShape(
            family=family,
            layers=int(config["num_hidden_layers"]),
            hidden=int(config["hidden_size"]),
            heads=int(config["num_attention_heads"]),
            eps=float(config["layer_norm_eps"]),
            max_positions=int(config["max_position_embeddings"]),
            pad_id=int(config.get("pad_token_id", 0)),
            buckets=int(config.get("relative_attention_num_buckets", 32)),
        )
    except (OSError, ValueError, KeyError) as e:
        raise ValueError(f"cannot read the transformer's shape from {path}: {e}") from e
    if (
        family not in FAMILIES
        or config.get("hidden_act", "gelu") != "gelu"
        or config.get("position_embedding_type", "absolute") != "absolute"
        or shape.hidden % shape.heads
    ):
        raise ValueError(
            f"{path} describes a {family} transformer this builder does not write (it writes "
            f"{' and '.join(FAMILIES)} with GELU and absolute positions); set [graph] "
            f'text_runtime = "torch" and install mnemo[torch] to run it in torch'
        )
    return shape


def relative_position_buckets(
    relative: np.ndarray, num_buckets: int = 32, max_distance: int = MPNET_MAX_DISTANCE
) -> np.ndarray:
    """MPNet's bucket of each relative position (key minus query), as
    ``MPNetEncoder.relative_position_bucket`` computes it: in float32, truncated toward zero, so the
    buckets at the log-spaced boundaries come out the same as torch's."""
    n = -relative.astype(np.int64)
    half = num_buckets // 2
    ret = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    max_exact = half // 2
    with np.errstate(divide="ignore"):  # log(0) is taken where the exact bucket is used instead
        scaled = (
            np.log(n.astype(np.float32) / np.float32(max_exact))
            / np.float32(math.log(max_distance / max_exact))
            * np.float32(half - max_exact)
        )
    large = max_exact + np.where(n < max_exact, 0, scaled).astype(np.int64)
    return ret + np.where(n < max_exact, n, np.minimum(large, half - 1))


class _Graph:
    """Nodes and initializers under unique names."""

    def __init__(self) -> None:
        self.nodes: list = []
        self.initializers: list = []
        self._count = 0

    def name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, value, hint: str = "c", dtype=np.float32) -> str:
        from onnx import numpy_helper

        name = self.name(hint)
        self.initializers.append(
            numpy_helper.from_array(np.ascontiguousarray(np.asarray(value, dtype=dtype)), name)
        )
        return name

    def op(self, op_type: str, *inputs: str, hint: str = "", out: str = "", **attrs) -> str:
        from onnx import helper

        out = out or self.name(hint or op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=out, **attrs))
        return out


def build_text_graph(model_dir: str | Path):
    """The transformer of ``model_dir`` (``config.json``, ``model.safetensors``) as an ONNX model
    (``onnx.ModelProto``, its weights inside: 90 MB for MiniLM, 440 MB for MPNet)."""
    from onnx import TensorProto, helper
    from safetensors.numpy import load_file

    model_dir = Path(model_dir)
    shape = read_shape(model_dir)
    weights = load_file(str(model_dir / "model.safetensors"))
    g = _Graph()
    w = _Weights(weights, g)
    if shape.family == "bert":
        hidden, bias, names = _bert_embeddings(g, w, shape), None, _BERT_NAMES
    else:
        hidden, bias, names = (
            _mpnet_embeddings(g, w, shape),
            _mpnet_position_bias(g, w, shape),
            _MPNET_NAMES,
        )
    mask = _additive_mask(g, "attention_mask")
    for i in range(shape.layers):
        hidden = _layer(
            g,
            w,
            shape,
            f"encoder.layer.{i}.",
            names,
            hidden,
            mask,
            bias,
            out="last_hidden_state" if i == shape.layers - 1 else "",
        )
    dims = ["batch", "tokens"]
    return onnx_model(
        helper.make_graph(
            g.nodes,
            f"{model_dir.name}-transformer",
            [
                helper.make_tensor_value_info(n, TensorProto.INT64, dims)
                for n in ("input_ids", "attention_mask")
            ],
            [
                helper.make_tensor_value_info(
                    "last_hidden_state", TensorProto.FLOAT, [*dims, shape.hidden]
                )
            ],
            g.initializers,
        ),
        "mnemo.embeddings.text_graph",
    )


class _Weights:
    """The safetensors weights by name (with or without a ``bert.``/``mpnet.`` prefix), as graph
    initializers; a linear layer's matrix is stored transposed, as the MatMul reads it."""

    def __init__(self, weights: dict[str, np.ndarray], graph: _Graph) -> None:
        self.weights, self.graph = weights, graph

    def array(self, name: str) -> np.ndarray:
        for key in (name, f"bert.{name}", f"mpnet.{name}"):
            if key in self.weights:
                return self.weights[key].astype(np.float32, copy=False)
        raise ValueError(
            f"model.safetensors holds no weight {name!r}; the model is not the transformer "
            "config.json describes"
        )

    def __call__(self, name: str) -> str:
        return self.graph.const(self.array(name), name)

    def linear(self, x: str, name: str, hint: str) -> str:
        """``x @ W.T + b`` as torch's export writes it (MatMul, then the bias added first)."""
        product = self.graph.op(
            "MatMul",
            x,
            self.graph.const(self.array(f"{name}.weight").T, f"{name}.weight_t"),
            hint=f"{hint}_matmul",
        )
        return self.graph.op("Add", self(f"{name}.bias"), product, hint=f"{hint}_add")


def _additive_mask(g: _Graph, attention_mask: str) -> str:
    """[batch, 1, 1, tokens]: 0 where a token is read, float32's lowest where it is padding."""
    keep = g.op("Cast", attention_mask, to=1)
    dropped = g.op("Sub", g.const(1.0), keep)
    scaled = g.op("Mul", dropped, g.const(_MASKED))
    return g.op("Unsqueeze", scaled, g.const([1, 2], dtype=np.int64), hint="mask")


def _layer_norm(
    g: _Graph, w: _Weights, x: str, norm: str, shape: TransformerShape, **names: str
) -> str:
    """``x`` through the layer norm whose weight and bias are ``norm``'s (``names``: the node's
    ``hint`` or ``out``)."""
    return g.op(
        "LayerNormalization",
        x,
        w(f"{norm}.weight"),
        w(f"{norm}.bias"),
        axis=-1,
        epsilon=shape.eps,
        **names,
    )


def _token_range(g: _Graph) -> str:
    """0, 1, … tokens-1 (int64)."""
    tokens = g.op("Gather", g.op("Shape", "input_ids"), g.const(1, dtype=np.int64), axis=0)
    return g.op(
        "Range", g.const(0, dtype=np.int64), tokens, g.const(1, dtype=np.int64), hint="positions"
    )


def _bert_embeddings(g: _Graph, w: _Weights, shape: TransformerShape) -> str:
    # token type 0 throughout (sentence-transformers passes none): its row is added to every word's,
    # which is the sum BertEmbeddings makes first
    words = (
        w.array("embeddings.word_embeddings.weight")
        + w.array("embeddings.token_type_embeddings.weight")[0]
    )
    # the first rows of the position table, sliced (ONNX Runtime 1.32 rewrites a Gather by a Range
    # into a Slice that fails at run time)
    tokens = g.op("Shape", "input_ids", start=1, end=2)
    positions = g.op(
        "Slice",
        w("embeddings.position_embeddings.weight"),
        g.const([0], dtype=np.int64),
        tokens,
        g.const([0], dtype=np.int64),
    )
    summed = g.op(
        "Add", g.op("Gather", g.const(words, "word_and_type_embeddings"), "input_ids"), positions
    )
    return _layer_norm(g, w, summed, "embeddings.LayerNorm", shape, hint="embeddings")


def _mpnet_embeddings(g: _Graph, w: _Weights, shape: TransformerShape) -> str:
    # positions count the tokens that are not padding, from pad_id + 1 (create_position_ids_from_input_ids)
    real = g.op(
        "Cast", g.op("Not", g.op("Equal", "input_ids", g.const(shape.pad_id, dtype=np.int64))), to=7
    )
    positions = g.op(
        "Add",
        g.op("Mul", g.op("CumSum", real, g.const(1, dtype=np.int64)), real),
        g.const(shape.pad_id, dtype=np.int64),
    )
    summed = g.op(
        "Add",
        g.op("Gather", w("embeddings.word_embeddings.weight"), "input_ids"),
        g.op("Gather", w("embeddings.position_embeddings.weight"), positions),
    )
    return _layer_norm(g, w, summed, "embeddings.LayerNorm", shape, hint="embeddings")


def _mpnet_position_bias(g: _Graph, w: _Weights, shape: TransformerShape) -> str:
    """[1, heads, tokens, tokens]: the learnt bias of each (query, key) pair's relative-position
    bucket. The buckets depend on the distance alone, so they are computed here once for every
    distance the position table allows and looked up in the graph by ``key - query``."""
    furthest = shape.max_positions - 1
    table = w.array("encoder.relative_attention_bias.weight")[
        relative_position_buckets(np.arange(-furthest, furthest + 1), shape.buckets)
    ]
    positions = _token_range(g)
    relative = g.op(
        "Sub",
        g.op("Unsqueeze", positions, g.const([0], dtype=np.int64)),
        g.op("Unsqueeze", positions, g.const([1], dtype=np.int64)),
    )
    rows = g.op("Add", relative, g.const(furthest, dtype=np.int64))
    bias = g.op("Gather", g.const(table, "relative_position_bias"), rows)  # [tokens, tokens, heads]
    return g.op(
        "Unsqueeze",
        g.op("Transpose", bias, perm=[2, 0, 1]),
        g.const([0], dtype=np.int64),
        hint="position_bias",
    )


_BERT_NAMES = {
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "o": "attention.output.dense",
    "attention_norm": "attention.output.LayerNorm",
}
_MPNET_NAMES = {
    "q": "attention.attn.q",
    "k": "attention.attn.k",
    "v": "attention.attn.v",
    "o": "attention.attn.o",
    "attention_norm": "attention.LayerNorm",
}


def _layer(
    g: _Graph,
    w: _Weights,
    shape: TransformerShape,
    prefix: str,
    names: dict[str, str],
    x: str,
    mask: str,
    position_bias: str | None,
    out: str = "",
) -> str:
    heads_shape = g.const([0, 0, shape.heads, shape.head_size], dtype=np.int64)
    q = g.op(
        "Transpose",
        g.op("Reshape", w.linear(x, prefix + names["q"], "q"), heads_shape),
        perm=[0, 2, 1, 3],
    )
    k = g.op(
        "Transpose",
        g.op("Reshape", w.linear(x, prefix + names["k"], "k"), heads_shape),
        perm=[0, 2, 3, 1],
    )
    v = g.op(
        "Transpose",
        g.op("Reshape", w.linear(x, prefix + names["v"], "v"), heads_shape),
        perm=[0, 2, 1, 3],
    )
    scores = g.op("MatMul", q, k)
    if shape.family == "bert":  # BERT's eager attention multiplies by the scale, MPNet's divides
        scores = g.op("Mul", scores, g.const(shape.head_size**-0.5))
    else:
        scores = g.op("Div", scores, g.const(math.sqrt(shape.head_size)))
    if position_bias is not None:
        scores = g.op("Add", scores, position_bias)
    probs = g.op("Softmax", g.op("Add", scores, mask), axis=-1)
    context = g.op(
        "Reshape",
        g.op("Transpose", g.op("MatMul", probs, v), perm=[0, 2, 1, 3]),
        g.const([0, 0, shape.hidden], dtype=np.int64),
    )
    attended = g.op("Add", w.linear(context, prefix + names["o"], "o"), x)
    norm = prefix + names["attention_norm"]
    x = _layer_norm(g, w, attended, norm, shape)
    inner = w.linear(x, prefix + "intermediate.dense", "intermediate")
    # GELU as torch exports it: x * (erf(x / sqrt 2) + 1) * 0.5, the shape ONNX Runtime fuses with the bias
    gelu = g.op(
        "Mul",
        g.op(
            "Mul",
            inner,
            g.op("Add", g.op("Erf", g.op("Div", inner, g.const(math.sqrt(2.0)))), g.const(1.0)),
        ),
        g.const(0.5),
    )
    summed = g.op("Add", w.linear(gelu, prefix + "output.dense", "output"), x)
    norm = prefix + "output.LayerNorm"
    return _layer_norm(g, w, summed, norm, shape, out=out)
