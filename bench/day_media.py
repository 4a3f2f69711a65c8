"""The day bench's recording: an hour of an ordinary day, made from the real media the project uses.

A day is mostly not talk: quiet rooms, people sitting still, a screen that barely changes. The hour
is ten blocks of six minutes, each twelve 30 s clips in this order (``BLOCK``):

- ``call`` x4 (a quarter of the time is speech): pyannote's ``sample.wav`` (Diane and Sheila on a call) with
  the speaker's face on screen while she talks, as in the demo;
- ``desktop`` x3: an application screenshot from opencv-doc (``qtgui.png``, or
  ``eclipse_cdt_cfg7.png`` in odd blocks) in silence, one word typed into a note line on it
  ``TYPE_AT_S`` seconds into each (occasional typing: the rest of the clip, nothing moves);
- ``still`` x2: Diane and Sheila sitting side by side, silent (the demo's closing picture);
- ``noise`` x2: the empty room with room noise (brown noise at about -50 dBFS and a mains hum,
  seeded: the one sound here made by us, since no package carries a room's noise);
- ``film`` x1: opencv-doc's ``Megamind.avi`` looped, without sound.

Speech is the calls' speech turns (``sample.rttm``): ``speech_share`` of the recording. It is built
once with ffmpeg (H.264 + AAC, 1280x720 at ``FPS``) and cached beside the other fixtures.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from bench.fixtures import cache_dir, pyannote_sample, read_rttm
from bench.speed_media import CLIP_S, HEIGHT, WIDTH, Scenes, encode

BLOCK = (
    "call",
    "desktop",
    "desktop",
    "still",
    "call",
    "film",
    "noise",
    "call",
    "desktop",
    "still",
    "call",
    "noise",
)
BLOCKS = 10
FPS = 5
SAMPLE_RATE = 16000
TYPE_AT_S = 20.0  # into each desktop clip: one word typed
RECORDED_AT = "2026-11-23T08:00:00Z"
# typed in turn, one per desktop clip; none of them is on the screenshots themselves
WORDS = (
    "meeting",
    "budget",
    "review",
    "thursday",
    "invoice",
    "draft",
    "sheila",
    "quarterly",
    "diane",
    "tomorrow",
    "agenda",
    "deadline",
    "printer",
    "lunch",
    "dentist",
    "parcel",
    "birthday",
    "garden",
    "ticket",
    "holiday",
)
VERSION = 3  # bump when the recording changes: the cached file is named by it


def schedule(blocks: int = BLOCKS) -> list[str]:
    """The scene of each 30 s clip, in order."""
    return [BLOCK[i % len(BLOCK)] for i in range(blocks * len(BLOCK))]


def typed_words(scenes: list[str]) -> list[str | None]:
    """The word typed in each clip (desktop clips; None for the others)."""
    out, k = [], 0
    for scene in scenes:
        out.append(WORDS[k % len(WORDS)] if scene == "desktop" else None)
        k += scene == "desktop"
    return out


def speech_s_per_call() -> float:
    """Seconds of speech in one call clip: the union of the reference turns of ``sample.rttm``."""
    from perception.speech.diarize import union_spans

    spans = [
        (t.start_s, min(t.end_s, CLIP_S)) for t in read_rttm(pyannote_sample() / "sample.rttm")
    ]
    return sum(b - a for a, b in union_spans(spans) if b > a)


def speech_share(blocks: int = BLOCKS) -> float:
    scenes = schedule(blocks)
    return scenes.count("call") * speech_s_per_call() / (len(scenes) * CLIP_S)


def room_noise(seconds: float, seed: int = 7) -> np.ndarray:
    """A quiet room: brown noise at about -50 dBFS RMS with a 50 Hz hum 6 dB under it (float32)."""
    rng = np.random.default_rng(seed)
    n = int(seconds * SAMPLE_RATE)
    brown = np.cumsum(rng.standard_normal(n))
    brown -= np.convolve(brown, np.ones(801) / 801, mode="same")  # no drift: only the rumble stays
    brown *= 10 ** (-50 / 20) / (np.sqrt(np.mean(brown**2)) + 1e-12)
    hum = 10 ** (-56 / 20) * np.sqrt(2) * np.sin(2 * np.pi * 50 * np.arange(n) / SAMPLE_RATE)
    return (brown + hum).astype(np.float32)


def soundtrack(scenes: list[str]) -> np.ndarray:
    import soundfile as sf

    call, rate = sf.read(pyannote_sample() / "sample.wav", dtype="float32")
    if rate != SAMPLE_RATE:
        raise RuntimeError(f"sample.wav is {rate} Hz, not {SAMPLE_RATE}")
    n = int(CLIP_S * SAMPLE_RATE)
    call = np.pad(call[:n], (0, max(0, n - call.size)))
    noise = room_noise(CLIP_S)
    silence = np.zeros(n, dtype=np.float32)
    return np.concatenate(
        [call if s == "call" else noise if s == "noise" else silence for s in scenes]
    )


class _Desktop:
    """A screenshot with a note line at its foot holding the words typed so far."""

    def __init__(self, screens: dict[str, np.ndarray]) -> None:
        self.screens = screens
        self._last: tuple[tuple[str, int], np.ndarray] | None = None

    def frame(self, name: str, words: int) -> np.ndarray:
        import cv2

        if self._last is None or self._last[0] != (name, words):
            img = self.screens[name].copy()
            cv2.rectangle(img, (40, HEIGHT - 70), (WIDTH - 40, HEIGHT - 20), (250, 250, 250), -1)
            text = " ".join(WORDS[i % len(WORDS)] for i in range(words))[-70:]
            cv2.putText(
                img,
                text,
                (52, HEIGHT - 35),
                cv2.FONT_HERSHEY_SIMPLEX,
                0.9,
                (20, 20, 20),
                2,
                cv2.LINE_AA,
            )
            self._last = ((name, words), img)
        return self._last[1]


def frames(scenes: list[str]) -> Iterator[np.ndarray]:
    from bench.demo_media import background, face_frame

    pictures = Scenes()
    desktop = _Desktop(pictures.screens)
    still = face_frame(pictures.faces, list(pictures.faces), WIDTH, HEIGHT)
    room = background(WIDTH, HEIGHT)
    typed = 0
    for index, scene in enumerate(scenes):
        screen = "qtgui.png" if (index // len(BLOCK)) % 2 == 0 else "eclipse_cdt_cfg7.png"
        for i in range(int(CLIP_S * FPS)):
            t = i / FPS
            if scene in ("call", "film"):
                yield pictures.frame(scene, t)
            elif scene == "desktop":
                yield desktop.frame(screen, typed + (t >= TYPE_AT_S))
            else:
                yield still if scene == "still" else room
        typed += scene == "desktop"


def build_day_recording(blocks: int = BLOCKS, dest: Path | None = None) -> Path:
    """Write (once) and return the day recording of ``blocks`` six-minute blocks."""
    import ffmpeg
    import soundfile as sf

    dest = dest or cache_dir() / "day" / f"day-v{VERSION}-{blocks}x{len(BLOCK)}.mp4"
    if dest.is_file():
        return dest
    scenes = schedule(blocks)
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "day.wav"
        sf.write(wav, soundtrack(scenes), SAMPLE_RATE, subtype="PCM_16")
        return encode(
            dest,
            frames(scenes),
            len(scenes) * CLIP_S,
            ffmpeg.input(str(wav)).audio,
            recorded_at=RECORDED_AT,
            fps=FPS,
        )
