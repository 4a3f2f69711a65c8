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

    def __init__(self, device: str = "cpu", batch_size: int = 64, dtype: str = "float32",
                 max_batch_tokens: int = 2048) -> None:
        self.device = device
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
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
        """Texts of similar token length are batched together: one batch pads every text to its
        longest, and a screen's worth of text (hundreds of tokens) padded into a batch of short
        sentences was measured to make a clip's embedding 15x slower."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        import torch

        model = self._load()
        texts = list(texts)
        lengths = [len(ids) for ids in model.tokenizer(texts, add_special_tokens=True, truncation=True,
                                                       max_length=model.max_seq_length)["input_ids"]]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        with torch.inference_mode():
            for batch in length_batches(lengths, self.batch_size, self.max_batch_tokens):
                vecs = model.encode([texts[i] for i in batch], batch_size=len(batch), convert_to_tensor=True,
                                    show_progress_bar=False)
                out[batch] = torch.nn.functional.normalize(vecs.float(), dim=-1).cpu().numpy()  # in float32
        return out


def length_batches(lengths: list[int], max_size: int, max_tokens: int) -> list[list[int]]:
    """Indices grouped into batches by length (shortest first) so that a batch's padded size,
    ``len(batch) * its longest``, stays within ``max_tokens`` (a longer text alone is its own batch)."""
    batches: list[list[int]] = []
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        last = batches[-1] if batches else None
        if last and len(last) < max_size and (len(last) + 1) * lengths[i] <= max_tokens:
            last.append(i)
        else:
            batches.append([i])
    return batches
