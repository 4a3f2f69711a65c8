"""What a ``bench capture`` session types, and whether the daemon kept it: the words (each one
different), the typing itself (a word every ``WORD_S``, lines ended, windows switched), and
``typing_kept``: whether a frame stored while a word was the latest one typed shows it."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.capture_desk import Desk

WORD_S = 3.0  # a typed word every this many seconds
WORDS = (
    "apple",
    "banana",
    "cherry",
    "damson",
    "elder",
    "fig",
    "grape",
    "hazel",
    "iris",
    "juniper",
    "kiwi",
    "lemon",
    "mango",
    "nectar",
    "olive",
    "peach",
    "quince",
    "rowan",
    "sloe",
    "tansy",
)


COLOURS = (
    "amber",
    "blue",
    "coral",
    "dun",
    "ebony",
    "fawn",
    "gold",
    "henna",
    "indigo",
    "jade",
    "khaki",
    "lilac",
    "mauve",
    "navy",
    "ochre",
    "pink",
    "rose",
    "sand",
    "teal",
    "umber",
)


def _normal(text: str) -> str:
    return "".join(text.lower().split())  # OCR's word spacing may differ from what was typed


def typing_kept(
    typed: list[tuple[str, float]],
    end: float,
    frames: list[tuple[float, Path]],
    read_text: Callable[[Path], str],
    slack_s: float = 0.5,
    texts: dict[Path, str] | None = None,
) -> list[bool]:
    """For each typed ``(word, typing began)``, in order: whether a frame stored from the moment its
    typing began until the next word's began (the last word: ``end``), plus ``slack_s``, shows the
    word: the frame's OCR (``read_text``), lower-cased and without spaces, contains it. A frame
    stored in that time that does not show the word (grabbed mid-word, or of another window) does
    not count. Each frame is read at most once: its text is kept in ``texts``."""
    texts = {} if texts is None else texts
    kept = []
    for i, (word, begin) in enumerate(typed):
        until = (typed[i + 1][1] if i + 1 < len(typed) else end) + slack_s
        want = _normal(word)
        found = False
        for t, path in frames:
            if begin <= t <= until:
                if path not in texts:
                    texts[path] = _normal(read_text(path))
                if want in texts[path]:
                    found = True
                    break
        kept.append(found)
    return kept


def ocr_text(ocr) -> Callable[[Path], str]:
    """A stored frame's on-screen text, read by ``ocr`` (a ``perception.ocr`` ``TextReader``)."""

    def read(path: Path) -> str:
        import cv2

        bgr = cv2.imread(str(path))
        if bgr is None:
            return ""
        return "\n".join(line.text for line in ocr.read(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)))

    return read


def _word(k: int) -> str:
    """The k-th typed word: each one different, so that no earlier one on screen stands in for it;
    letters only, as words are (a digit appended to a word is read as a letter as often as not:
    "banana1" as "bananal"). Past ``WORDS``, a word with a colour after it: never typed alone, so
    two words typed one after the other never spell one of these."""
    first = WORDS[k % len(WORDS)]
    return first if k < len(WORDS) else first + COLOURS[(k // len(WORDS) - 1) % len(COLOURS)]


def type_stretch(
    desk: Desk,
    windows: tuple,
    seconds: float,
    typed: list[tuple[str, float]],
    unended=None,
):
    """A word every ``WORD_S`` into the focused terminal, and a switch between ``windows`` after
    five words and Enter: lines a person ends, not one line the terminal wraps inside words. A line
    the last stretch left open (``unended``) is ended first. Each word is given its whole
    ``WORD_S``: none is begun in the stretch's last moment. Returns the window whose line this
    stretch leaves open, if any."""
    start, k, focus = time.time(), 0, windows[0]
    if unended is not None:
        desk.focus(unended)
        desk.type("\n")
    desk.focus(focus)
    while time.time() - start + WORD_S <= seconds:
        if k and k % 5 == 0:
            desk.type("\n")  # the line ends before the switch (never as a stretch ends: its
            # output would land in the idle stretch that follows)
            focus = windows[1] if focus == windows[0] else windows[0]
            desk.focus(focus)
        word, begin = _word(len(typed)), time.time()
        desk.type(word + " ")
        typed.append((word, begin))
        k += 1
        time.sleep(max(0.0, WORD_S - (time.time() - begin)))
    return focus if k % 5 else None
