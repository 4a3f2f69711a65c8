"""Which screenshots are read: a frame the next one only edits (a typed word, a clock's hand, both at
once far apart) is read in that next one; a page turned is read for itself."""

from __future__ import annotations

import cv2
import numpy as np

from perception.ocr.stage import TreeText, last_of_edits, superseded
from perception.records import TextLine

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


def _tree(text: str) -> TreeText:
    """What a browser's tree says of a page: its text as lines of ten words, over the screen."""
    words = text.split()
    lines = tuple(
        TextLine(" ".join(words[k : k + 10]), (40, 560 + 22 * k, 1400, 580 + 22 * k), 1.0, "atspi")
        for k in range(0, len(words), 10)
    )
    return TreeText(lines, np.ones((ROWS, COLS), bool))


def test_a_page_turned_in_a_few_rows_is_kept_where_the_tree_says_its_words_went():
    """A short page replaced by the next in a browser: few rows change, so the pixels alone call it
    an edit and its words would be in no memory; its tree lost most of its words in the next
    frame's, so it is read for itself. A word typed on loses none, and a line scrolled by a word
    a few: those frames are still read in the next."""
    first = "the reading marker for page one is quillonbbax " + " ".join(f"w{k}" for k in range(40))
    second = "the reading marker for page two is quillonbcax " + " ".join(
        f"v{k}" for k in range(40)
    )
    page, turned = _screen(LINES[:3], 0), _screen(LINES[:3], 6, "x")
    assert superseded(page, turned, 0.25)
    assert last_of_edits([page, turned]) == [1]
    assert last_of_edits([page, turned], trees=[_tree(first), _tree(second)]) == [0, 1]
    typed = first + " and more words typed"
    assert last_of_edits([page, turned], trees=[_tree(first), _tree(typed)]) == [1]
    scrolled = " ".join(first.split()[3:]) + " one more line of the page"
    assert last_of_edits([page, turned], trees=[_tree(first), _tree(scrolled)]) == [1]
    # a tree unknown for either frame: the pixels decide, as without trees
    assert last_of_edits([page, turned], trees=[_tree(first), None]) == [1]
