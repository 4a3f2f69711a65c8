"""The mini evaluation sets for CI, in exactly the upstream formats, built from real media.

The questions are written by hand (``bench/mini/*.json``, checked in; each file says so) about
what the media really show and say; the media are built here, once, into the cache:

- **M3-Bench mini** (``robot.json``, ``web.json``, ``data/videos/{robot,web}/*.mp4``): videos made
  of 30 s scenes from the project's real media: the pyannote call (Diane and Sheila, with their
  faces from insightface's group photo, as in the demo), opencv-doc's application screenshots
  (``qtgui.png``, ``eclipse_cdt_cfg7.png``) and its ``Megamind.avi`` film. Each question records
  its evidence span in an extra ``evidence`` field, and the robot set has questions asked before
  their evidence (the right behaviour: not found).
- **ScreenshotVQA mini** (``qa_pairs.json``, ``student1/``, ``student2/``): screenshots of real
  X programs (xedit, xmore, xcalc, xmessage, xterm) on an Xvfb desktop, named
  ``YYYYMMDD_HHMMSS.png``, plus a ``*_compressed.png`` that the protocol skips and that alone holds
  the answer to one question.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from bench.fixtures import cache_dir, pyannote_sample

HAND_WRITTEN = Path(__file__).parent / "mini"
VERSION = "2"  # bump when the media below change, so cached sets are rebuilt
CLIP_S = 30.0

# clip i of a video shows scene i; the call's sound plays in the clip that shows it
M3_VIDEOS: dict[str, dict[str, tuple[str, ...]]] = {
    "robot": {"mini_robot_01": ("qtgui.png", "call", "eclipse_cdt_cfg7.png", "film")},
    "web": {"mini_web_01": ("call", "qtgui.png")},
}


def _m3_video(dest: Path, scenes: tuple[str, ...]) -> Path:
    import ffmpeg

    from bench.speed_media import FPS, Scenes, encode

    pictures = Scenes()

    def frames() -> Iterator[np.ndarray]:
        for i in range(int(len(scenes) * CLIP_S * FPS)):
            t = i / FPS
            yield pictures.frame(scenes[int(t // CLIP_S)], t % CLIP_S)

    call_ms = int(scenes.index("call") * CLIP_S * 1000)
    audio = ffmpeg.input(str(pyannote_sample() / "sample.wav")).audio
    if call_ms:
        audio = audio.filter("adelay", delays=str(call_ms), all=1)
    return encode(dest, frames(), len(scenes) * CLIP_S, audio.filter("apad"))


def _fresh(root: Path) -> bool:
    marker = root / ".mnemo-mini"
    return marker.is_file() and marker.read_text().strip() == VERSION


def build_m3_mini(root: Path | None = None) -> Path:
    """The M3-Bench mini set's folder: ``robot.json``, ``web.json`` and the videos they name."""
    root = root or cache_dir() / "mini" / "m3bench"
    if not _fresh(root):
        shutil.rmtree(root / "data", ignore_errors=True)
        for split, videos in M3_VIDEOS.items():
            for video_id, scenes in videos.items():
                _m3_video(root / "data" / "videos" / split / f"{video_id}.mp4", scenes)
        (root / ".mnemo-mini").write_text(VERSION)
    for split in M3_VIDEOS:  # the questions are copied every time: an edit takes effect at once
        shutil.copyfile(HAND_WRITTEN / f"m3_{split}.json", root / f"{split}.json")
    return root


# ScreenshotVQA mini: per user, what each screenshot shows (taken at the time in its name)
NOTES = {
    "reading-list.txt": "Reading list for the exam\n\nChapter 7: dynamic programming, due Friday\n"
    "Library book: The Pragmatic Programmer, return by 12 June\nStudy group meets in room 214\n",
    "groceries.txt": "Groceries\n\noat milk\nbasmati rice\nthree lemons\ncoffee beans from Hoxton Roasters\n",
}
SCREENS = {
    "student1": [
        ("20250516_101500", ("xedit", "reading-list.txt")),
        ("20250516_102200", ("xmore", "/usr/share/common-licenses/Apache-2.0")),
        ("20250516_103000", ("xcalc", "12*7=")),
    ],
    "student2": [
        ("20250517_091000", ("xmessage", "Meeting with Priya moved to room 4B at 3 pm")),
        ("20250517_091500", ("xedit", "groceries.txt")),
        ("20250517_093000_compressed", ("xmessage", "The wifi password is tulip-77")),
        ("20250517_094500", ("xterm", "echo Train to Leeds leaves from platform 9 at 17:42")),
    ],
}


def build_screenshotvqa_mini(root: Path | None = None) -> Path:
    """The ScreenshotVQA mini set's folder (needs Xvfb and the X programs: ``make xtools``)."""
    root = root or cache_dir() / "mini" / "screenshotvqa"
    if not _fresh(root):
        import tempfile

        for user in SCREENS:
            shutil.rmtree(root / user, ignore_errors=True)
        with tempfile.TemporaryDirectory(prefix="mnemo-mini-") as tmp:
            _shoot(root, Path(tmp))
        (root / ".mnemo-mini").write_text(VERSION)
    shutil.copyfile(HAND_WRITTEN / "screenshotvqa_qa_pairs.json", root / "qa_pairs.json")
    return root


def _shoot(root: Path, tmp: Path) -> None:
    import time

    import mss
    import mss.tools

    from bench.xdesktop import Desktop

    for name, text in NOTES.items():
        (tmp / name).write_text(text)
    desk = Desktop(tmp, size="1280x800")
    try:
        for user, shots in SCREENS.items():
            (root / user).mkdir(parents=True, exist_ok=True)
            for stamp, (program, arg) in shots:
                proc = _open(desk, program, arg, tmp)
                with mss.MSS(display=desk.display) as grab:
                    shot = grab.grab(grab.monitors[1])
                    mss.tools.to_png(shot.rgb, shot.size, output=str(root / user / f"{stamp}.png"))
                proc.terminate()
                proc.wait(timeout=10)
                time.sleep(0.3)
    finally:
        desk.close()


def _open(desk, program: str, arg: str, tmp: Path):
    """Open one program's window, wait until it is drawn, and return its process."""
    import subprocess
    import time

    font = [
        "-xrm",
        "*font: 10x20",
    ]  # xfonts-base's misc-fixed, legible to OCR (the default 6x13 is small)
    if program == "xterm":
        cmd = [
            "xterm",
            "-fa",
            "DejaVu Sans Mono",
            "-fs",
            "16",
            "-geometry",
            "80x12+120+120",
            "-T",
            "terminal",
            "-hold",
            "-e",
            "sh",
            "-c",
            arg,
        ]
    elif program == "xedit":
        cmd = [
            "xedit",
            "-geometry",
            "900x500+120+120",
            *font,
            arg,
        ]  # relative: the window shows no temp path
    elif program == "xmore":
        cmd = ["xmore", "-geometry", "900x600+120+100", *font, arg]
    elif program == "xcalc":
        cmd = ["xcalc", "-geometry", "300x400+200+150", *font]
    else:
        cmd = ["xmessage", "-center", *font, arg]
    proc = subprocess.Popen(
        cmd, env=desk.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp
    )
    desk.procs.append(proc)
    time.sleep(1.5)
    if program == "xcalc":
        desk.type(arg, delay_ms=80)
        time.sleep(0.5)
    return proc
