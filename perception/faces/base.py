"""The faces family's protocol: detection with an identity embedding per face."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class FaceAnalyzer(Protocol):
    dim: int

    def analyze(
        self, frame_rgb: np.ndarray
    ) -> list[tuple[tuple[int, int, int, int], float, np.ndarray]]:
        """Faces in an RGB frame: (x, y, w, h) box, detector score, L2-normalised embedding."""
