"""The OCR stage: on-screen text of a clip's distinct frames, gated by time and text coverage."""

from __future__ import annotations

import logging

import numpy as np

from perception.ocr.base import TextReader
from perception.records import TextLine
from perception.sources.frames import SHARP_DIFF

log = logging.getLogger(__name__)

MIN_CHANGED_ROWS = 3  # a change thinner than this (a line's codec noise) is not an edit of the text


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
    import cv2

    if a.shape != b.shape:
        return 0, a.shape[0]
    diff = cv2.absdiff(cv2.cvtColor(a, cv2.COLOR_RGB2GRAY), cv2.cvtColor(b, cv2.COLOR_RGB2GRAY))
    changed = (diff > min_diff).sum(axis=1) >= 2
    if min_rows > 1 and changed.size >= min_rows:
        # a row counts when it lies in a run of min_rows changed rows: the windows of min_rows all
        # changed, then every row such a window covers
        window = np.ones(min_rows, dtype=int)
        runs = np.convolve(changed, window, "valid") == min_rows
        changed = np.convolve(runs, window, "full") > 0
    rows = np.flatnonzero(changed)
    if rows.size == 0:
        return None
    return max(0, int(rows[0]) - margin_px), min(a.shape[0], int(rows[-1]) + 1 + margin_px)


def superseded(frame: np.ndarray, nxt: np.ndarray, small_edit: float) -> bool:
    """Whether ``nxt`` changes ``frame`` in at most ``small_edit`` of its rows (or not at all)."""
    band = changed_rows(frame, nxt)
    return band is None or band[1] - band[0] <= small_edit * frame.shape[0]


def read_screens(
    frames: list[np.ndarray],
    times_s: list[float],
    ocr: TextReader,
    notes: list[str],
    small_edit: float = 0.25,
) -> list[tuple[TextLine, ...]]:
    """Text lines of consecutive screenshots of one screen, reading only the last frame of each run
    of small edits: a frame that the next one changes in at most ``small_edit`` of its rows (a typed
    word, a ticking clock, nothing) is superseded by it and gets no lines of its own. Typing keeps a
    frame every few seconds; its text is read once, in its final state of the clip (text typed and
    deleted within one run is not read). The whole frame is read, not only the changed band:
    RapidOCR upscales a strip, so a band costs more than the screen."""
    texts: list[tuple[TextLine, ...]] = []
    for i, frame in enumerate(frames):
        if i + 1 < len(frames) and superseded(frame, frames[i + 1], small_edit):
            texts.append(())
            continue
        try:
            texts.append(_read(ocr, frame, ocr.detect(frame), times_s[i], notes))
        except (RuntimeError, ValueError) as e:
            notes.append(f"OCR failed on the frame at {times_s[i]:.1f} s: {e}")
            log.warning("OCR failed on the frame at %.1f s: %s", times_s[i], e)
            texts.append(())
    return texts


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
