"""Screens that show text the caller chose, written into a capture folder as ``mnemo capture``
writes its frames: for benches that need screenshots with known text without an X server
(``mnemo bench faults``). ``bench/ocr_screens.py`` renders real programs under Xvfb instead."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import numpy as np

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"


def render_screen(
    lines: Sequence[str], size: tuple[int, int] = (1920, 1080), px: int = 18
) -> np.ndarray:
    """A terminal-like screen (RGB) showing ``lines``, wrapped at the screen's width."""
    from PIL import Image, ImageDraw, ImageFont

    font: ImageFont.FreeTypeFont | ImageFont.ImageFont
    try:
        font = ImageFont.truetype(FONT, px)
    except OSError:
        font = ImageFont.load_default(size=px)
    columns = max(20, int((size[0] - 40) / font.getlength("M")))
    image = Image.new("RGB", size, (250, 250, 248))
    draw = ImageDraw.Draw(image)
    y = 20
    for line in lines:
        for k in range(0, max(len(line), 1), columns):
            draw.text((20, y), line[k : k + columns], fill=(20, 20, 20), font=font)
            y += int(px * 1.5)
    return np.asarray(image)


def write_capture(
    root: Path, screens: list[tuple[np.ndarray, datetime, str, str]], quality: int = 80
) -> None:
    """Screens (RGB, capture time, app, window) written by ``CaptureStore`` as the capture daemon
    writes them: ``YYYY/MM/DD/<time>Z_m0.jpg`` and its sidecar JSON."""
    import cv2

    from perception.capture.storage import CaptureStore

    capture = CaptureStore(root)
    capture.recover()
    for rgb, when, app, window in screens:
        _, jpeg = cv2.imencode(
            ".jpg", np.ascontiguousarray(rgb[:, :, ::-1]), [cv2.IMWRITE_JPEG_QUALITY, quality]
        )
        capture.write(jpeg.tobytes(), {"app": app, "window": window}, when, 0)
