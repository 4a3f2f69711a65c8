"""Which screenshots are read: a frame the next one only edits (a typed word, a clock's hand, both at
once far apart) is read in that next one; a page turned is read for itself."""

from __future__ import annotations

import cv2
import numpy as np

from perception.ocr.stage import last_of_edits, superseded

ROWS, COLS = 1080, 1920


def _screen(lines: list[str], clock_deg: float, word: str = "") -> np.ndarray:
    """A 1080p desktop: a terminal's lines in its lower half, a word typed after the last one, and
    a clock at the top right whose hand points at ``clock_deg``."""
    frame = np.full((ROWS, COLS, 3), 245, np.uint8)
    for k, text in enumerate(lines):
        y = 560 + 22 * k
        cv2.putText(
            frame, text, (40, y), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (20, 20, 20), 1, cv2.LINE_AA
        )
    if word:
        cv2.putText(
            frame, word, (40, 560 + 22 * len(lines)), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (20, 20, 20), 1
        )
    cx, cy, r = 1800, 90, 70
    cv2.circle(frame, (cx, cy), r, (60, 60, 60), 2)
    end = (
        int(cx + 0.9 * r * np.sin(np.radians(clock_deg))),
        int(cy - 0.9 * r * np.cos(np.radians(clock_deg))),
    )
    cv2.line(frame, (cx, cy), end, (0, 0, 0), 2)
    return frame


LINES = [f"line {k}: the quick brown fox jumps over the lazy dog" for k in range(16)]


def test_a_typed_word_and_a_clock_far_above_it_are_a_small_edit():
    """The rows between a clock at the top and a word typed low on the screen did not change: the
    frame before the word is read in the frame after it. Counted as the band between the two
    changes (rows 19 to 920; 77 rows changed), every typed word on a desktop with a clock was read
    on its own."""
    before = _screen(LINES, 0, "apple")
    after = _screen(LINES, 90, "apple banana")
    assert superseded(before, after, 0.25)
    assert last_of_edits([before, after]) == [1]


def test_a_page_turned_is_not_an_edit_and_nothing_changed_is():
    page = _screen(LINES, 0)
    turned = _screen([f"page two, line {k}: a different text altogether" for k in range(16)], 6)
    assert not superseded(page, turned, 0.25)
    assert superseded(page, page.copy(), 0.25)
    assert last_of_edits([page, turned, turned.copy()]) == [0, 2]


def test_frames_of_different_sizes_differ_everywhere():
    frame = _screen(LINES, 0)
    assert not superseded(frame, frame[: ROWS // 2], 0.25)
    assert not superseded(frame, np.ascontiguousarray(frame[:, : COLS // 2]), 0.25)
