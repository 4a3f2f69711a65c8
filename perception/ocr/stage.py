"""The OCR stage: on-screen text of a clip's distinct frames, gated by time and text coverage."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import numpy as np

from perception.ocr.base import TextReader
from perception.records import TextLine
from perception.sources.frames import SHARP_DIFF

log = logging.getLogger(__name__)

MIN_CHANGED_ROWS = 3  # a change thinner than this (a line's codec noise) is not an edit of the text
# a screen that changed in a box larger than this share of it is read whole
WHOLE_SHARE = 0.6
# a box that overlaps this share of a line's height or less leaves it (the padding of its box) alone
CROSS_SHARE = 0.3
# a line kept from the last read that ends this close beside a changed box is read again with it: a
# word typed after it is part of its line, not a line of its own (a few characters of screen text)
JOIN_PX = 48


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


def changed_rows(
    a: np.ndarray,
    b: np.ndarray,
    min_diff: int = SHARP_DIFF,
    margin_px: int = 8,
    min_rows: int = MIN_CHANGED_ROWS,
) -> tuple[int, int] | None:
    """The band of rows (y0, y1) in which two frames of one screen differ, widened by ``margin_px``;
    None when they do not differ. ``min_diff`` ignores compression noise: JPEG's, and H.264's, which
    moves the thin lines of a still screen by tens of grey levels from frame to frame. That noise
    can still move a single thin line past ``min_diff``, so only runs of at least ``min_rows``
    changed rows count: a glyph spans more rows than a line is thick. Frames of different sizes
    differ everywhere."""
    if a.shape != b.shape:
        return 0, a.shape[0]
    return _span((_diff(a, b) > min_diff).sum(axis=1) >= 2, min_rows, margin_px)


def changed_box(
    a: np.ndarray,
    b: np.ndarray,
    min_diff: int = SHARP_DIFF,
    margin_px: int = 8,
    min_rows: int = MIN_CHANGED_ROWS,
) -> tuple[int, int, int, int] | None:
    """The box (x0, y0, x1, y1) in which two frames of one size differ: ``changed_rows``, and the
    same for columns; None when they do not differ."""
    changed = _diff(a, b) > min_diff
    rows = _span(changed.sum(axis=1) >= 2, min_rows, margin_px)
    cols = _span(changed.sum(axis=0) >= 2, min_rows, margin_px)
    if rows is None or cols is None:
        return None
    return cols[0], rows[0], cols[1], rows[1]


def _diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    import cv2

    return cv2.absdiff(cv2.cvtColor(a, cv2.COLOR_RGB2GRAY), cv2.cvtColor(b, cv2.COLOR_RGB2GRAY))


def _span(changed: np.ndarray, min_rows: int, margin_px: int) -> tuple[int, int] | None:
    """First and last changed row (or column), widened by ``margin_px``: a row counts when it lies
    in a run of ``min_rows`` changed ones (the windows of min_rows all changed, then every row such
    a window covers)."""
    if min_rows > 1 and changed.size >= min_rows:
        window = np.ones(min_rows, dtype=int)
        runs = np.convolve(changed, window, "valid") == min_rows
        changed = np.convolve(runs, window, "full") > 0
    rows = np.flatnonzero(changed)
    if rows.size == 0:
        return None
    return max(0, int(rows[0]) - margin_px), min(changed.size, int(rows[-1]) + 1 + margin_px)


def superseded(frame: np.ndarray, nxt: np.ndarray, small_edit: float) -> bool:
    """Whether ``nxt`` changes ``frame`` in at most ``small_edit`` of its rows (or not at all)."""
    band = changed_rows(frame, nxt)
    return band is None or band[1] - band[0] <= small_edit * frame.shape[0]


@dataclass
class LastRead:
    """The last screen read and its lines: the next one is read only where it differs. Kept from
    clip to clip by a watcher (``Perceivers.last_read``); any frame will do as a base, since what
    differs from it is read again."""

    frame: np.ndarray | None = None
    lines: tuple[TextLine, ...] = ()


def read_screens(
    frames: list[np.ndarray],
    times_s: list[float],
    ocr: TextReader,
    notes: list[str],
    small_edit: float = 0.25,
    last: LastRead | None = None,
) -> list[tuple[TextLine, ...]]:
    """Text lines of consecutive screenshots of one screen, reading only the last frame of each run
    of small edits: a frame that the next one changes in at most ``small_edit`` of its rows (a typed
    word, a ticking clock, nothing) is superseded by it and gets no lines of its own. Typing keeps a
    frame every few seconds; its text is read once, in its final state of the clip (text typed and
    deleted within one run is not read). A frame is read only where it differs from the last one
    read (``read_changed``)."""
    last = last if last is not None else LastRead()
    texts: list[tuple[TextLine, ...]] = []
    for i, frame in enumerate(frames):
        if i + 1 < len(frames) and superseded(frame, frames[i + 1], small_edit):
            texts.append(())
            continue
        try:
            texts.append(read_changed(ocr, frame, last, times_s[i], notes))
        except (RuntimeError, ValueError) as e:
            notes.append(f"OCR failed on the frame at {times_s[i]:.1f} s: {e}")
            log.warning("OCR failed on the frame at %.1f s: %s", times_s[i], e)
            texts.append(())
    return texts


def read_changed(
    ocr: TextReader, frame: np.ndarray, last: LastRead, at_s: float, notes: list[str]
) -> tuple[TextLine, ...]:
    """The frame's lines, read where it differs from ``last.frame`` (a screen of the same size):
    the lines of the last read that lie wholly outside the changed box are kept, the box (grown
    until no kept line crosses its edge) is read. The whole frame is read when there is no such
    base, the box covers more than ``WHOLE_SHARE`` of it, or the reader's detection costs more on
    a strip than on the screen (``TextReader.reads_parts`` false). ``last`` becomes this frame."""
    box = None
    if (
        last.frame is not None
        and last.frame.shape == frame.shape
        and getattr(ocr, "reads_parts", False)
    ):
        box = changed_box(last.frame, frame)
        if box is None:  # nothing new
            last.frame = frame
            return last.lines
        box = _grown(box, last.lines)
        if (box[2] - box[0]) * (box[3] - box[1]) > WHOLE_SHARE * frame.shape[0] * frame.shape[1]:
            box = None
    if box is None:
        lines = tuple(_read(ocr, frame, ocr.detect(frame), at_s, notes))
    else:
        x0, y0, x1, y1 = box
        part = np.ascontiguousarray(frame[y0:y1, x0:x1])
        read = [_moved(ln, x0, y0) for ln in _read(ocr, part, ocr.detect(part), at_s, notes)]
        kept = [ln for ln in last.lines if not _crosses(ln.box_xyxy, box)]
        lines = tuple(sorted(kept + read, key=_reading_order))
    last.frame, last.lines = frame, lines
    return lines


def _crosses(
    line: tuple[int, int, int, int], box: tuple[int, int, int, int], join: int = 0
) -> bool:
    """Whether ``box`` (widened by ``join`` to either side) crosses a line's text: it overlaps the
    line's columns and more than ``CROSS_SHARE`` of its height. A detector pads each line's box, so
    the boxes of lines one above the other overlap a little; such an overlap alone does not count."""
    x0, y0, x1, y1 = line
    overlap = min(y1, box[3]) - max(y0, box[1])
    return x0 < box[2] + join and box[0] - join < x1 and overlap > CROSS_SHARE * (y1 - y0)


def _grown(box: tuple[int, int, int, int], lines) -> tuple[int, int, int, int]:
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
