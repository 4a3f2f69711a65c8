"""Builds the demo recording from real media made by others.

The audio is pyannote's two-speaker ``sample.wav`` (Diane and Sheila on a phone call). The picture
follows the reference speaker turns in ``sample.rttm``: while a speaker talks, the camera shows
"her" face, cut from insightface's group photo (the woman on the left for Diane, the woman on the
right for Sheila). Before anyone speaks the room is empty; after the call (30–40 s) both sit side
by side in silence, so the recording spans two 30 s clips.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from bench.fixtures import cache_dir, group_photo, pyannote_sample, read_rttm

WIDTH, HEIGHT, FPS = 640, 360, 5
DURATION_S = 40.0
RECORDED_AT = "2026-11-20T10:00:00Z"
# square crops (x0, y0, size) of t1.jpg (1280x886) around two faces dlib finds there
CROPS = {"speaker90": (1, 217, 240), "speaker91": (1040, 217, 240)}  # Diane, Sheila
FACE_PX = 300


def background(width: int = WIDTH, height: int = HEIGHT) -> np.ndarray:
    """A plain wall: a vertical grey gradient."""
    y = np.linspace(70, 110, height, dtype=np.float32)[:, None, None]
    return np.broadcast_to(y, (height, width, 3)).astype(np.uint8).copy()


def speaker_faces() -> dict[str, np.ndarray]:
    """The two speakers' faces (rttm speaker label -> RGB crop of FACE_PX), from the group photo."""
    import cv2

    img = cv2.imread(str(group_photo()))
    if img is None:
        raise RuntimeError(f"cannot read {group_photo()}")
    rgb = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
    return {
        spk: cv2.resize(
            rgb[y : y + s, x : x + s], (FACE_PX, FACE_PX), interpolation=cv2.INTER_CUBIC
        )
        for spk, (x, y, s) in CROPS.items()
    }


def visible_at(turns: list, t: float) -> list[str]:
    """Who the camera shows at ``t``: whoever spoke last until the next turn starts; nobody before
    the first turn, and both after the call."""
    if t >= max(x.end_s for x in turns):
        return ["speaker90", "speaker91"]
    started = [x for x in turns if x.start_s <= t]
    return [max(started, key=lambda x: x.start_s).speaker] if started else []


def face_frame(
    faces: dict[str, np.ndarray], visible: list[str], width: int = WIDTH, height: int = HEIGHT
) -> np.ndarray:
    """The wall with the visible speakers' faces: one centred, or two side by side."""
    frame = background(width, height)
    top = (height - FACE_PX) // 2
    slots = [(width - FACE_PX) // 2] if len(visible) == 1 else [10, width - FACE_PX - 10]
    for spk, left in zip(visible, slots):
        frame[top : top + FACE_PX, left : left + FACE_PX] = faces[spk]
    return frame


def h264_aac(
    size: tuple[int, int],
    fps: int,
    audio,
    part: Path,
    seconds: float,
    recorded_at: str,
    **options,
):
    """The ffmpeg-python output that writes RGB frames of ``size`` at ``fps`` read from stdin and
    ``audio`` (an audio stream) to ``part`` as H.264 + 16 kHz AAC, ``seconds`` long, its creation
    time ``recorded_at``; ``options``: more of the output's (``preset``)."""
    import ffmpeg

    width, height = size
    video = ffmpeg.input(
        "pipe:", format="rawvideo", pix_fmt="rgb24", s=f"{width}x{height}", framerate=fps
    )
    return (
        ffmpeg.output(
            video,
            audio,
            str(part),
            t=seconds,
            vcodec="libx264",
            pix_fmt="yuv420p",
            acodec="aac",
            ar=16000,
            movflags="+faststart",
            **options,
            **{"metadata": f"creation_time={recorded_at}"},
        )
        .global_args("-nostdin", "-loglevel", "error")
        .overwrite_output()
    )


def build_demo_recording(dest: Path | None = None) -> Path:
    """Write (once) and return the demo mp4; it is cached beside the fetched fixtures."""
    import ffmpeg

    from perception.sources.media import ffmpeg_exe

    dest = dest or cache_dir() / "demo" / "diane-and-sheila.mp4"
    if dest.is_file():
        return dest
    sample = pyannote_sample()
    turns = read_rttm(sample / "sample.rttm")
    faces = speaker_faces()
    frames = [face_frame(faces, visible_at(turns, i / FPS)) for i in range(int(DURATION_S * FPS))]

    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_suffix(f".{os.getpid()}.part.mp4")  # one per process: two may build it at once
    audio = ffmpeg.input(str(sample / "sample.wav")).audio.filter("apad")
    h264_aac((WIDTH, HEIGHT), FPS, audio, part, DURATION_S, RECORDED_AT).run(
        cmd=ffmpeg_exe(),
        input=np.stack(frames).tobytes(),
        capture_stdout=True,
        capture_stderr=True,
    )
    part.replace(dest)
    return dest
