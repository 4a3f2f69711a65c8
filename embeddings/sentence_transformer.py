"""Text embedding with a sentence-transformers model from a local directory: what the packaged
text backends share (``text_minilm.py``, ``text_mpnet.py``)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from perception.weights import fast_dtype, torch_device

log = logging.getLogger(__name__)


class SentenceTransformerText:
    name = ""
    dim = 0

    def __init__(self, device: str = "cpu", batch_size: int = 64, dtype: str = "float32") -> None:
        self.device = device
        self.batch_size = batch_size
        # "bfloat16" halves the weights read per query, but only CPUs with native bfloat16 gain from it;
        # "auto" picks from the device (perception.weights.fast_dtype)
        self.dtype = dtype
        self._model = None

    def model_dir(self) -> Path:
        """The directory holding the model (config, tokenizer, weights)."""
        raise NotImplementedError

    def _load(self):
        if self._model is None:
            import torch
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # our own progress lines say what is loading
            device = torch_device(self.device)
            model = SentenceTransformer(str(self.model_dir()), device=device, local_files_only=True)
            if self.dtype == "auto":
                self.dtype = fast_dtype(device)
            log.info("text embedder %s on %s in %s", self.name, device, self.dtype)
            self._model = model.to(getattr(torch, self.dtype))
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        import torch

        with torch.inference_mode():
            vecs = self._load().encode(list(texts), batch_size=self.batch_size, convert_to_tensor=True,
                                       show_progress_bar=False)
            vecs = torch.nn.functional.normalize(vecs.float(), dim=-1)  # normalised in float32
        return vecs.cpu().numpy()
