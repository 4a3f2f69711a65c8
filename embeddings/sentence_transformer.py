"""Text embedding with a sentence-transformers model from a local directory: what the packaged
text backends share (``minilm.py``, ``mpnet.py``).

Two runtimes: torch (any device and dtype) and, for float32 on the CPU, ONNX Runtime
(``onnx_text.py``), which gives the same vectors at less than half torch's time per query. torch and
sentence-transformers come with the extra mnemo[torch]; without them "auto" runs float32 on the CPU
in ONNX Runtime, and a setting that needs torch says which extra to install."""

from __future__ import annotations

import json
import logging
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from perception.malloc import blocks_mapped
from perception.onnx_models import check_runtime, load_torch
from perception.weights import fast_dtype, require, torch_device

if TYPE_CHECKING:
    from embeddings.onnx_parts import PartsEncoder
    from embeddings.onnx_text import OnnxEncoder

log = logging.getLogger(__name__)

TORCH_MODULES = ("torch", "sentence_transformers")
WITHOUT_TORCH = (
    'or leave [graph] text_device, text_dtype and text_runtime at "auto" '
    "(float32 on the CPU in ONNX Runtime)"
)


LEAN_BATCH_TOKENS = 512  # tokens a batch at most for a lean embedder


def torch_setting(device: str, dtype: str, runtime: str) -> str:
    """The setting, as the config names it, that puts the text model in torch whatever the machine
    (empty when none does: "auto" picks what is installed)."""
    if runtime == "torch":
        return '[graph] text_runtime = "torch"'
    if dtype in ("bfloat16", "float16"):
        return f'[graph] text_dtype = "{dtype}"'
    if device not in ("auto", "cpu"):
        return f'[graph] text_device = "{device}"'
    return ""


class SentenceTransformerText:
    name = ""
    dim = 0
    # a model's defaults where none is given: each backend may set its own
    default_batch_size = 64
    default_dtype = "float32"

    def __init__(
        self,
        device: str = "cpu",
        batch_size: int | None = None,
        dtype: str | None = None,
        max_batch_tokens: int = 2048,
        runtime: str = "auto",
        lean: bool = False,
    ) -> None:
        """``batch_size`` and ``dtype``: the class's ``default_batch_size`` and ``default_dtype``
        when None. ``lean``: least memory for a process that runs all day (the capture watcher):
        batches of at most ``LEAN_BATCH_TOKENS`` and, on ONNX Runtime, weights not prepacked,
        mapped from their file, and let go after each ``embed``. Measured on mpnet in float32
        (ONNX): 686 MB at the peak of 192 embeddings against 1278 MB, and 3 % slower (before the
        weights were mapped)."""
        batch_size = self.default_batch_size if batch_size is None else batch_size
        dtype = self.default_dtype if dtype is None else dtype
        check_runtime(runtime, "text runtime")
        if setting := torch_setting(device, dtype, runtime):
            require(TORCH_MODULES, "torch", setting, WITHOUT_TORCH)
        self.device = device
        self.batch_size = batch_size
        self.max_batch_tokens = (
            min(max_batch_tokens, LEAN_BATCH_TOKENS) if lean else max_batch_tokens
        )
        self.lean = lean
        # "bfloat16" halves the weights read per query, but only CPUs with native bfloat16 gain from it;
        # "auto" picks from the device (perception.weights.fast_dtype)
        self.dtype = dtype
        # "auto": ONNX Runtime for float32 on the CPU when the model is mean-pooled, else torch
        self.runtime = runtime
        self._encoder: OnnxEncoder | PartsEncoder | _TorchEncoder | None = (
            None  # built on first use
        )

    def model_dir(self) -> Path:
        """The directory holding the model (config, tokenizer, weights)."""
        raise NotImplementedError

    def _load(self):
        if self._encoder is None:
            device = torch_device(self.device)
            if self.dtype == "auto":
                self.dtype = fast_dtype(device)
            runtime = self.runtime
            if runtime == "auto":
                from embeddings.onnx_text import pooling_is_mean

                runtime = (
                    "onnx"
                    if device == "cpu"
                    and self.dtype == "float32"
                    and pooling_is_mean(self.model_dir())
                    else "torch"
                )
            elif runtime == "onnx" and (device != "cpu" or self.dtype != "float32"):
                raise ValueError(
                    f'text runtime "onnx" runs float32 on the CPU, not {self.dtype} on {device}; '
                    'set [graph] text_runtime = "torch" or "auto"'
                )
            if runtime == "torch":
                require(
                    TORCH_MODULES,
                    "torch",
                    f"the text embedder {self.name} in {self.dtype} on {device}",
                    WITHOUT_TORCH,
                )
            self._encoder = (
                self._onnx() if runtime == "onnx" else _TorchEncoder(self._torch_model(device))
            )
            self.runtime = runtime
            log.info("text embedder %s on %s in %s (%s)", self.name, device, self.dtype, runtime)
        return self._encoder

    def _torch_model(self, device: str):
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # our own progress lines say what is loading
        model = SentenceTransformer(str(self.model_dir()), device=device, local_files_only=True)
        return model.to(getattr(load_torch(f"the text embedder {self.name}"), self.dtype))

    def _onnx(self):
        from embeddings.onnx_parts import PartsEncoder, mapped_parts
        from embeddings.onnx_text import OnnxEncoder, exported_model, mapped_model

        model_dir = self.model_dir()
        max_length = json.loads((model_dir / "sentence_bert_config.json").read_text())[
            "max_seq_length"
        ]
        if not self.lean:
            return OnnxEncoder(exported_model(self.name, model_dir), model_dir, max_length)
        # lean: the weights mapped, and the graph in parts that hold their weights one at a time
        mapped = mapped_model(self.name, model_dir)
        if parts := mapped_parts(self.name, mapped, model_dir, max_length):
            return PartsEncoder(parts, model_dir, max_length)
        return OnnxEncoder(mapped, model_dir, max_length, prepack=False, cast_weights=True)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Texts of similar token length are batched together: one batch pads every text to its
        longest, and a screen's worth of text (hundreds of tokens) padded into a batch of short
        sentences makes a clip's embedding many times slower."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encoder = self._load()
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # lean: the float16 matrices' float32 copies (up to 9 MB each) mapped and let go one by one
        batches = length_batches(encoder.lengths(texts), self.batch_size, self.max_batch_tokens)
        with blocks_mapped() if self.lean else nullcontext():
            vectors = encoder.encode_batches([[texts[i] for i in batch] for batch in batches])
        for batch, vecs in zip(batches, vectors):
            out[batch] = vecs
        if self.lean and self.runtime == "onnx":
            # its weights are mapped (mapped_model): closed, it gives their pages back, and opens
            # again in a fraction of a second (in parts, each part's already went after its run)
            self._encoder = None
        return out


class _TorchEncoder:
    """The sentence-transformers model itself, with the ONNX encoder's two calls."""

    def __init__(self, model) -> None:
        self.model = model

    def lengths(self, texts: list[str]) -> list[int]:
        from embeddings.onnx_text import token_lengths

        return token_lengths(self.model.tokenizer, texts, self.model.max_seq_length)

    def encode_batches(self, batches: list[list[str]]) -> list[np.ndarray]:
        return [self.encode(texts) for texts in batches]

    def encode(self, texts: list[str]) -> np.ndarray:
        import torch

        with torch.inference_mode():
            vecs = self.model.encode(
                texts, batch_size=len(texts), convert_to_tensor=True, show_progress_bar=False
            )
            return torch.nn.functional.normalize(vecs.float(), dim=-1).cpu().numpy()  # in float32


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
