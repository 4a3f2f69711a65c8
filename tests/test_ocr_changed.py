"""A screen read again is read only where it changed, and a line already read is not recognised a
second time: real xterms under Xvfb, the real OCR models."""

from __future__ import annotations

import numpy as np
import pytest

from bench.ocr_screens import TERMINAL_LINES, Screen, missing_tools, render
from conftest import unavailable
from perception.ocr.ocr_rapidocr import RapidOCRReader
from perception.ocr.stage import LastRead, _grown, read_changed, read_screens
from perception.records import TextLine

# The whole module runs alone (the serial group). Side by side (pytest-xdist), the two-edits test
# failed the same way in three runs (strips 44 and 80 px high instead of about 20), and in a later
# fresh run two others of these tests did (three changed parts where two were typed); they pass
# alone and under CPU load. All of them read the screens one fixture renders under Xvfb: the cause
# is not found, the renders under a loaded machine are the likeliest.
pytestmark = pytest.mark.serial

LINES = TERMINAL_LINES[:10]
TYPED = " walnut"  # typed at the end of the fourth line


class Counting:
    """The real reader, keeping the size of each image it is asked to detect text on."""

    def __init__(self, inner: RapidOCRReader) -> None:
        self.inner = inner
        self.name = inner.name
        self.reads_parts = inner.reads_parts
        self.detected: list[tuple[int, ...]] = []

    def detect(self, frame):
        self.detected.append(frame.shape)
        return self.inner.detect(frame)

    def read(self, frame, boxes=None):
        return self.inner.read(frame, boxes)


def _terminal(name: str, lines) -> np.ndarray:
    return render(Screen(name, "terminal", "xterm", "DejaVu Sans Mono", 16, tuple(lines)))


@pytest.fixture(scope="module")
def screens() -> tuple[np.ndarray, np.ndarray]:
    if why := missing_tools():
        unavailable(why)
    edited = list(LINES)
    edited[3] += TYPED
    return _terminal("changed-0", LINES), _terminal("changed-1", edited)


@pytest.mark.slow
def test_two_edits_far_apart_are_read_as_two_small_parts(screens):
    """A word typed on the fourth line and another on the tenth: two strips are read, not the
    box around both (on a desktop, a typed word and a ticking clock in a corner)."""
    before, _ = screens
    edited = list(LINES)
    edited[0] += TYPED
    edited[9] += " chestnut"
    after = _terminal("changed-far", edited)
    reader = Counting(RapidOCRReader(threads=2))
    last = LastRead()
    first = read_changed(reader, before, last, 0.0, [])
    again = read_changed(reader, after, last, 2.0, [])
    parts = reader.detected[1:]
    assert len(parts) == 2, parts
    assert all(h < 3 * 20 for h, _, _ in parts), parts  # each about one line (20 px) high
    new = [ln.text for ln in again if ln not in first]
    assert any(t.endswith(TYPED.strip()) for t in new) and any(t.endswith("chestnut") for t in new)
    between = [ln for ln in first if 90 < ln.box_xyxy[1] < 190]  # the lines between the edits
    assert len(between) >= 4 and all(ln in again for ln in between)  # kept as first read


@pytest.mark.slow
def test_a_screen_switched_back_to_is_compared_with_how_it_looked(screens):
    """Notes, then another window, then the notes again with a word typed: only the word's line is
    read, against the notes as they were before the switch, not against the other window."""
    before, after = screens
    other = _terminal("changed-other", TERMINAL_LINES[10:20])
    reader = Counting(RapidOCRReader(threads=2))
    last = LastRead()
    first = read_changed(reader, before, last, 0.0, [])
    read_changed(reader, other, last, 2.0, [])
    assert len(reader.detected) == 2 and reader.detected[1][0] > 10 * 20  # all its lines
    again = read_changed(reader, after, last, 4.0, [])
    (part,) = reader.detected[2:]
    assert part[0] < 3 * 20, part  # the typed line alone, not all the lines the other showed
    assert [ln for ln in again if ln not in first][0].text.endswith(TYPED.strip())
    assert len(last.screens) == 2  # the notes kept once, as they look now


@pytest.mark.slow
def test_a_word_typed_is_read_in_its_line_alone_and_the_rest_is_kept(screens):
    before, after = screens
    reader = Counting(RapidOCRReader(threads=2))
    last, notes = LastRead(), []
    first = read_changed(reader, before, last, 0.0, notes)
    assert reader.detected == [before.shape]
    again = read_changed(reader, after, last, 2.0, notes)
    assert len(reader.detected) == 2
    part = reader.detected[1]
    assert part[0] * part[1] < 0.1 * after.shape[0] * after.shape[1], (
        part
    )  # a strip, not the screen
    # the typed line is read again, whole, with the word; every other line is the first read's
    gone = [ln for ln in first if ln not in again]
    new = [ln for ln in again if ln not in first]
    assert len(gone) == 1 and len(new) == 1, (gone, new)
    assert new[0].text.startswith(gone[0].text.split()[0]) and TYPED.strip() in new[0].text
    assert again.index(new[0]) == first.index(gone[0])  # in its place in the reading order
    # nothing changed: no detection at all, the same lines
    assert read_changed(reader, after, last, 4.0, notes) == again
    assert len(reader.detected) == 2


@pytest.mark.slow
def test_lines_read_before_are_recalled_not_recognised_again(screens):
    before, _ = screens
    reader = RapidOCRReader(threads=2)
    first = reader.read(before)
    assert reader.lines_recalled == 0
    again = reader.read(before)
    assert again == first
    assert reader.lines_recalled >= len(first) > 5  # every crop, a dropped one (unsure) too
    plain = RapidOCRReader(threads=2, line_memory=0)
    assert plain.read(before) == first and plain.read(before) == first
    assert plain.lines_recalled == 0


@pytest.mark.slow
def test_a_changed_screen_size_or_a_reader_without_parts_reads_whole(screens):
    before, after = screens
    reader = Counting(RapidOCRReader(threads=2))
    last = LastRead()
    read_screens([before[:400], after], [0.0, 2.0], reader, [], small_edit=0.0, last=last)
    assert reader.detected == [(400, *before.shape[1:]), after.shape]
    reader.reads_parts = False
    read_changed(reader, before, last, 4.0, [])
    assert reader.detected[-1] == before.shape


def test_the_box_grows_to_hold_each_line_it_meets_and_words_beside_it():
    line = lambda x0, y0, x1, y1: TextLine("x", (x0, y0, x1, y1), 1.0)  # noqa: E731
    lines = [
        line(0, 0, 500, 20),  # crossed by the box: read whole
        line(10, 10, 300, 30),  # crossed once the box holds the first line
        line(0, 27, 300, 47),  # overlapping the second line's box by its padding alone: kept
        line(0, 200, 100, 220),  # far below: kept
        line(700, 100, 900, 120),  # to the right, far: kept
        line(520, 100, 560, 120),  # beside a line the box holds, within JOIN_PX: read with it
    ]
    assert _grown((400, 10, 450, 18), lines) == (0, 0, 500, 30)
    assert _grown((600, 100, 650, 120), lines) == (520, 100, 650, 120)
    assert _grown((1000, 500, 1010, 510), lines) == (1000, 500, 1010, 510)
