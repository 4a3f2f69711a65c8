"""A video call's window for ``bench capture``'s ordinary hour: a terminal showing a face that
moves, frame after frame, as a camera's picture does. The frames are crops of the packaged group
photo (``bench.fixtures.group_photo``) around the man at the middle of the table, who faces the
camera, each a few pixels from the last, drawn as DEC sixel graphics: xterm (as a VT340) and foot
both draw them, so the call looks the same on X11 and on sway without another program.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import numpy as np

# the man at the middle of the table in the photo (1280x886): his face and shoulders, as a webcam
# frames them (left, top, right, bottom)
FACE_BOX = (352, 120, 752, 520)
# where each frame's crop sits against FACE_BOX, in the photo's pixels: a head that moves a little
SWAY_PX = ((0, 0), (14, 4), (24, 10), (14, 16), (0, 12), (-12, 6), (-20, 0), (-10, -6))
CALL_PX = 360  # a frame's side on screen, in pixels
SIXEL_COLOURS = 128  # the palette a frame is drawn in; xterm is started with this many registers
FRAME_S = 1.0  # a frame shown this long before the next


def sixel(image) -> bytes:
    """``image`` (PIL) as a DEC sixel picture in ``SIXEL_COLOURS`` colours: bands of six rows, each
    colour's pixels in a band written as one run-length coded line."""
    from PIL import Image

    quantized = image.convert("RGB").quantize(colors=SIXEL_COLOURS, method=Image.Quantize.MEDIANCUT)
    index = np.asarray(quantized)
    palette = quantized.getpalette() or []
    height, width = index.shape
    out = [f'\x1bPq"1;1;{width};{height}']
    for c in range(SIXEL_COLOURS):
        r, g, b = (round(v * 100 / 255) for v in palette[3 * c : 3 * c + 3] or (0, 0, 0))
        out.append(f"#{c};2;{r};{g};{b}")
    weights = (1 << np.arange(6))[:, None]
    for top in range(0, height, 6):
        band = index[top : top + 6]
        lines = []
        for c in np.unique(band):
            bits = ((band == c) * weights[: len(band)]).sum(axis=0)
            lines.append(f"#{c}" + _runs((bits + 63).astype(np.uint8).tobytes().decode("ascii")))
        out.append("$".join(lines) + "-")
    out.append("\x1b\\")
    return "".join(out).encode("ascii")


def _runs(chars: str) -> str:
    """Sixel characters with each run of four or more written ``!<count><char>``."""
    out, i = [], 0
    while i < len(chars):
        j = i
        while j < len(chars) and chars[j] == chars[i]:
            j += 1
        out.append(f"!{j - i}{chars[i]}" if j - i >= 4 else chars[i] * (j - i))
        i = j
    return "".join(out)


def call_frames(photo: Path, folder: Path) -> list[Path]:
    """The call's frames as sixel files in ``folder`` (readable by the desktop's user)."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    left, top, right, bottom = FACE_BOX
    with Image.open(photo) as im:
        frames = []
        for k, (dx, dy) in enumerate(SWAY_PX):
            crop = im.crop((left + dx, top + dy, right + dx, bottom + dy)).resize(
                (CALL_PX, CALL_PX), Image.Resampling.BILINEAR
            )
            path = folder / f"frame{k}.six"
            path.write_bytes(sixel(crop))
            path.chmod(0o644)
            frames.append(path)
    return frames


def call_command(frames: list[Path]) -> list[str]:
    """A shell loop drawing ``frames`` at the terminal's top left, one every ``FRAME_S``, its
    cursor hidden."""
    each = " ".join(shlex.quote(str(f)) for f in frames)
    return [
        "sh",
        "-c",
        f"printf '\\033[?25l'; while :; do for f in {each}; do printf '\\033[H'; cat \"$f\"; "
        f"sleep {FRAME_S:g}; done; done",
    ]
