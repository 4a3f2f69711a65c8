"""The OCR stage: on-screen text of a clip's distinct frames, gated by time and text coverage.

A captured screen whose apps' accessibility trees were read (``TreeText``) takes their lines as
they are, and OCR reads only the rest of it: the boxes the trees speak for are painted over with
one flat colour first (``read_beside``)."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations

import numpy as np

from perception.ocr.base import TextReader
from perception.records import TextLine
from perception.sources.frames import SHARP_DIFF

log = logging.getLogger(__name__)

MIN_CHANGED_ROWS = 3  # a change thinner than this (a line's codec noise) is not an edit of the text
# a screen that changed in a box larger than this share of it is read whole
WHOLE_SHARE = 0.6
# a screen changed in at most this share of it is an edit of the screen it was compared with, and
# takes its place among those kept (``LastRead``); one changed more is another view, kept beside it
EDIT_SHARE = 0.05
# a box that overlaps this share of a line's height or less leaves it (the padding of its box) alone
CROSS_SHARE = 0.3
# a line kept from the last read that ends this close beside a changed box is read again with it: a
# word typed after it is part of its line, not a line of its own (a few characters of screen text)
JOIN_PX = 48
# changed pixels closer than this are one changed region (a word's letters, neighbouring lines); two
# edits further apart (a typed word and a ticking clock) are read as two small regions, not as the
# box around both
REGION_GAP_PX = 24
# more changed regions than this (scattered changes all over a screen) are read as the box around them
MAX_REGIONS = 16
# a changed region is read with this much of the screen around it (its edge's letters whole)
PART_PAD_PX = 8
# the screens read last that a frame is compared with (a window switched back to is compared with
# how it looked before the switch); each is kept as grey levels, 2 MB for a 1080p screen
SCREENS_KEPT = 4
# what the boxes an accessibility tree speaks for are painted over with before OCR: one flat colour,
# the same in every frame, so OCR finds no text there, and a change under it (a page scrolled) is
# no change to read again (``LastRead`` compares the painted frames)
TREE_FILL = (128, 128, 128)
# a frame the trees speak for in this share of it or more is not given to OCR at all
TREE_WHOLE_SHARE = 0.98
# a frame whose tree loses at least this many words in the next is a page replaced (last_of_edits)
MIN_WORDS_GONE = 8
_WORD = re.compile(r"\w+")

Box = tuple[int, int, int, int]  # x0, y0, x1, y1


@dataclass(frozen=True, eq=False)  # an array inside: compared by identity
class TreeText:
    """What the apps' accessibility trees said of one frame, in the frame's pixels: their lines
    (source "atspi") and where they speak for the screen (``mask``: OCR must not read there)."""

    lines: tuple[TextLine, ...]
    mask: np.ndarray  # bool (h, w)

    @property
    def share(self) -> float:
        return float(self.mask.mean()) if self.mask.size else 0.0


def tree_text(
    lines: Sequence[TextLine],
    paint: Sequence[tuple[int, int, int, int, bool]],
    shape: tuple[int, ...],
    scale: float = 1.0,
) -> TreeText:
    """A frame's ``TreeText`` from the capture's lines and paint boxes (in the captured frame's
    pixels; ``scale``: how much smaller the frame analysed is). The boxes are painted in order onto
    the mask, a later one over an earlier one: True where the tree speaks for the box, False where
    OCR reads it (a picture inside an accessible window). Lines are clipped to the frame; a line
    wholly outside it is not on the screen and is left out."""
    h, w = shape[:2]

    def scaled(box) -> Box:
        x0, y0, x1, y1 = (round(v * scale) for v in box[:4])
        return min(max(x0, 0), w), min(max(y0, 0), h), min(max(x1, 0), w), min(max(y1, 0), h)

    mask = np.zeros((h, w), dtype=bool)
    for box in paint:
        x0, y0, x1, y1 = scaled(box)
        mask[y0:y1, x0:x1] = bool(box[4])
    shown = []
    for line in lines:
        x0, y0, x1, y1 = scaled(line.box_xyxy)
        if x1 > x0 and y1 > y0:
            shown.append(replace(line, box_xyxy=(x0, y0, x1, y1)))
    return TreeText(tuple(shown), mask)


def read_beside(
    ocr: TextReader | None,
    frame: np.ndarray,
    tree: TreeText,
    last: LastRead,
    at_s: float,
    notes: list[str],
) -> tuple[TextLine, ...]:
    """The tree's lines and, in reading order among them, OCR's lines of the rest of the frame:
    read (``read_changed``, against the screens of ``last``) on a copy with the mask painted
    ``TREE_FILL``, and an OCR line whose middle lies in the mask left out (one source per line).
    A frame the trees speak for in ``TREE_WHOLE_SHARE`` of it or more is not read by OCR."""
    lines = tree.lines
    if ocr is not None and tree.share < TREE_WHOLE_SHARE:
        import cv2

        painted = frame.copy()  # painted through the mask by OpenCV: numpy's took 10 times longer
        fill = np.empty_like(frame)
        fill[...] = TREE_FILL
        cv2.copyTo(fill, tree.mask.view(np.uint8), painted)
        read = read_changed(ocr, painted, last, at_s, notes)
        lines += tuple(ln for ln in read if not _middle_masked(ln.box_xyxy, tree.mask))
    return tuple(sorted(lines, key=_reading_order))


def _middle_masked(box: Box, mask: np.ndarray) -> bool:
    h, w = mask.shape
    cx, cy = (box[0] + box[2]) // 2, (box[1] + box[3]) // 2
    return bool(mask[min(max(cy, 0), h - 1), min(max(cx, 0), w - 1)]) if mask.size else False


def read_frames(
    frames: list[np.ndarray],
    times_s: list[float],
    ocr: TextReader,
    every_s: float,
    min_text_fraction: float,
    notes: list[str],
    small_edit: float | None = 0.25,
    returns: dict[int, int] | None = None,
) -> list[tuple[TextLine, ...]]:
    """Text lines per frame: frames less than ``every_s`` after the last one looked at, and frames
    whose detected text covers less than ``min_text_fraction`` (0: no gate), get none. A frame the
    next one edits only a little (``superseded``: a word typed on a still screen) gets none either:
    its text is read once, in the next frame, as screenshots are (``read_screens``; None: every
    frame stands alone). A frame that shows again what an earlier frame looked at showed
    (``returns``, from ``returning_views``) gets that frame's lines without a second look. A frame
    OCR fails on gets none and a note."""
    texts: list[tuple[TextLine, ...]] = [()] * len(frames)
    looked: set[int] = set()
    returns = returns or {}
    last_t = -float("inf")
    for i, frame in enumerate(frames):
        if times_s[i] - last_t < every_s or (
            small_edit is not None
            and i + 1 < len(frames)
            and superseded(frame, frames[i + 1], small_edit)
        ):
            continue
        last_t = times_s[i]
        looked.add(i)
        if returns.get(i) in looked:
            texts[i] = texts[returns[i]]
            continue
        try:
            boxes = ocr.detect(frame)
            if boxes.fraction >= min_text_fraction:
                texts[i] = _read(
                    ocr, frame, boxes, times_s[i], notes
                )  # the gate's detection, not a second one
        except (RuntimeError, ValueError) as e:
            notes.append(f"OCR failed on the frame at {times_s[i]:.1f} s: {e}")
            log.warning("OCR failed on the frame at %.1f s: %s", times_s[i], e)
    return texts


def changed_regions(
    a: np.ndarray,
    b: np.ndarray,
    min_diff: int = SHARP_DIFF,
    margin_px: int = 8,
    min_rows: int = MIN_CHANGED_ROWS,
    gap_px: int = REGION_GAP_PX,
) -> list[Box]:
    """The boxes (x0, y0, x1, y1, widened by ``margin_px``) of the separate regions in which two
    grey images of one size differ; changed pixels closer than ``gap_px`` are one region. Noise is
    left out: a changed pixel counts only in a run of ``min_rows`` changed rows and one of as many
    changed columns. An empty list when they do not differ."""
    import cv2

    changed = cv2.absdiff(a, b) > min_diff
    rows = _runs(changed.sum(axis=1) >= 2, min_rows)
    cols = _runs(changed.sum(axis=0) >= 2, min_rows)
    if not rows.any() or not cols.any():
        return []
    mask = (changed & rows[:, None] & cols[None, :]).astype(np.uint8)
    joined = cv2.dilate(mask, np.ones((gap_px, gap_px), np.uint8))
    count, labels, stats, _ = cv2.connectedComponentsWithStats(joined, connectivity=8)
    height, width = mask.shape
    if count - 1 > MAX_REGIONS:
        ys, xs = np.nonzero(mask)
        tight = [(int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1)]
    else:
        tight = []
        for label in range(1, count):
            x, y, w, h = (int(v) for v in stats[label, :4])
            own = mask[y : y + h, x : x + w] & (labels[y : y + h, x : x + w] == label)
            ys, xs = np.nonzero(own)
            if ys.size:  # the dilation's own pixels aside
                tight.append(
                    (
                        x + int(xs.min()),
                        y + int(ys.min()),
                        x + int(xs.max()) + 1,
                        y + int(ys.max()) + 1,
                    )
                )
    return [
        (
            max(0, x0 - margin_px),
            max(0, y0 - margin_px),
            min(width, x1 + margin_px),
            min(height, y1 + margin_px),
        )
        for x0, y0, x1, y1 in tight
    ]


def _diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    import cv2

    return cv2.absdiff(cv2.cvtColor(a, cv2.COLOR_RGB2GRAY), cv2.cvtColor(b, cv2.COLOR_RGB2GRAY))


def _runs(changed: np.ndarray, min_rows: int) -> np.ndarray:
    """The rows (or columns) that lie in a run of ``min_rows`` changed ones (the windows of
    min_rows all changed, then every row such a window covers)."""
    if min_rows > 1 and changed.size >= min_rows:
        window = np.ones(min_rows, dtype=int)
        runs = np.convolve(changed, window, "valid") == min_rows
        return np.convolve(runs, window, "full") > 0
    return changed


def _changed_row_mask(a: np.ndarray, b: np.ndarray, min_diff: int, min_rows: int) -> np.ndarray:
    """Per row of two same-sized RGB frames, whether it changed: two or more of its pixels moved
    by over ``min_diff`` grey levels, in a run of at least ``min_rows`` such rows (``_runs``)."""
    return _runs((_diff(a, b) > min_diff).sum(axis=1) >= 2, min_rows)


def superseded(frame: np.ndarray, nxt: np.ndarray, small_edit: float) -> bool:
    """Whether ``nxt`` changes ``frame`` in at most ``small_edit`` of its rows (or not at all). The
    rows are counted where they changed, not as the band from the first to the last: a word typed
    low on the screen while a clock ticks at its top is two small changes, not an edit of the
    screen between them (a desktop's clock made every typed word a frame of its own to read).
    Rows count only in runs of ``MIN_CHANGED_ROWS``, compression noise aside. Frames of different
    sizes differ everywhere."""
    if frame.shape != nxt.shape:
        return False
    changed = _changed_row_mask(frame, nxt, SHARP_DIFF, MIN_CHANGED_ROWS)
    return int(changed.sum()) <= small_edit * frame.shape[0]


@dataclass
class SeenScreen:
    """A screen read: its grey levels (what the next frame is compared with) and its lines."""

    gray: np.ndarray
    lines: tuple[TextLine, ...]


@dataclass
class LastRead:
    """The last few screens read (``keep``, the newest first) and their lines: the next frame is
    read only where it differs from the one it differs least from, so a window switched back to is
    compared with how it looked then, not with the other window. Kept from clip to clip by a
    watcher (``Perceivers.last_read``); any screen will do as a base, since what differs from it is
    read again."""

    screens: list[SeenScreen] = field(default_factory=list)
    keep: int = SCREENS_KEPT

    def nearest(self, gray: np.ndarray) -> tuple[int, list[Box]] | None:
        """The kept screen of this size that ``gray`` differs from in the fewest pixels (its
        index; the newest of those that differ as little), and where they differ
        (``changed_regions``, found for that screen alone: the count takes a fiftieth of their
        time); None when none is of this size."""
        import cv2

        best: tuple[int, int] | None = None
        for k, seen in enumerate(self.screens):
            if seen.gray.shape != gray.shape:
                continue
            diff = cv2.absdiff(seen.gray, gray)
            count = cv2.countNonZero(cv2.threshold(diff, SHARP_DIFF, 255, cv2.THRESH_BINARY)[1])
            if best is None or count < best[0]:
                best = (count, k)
            if not count:
                break
        if best is None:
            return None
        return best[1], changed_regions(self.screens[best[1]].gray, gray)

    def remember(self, gray: np.ndarray, lines: tuple[TextLine, ...], edits: int | None) -> None:
        """The screen just read, the newest; ``edits``: the kept screen it only edits (a word
        typed, a clock's hand moved: it takes that one's place), None for another view (a
        window switched to, a page turned: the others stay, the oldest beyond ``keep`` goes)."""
        if edits is not None:
            del self.screens[edits]
        self.screens.insert(0, SeenScreen(gray, lines))
        del self.screens[self.keep :]


def last_of_edits(
    frames: list[np.ndarray],
    small_edit: float = 0.25,
    trees: Sequence[TreeText | None] = (),
) -> list[int]:
    """The frames that the next one does not supersede (``superseded``): the last of each run of
    small edits, and the last frame. ``trees``: per frame, what the accessibility trees said of it,
    where known; a frame whose tree loses more than ``small_edit`` of its words in the next frame's
    (``words_gone``) is kept however few rows changed: a browser's page turned, its short text a
    fifth of the screen's rows, would otherwise be in no memory."""

    def tree(i: int) -> TreeText | None:
        return trees[i] if i < len(trees) else None

    return [
        i
        for i in range(len(frames))
        if i + 1 == len(frames)
        or not superseded(frames[i], frames[i + 1], small_edit)
        or words_gone(tree(i), tree(i + 1), small_edit)
    ]


def words_gone(tree: TreeText | None, nxt: TreeText | None, share: float) -> bool:
    """Whether more than ``share`` of the distinct words of ``tree``'s lines, and at least
    ``MIN_WORDS_GONE`` of them, are nowhere in ``nxt``'s: a page replaced, not a line typed on or
    scrolled by a word (in the ordinary hour a typed word's frame lost at most 4 of 37 words, a
    page turned 24 to 51 of 68 to 88). False where either tree is unknown."""
    if tree is None or nxt is None:
        return False
    words = set(_WORD.findall(" ".join(line.text.lower() for line in tree.lines)))
    later = set(_WORD.findall(" ".join(line.text.lower() for line in nxt.lines)))
    gone = len(words - later)
    return gone >= MIN_WORDS_GONE and gone > share * len(words)


def read_screens(
    frames: list[np.ndarray],
    times_s: list[float],
    ocr: TextReader | None,
    notes: list[str],
    small_edit: float = 0.25,
    last: LastRead | None = None,
    shown: list[int] | None = None,
    trees: Sequence[TreeText | None] = (),
) -> list[tuple[TextLine, ...]]:
    """Text lines of consecutive screenshots of one screen, reading only the last frame of each run
    of small edits: a frame that the next one changes in at most ``small_edit`` of its rows (a typed
    word, a ticking clock, nothing) is superseded by it and gets no lines of its own. Typing keeps a
    frame every few seconds; its text is read once, in its final state of the clip (text typed and
    deleted within one run is not read). A frame is read only where it differs from the last one
    read (``read_changed``). ``shown``: those last frames (``last_of_edits``), where known.
    ``trees``: per frame, what accessibility trees said of it (None: nothing), whose lines it takes
    and whose boxes OCR leaves alone (``read_beside``); without ``ocr`` only those lines."""
    last = last if last is not None else LastRead()
    read = set(shown if shown is not None else last_of_edits(frames, small_edit))
    texts: list[tuple[TextLine, ...]] = []
    for i, frame in enumerate(frames):
        tree = trees[i] if i < len(trees) else None
        if tree is not None and tree.mask.shape != frame.shape[:2]:
            tree = None  # not this frame's (it was resized after): OCR reads it all, as before
        if i not in read:
            texts.append(())
            continue
        try:
            if tree is not None:
                texts.append(read_beside(ocr, frame, tree, last, times_s[i], notes))
            else:
                texts.append(
                    read_changed(ocr, frame, last, times_s[i], notes) if ocr is not None else ()
                )
        except (RuntimeError, ValueError) as e:
            notes.append(f"OCR failed on the frame at {times_s[i]:.1f} s: {e}")
            log.warning("OCR failed on the frame at %.1f s: %s", times_s[i], e)
            texts.append(tree.lines if tree is not None else ())
    return texts


def read_changed(
    ocr: TextReader, frame: np.ndarray, last: LastRead, at_s: float, notes: list[str]
) -> tuple[TextLine, ...]:
    """The frame's lines, read where it differs from the screen of ``last`` it differs least from
    (``LastRead.nearest``): the lines of that screen that lie wholly outside every changed region
    are kept, and each region (grown until no kept line crosses its edge, ``_grown_all``) is read
    on its own. The whole frame is read when there is no screen of its size to compare with, the
    regions cover more than ``WHOLE_SHARE`` of it, or the reader's detection costs more on a part
    than on the screen (``TextReader.reads_parts`` false). The frame is remembered in ``last``."""
    import cv2

    gray = cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY)
    near = last.nearest(gray) if getattr(ocr, "reads_parts", False) else None
    screen = frame.shape[0] * frame.shape[1]
    edits = None
    if near is None:
        lines = tuple(_read(ocr, frame, ocr.detect(frame), at_s, notes))
    else:
        k, regions = near
        base = last.screens[k].lines
        boxes = _grown_all(regions, base)
        area = _area(boxes)
        edits = k if area <= EDIT_SHARE * screen else None
        if area > WHOLE_SHARE * screen:
            lines = tuple(_read(ocr, frame, ocr.detect(frame), at_s, notes))
        else:
            read = [ln for box in boxes for ln in _read_part(ocr, frame, box, at_s, notes)]
            kept = [ln for ln in base if not any(_crosses(ln.box_xyxy, box) for box in boxes)]
            lines = tuple(sorted(kept + read, key=_reading_order))
    last.remember(gray, lines, edits)
    return lines


def _read_part(
    ocr: TextReader, frame: np.ndarray, box: Box, at_s: float, notes: list[str]
) -> list[TextLine]:
    """The lines of ``box`` in the frame's coordinates. The box is read with ``PART_PAD_PX`` of the
    frame around it, so that a letter at its edge that did not change (a line beginning as the one
    before it did) is not cut; a line whose middle lies outside the box (the edge of a line kept
    above or below) is left to the lines kept."""
    h, w = frame.shape[:2]
    x0, y0 = max(0, box[0] - PART_PAD_PX), max(0, box[1] - PART_PAD_PX)
    x1, y1 = min(w, box[2] + PART_PAD_PX), min(h, box[3] + PART_PAD_PX)
    part = np.ascontiguousarray(frame[y0:y1, x0:x1])
    lines = [_moved(ln, x0, y0) for ln in _read(ocr, part, ocr.detect(part), at_s, notes)]
    return [ln for ln in lines if _middle_in(ln.box_xyxy, box)]


def _middle_in(line: Box, box: Box) -> bool:
    cx, cy = (line[0] + line[2]) / 2, (line[1] + line[3]) / 2
    return box[0] <= cx < box[2] and box[1] <= cy < box[3]


def _crosses(
    line: tuple[int, int, int, int], box: tuple[int, int, int, int], join: int = 0
) -> bool:
    """Whether ``box`` (widened by ``join`` to either side) crosses a line's text: it overlaps the
    line's columns and more than ``CROSS_SHARE`` of its height. A detector pads each line's box, so
    the boxes of lines one above the other overlap a little; such an overlap alone does not count."""
    x0, y0, x1, y1 = line
    overlap = min(y1, box[3]) - max(y0, box[1])
    return x0 < box[2] + join and box[0] - join < x1 and overlap > CROSS_SHARE * (y1 - y0)


def _grown(box: Box, lines) -> Box:
    """``box`` grown to hold every line that it (as grown, and ``JOIN_PX`` to either side) crosses:
    a line is read whole or kept, and a word added beside one is read with it."""
    while True:
        grown = box
        for ln in lines:
            if _crosses(ln.box_xyxy, grown, JOIN_PX):
                lx0, ly0, lx1, ly1 = ln.box_xyxy
                grown = (
                    min(grown[0], lx0),
                    min(grown[1], ly0),
                    max(grown[2], lx1),
                    max(grown[3], ly1),
                )
        if grown == box:
            return box
        box = grown


def _grown_all(boxes: list[Box], lines) -> list[Box]:
    """Each box ``_grown``, and boxes that then overlap joined into one (and grown again), until
    none overlap: no line is cut by a box's edge or read in two."""
    boxes = [_grown(box, lines) for box in boxes]
    while pair := next(((a, b) for a, b in combinations(boxes, 2) if _overlap(a, b)), None):
        a, b = pair
        boxes.remove(a)
        boxes.remove(b)
        boxes.append(
            _grown((min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])), lines)
        )
    return boxes


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _area(boxes: list[Box]) -> int:
    return sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in boxes)


def _moved(line: TextLine, dx: int, dy: int) -> TextLine:
    x0, y0, x1, y1 = line.box_xyxy
    return replace(line, box_xyxy=(x0 + dx, y0 + dy, x1 + dx, y1 + dy))


def _reading_order(line: TextLine) -> tuple[int, int]:
    return line.box_xyxy[1] // 10, line.box_xyxy[0]  # as the readers order a frame's lines


def _read(
    ocr: TextReader, frame: np.ndarray, boxes, at_s: float, notes: list[str]
) -> tuple[TextLine, ...]:
    """The frame's lines; text found but not (reliably) readable is said once per clip in ``notes``."""
    lines = tuple(ocr.read(frame, boxes))
    note = boxes.unreadable_note(len(lines), at_s)
    if note and not any(n.startswith("on-screen text at ") for n in notes):
        notes.append(note)
        log.info("%s", note)
    return lines
