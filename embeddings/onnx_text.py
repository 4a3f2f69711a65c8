"""A mean-pooled sentence-transformers encoder run by ONNX Runtime on the CPU.

For one short query, torch spends most of its time outside the matrix products: on a 2-core AVX2
EPYC, all-mpnet-base-v2 in float32 took 81 ms a question in torch and 33 ms in ONNX Runtime, with
the same vectors (cosine 1.0000 over 200 LoCoMo questions, largest difference 4e-6). The ONNX graph
is exported from the packaged weights once per machine, checked against torch, and cached under
``$MNEMO_CACHE/models/onnx/<name>/``.

(int8 was measured and rejected: dynamic quantisation of mpnet, in torch or ONNX Runtime, left
query vectors at a mean cosine of 0.05 to 0.79 from float32 on that CPU.)
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np

from perception.onnx_models import OPSET, cached_export, cpu_session

CHECK_TEXTS = ("Where is Sheila from?", "Diane said she moved to New Jersey after the summer of 2019.", "ok")
CHECK_TOLERANCE = 1e-3  # largest difference between torch's and ONNX Runtime's vectors allowed at export


def pooling_is_mean(model_dir: Path) -> bool:
    """Whether the sentence-transformers model in ``model_dir`` is a transformer followed by mean
    pooling (and optionally normalisation): the only layout this encoder reproduces."""
    try:
        modules = json.loads((model_dir / "modules.json").read_text())
        kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
        pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text())
    except (OSError, ValueError, KeyError):
        return False
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode_") and v}
    return kinds[:2] == ["Transformer", "Pooling"] and set(kinds[2:]) <= {"Normalize"} \
        and modes == {"pooling_mode_mean_tokens"}


def exported_model(name: str, model_dir: Path) -> Path:
    """The ONNX export of ``model_dir``'s transformer, made once (``perception.onnx_models``) and
    checked against the sentence-transformers model in torch."""
    return cached_export(name, model_dir / "model.safetensors", export_text, str(model_dir), str(CHECK_TOLERANCE))


def export_text(model_dir: str, tolerance: str, path: str) -> None:
    """Write the transformer's graph (fused) to ``path``; raise when its vectors differ from torch's
    by more than ``tolerance``."""
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(model_dir, device="cpu", local_files_only=True).float()
    tokenizer, transformer = model.tokenizer, _LastHidden(model[0].auto_model.float().eval())
    batch = tokenizer(list(CHECK_TEXTS), padding=True, return_tensors="pt")
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on shape-dependent Python branches
        torch.onnx.export(transformer, (batch["input_ids"], batch["attention_mask"]), path,
                          input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
                          dynamic_axes={n: {0: "batch", 1: "tokens"}
                                        for n in ("input_ids", "attention_mask", "last_hidden_state")},
                          opset_version=OPSET, dynamo=False)
        want = torch.nn.functional.normalize(
            model.encode(list(CHECK_TEXTS), convert_to_tensor=True, show_progress_bar=False).float(),
            dim=-1).numpy()
    _fuse(Path(path), transformer.transformer.config)
    got = OnnxEncoder(Path(path), Path(model_dir), model.max_seq_length).encode(list(CHECK_TEXTS))
    worst = float(np.abs(got - want).max())
    if worst > float(tolerance):
        raise RuntimeError(f"the ONNX export of {Path(model_dir).name} differs from torch by {worst:.2e} (more "
                           f"than {tolerance}); set [graph] text_runtime = \"torch\" to run it in torch")


def _fuse(path: Path, config) -> None:
    """Rewrite the graph at ``path`` with ONNX Runtime's transformer fusions (GELU with its bias,
    residual add with layer norm): a query 17 % faster (31.6 against 37.9 ms for mpnet on a 2-core
    AVX2 EPYC), vectors within 2e-7."""
    from onnxruntime.transformers import optimizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fused = optimizer.optimize_model(str(path), model_type="bert", num_heads=config.num_attention_heads,
                                         hidden_size=config.hidden_size)
    fused.save_model_to_file(str(path))


def _LastHidden(transformer):
    """The transformer called by keyword (models differ in their positional order) for its last
    hidden state: the graph to export."""
    import torch

    class LastHidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids, attention_mask):
            return self.transformer(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    return LastHidden()


class OnnxEncoder:
    """Texts to L2-normalised mean-pooled float32 vectors with an exported transformer. The model's
    ``tokenizer.json`` is read by the ``tokenizers`` library: transformers' tokenizers load torch."""

    def __init__(self, path: Path, model_dir: Path, max_length: int) -> None:
        from tokenizers import Tokenizer

        self.session = cpu_session(path)
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        pad = json.loads((model_dir / "tokenizer_config.json").read_text())["pad_token"]
        pad = pad if isinstance(pad, str) else pad["content"]
        self.tokenizer.enable_truncation(max_length)
        self.tokenizer.enable_padding(pad_id=self.tokenizer.token_to_id(pad), pad_token=pad)

    def _tokens(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        encodings = self.tokenizer.encode_batch(texts)
        return (np.array([e.ids for e in encodings], dtype=np.int64),
                np.array([e.attention_mask for e in encodings], dtype=np.int64))

    def lengths(self, texts: list[str]) -> list[int]:
        return [int(n) for n in self._tokens(texts)[1].sum(axis=1)] if texts else []

    def encode(self, texts: list[str]) -> np.ndarray:
        ids, mask = self._tokens(texts)
        hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return (pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)).astype(np.float32)


def token_lengths(tokenizer, texts: list[str], max_length: int) -> list[int]:
    """Each text's length in tokens as the model reads it (special tokens in, truncated)."""
    return [len(ids) for ids in tokenizer(texts, add_special_tokens=True, truncation=True,
                                          max_length=max_length)["input_ids"]]
