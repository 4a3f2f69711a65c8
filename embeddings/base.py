"""The text-embedding protocol and its registry (as LanceDB's ``lancedb/embeddings/``): a config
name builds a backend; backends are imported only when built."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from perception.registry import build_from


@runtime_checkable
class TextEmbedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """(n, dim) float32 L2-normalised embeddings."""


REGISTRY: dict[str, dict[str, str]] = {
    "text": {
        "mpnet": "embeddings.mpnet:MPNetText",
        "minilm": "embeddings.minilm:MiniLMText",
        "hash": "embeddings.hash:HashText",
    }
}


def build_text_embedder(name: str, **kwargs: Any) -> TextEmbedder:
    """Text embedder ``name`` (``mpnet``, ``minilm`` or ``hash``); the error lists the valid names."""
    return build_from(REGISTRY, "text", name, **kwargs)
