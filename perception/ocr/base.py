"""The OCR family's protocol: on-screen text, with a cheap text-coverage gate."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from perception.records import TextLine

# a detected region less high than this holds text of about 8 px or less (DBNet's boxes are padded:
# measured under Xvfb, 10 px xterm text gives 16-21 px regions, 8 px text 14-23, 6 px text 8-13)
SMALL_REGION_PX = 14
# a frame its detector saw at least this many times smaller (an 8K screen) is noted: its small text
# is found or not by chance (the regions seen as small, above, are then but a part of it)
SHRUNK_NOTE = 1.5


@dataclass(frozen=True)
class TextBoxes:
    """Where a frame has text: the share of it covered, and the backend's detection, which
    ``read`` reuses instead of detecting again."""

    fraction: float
    detection: object = None
    regions: int = 0  # text regions found
    small: int = 0  # of them, regions of text about 8 px high or less (SMALL_REGION_PX as the detector saw them)
    shrunk: float = 1.0  # how many times smaller than the frame the detector saw it (a frame past its largest side)

    def unreadable_note(self, lines_read: int, at_s: float) -> str | None:
        """What a clip's notes say when text was found on the frame but could not be read well: most
        of its regions gave no line, or several hold text too small to read reliably (what was read
        of it is kept); None otherwise (a lone icon taken for text is no news)."""
        missed = max(0, self.regions - lines_read)
        parts = []
        if missed >= 2 and 2 * missed >= self.regions:
            parts.append(f"{missed} of {self.regions} text regions unreadable")
        if self.small >= 2:
            parts.append(f"{self.small} regions of text about 8 px high or less, read unreliably")
        if self.shrunk >= SHRUNK_NOTE and self.regions:
            parts.append(
                f"the screen was looked at {self.shrunk:.1f} times smaller than it is: text about "
                f"{8 * self.shrunk:.0f} px high or less is read unreliably, or not found"
            )
        return f"on-screen text at {at_s:.1f} s: {'; '.join(parts)}" if parts else None


@runtime_checkable
class TextReader(Protocol):
    name: str
    # whether reading part of a frame costs less than reading it whole (``read_changed`` reads a
    # changed screen only where it changed); a reader without it is given whole frames
    reads_parts: bool

    def detect(self, frame_rgb: np.ndarray) -> TextBoxes:
        """Where the frame has text (the detection pass alone, cheaper than reading)."""

    def read(self, frame_rgb: np.ndarray, boxes: TextBoxes | None = None) -> list[TextLine]:
        """Lines of on-screen text in reading order, with boxes and confidence; ``boxes`` from
        ``detect`` on this frame skips detecting again."""
