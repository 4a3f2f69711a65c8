"""Text is detected in horizontal bands of a screen (less memory than the whole at once), and every
line is still read once: lines across the bands' cuts neither lost nor read twice. Real xterm under
Xvfb, the real OCR models."""

from __future__ import annotations

import pytest

import perception.ocr.ocr_rapidocr as rapid
from bench.ocr_screens import TERMINAL_LINES, Screen, missing_tools, render
from conftest import unavailable
from perception.ocr.ocr_rapidocr import RapidOCRReader, bands

SIZES = (
    (1080, 1920),
    (1088, 1920),
    (800, 1280),
    (1440, 2560),
    (2160, 3840),
    (400, 1920),
    (60, 300),
)


@pytest.mark.parametrize(("rows", "width"), SIZES)
def test_the_bands_cover_the_image_and_overlap(rows, width):
    found = bands(rows, width)
    assert found[0][0] == 0 and found[-1][1] == rows
    most = max(rapid.BAND_MIN_ROWS, rapid.BAND_PIXELS // width // 32 * 32)
    for top, bottom in found:
        assert 0 <= top < bottom <= rows
        assert bottom - top <= most or len(found) == 1
    # a line no taller than the overlap is whole in one band or the next
    assert all(b[0] <= a[1] - rapid.BAND_OVERLAP_PX for a, b in zip(found, found[1:]))
    if rows * width <= rapid.BAND_PIXELS:
        assert found == [(0, rows)]


# each line begins with its own word (digits are read as letters as often as not: "0" as "o")
FIRST = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november "
    "oscar papa quebec romeo sierra tango uniform victor whiskey xray"
).split()


def _row(k: int) -> str:
    return FIRST[k]


@pytest.fixture(scope="module")
def tall_lines():
    """A 1080p screen filled top to bottom with a terminal's lines at 32 px (its 26 rows: these 24
    lines, a prompt and a blank): each band's cut crosses some line."""
    if why := missing_tools():
        unavailable(why)
    lines = tuple(
        f"{_row(k)} {TERMINAL_LINES[k % len(TERMINAL_LINES)][:50]}" for k in range(len(FIRST))
    )
    frame = render(Screen("bands", "terminal", "xterm", "DejaVu Sans Mono", 32, lines), "1920x1080")
    return lines, frame


@pytest.mark.slow
def test_every_line_across_the_band_cuts_is_read_once(tall_lines, monkeypatch):
    lines, frame = tall_lines
    reader = RapidOCRReader(threads=1)
    cuts = [cut for top, bottom in bands(*frame.shape[:2]) for cut in (top, bottom)][1:-1]
    boxes = reader.detect(frame)
    read = reader.read(frame, boxes)
    crossing = [
        line.text for line in read if any(line.box_xyxy[1] < cut < line.box_xyxy[3] for cut in cuts)
    ]
    assert len(crossing) >= 2, f"no line crosses a cut {cuts}: the test tests nothing"
    texts = ["".join(line.text.split()) for line in read]
    for k in range(len(lines)):
        assert sum(t.startswith(_row(k)) for t in texts) == 1, (_row(k), texts)

    monkeypatch.setattr(rapid, "BAND_PIXELS", frame.shape[0] * frame.shape[1])  # one band: whole
    whole = ["".join(line.text.split()) for line in reader.read(frame)]
    # the terminal's lines read as when the whole screen is detected at once (a line's crop can
    # differ by a pixel, and a letter with it)
    by_band = [next(t for t in texts if t.startswith(_row(k))) for k in range(len(lines))]
    by_whole = [next((t for t in whole if t.startswith(_row(k))), None) for k in range(len(lines))]
    assert sum(a == b for a, b in zip(by_band, by_whole)) >= len(lines) - 2, list(
        zip(by_band, by_whole)
    )
