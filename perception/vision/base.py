"""The vision family's protocols: object/scene tags with image embeddings, and clip captions."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class ImageAnalyzer(Protocol):
    name: str
    dim: int

    def analyze(
        self, frames: list[np.ndarray], top_k: int = 5
    ) -> list[tuple[tuple[tuple[str, float], ...], np.ndarray]]:
        """Per RGB frame: object/scene tags (label, probability; best first) and an L2-normalised
        image embedding."""


@runtime_checkable
class Captioner(Protocol):
    name: str

    def caption(self, frames: list[np.ndarray], times_s: list[float], transcript: str = "") -> str:
        """A short description of what happens in these frames of one clip."""
