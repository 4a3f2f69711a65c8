"""Which parts of the screen changed, tile by tile, with tiles that keep changing on their own
(a clock, a blinking cursor, a progress spinner) masked out.

Whole-frame measures (a perceptual hash, a histogram, SSIM, mean difference) call a 20-character
edit "unchanged": it moves a few hundred of two million pixels. Per 32 px tile the same edit is a
mean change of several grey levels in the tiles it touches, far above zero, while a screen that did
not change differs by exactly zero (grabs are lossless).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TileChange:
    changed: int  # tiles changed since the last kept frame, volatile ones left out
    volatile_changed: int  # volatile tiles among those changed
    tiles: int  # tiles on the screen

    @property
    def fraction(self) -> float:
        return self.changed / self.tiles if self.tiles else 0.0


class TileTracker:
    """Tile differences of one monitor's grabs against the last kept frame.

    A tile is volatile when it changed, between consecutive grabs with no keyboard or mouse input,
    in at least ``volatile_hits`` of the last ``volatile_window`` such grabs.
    """

    def __init__(
        self,
        tile_px: int = 32,
        min_mean_diff: float = 0.5,
        volatile_window: int = 8,
        volatile_hits: int = 3,
    ) -> None:
        self.tile_px = tile_px
        self.min_mean_diff = min_mean_diff
        self.volatile_hits = volatile_hits
        self._idle_changes: deque[np.ndarray] = deque(maxlen=volatile_window)
        self._prev: np.ndarray | None = None  # the last grab's grey image
        self._kept: np.ndarray | None = None  # the last kept frame's grey image

    def _tiles(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        import cv2

        diff = cv2.absdiff(a, b)
        h, w = diff.shape
        th, tw = -(-h // self.tile_px), -(-w // self.tile_px)
        return cv2.resize(diff, (tw, th), interpolation=cv2.INTER_AREA) > self.min_mean_diff

    @property
    def volatile(self) -> np.ndarray | None:
        if not self._idle_changes:
            return None
        return np.sum(self._idle_changes, axis=0) >= self.volatile_hits

    def observe(self, gray: np.ndarray, had_input: bool) -> TileChange:
        """Compare a new grab (grey, uint8) with the last kept frame; learn volatile tiles from it."""
        if self._prev is not None and self._prev.shape == gray.shape and not had_input:
            self._idle_changes.append(self._tiles(gray, self._prev))
        self._prev = gray
        if self._kept is None or self._kept.shape != gray.shape:
            th, tw = -(-gray.shape[0] // self.tile_px), -(-gray.shape[1] // self.tile_px)
            return TileChange(th * tw, 0, th * tw)
        changed = self._tiles(gray, self._kept)
        volatile = self.volatile
        vol = int((changed & volatile).sum()) if volatile is not None else 0
        return TileChange(int(changed.sum()) - vol, vol, changed.size)

    def kept(self, gray: np.ndarray) -> None:
        """The frame just compared was stored: later grabs compare with it."""
        self._kept = gray

    def reset(self) -> None:
        """Forget the last kept frame (after a pause, the next grab is kept)."""
        self._kept = None
        self._prev = None
