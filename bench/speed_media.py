"""The speed bench's recording: five minutes of a day, made from the real media the project uses.

- Sound: pyannote's ``sample.wav`` (Diane and Sheila on a call, 30 s) played ten times over.
- Picture, 1280x720 at 10 fps, one scene per 30 s clip in turn:
  - the call: the speaker's face (insightface's group photo) on screen while she talks, as in the demo;
  - a film: opencv-doc's ``Megamind.avi`` (two animated characters, motion), looped;
  - a screen: opencv-doc's application screenshots (``qtgui.png``, then ``eclipse_cdt_cfg7.png``
    after 15 s), so on-screen text is read.

It is built once with ffmpeg (H.264 + AAC) and cached beside the other fixtures.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from bench.fixtures import cache_dir, opencv_doc, pyannote_sample, read_rttm

WIDTH, HEIGHT, FPS = 1280, 720, 10
CLIPS = 10
CLIP_S = 30.0
SCENES = ("call", "film", "screen")
RECORDED_AT = "2026-11-21T09:00:00Z"


def centred(image: np.ndarray) -> np.ndarray:
    """``image`` (RGB) scaled to fit and centred on a dark 1280x720 canvas."""
    import cv2

    h, w = image.shape[:2]
    scale = min(WIDTH / w, HEIGHT / h, 1.0 if w <= WIDTH and h <= HEIGHT else 10.0)
    if scale != 1.0:
        image = cv2.resize(image, (int(w * scale), int(h * scale)), interpolation=cv2.INTER_AREA)
        h, w = image.shape[:2]
    canvas = np.full((HEIGHT, WIDTH, 3), 24, dtype=np.uint8)
    top, left = (HEIGHT - h) // 2, (WIDTH - w) // 2
    canvas[top : top + h, left : left + w] = image
    return canvas


def _read_png(path: Path) -> np.ndarray:
    """An image as OpenCV reads it (BGR); an error naming the file where it cannot be read."""
    import cv2

    image = cv2.imread(str(path))
    if image is None:
        raise FileNotFoundError(
            f"{path}: cannot read the image; fetch the opencv-doc fixture again"
        )
    return image


def _film_frames(path: Path) -> list[np.ndarray]:
    import cv2

    cap = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, bgr = cap.read()
        if not ok:
            break
        frames.append(centred(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)))
    cap.release()
    if not frames:
        raise RuntimeError(f"cannot decode {path}")
    return frames


class Scenes:
    """The pictures of the scenes a bench recording is made of, each loaded once: ``call`` (the
    speaker's face while she talks, as in the demo), ``film`` (Megamind, looped) and a screen per
    opencv-doc screenshot name."""

    def __init__(self) -> None:
        import cv2

        from bench.demo_media import speaker_faces

        self.docs = opencv_doc()
        self.turns = read_rttm(pyannote_sample() / "sample.rttm")
        self.faces = speaker_faces()
        self.film = _film_frames(self.docs / "Megamind.avi")
        self.screens = {
            name: centred(cv2.cvtColor(_read_png(self.docs / name), cv2.COLOR_BGR2RGB))
            for name in ("qtgui.png", "eclipse_cdt_cfg7.png")
        }
        self._calls: dict[tuple[str, ...], np.ndarray] = {}

    def frame(self, scene: str, t: float) -> np.ndarray:
        """The frame of ``scene`` at ``t`` seconds into it (a screen name shows that screenshot)."""
        from bench.demo_media import face_frame, visible_at

        if scene == "call":
            visible = tuple(visible_at(self.turns, t))
            if visible not in self._calls:
                self._calls[visible] = face_frame(self.faces, list(visible), WIDTH, HEIGHT)
            return self._calls[visible]
        if scene == "film":
            return self.film[int(t * 23.976) % len(self.film)]
        return self.screens[scene]


def _frames() -> Iterator[np.ndarray]:
    scenes = Scenes()
    for i in range(int(CLIPS * CLIP_S * FPS)):
        t = i / FPS
        scene = SCENES[int(t // CLIP_S) % len(SCENES)]
        in_clip = t % CLIP_S
        if scene == "screen":  # two screenshots a clip, so on-screen text changes within it
            scene = "qtgui.png" if in_clip < CLIP_S / 2 else "eclipse_cdt_cfg7.png"
        yield scenes.frame(scene, in_clip)


def encode(
    dest: Path,
    frames: Iterator[np.ndarray],
    seconds: float,
    audio,
    recorded_at: str = RECORDED_AT,
    fps: int = FPS,
) -> Path:
    """Write ``frames`` (RGB, WIDTH x HEIGHT at ``fps``) with ``audio`` (an ffmpeg-python audio stream)
    as H.264 + AAC, atomically (a part file renamed when complete)."""
    from bench.demo_media import h264_aac
    from perception.sources.media import ffmpeg_exe

    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_suffix(f".{os.getpid()}.part.mp4")  # one per process: two may build it at once
    output = h264_aac((WIDTH, HEIGHT), fps, audio, part, seconds, recorded_at, preset="veryfast")
    proc = output.run_async(cmd=ffmpeg_exe(), pipe_stdin=True)
    try:
        for frame in frames:
            proc.stdin.write(frame.tobytes())
        proc.stdin.close()
    except BrokenPipeError:
        pass
    if proc.wait() != 0:
        raise RuntimeError(f"ffmpeg could not write {part}")
    part.replace(dest)
    return dest


def build_speed_recording(dest: Path | None = None) -> Path:
    """Write (once) and return the bench recording."""
    import ffmpeg

    dest = dest or cache_dir() / "speed" / f"lifelog-{CLIPS * CLIP_S / 60:g}min.mp4"
    if dest.is_file():
        return dest
    audio = ffmpeg.input(str(pyannote_sample() / "sample.wav"), stream_loop=-1).audio
    return encode(dest, _frames(), CLIPS * CLIP_S, audio)
