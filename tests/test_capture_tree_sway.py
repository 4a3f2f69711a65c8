"""The accessibility tree on sway, for real: a headless sway session (``bench.waydesktop``), an
AT-SPI session whose applications are its Wayland clients (``A11ySession.on_sway``), a GTK 3 window
decorated by sway, one decorated by GTK (a header bar, with a shadow around it), and Chromium
(which draws its own frame and shadow), each floating at a known place. On Wayland an application
says its boxes in window coordinates; placed on screen, each line's box lands on the line's pixels
in grim's screenshot, a red picture's box on its red pixels, a password typed into a field is read
nowhere, and the daemon's sidecar has the text where the screen shows it."""

from __future__ import annotations

import base64
import json
import os
import selectors
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from a11y_desk import A11yDesk, a11y_on
from conftest import unavailable
from perception.capture.atspi import WINDOW, AccessibilityReader, Limits, WindowText
from perception.capture.windows import Rect, WindowInfo

if TYPE_CHECKING:
    from bench.a11y_session import App
    from bench.waydesktop import Sway

pytestmark = pytest.mark.slow

LABELS = ("Quarterly budget for the Lisbon office", "Meeting moved to Thursday at ten")
ENTRY = "travel 4200 euros"
SECRET = "Zq7-hunter2-wolfram"
HEADING = "Release notes for version nine"
PARAGRAPHS = ("The first paragraph of the page.", "A second paragraph, with more words in it.")
WEB_SECRET = "chromium-secret-walnut-5"
TOL = 2  # px: Chromium rounds its fractional layout either way
# where each window floats (x, y, width, height of what sway shows)
GTK_AT, CSD_AT, WEB_AT = (40, 60, 520, 360), (40, 560, 520, 360), (700, 120, 1000, 720)


def _page() -> str:
    import cv2

    red = np.zeros((60, 120, 3), np.uint8)
    red[:, :, 2] = 255
    png = base64.b64encode(cv2.imencode(".png", red)[1].tobytes()).decode()
    return f"""<!doctype html>
<html><head><title>Release notes</title>
<style>body {{ font: 16px sans-serif; margin: 8px; background: #fff; color: #000 }}</style>
</head><body>
<h1>{HEADING}</h1>
<p>{PARAGRAPHS[0]}</p>
<p>{PARAGRAPHS[1]}</p>
<img src="data:image/png;base64,{png}" width="120" height="60" alt="A red block">
<p><input type="password" value="{WEB_SECRET}"></p>
</body></html>
"""


@dataclass
class Desk(A11yDesk):
    sway: Sway

    def window(self, pid: int, timeout_s: float = 30.0) -> WindowInfo:
        """``pid``'s window, as capture sees it."""
        return self.window_where(lambda w: w.pid == pid, f"window of process {pid}", timeout_s)

    def place(self, pid: int, at: tuple[int, int, int, int]) -> WindowInfo:
        """``pid``'s window floating at ``at``, once sway has it there."""
        win = self.window(pid)
        deadline, was, tries = time.monotonic() + 20, None, 0
        # until sway has it there, and the same twice half a second apart (a window that draws
        # its own decorations is given sway's a moment first; a busy one is asked again)
        while (win := self.window(pid)).rect != Rect(*at) or win != was:
            if time.monotonic() > deadline:
                raise AssertionError(f"sway did not float {win} at {at}")
            if win.rect != Rect(*at) and tries % 4 == 0:
                self.sway.floating(win.wid, *at)
            was, tries = win, tries + 1
            time.sleep(0.5)
        return win

    def shot(self) -> np.ndarray:
        """grim's image of the screen (BGR)."""
        (rect,) = self.windows.outputs()
        return self.windows.grab(1, rect)


@pytest.fixture(scope="module")
def desk(tmp_path_factory) -> Iterator[Desk]:
    from bench import a11y_session, waydesktop
    from perception.capture.session import open_desktop

    for why in (waydesktop.missing_tools(), a11y_session.missing_tools()):
        if why:
            unavailable(why)
    sway = waydesktop.Sway()
    opened = a11y_on(
        sway, lambda: a11y_session.A11ySession.on_sway(sway), lambda: open_desktop(env=sway.env)
    )
    with opened as (session, windows):
        yield Desk(session, windows, tmp_path_factory.mktemp("sway-a11y"), sway)


def _gtk(desk: Desk, title: str, at: tuple[int, int, int, int], *extra: str) -> tuple[App, Any]:
    args = ["--title", title, "--entry", ENTRY, "--block", "200x100", *extra]
    for text in LABELS:
        args += ["--label", text]
    app = desk.session.python_app("gtk_window", *args)
    return app, desk.place(app.pid, at)


@pytest.fixture(scope="module")
def gtk(desk) -> tuple[App, WindowInfo]:
    """Decorated by sway: its title bar and borders around the application's surface."""
    return _gtk(desk, "Budget notes", GTK_AT, "--type-password")


@pytest.fixture(scope="module")
def gtk_csd(desk) -> tuple[App, WindowInfo]:
    """Decorated by GTK: a header bar, and a shadow around the window in its surface."""
    return _gtk(desk, "Header notes", CSD_AT, "--headerbar")


@pytest.fixture(scope="module")
def chromium(desk) -> WindowInfo:
    from bench.a11y_session import WAYLAND_CHROMIUM

    if shutil.which("chromium") is None:
        unavailable("chromium is missing: apt-get install chromium")
    page = desk.session.root / "page.html"  # where the session's user may read it
    page.write_text(_page())
    os.chown(page, desk.sway.uid, desk.sway.gid)
    app = desk.session.spawn(
        [
            "chromium",
            *WAYLAND_CHROMIUM,
            "--no-sandbox",
            "--force-renderer-accessibility",
            f"--user-data-dir={desk.session.root / 'chromium'}",
            "--no-first-run",
            "--no-default-browser-check",
            "--password-store=basic",
            "--disable-background-networking",
            page.as_uri(),
        ],
        ready=None,
    )
    desk.window(app.pid, timeout_s=60)
    win = desk.place(app.pid, WEB_AT)
    deadline, counts = time.monotonic() + 30, [-1]
    while True:  # the page's tree is built after the window shows: until it stops growing
        got = AccessibilityReader(Limits(time_s=5.0), coords=WINDOW).window_text(win, True)
        if got and PARAGRAPHS[1] in [ln.text for ln in got.lines]:
            counts.append(got.nodes)
            if counts[-3:] == [got.nodes] * 3:
                return desk.window(app.pid)
        if time.monotonic() > deadline:
            raise AssertionError(f"Chromium's page was not in its tree in 30 s: {got}")
        time.sleep(0.2)


def _read(win: WindowInfo) -> WindowText:
    got = AccessibilityReader(Limits(time_s=5.0), coords=WINDOW).window_text(win, focused=True)
    assert got is not None, f"the tree gave nothing for {win}"
    return got


def _red(img: np.ndarray, within: Rect) -> tuple[int, int, int, int]:
    """The box of the pure red pixels inside ``within``."""
    x, y = within.x, within.y
    crop = img[y : y + within.height, x : x + within.width].astype(int)
    red = (crop[:, :, 2] > 200) & (crop[:, :, 1] < 60) & (crop[:, :, 0] < 60)
    ys, xs = np.nonzero(red)
    assert len(xs), f"no red pixels in {within}"
    return (x + int(xs.min()), y + int(ys.min()), x + int(xs.max()) + 1, y + int(ys.max()) + 1)


def _ink(img: np.ndarray, within: Rect) -> np.ndarray:
    """Where ``within`` has dark grey pixels (text on a light page; not a coloured title bar), as
    a mask over the whole image."""
    crop = img.astype(int)
    mask = (crop.max(axis=2) < 110) & (crop.max(axis=2) - crop.min(axis=2) < 30)
    out = np.zeros(mask.shape, bool)
    sl = np.s_[within.y : within.y + within.height, within.x : within.x + within.width]
    out[sl] = mask[sl]
    return out


def _on_its_text(img: np.ndarray, box: tuple[int, int, int, int], within: Rect) -> None:
    """A left-aligned line's box holds its text: its ink's middle row is the box's (within a few
    px), and the ink in the box's rows begins at the box's left edge, not before or far after."""
    ink = _ink(img, within)
    x0, y0, x1, y1 = box
    ys, xs = np.nonzero(ink[y0:y1, x0:x1])
    assert len(xs) >= 30, f"no text in {box}"
    mid = y0 + (int(ys.min()) + int(ys.max())) / 2
    assert abs(mid - (y0 + y1) / 2) <= 4, (box, y0 + int(ys.min()), y0 + int(ys.max()))
    row_ink = np.nonzero(ink[y0 + int(ys.min()) : y0 + int(ys.max()) + 1].any(axis=0))[0]
    assert x0 - TOL <= int(row_ink.min()) <= x0 + 10, (box, int(row_ink.min()))


def _near(a, b) -> bool:
    return all(abs(p - q) <= TOL for p, q in zip(a, b))


@pytest.mark.parametrize("which", ["gtk", "gtk_csd"])
def test_gtk_lines_and_picture_land_on_their_pixels(desk, which, request):
    _, win = request.getfixturevalue(which)
    got = _read(win)
    pairs = [(ln.text, ln.role) for ln in got.lines]
    assert (LABELS[0], "label") in pairs and (LABELS[1], "label") in pairs, pairs
    assert (ENTRY, "text") in pairs and got.complete, pairs
    img = desk.shot()
    shows = win.content or win.rect
    red = _red(img, shows)
    assert any(_near(p, red) for p in got.pictures), (got.pictures, red)
    for ln in got.lines:
        if ln.text in LABELS:
            _on_its_text(img, ln.box, shows)


def test_chromium_lines_and_image_land_on_their_pixels(desk, chromium):
    got = _read(chromium)
    pairs = [(ln.text, ln.role) for ln in got.lines]
    assert (HEADING, "heading") in pairs and all((p, "paragraph") in pairs for p in PARAGRAPHS)
    assert WEB_SECRET not in repr(got)
    img = desk.shot()
    shows = chromium.content or chromium.rect
    red = _red(img, shows)
    assert any(_near(p, red) for p in got.pictures), (got.pictures, red)
    for ln in got.lines:
        if ln.text in (HEADING, *PARAGRAPHS):
            _on_its_text(img, ln.box, shows)


def _said(app: App, line: str, timeout_s: float = 20.0) -> None:
    """Wait until ``app`` prints ``line``."""
    assert app.proc.stdout is not None
    fd, buf, deadline = app.proc.stdout.fileno(), b"", time.monotonic() + timeout_s
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while line.encode() not in buf.split(b"\n"):
            left = deadline - time.monotonic()
            assert left > 0 and sel.select(left), f"{line!r} not printed: {buf[-300:]!r}"
            buf += os.read(fd, 65536)


def test_a_password_typed_on_sway_is_never_read_and_the_sidecar_has_the_text(
    desk, gtk, chromium, tmp_path
):
    from perception.capture.config import CaptureConfig
    from perception.capture.daemon import Capturer
    from perception.capture.storage import CaptureStore

    app, win = gtk
    desk.sway.focus(win.wid)
    time.sleep(0.3)
    desk.sway.type(SECRET)  # into its password field, which has the keyboard
    _said(app, f"password {len(SECRET)}")
    got = _read(desk.window(app.pid))
    assert SECRET not in repr(got) and not any(ln.role == "password text" for ln in got.lines)
    out = tmp_path / "out"
    cap = Capturer(
        CaptureConfig(out=str(out), interval_s=0.5), CaptureStore(out), desktop=desk.windows
    )
    cap.run(duration_s=3.0)
    sides = [json.loads(p.read_text()) for p in sorted(out.rglob("*.jpg.json"))]
    texts = [s["screen_text"] for s in sides if "screen_text" in s]
    assert texts, f"no kept frame has text from the tree: {sides[:1]}"
    lines = {ln[0]: ln for ln in texts[-1]["lines"]}
    assert LABELS[0] in lines and PARAGRAPHS[0] in lines, lines
    # where the sidecar says a line is, the reader says too (one monitor, at 0, 0)
    for text, w in ((LABELS[0], desk.window(app.pid)), (PARAGRAPHS[0], chromium)):
        box = next(ln.box for ln in _read(w).lines if ln.text == text)
        assert _near(lines[text][2:6], box), (lines[text], box)
    every = b"".join(p.read_bytes() for p in out.rglob("*") if p.is_file())
    assert SECRET.encode() not in every and WEB_SECRET.encode() not in every
    assert cap.status()["tree"]["frames"] >= 1
