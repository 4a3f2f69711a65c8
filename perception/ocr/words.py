"""Word boundaries of a recognised line from its pixels.

PP-OCR's recogniser decides spaces from a crop resized to 48 px high, and on screen text it often
gets them wrong: it emits few spaces (it was trained mostly on Chinese), and whether it emits one
moves with the crop's neighbours in a batch and with small numeric differences (``mnemo bench
ocr`` counts the words read whole and the boundaries lost or invented).

Screen text has what scene text lacks: a flat background, crisp ink, and a blank column run where
every space is. So a line keeps the model's characters, and its spaces are corrected by its pixels:
the CTC decoder gives each character its position in the crop, the crop's ink (in the line's own
rows) gives the blank runs between characters, and

- a blank run at least ``ADD`` character pitches wide is a space, whatever the model read (a
  monospace space is a whole cell; a narrow glyph such as ``.`` leaves under half a cell);
- proportional text, whose gaps fall in two groups with nothing between ``NARROW`` and ``WIDE``
  pitches, has its spaces at the wide group;
- a space the model put over a blank run narrower than ``DROP`` pitches is dropped;
- an underscore read where the line's columns hold no ink is a space.

A crop that is not clean screen text (low contrast, a background that is not flat, soft edges as
in text scaled down into a video frame) keeps the model's spaces.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

ADD = 0.9  # a blank run this many character pitches wide is a space, whatever the model read
NARROW, WIDE, JUMP = (
    0.35,
    0.55,
    1.8,
)  # proportional text: letter gaps and word spaces apart (_word_gap)
DROP = 0.3  # a model's space over no blank run this wide is not one
MIN_CONTRAST = 60  # grey levels between background and ink for the pixels to be trusted
MIN_BACKGROUND = 0.5  # share of a clean crop's pixels at the background's level
# anti-aliased screen text at 10-18 px has 0.8-1.4 edge pixels (between background and ink) per ink
# pixel; text scaled down into a video frame 1.2-3.2 (measured on the bench screens and opencv-doc)
MAX_BLUR = 1.6
UNDERSCORE = 0.6  # an underscore lies this far below the line's band at most (in band heights)
# ink this bright (of the line's ink level) inside a blank run is dim text (a comment, a shell's
# suggestion, a greyed-out label beside bright text), not a gap: the line's spacing is not sure
DIM_INK = 0.2
DIM_GLYPH_PX = 3  # columns of such ink side by side: a glyph, not the fringe of a bright one
UNDERLINE = 0.5  # a row under the band inked unbroken across this share of the line is an underline


@dataclass(frozen=True)
class Char:
    text: str
    x: float  # centre in the crop's pixels
    confidence: float


def ctc_chars(
    probs: np.ndarray, charset: list[str], crop_width: int, input_width: int, padded_width: int
) -> list[Char]:
    """Greedy CTC decoding of one line (``probs``: time steps x classes, class 0 the blank) keeping
    each character's centre, mapped to the crop's pixels (``input_width``: the crop's width in the
    model's input, ``padded_width`` that input's width with its padding)."""
    best = probs.argmax(axis=1)
    step = padded_width / probs.shape[0] * crop_width / input_width if input_width else 0.0
    out: list[Char] = []
    t = 0
    while t < len(best):
        k = best[t]
        end = t
        while end + 1 < len(best) and best[end + 1] == k:
            end += 1
        if k != 0:
            out.append(
                Char(charset[k], (t + end + 1) / 2 * step, float(probs[t : end + 1, k].max()))
            )
        t = end + 1
    return out


@dataclass(frozen=True)
class LinePixels:
    """What a line crop's pixels say about its spacing."""

    runs: list[tuple[int, int]]  # blank column runs between the line's ink, (start, end) columns
    underline: np.ndarray  # per column: any ink in the line's rows or down to an underscore's depth


def _inked(crop_rgb: np.ndarray) -> tuple[np.ndarray, float, bool] | None:
    """Each pixel's distance from the background level, the ink's level, and whether the ink's
    edges are soft (``MAX_BLUR``); None when the crop is not text on a flat background with
    contrast (a photo, a gradient, a tiny crop)."""
    grey = (
        crop_rgb.astype(np.float32).mean(axis=2)
        if crop_rgb.ndim == 3
        else crop_rgb.astype(np.float32)
    )
    h, w = grey.shape
    if h < 6 or w < 6:
        return None
    background = float(
        np.bincount(np.round(grey).astype(np.int64).ravel()).argmax()
    )  # the commonest level
    distance = np.abs(grey - background)
    ink_level = float(np.percentile(distance, 99))
    if ink_level < MIN_CONTRAST or (distance < 10).mean() < MIN_BACKGROUND:
        return None
    ink = distance > ink_level / 2
    edge = (distance > 0.15 * ink_level) & (distance < 0.85 * ink_level)
    return distance, ink_level, bool(edge.sum() > MAX_BLUR * ink.sum())


def soft_text(crop_rgb: np.ndarray) -> bool:
    """Whether a line crop is text with soft edges: screen text scaled down into a video frame."""
    inked = _inked(crop_rgb)
    return inked is not None and inked[2]


def blank_runs(crop_rgb: np.ndarray) -> LinePixels | None:
    """The runs of blank columns between the ink of a line crop, or None when the crop is not clean
    screen text: too little contrast, a background that is not flat (a photo, a gradient), or soft
    edges (``MAX_BLUR``)."""
    measured = _inked(crop_rgb)
    if measured is None or measured[2]:  # soft edges: scaled-down video text, its blank runs unsure
        return None
    distance, ink_level, _ = measured
    h = distance.shape[0]
    ink = distance > ink_level / 2
    # an underline (a link, a label) is not ink between words; it lies under the ink's middle row
    rows = ink.sum(axis=1)
    written = ink
    ink = _without_underline(ink, int(np.searchsorted(np.cumsum(rows), rows.sum() / 2)) + 1)
    # the line's own rows: its band of dense rows (x-height to baseline, mostly) with room for
    # ascenders and descenders, so a neighbour line's descenders above it do not fill its gaps
    rows = ink.sum(axis=1)
    first, last = _densest_band(rows >= 0.2 * rows.max(), rows)
    band = last - first + 1
    top, bottom = max(0, int(first - 0.3 * band)), min(h, int(last + 0.45 * band) + 1)
    # an underscore's columns are not blank: it may lie below the band (UNDERSCORE), or on an underline
    depth = max(bottom, min(h, int(last + UNDERSCORE * band) + 1))
    columns = np.asarray(ink[top:depth].any(axis=0))  # (numpy's stubs: a scalar or an array)
    inked = np.flatnonzero(columns)
    if len(inked) < 2:
        return None
    runs = []
    start = None
    for x in range(int(inked[0]), int(inked[-1]) + 1):
        if not columns[x] and start is None:
            start = x
        elif columns[x] and start is not None:
            runs.append((start, x))
            start = None
    # dim ink a glyph wide inside a blank run, in the line's dense band (x-height to baseline: a dim
    # word's letters are there; the crop's edge rows, blurred by its warp, are not looked at)
    faint = np.asarray((distance[first : last + 1] > DIM_INK * ink_level).any(axis=0))
    if any(_longest_run(faint[a + 1 : b - 1]) >= DIM_GLYPH_PX for a, b in runs):
        return None  # dim text in a "blank" run (a comment, a suggestion, greyed-out text): unsure
    return LinePixels(runs, np.asarray(written[top:depth].any(axis=0)))


def _without_underline(rows: np.ndarray, below: int) -> np.ndarray:
    """``rows`` (the line's ink, top down) with the rows from ``below`` down that hold one unbroken
    run of ink across most of the line blanked (a rule scaled into a video frame spreads over two
    rows): underlined text's rule joins its words."""
    inked = np.flatnonzero(rows.any(axis=0))
    if len(inked) < 2:
        return rows
    span = inked[-1] - inked[0] + 1
    out = rows.copy()
    for y in range(max(0, below), rows.shape[0]):
        pair = np.asarray(rows[y : y + 2].any(axis=0))
        if _longest_run(pair) >= UNDERLINE * span:
            out[y : y + 2] = False
    return out


def _longest_run(row: np.ndarray) -> int:
    """The longest run of True in a 1-d boolean array."""
    if not row.any():
        return 0
    edges = np.diff(np.concatenate(([0], row.astype(np.int8), [0])))
    return int((np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)).max())


def _densest_band(dense: np.ndarray, rows: np.ndarray) -> tuple[int, int]:
    """First and last row of the run of dense rows holding the most ink: the line's own band, not
    a neighbour line's that the crop cuts into."""
    best, best_ink, start = (0, len(dense) - 1), -1, None
    for y in range(len(dense) + 1):
        if y < len(dense) and dense[y]:
            start = y if start is None else start
        elif start is not None:
            ink = int(rows[start:y].sum())
            if ink > best_ink:
                best, best_ink = (start, y - 1), ink
            start = None
    return best


def spaced(chars: list[Char], pixels: LinePixels | None) -> str:
    """The line's text, its spaces corrected by the blank runs: a space added where the blank run
    between two characters is at least ``ADD`` character pitches wide, the model's space dropped
    where it is under ``DROP``; in between the model decides. ``pixels`` None: the model's spaces."""
    if pixels is None:
        return "".join(c.text for c in chars).strip()
    glyphs = [c for c in chars if not c.text.isspace()]
    if len(glyphs) < 2:
        return "".join(c.text for c in glyphs)
    runs = pixels.runs
    model_space = set()
    for i, c in enumerate(chars):
        if c.text.isspace():
            model_space.add(sum(1 for g in chars[:i] if not g.text.isspace()))  # before this glyph
    widest = []
    for left, right in zip(glyphs, glyphs[1:]):
        widest.append(max((b - a for a, b in runs if left.x <= (a + b) / 2 <= right.x), default=0))
    # an underscore's own cell is blank where the pixels lose it (on an underline): no space beside it
    beside_underscore = [
        left.text == "_" or right.text == "_" for left, right in zip(glyphs, glyphs[1:])
    ]
    pitch = (glyphs[-1].x - glyphs[0].x) / (len(glyphs) - 1 + len(model_space))
    add = min(ADD, _word_gap(widest, pitch))
    spaces = set(model_space)
    for _ in range(
        2
    ):  # the pitch counts the spaces as cells: once more after adding the missing ones
        spaces = {
            i
            for i in range(1, len(glyphs))
            if (widest[i - 1] >= add * pitch and not beside_underscore[i - 1])
            or (i in model_space and widest[i - 1] >= DROP * pitch)
        }
        pitch = (glyphs[-1].x - glyphs[0].x) / (len(glyphs) - 1 + len(spaces))
    out = []
    for i, g in enumerate(glyphs):
        if i in spaces:
            out.append(" ")
        x = min(max(int(round(g.x)), 0), len(pixels.underline) - 1)
        if g.text == "_" and not pixels.underline[max(0, x - 1) : x + 2].any():
            out.append(" ")  # an underscore read where the pixels are blank: a space
        else:
            out.append(g.text)
    return " ".join("".join(out).split())


def _word_gap(widths: Sequence[float], pitch: float) -> float:
    """The word space of proportional text, in pitches. When no blank run of the line is between
    ``NARROW`` and ``WIDE`` pitches and the widest under it and the narrowest over it are ``JUMP``
    times apart, the runs over it are spaces (a proportional font's letter gaps stay under a third
    of a pitch, its spaces over a half). Else ``ADD``: monospace text has runs in between, beside
    its narrow glyphs (``.``, ``:``, ``-``, ``r``, ``t``), so only a run near a whole cell is sure."""
    ratios = sorted(w / pitch for w in widths if w > 0) if pitch else []
    below, above = [r for r in ratios if r <= NARROW], [r for r in ratios if r >= WIDE]
    if (
        not below
        or not above
        or len(below) + len(above) < len(ratios)
        or above[0] < JUMP * below[-1]
    ):
        return ADD
    return min(ADD, above[0])


_LETTERS_BUT_ONE_DIGIT = re.compile(r"^[A-Za-z]*[01][A-Za-z]*$")
_ORDINAL = re.compile(r"^\d+(st|nd|rd|th)$", re.IGNORECASE)


def fix_confusions(text: str) -> str:
    """The recogniser's glyph confusions on screen fonts, fixed where the word around them decides:
    a lone ``0``/``1`` in a word of letters is ``O``/``o``/``l`` where it cannot be a digit
    (``_misread``: "0rder", "1ogin", "ERR0R"; not "eth0", "0xff", "v1beta"), a lone ``o`` in an
    upper-case word is ``O`` ("ERRoR"), a lone ``l``/``I``/``O``/``o`` after a digit, among digits,
    is a digit ("9l", "9l0"; not "gpt-4o", "O365"). Each part of a path or identifier is a word
    of its own ("1ibmixed_sample.so"). Tokens
    that mix classes on purpose (hex, versions, "1st", "B17", "v7a") are left alone."""
    out = []
    for token in text.split(" "):
        core = token.strip(".,;:!?'\"()[]")
        fixed = "".join(_fix_word(part) for part in _PART.split(core))
        out.append(token.replace(core, fixed) if core else token)
    return " ".join(out)


_PART = re.compile(r"([_./\\=-])")  # separators inside paths and identifiers, kept by split


def _fix_word(core: str) -> str:
    if len(core) >= 3 and _LETTERS_BUT_ONE_DIGIT.match(core) and not _ORDINAL.match(core):
        i = next(k for k, c in enumerate(core) if c.isdigit())
        neighbours = core[max(0, i - 1) : i] + core[i + 1 : i + 2]
        upper = neighbours.isupper()
        if core[i] == "0":
            fixed = core[:i] + ("O" if upper or i == 0 else "o") + core[i + 1 :]
        else:
            fixed = core[:i] + ("I" if upper else "l") + core[i + 1 :]
        return fixed if _misread(core, i, fixed) else core
    if (
        len(core) >= 3
        and core.isalpha()
        and sum(c.islower() for c in core) == 1
        and core[1:].lower() != core[1:]
    ):
        lower = next(k for k, c in enumerate(core) if c.islower())
        if core[lower] == "o" and core.replace("o", "").isupper():
            return core.replace("o", "O")
    elif (
        len(core) >= 2
        and core[0].isdigit()
        and sum(c in "lIOo" for c in core) == 1
        and sum(c.isdigit() for c in core) == len(core) - 1
        and (len(core) >= 3 or core[1] in "lI")
    ):
        return core.translate(str.maketrans("lIOo", "1100"))  # "9l", "9l0"; not "4o", "o3", "O365"
    return core


def _misread(core: str, i: int, fixed: str) -> bool:
    """Whether the digit at ``i`` of a word of letters is a misread letter: when the word then is a
    known one ("1oss", "ERR0R", "INF0"; not "eth0", "sha1", "v1beta", "a1fe"), or, leading, when the
    rest is no word of its own and no hex prefix ("1ibmixed"; not "1Password", "0xff")."""
    from perception.ocr.spacing import known_word

    if known_word(fixed):
        return True
    return i == 0 and not known_word(core[1:]) and core[:2].lower() != "0x"
