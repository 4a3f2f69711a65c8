"""The ordinary hour's video call (``bench/call.py``): its sixel frames as xterm draws them, on a
real X desktop, hold the face the photo holds, and its crops move from frame to frame."""

import re
import time

import numpy as np
import pytest

from bench.call import CALL_PX, FACE_BOX, SIXEL_COLOURS, call_command, call_frames, sixel


def test_sixel_runs_and_bands():
    from PIL import Image

    # two colours, 12 rows: two bands; the left half one colour, the right the other
    image = Image.new("RGB", (8, 12), (255, 0, 0))
    image.paste((0, 0, 255), (4, 0, 8, 12))
    text = sixel(image).decode("ascii")
    assert text.startswith('\x1bPq"1;1;8;12') and text.endswith("\x1b\\")
    assert "#0;2;100;0;0" in text and "#1;2;0;0;100" in text  # the palette, in percent
    bands = re.sub(r"#\d+;2;\d+;\d+;\d+", "", text[len('\x1bPq"1;1;8;12') : -2]).split("-")
    assert len(bands) == 3 and bands[2] == ""
    # each band: one line per colour, its four columns a run of all six rows ("~"), the others none
    lines = bands[0].split("$")
    assert len(lines) == 2 and {line[2:] for line in lines} == {"!4~!4?", "!4?!4~"}


@pytest.mark.slow  # a real X desktop
def test_the_call_is_drawn_by_xterm_and_shows_a_face(desktop, tmp_path):
    from bench.fixtures import group_photo
    from perception.capture.x11 import X11Desktop
    from perception.faces.faces_dlib import DlibFaces

    frames = call_frames(group_photo(), tmp_path / "call")
    assert len(frames) >= 4 and all(f.stat().st_mode & 0o444 == 0o444 for f in frames)
    desktop.xterm(
        "call",
        cls="Call",
        geometry="38x20+100+100",
        font_px=16,
        command=call_command(frames[:1]),
        options=("-ti", "vt340", "-xrm", f"XTerm*numColorRegisters: {SIXEL_COLOURS}"),
    )
    screen = X11Desktop(desktop.env["DISPLAY"])
    try:
        time.sleep(2.0)
        grab = screen.grab(0, screen.outputs()[0])[..., 2::-1]  # BGRA to RGB
    finally:
        screen.close()
    # the picture as drawn, against the crop it was made from (its 128 colours and the resize
    # apart): somewhere near the window's top left
    from PIL import Image

    with Image.open(group_photo()) as im:
        want = np.asarray(
            im.convert("RGB").crop(FACE_BOX).resize((CALL_PX, CALL_PX)), dtype=np.float32
        )
    best = min(
        float(np.abs(grab[y : y + CALL_PX, x : x + CALL_PX].astype(np.float32) - want).mean())
        for y in range(100, 160)
        for x in range(100, 120)
    )
    assert best < 12, f"the drawn call differs from its frame by {best:.1f} levels a pixel"
    faces = DlibFaces().analyze(np.ascontiguousarray(grab))
    assert len(faces) == 1, f"{len(faces)} faces found in the call"
