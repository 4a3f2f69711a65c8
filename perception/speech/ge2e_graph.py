"""Resemblyzer's GE2E voice encoder as an ONNX graph, built from its ``pretrained.pt`` without torch.

The network (resemblyzer's ``VoiceEncoder.forward``): a 3-layer LSTM of 256 units over windows of
40-band mel frames, batch first; the last layer's final hidden state through a 256 -> 256 linear
layer, ReLU, and division by its L2 norm. Inputs and outputs are those of the torch export it
replaces: ``mels`` (windows, frames, 40) in, ``embeddings`` (windows, 256) out.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from perception.onnx_models import onnx_model
from perception.torch_weights import state_dict

GRAPH_VERSION = "ge2e-graph-1"  # in the cache's key: a graph torch exported, or an older builder wrote, is built again

log = logging.getLogger(__name__)

LAYERS = 3
HIDDEN = 256
N_MELS = 40
# the chunks of PyTorch's (4 * hidden) gate rows are input, forget, cell, output; ONNX's are
# input, output, forget, cell
_TORCH_TO_ONNX_GATES = (0, 3, 1, 2)


def _onnx_gates(w: np.ndarray) -> np.ndarray:
    return np.concatenate([np.split(w, 4, axis=0)[i] for i in _TORCH_TO_ONNX_GATES], axis=0)


def encoder_graph(weights: Path):
    """The encoder's ``onnx.ModelProto``, from the state dict under ``model_state`` in ``weights``."""
    from onnx import TensorProto, helper, numpy_helper

    state = state_dict(weights, "model_state")
    expected = {
        f"lstm.{kind}_{part}_l{n}"
        for n in range(LAYERS)
        for kind in ("weight", "bias")
        for part in ("ih", "hh")
    } | {"linear.weight", "linear.bias"}
    missing = sorted(expected - set(state))
    if missing:
        raise ValueError(f"{weights}: not a GE2E voice encoder, it lacks {', '.join(missing)}")

    init, nodes = [], []

    def const(name: str, value: np.ndarray) -> str:
        init.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    # ONNX Runtime's LSTM takes time-major input only (layout 0): (frames, windows, mels)
    nodes.append(helper.make_node("Transpose", ["mels"], ["x0"], perm=[1, 0, 2]))
    x = "x0"
    for n in range(LAYERS):
        w = const(f"W{n}", _onnx_gates(state[f"lstm.weight_ih_l{n}"])[None])
        r = const(f"R{n}", _onnx_gates(state[f"lstm.weight_hh_l{n}"])[None])
        b = const(
            f"B{n}",
            np.concatenate(
                [_onnx_gates(state[f"lstm.bias_ih_l{n}"]), _onnx_gates(state[f"lstm.bias_hh_l{n}"])]
            )[None],
        )
        y, y_h = f"y{n}", f"h{n}"
        nodes.append(
            helper.make_node("LSTM", [x, w, r, b], [y, y_h], hidden_size=HIDDEN, name=f"lstm{n}")
        )
        if n < LAYERS - 1:  # Y is (frames, directions = 1, windows, hidden)
            nodes.append(
                helper.make_node(
                    "Squeeze", [y, const(f"axis1_{n}", np.array([1], np.int64))], [f"x{n + 1}"]
                )
            )
            x = f"x{n + 1}"
    axis0 = const("axis0", np.array([0], np.int64))
    nodes += [
        helper.make_node("Squeeze", [f"h{LAYERS - 1}", axis0], ["hidden"]),
        helper.make_node(
            "Gemm",
            [
                "hidden",
                const("linear_w", state["linear.weight"]),
                const("linear_b", state["linear.bias"]),
            ],
            ["linear"],
            transB=1,
        ),
        helper.make_node("Relu", ["linear"], ["raw"]),
        helper.make_node("ReduceL2", ["raw"], ["norm"], axes=[1], keepdims=1),
        helper.make_node("Div", ["raw", "norm"], ["embeddings"]),
    ]
    graph = helper.make_graph(
        nodes,
        "ge2e_voice_encoder",
        [helper.make_tensor_value_info("mels", TensorProto.FLOAT, ["windows", "frames", N_MELS])],
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["windows", HIDDEN])],
        init,
    )
    return onnx_model(graph, "mnemo.perception.speech.ge2e_graph")


def build_encoder(weights: str, path: str) -> None:
    """Write the encoder's graph, built from ``weights``, to ``path`` (``cached_export``'s builder)."""
    import onnx

    onnx.save(encoder_graph(Path(weights)), path)
    log.info("built the GE2E voice encoder graph from %s", weights)
