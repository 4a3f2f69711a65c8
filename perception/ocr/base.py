"""The OCR family's protocol: on-screen text, with a cheap text-coverage gate."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from perception.records import TextLine


@runtime_checkable
class TextReader(Protocol):
    name: str

    def text_fraction(self, frame_rgb: np.ndarray) -> float:
        """Fraction of the frame covered by text (a cheap detection pass)."""

    def read(self, frame_rgb: np.ndarray) -> list[TextLine]:
        """Lines of on-screen text in reading order, with boxes and confidence."""
