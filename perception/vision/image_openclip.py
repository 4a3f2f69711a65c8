"""Text↔image embeddings and zero-shot tags with open_clip, used when a checkpoint is present.

``checkpoint`` is a local weights file (tried first) or an open_clip pretrained tag, which open_clip
resolves through the Hugging Face cache and only then the hub (so ``HF_HUB_OFFLINE=1`` works with a
filled cache). Tags are zero-shot over the shipped ImageNet class names ("a photo of a …"). It runs
in torch: open-clip-torch and torch come with the extra mnemo[torch].
``random_init=True`` builds the architecture with random weights: for speed tests and for testing
this code path where no checkpoint can be had; its tags mean nothing.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from perception.vision.image_efficientnet import imagenet_classes
from perception.weights import require, torch_device

log = logging.getLogger(__name__)


class OpenClipImages:
    name = "open-clip"

    def __init__(
        self,
        model: str = "ViT-B-32",
        checkpoint: str = "",
        device: str = "auto",
        random_init: bool = False,
        labels: list[str] | None = None,
        batch_size: int = 16,
    ) -> None:
        if not checkpoint and not random_init:
            raise ValueError(
                "open-clip needs a checkpoint: set [perception] open_clip_checkpoint to a local "
                "weights file or an open_clip pretrained tag (e.g. laion2b_s34b_b79k), or use "
                'image_backend = "efficientnet-lite0"'
            )
        require(
            ("torch", "open_clip"),
            "torch",
            '[perception] image_backend = "open-clip"',
            'or set image_backend = "efficientnet-lite0" (runs without torch)',
        )
        self.model_name = model
        self.checkpoint = checkpoint
        self.device = device
        self.random_init = random_init
        self.labels = labels
        self.batch_size = batch_size
        self._model = None
        self._label_embs: np.ndarray | None = None
        self.dim = 0

    def _load(self):
        if self._model is None:
            import open_clip

            device = torch_device(self.device)
            pretrained = None
            if not self.random_init:
                path = Path(self.checkpoint).expanduser()
                pretrained = str(path) if path.is_file() else self.checkpoint
                if not path.is_file():
                    log.info(
                        "open_clip: %s is not a local file; resolving it as a pretrained tag",
                        self.checkpoint,
                    )
            try:
                model, _, preprocess = open_clip.create_model_and_transforms(
                    self.model_name, pretrained=pretrained, device=device
                )
            except RuntimeError as e:
                raise RuntimeError(
                    f"open_clip could not load {self.model_name} with {self.checkpoint!r}: {e}; "
                    "check the file, or that the tag is cached when offline"
                ) from e
            self._model = model.eval()
            self._preprocess = preprocess
            self._tokenizer = open_clip.get_tokenizer(self.model_name)
            self._device = device
            self.dim = (
                int(model.text_projection.shape[1])
                if hasattr(model, "text_projection") and model.text_projection is not None
                else int(self.embed_text(["x"]).shape[1])
            )
        return self._model

    def embed_images(self, frames: list[np.ndarray]) -> np.ndarray:
        import torch
        from PIL import Image

        model = self._load()
        out = []
        for start in range(0, len(frames), self.batch_size):
            batch = torch.stack(
                [
                    self._preprocess(Image.fromarray(f))
                    for f in frames[start : start + self.batch_size]
                ]
            )
            with torch.inference_mode():
                feats = model.encode_image(batch.to(self._device), normalize=True)
            out.append(feats.float().cpu().numpy())
        return (
            np.concatenate(out).astype(np.float32) if out else np.zeros((0, self.dim), np.float32)
        )

    def embed_text(self, texts: list[str]) -> np.ndarray:
        import torch

        model = self._load()
        with torch.inference_mode():
            feats = model.encode_text(self._tokenizer(texts).to(self._device), normalize=True)
        return feats.float().cpu().numpy().astype(np.float32)

    def analyze(
        self, frames: list[np.ndarray], top_k: int = 5
    ) -> list[tuple[tuple[tuple[str, float], ...], np.ndarray]]:
        if not frames:
            return []
        embs = self.embed_images(frames)
        labels = self.labels or imagenet_classes()
        if self._label_embs is None:
            self._label_embs = np.concatenate(
                [
                    self.embed_text([f"a photo of a {c}." for c in labels[i : i + 256]])
                    for i in range(0, len(labels), 256)
                ]
            )
        logits = 100.0 * embs @ self._label_embs.T
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        out = []
        for emb, p in zip(embs, probs):
            top = np.argsort(-p)[:top_k]
            out.append((tuple((labels[i], round(float(p[i]), 4)) for i in top), emb))
        return out
