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
import logging
import os
import warnings
from pathlib import Path

import numpy as np

from perception.weights import cache_root

log = logging.getLogger(__name__)

OPSET = 17
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


def exported_model(name: str, model_dir: Path, load_torch) -> Path:
    """The ONNX export of ``model_dir``'s transformer, made once: ``load_torch()`` gives the
    sentence-transformers model to export and to check against. The cache is keyed by the weights'
    size and time, so re-unpacked weights are exported again; it is written under a temporary name
    and renamed, so a killed export leaves nothing that looks complete."""
    weights = model_dir / "model.safetensors"
    stat = weights.stat()
    key = f"{stat.st_size}-{stat.st_mtime_ns}"
    out_dir = cache_root() / "models" / "onnx" / name
    out, marker = out_dir / "model.onnx", out_dir / "source"
    if out.is_file() and marker.is_file() and marker.read_text().strip() == key:
        return out
    import torch

    log.info("exporting %s to ONNX for the CPU (once): %s", name, out)
    out_dir.mkdir(parents=True, exist_ok=True)
    model = load_torch()
    tokenizer, transformer = model.tokenizer, _LastHidden(model[0].auto_model.float().eval())
    batch = tokenizer(list(CHECK_TEXTS), padding=True, return_tensors="pt")
    tmp = out.with_name(f"model.{os.getpid()}.onnx.part")
    try:
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on shape-dependent Python branches
            torch.onnx.export(transformer, (batch["input_ids"], batch["attention_mask"]), str(tmp),
                              input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
                              dynamic_axes={n: {0: "batch", 1: "tokens"}
                                            for n in ("input_ids", "attention_mask", "last_hidden_state")},
                              opset_version=OPSET, dynamo=False)
            want = torch.nn.functional.normalize(
                model.encode(list(CHECK_TEXTS), convert_to_tensor=True, show_progress_bar=False).float(),
                dim=-1).numpy()
        _fuse(tmp, transformer.transformer.config)
        got = OnnxEncoder(tmp, tokenizer, model.max_seq_length, threads=1).encode(list(CHECK_TEXTS))
        worst = float(np.abs(got - want).max())
        if worst > CHECK_TOLERANCE:
            raise RuntimeError(f"the ONNX export of {name} differs from torch by {worst:.2e} (more than "
                               f"{CHECK_TOLERANCE}); set [graph] text_runtime = \"torch\" to run it in torch")
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a failed or refused export leaves nothing behind
        raise
    marker.write_text(key)
    return out


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
    """Texts to L2-normalised mean-pooled float32 vectors with an exported transformer."""

    def __init__(self, path: Path, tokenizer, max_length: int, threads: int) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # no busy-waiting between calls: the embedder shares its cores with the memorizer and
        # LanceDB (measured: 33 ms a query either way; batches 15 % slower than with spinning)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.tokenizer = tokenizer
        self.max_length = max_length

    def lengths(self, texts: list[str]) -> list[int]:
        return token_lengths(self.tokenizer, texts, self.max_length)

    def encode(self, texts: list[str]) -> np.ndarray:
        batch = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="np")
        mask = batch["attention_mask"].astype(np.int64)
        hidden = self.session.run(None, {"input_ids": batch["input_ids"].astype(np.int64), "attention_mask": mask})[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return (pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)).astype(np.float32)


def token_lengths(tokenizer, texts: list[str], max_length: int) -> list[int]:
    """Each text's length in tokens as the model reads it (special tokens in, truncated)."""
    return [len(ids) for ids in tokenizer(texts, add_special_tokens=True, truncation=True,
                                          max_length=max_length)["input_ids"]]
