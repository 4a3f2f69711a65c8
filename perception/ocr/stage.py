"""The OCR stage: on-screen text of a clip's distinct frames, gated by time and text coverage."""

from __future__ import annotations

import logging

import numpy as np

from perception.ocr.base import TextReader
from perception.records import TextLine

log = logging.getLogger(__name__)


def read_frames(frames: list[np.ndarray], times_s: list[float], ocr: TextReader, every_s: float,
                min_text_fraction: float, notes: list[str]) -> list[tuple[TextLine, ...]]:
    """Text lines per frame: frames less than ``every_s`` after the last one looked at, and frames
    whose detected text covers less than ``min_text_fraction`` (0: no gate), get none. A frame OCR
    fails on gets none and a note."""
    texts: list[tuple[TextLine, ...]] = [()] * len(frames)
    last_t = -float("inf")
    for i, frame in enumerate(frames):
        if times_s[i] - last_t < every_s:
            continue
        last_t = times_s[i]
        try:
            if min_text_fraction <= 0:
                texts[i] = tuple(ocr.read(frame))
            elif (boxes := ocr.detect(frame)).fraction >= min_text_fraction:
                texts[i] = tuple(ocr.read(frame, boxes))  # the gate's detection, not a second one
        except (RuntimeError, ValueError) as e:
            notes.append(f"OCR failed on the frame at {times_s[i]:.1f} s: {e}")
            log.warning("OCR failed on the frame at %.1f s: %s", times_s[i], e)
    return texts
