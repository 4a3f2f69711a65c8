"""The OCR family's protocol: on-screen text, with a cheap text-coverage gate."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from perception.records import TextLine


@dataclass(frozen=True)
class TextBoxes:
    """Where a frame has text: the share of it covered, and the backend's detection, which
    ``read`` reuses instead of detecting again."""

    fraction: float
    detection: object = None


@runtime_checkable
class TextReader(Protocol):
    name: str

    def detect(self, frame_rgb: np.ndarray) -> TextBoxes:
        """Where the frame has text (the detection pass alone, cheaper than reading)."""

    def read(self, frame_rgb: np.ndarray, boxes: TextBoxes | None = None) -> list[TextLine]:
        """Lines of on-screen text in reading order, with boxes and confidence; ``boxes`` from
        ``detect`` on this frame skips detecting again."""
