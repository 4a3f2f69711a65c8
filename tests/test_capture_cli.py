"""`mnemo capture` as a process: SIGKILLs leave a consistent folder, and what is typed under
capture is answered by `mnemo ask` while capture still runs."""

from __future__ import annotations

import json
import random
import re
import signal
import subprocess
import sys
import time

import cv2
import pytest

from bench.capture_argv import capture_and_ingest
from bench.xdesktop import Desktop

pytestmark = pytest.mark.slow


def _mnemo(desktop: Desktop, *args: str, **kw) -> subprocess.Popen:
    env = {**desktop.env, "HF_HUB_OFFLINE": "1", "MNEMO_CAPTURE__IDLE_AFTER_S": "3600"}
    return subprocess.Popen([sys.executable, "-m", "mnemo", *args], env=env, **kw)


def _files(folder) -> set[str]:
    """Every path under ``folder`` (capture's day folders, YYYY/MM/DD), quickly: polled in a busy
    loop to catch a write of a few milliseconds."""
    import os

    names: set[str] = set()
    try:
        for entry in os.scandir(folder):
            names.add(entry.path)
            if entry.is_dir(follow_symlinks=False):
                names |= _files(entry.path)
    except FileNotFoundError:  # not made yet, or a folder removed by the capture's retention
        pass
    return names


def _kill_at_a_write(p: subprocess.Popen, out, give_up_s: float) -> None:
    """SIGKILL ``p`` the moment a new file shows in ``out``: a frame or sidecar half written (its
    temp file; with a writer that is not atomic, the frame itself), or after ``give_up_s``."""
    seen, deadline = _files(out), time.monotonic() + give_up_s
    while time.monotonic() < deadline and not _files(out) - seen:
        pass  # no sleep: a frame is written in a few milliseconds
    p.send_signal(signal.SIGKILL)


KILLS = 24  # half at a random moment, half as a file is being written


def test_random_sigkills_leave_no_torn_frames(desktop, tmp_path):
    """Capture SIGKILLed again and again while text is typed: at random moments (before, during
    and between writes), and the moment a file is being written, which leaves its temp file for the
    next start to clear (a start that leaves them turns this red: 50 random kills alone left one
    temp file, these leave several)."""
    term = desktop.xterm("typing under fire", geometry="100x30+0+0")
    desktop.focus(term)
    out = tmp_path / "out"
    typist = subprocess.Popen(
        ["xdotool", "type", "--delay", "40", "lorem ipsum dolor sit amet " * 400], env=desktop.env
    )
    rng = random.Random(7)
    try:
        for k in range(KILLS):
            p = _mnemo(
                desktop,
                "capture",
                "--out",
                str(out),
                "--interval",
                "0.1s",
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            if k % 2:
                time.sleep(1.0)  # start-up takes ~1 s: the next new file is a frame's
                _kill_at_a_write(p, out, give_up_s=5.0)
            else:
                time.sleep(rng.uniform(1.2, 2.5))  # before, during and between writes
                p.send_signal(signal.SIGKILL)
            p.wait()
        # the state a kill leaves, before any restart cleans up: only temp files and at most one
        # image without its sidecar (killed between the two renames) may be there
        orphans = [p for p in out.rglob("*.jpg") if not p.with_name(p.name + ".json").exists()]
        assert len(orphans) <= 1
        last = _mnemo(
            desktop, "capture", "--out", str(out), "--duration", "1s", stdout=subprocess.DEVNULL
        )
        assert last.wait(timeout=60) == 0
    finally:
        typist.kill()
    frames = sorted(out.rglob("*.jpg"))
    assert len(frames) >= KILLS, "too few frames were written for the kills to prove anything"
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")], "temp files left"
    assert all(p.with_name(p.name + ".json").is_file() for p in frames), (
        "an image without a sidecar"
    )
    assert all(p.with_name(p.name[:-5]).is_file() for p in out.rglob("*.jpg.json")), (
        "a sidecar without an image"
    )
    for p in frames:
        assert cv2.imread(str(p)) is not None, f"{p} does not decode"
        json.loads(p.with_name(p.name + ".json").read_text())


def test_typed_text_is_answered_while_capture_runs(desktop, tmp_path):
    term = desktop.xterm("notes", geometry="90x20+200+200", font_px=16)
    desktop.focus(term)
    out, store = tmp_path / "out", tmp_path / "store"
    cap = _mnemo(
        desktop,
        *capture_and_ingest(out, store, "150s"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        time.sleep(3)
        inside_one_clip()
        desktop.type("echo the parking spot is level 3 bay 42\n", delay_ms=30)
        answer, lines = ask_once_ingested(cap, store, {**desktop.env, "HF_HUB_OFFLINE": "1"})
        assert cap.poll() is None, (
            f"capture ended with no answer naming 42 (the last: {answer}): {''.join(lines)}"
        )
    finally:
        cap.send_signal(signal.SIGTERM)
        cap.wait(timeout=180)
    assert answer is not None, f"no clip was ingested: {''.join(lines)}"
    # the typed words come back as words: spaces are placed from the line's pixels, not from the
    # recogniser's numerics (which read "level3bay42" on one CI machine and "level 3 bay_42" on another)
    assert re.search(r"\blevel 3 bay 42\b", answer["answer"]), answer
    assert answer["citations"] and all(
        c["clip_id"].startswith("screen-") for c in answer["citations"]
    )
    assert any(str(out) in c["source"] for c in answer["citations"])


def inside_one_clip(clip_s: float = 30.0, margin_s: float = 3.0, room_s: float = 12.0) -> None:
    """Wait until a line typed now lies inside one clip: screenshot clips are cut at multiples of
    ``clip_s`` since the epoch, and a line whose typing a cut splits is read half in one clip and
    half in the next (a sway run answered "the parking spot is lev" from the first half). The
    answer now comes from the whole reading (``control/screens.py``, ``test_screens_continued.py``)
    when the half reads as the start of the whole; a cursor read as a letter after the half would
    not, and these tests are about answering while capture runs, not about the cut."""
    into = time.time() % clip_s
    if not margin_s <= into <= clip_s - room_s:
        time.sleep((margin_s - into) % clip_s)


def ask_once_ingested(
    cap: subprocess.Popen,
    store,
    env: dict,
    on_ingest=None,
    timeout_s: float = 150.0,
    question: str = "where is the parking spot?",
    wanted: str = "42",
) -> tuple[dict | None, list[str]]:
    """Follow ``mnemo capture --ingest``'s output; each time its watcher says it ingested a clip
    (``on_ingest()`` first, if given), ask ``question`` until an answer holds ``wanted`` (lower
    case) or ``timeout_s`` passed. The last answer, and the lines read."""
    deadline = time.time() + timeout_s
    answer, lines = None, []
    assert cap.stdout is not None
    for line in cap.stdout:
        lines.append(line)
        if "watch:" in line and "clip(s)" in line and "ingested" in line:
            if on_ingest is not None:
                on_ingest()
            ask = subprocess.run(
                [sys.executable, "-m", "mnemo", "ask", question]
                + ["--store", str(store), "--json"],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            answer = json.loads(ask.stdout.strip().splitlines()[-1])
            if wanted in answer["answer"].lower():
                break
        if time.time() > deadline:
            break
    return answer, lines


def test_a_second_daemon_on_the_same_folder_is_refused(desktop, tmp_path):
    out = tmp_path / "out"
    first = _mnemo(
        desktop,
        "capture",
        "--out",
        str(out),
        "--duration",
        "60s",
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert "capture: every" in first.stdout.readline()  # started, holding the folder
        other_session = {
            **desktop.env,
            "XDG_RUNTIME_DIR": str(tmp_path / "run2"),
        }  # its own control socket
        (tmp_path / "run2").mkdir(mode=0o700)
        second = subprocess.run(
            [sys.executable, "-m", "mnemo", "capture", "--out", str(out), "--duration", "5s"],
            env={**other_session, "HF_HUB_OFFLINE": "1"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 1
        assert f"is being captured into by pid {first.pid}" in second.stderr
        assert first.poll() is None  # the first one goes on
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=60)
