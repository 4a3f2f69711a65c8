"""Screens with known text for ``mnemo bench ocr``, rendered by real programs under Xvfb.

Each screen is one full 1280x800 desktop frame (what the capture daemon grabs) holding lines whose
exact text the bench knows, because it put them there:

- terminal: xterm showing a file with ``cat``, in DejaVu Sans Mono at 10-18 px (fontconfig's
  ``pixelsize``, xterm's FreeType path) and in the misc-fixed bitmap fonts of ``xfonts-base`` (7x14, 9x15, 10x20: xterm's core-font
  path, another look of terminal text);
- ui: a Chromium window (``--app``, no browser chrome) with a menu bar, a page of body text and a
  dialog with a message and buttons, in DejaVu Sans and Nimbus Sans at 13-16 px; and xmessage,
  the X dialog, with its buttons.

The frames are cached under ``~/.cache/mnemo/ocr-screens`` keyed by the texts, fonts and sizes, so
a second run reads the same pixels; delete that folder to render again.
"""

from __future__ import annotations

import hashlib
import html
import json
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from bench.fixtures import cache_dir

VERSION = "2"

# Terminal lines: commands, logs, notes and identifiers as a desktop shows them (at most 72 columns)
TERMINAL_LINES = (
    "$ echo the parking spot is level 3 bay 42",
    "the parking spot is level 3 bay 42",
    "Quarterly launch codename: BLUEHERON",
    "It ships on Friday after the design review",
    "$ git commit -m 'fix the retry loop in the uploader'",
    "[main 4f2a9c1] fix the retry loop in the uploader",
    " 2 files changed, 31 insertions(+), 7 deletions(-)",
    "$ ls -la ~/projects/garden-planner",
    "drwxr-xr-x  5 anna staff  4096 Mar 14 09:12 src",
    "-rw-r--r--  1 anna staff  1893 Mar 14 09:10 README.md",
    "$ ssh deploy@build-07.example.org",
    "Last login: Tue Mar 12 18:40:55 2024 from 10.0.4.21",
    "ERROR connection refused while reaching the database on port 5432",
    "WARNING disk usage at 91 percent on volume data",
    "INFO backup finished in 4 minutes and 12 seconds",
    "Dentist appointment moved to Thursday at half past two",
    "Call the plumber about the kitchen sink before noon",
    "Flight BA 283 departs from gate B17 at 7:45 in the morning",
    "The wifi password for the cabin is maple-sunrise-19",
    "Remember to water the tomatoes and feed the cat",
    "$ python3 train.py --epochs 20 --batch-size 64",
    "epoch 3/20 loss 0.4172 accuracy 0.8831",
    "Meeting notes: budget approved, hiring two engineers",
    "Order number 7741-2290 ships within three working days",
)

# Text a user interface shows: a menu bar, body text, a dialog's title, message and buttons
UI_MENU = ("File", "Edit", "View", "History", "Bookmarks", "Help")
UI_BODY = (
    "Our community garden opens every Saturday morning.",
    "Volunteers bring their own gloves and water bottles.",
    "The compost bins are emptied on the first Monday of the month.",
    "Please lock the shed after you return the tools.",
    "Seedlings for tomatoes and peppers are free this spring.",
    "Questions about plots go to Maria at the front desk.",
)
UI_DIALOG = (
    "Unsaved changes",
    "Save the changes to quarterly report before closing?",
    "Your changes will be lost if you don't save them.",
)
UI_BUTTONS = ("Save", "Cancel", "Close without saving")
XMESSAGE_LINES = ("The backup drive is almost full.", "Delete snapshots older than thirty days?")
XMESSAGE_BUTTONS = ("Delete", "Keep", "Remind me later")


@dataclass(frozen=True)
class Screen:
    name: str  # file stem of the cached frame
    kind: str  # "terminal" or "ui"
    program: str  # "xterm", "xterm-core", "chromium" or "xmessage"
    font: str
    px: int  # font size in pixels (the core fonts: their cell height)
    lines: tuple[str, ...]  # the text shown, one reference line each


def screens() -> list[Screen]:
    out = []
    n = len(TERMINAL_LINES)
    for i, px in enumerate(
        (10, 12, 14, 16, 18)
    ):  # every line at every FreeType size, in a rotated order
        lines = TERMINAL_LINES[i * 5 % n :] + TERMINAL_LINES[: i * 5 % n]
        out.append(Screen(f"xterm-dejavu-{px}", "terminal", "xterm", "DejaVu Sans Mono", px, lines))
    for i, font in enumerate(("7x14", "9x15", "10x20")):
        lines = TERMINAL_LINES[i * 8 :] + TERMINAL_LINES[: i * 8]
        out.append(
            Screen(
                f"xterm-{font}", "terminal", "xterm-core", font, int(font.split("x")[1]), lines[:16]
            )
        )
    ui = (
        " ".join(UI_MENU),
        *UI_BODY,
        *UI_DIALOG,
        " ".join(UI_BUTTONS),
    )  # a menu bar and a button row read as lines
    for font, px in (("DejaVu Sans", 13), ("Nimbus Sans", 15), ("DejaVu Sans", 16)):
        out.append(Screen(f"page-{font.split()[0].lower()}-{px}", "ui", "chromium", font, px, ui))
    out.append(
        Screen(
            "xmessage-10x20",
            "ui",
            "xmessage",
            "10x20",
            20,
            (*XMESSAGE_LINES, " ".join(XMESSAGE_BUTTONS)),
        )
    )
    return out


def screen_folder() -> Path:
    """The folder of rendered frames (``<name>.png``), rendered first when missing or stale. The
    frames are rendered into a folder of their own and moved in place, so two processes rendering
    at once never leave one half-written."""
    import os
    import tempfile

    key = hashlib.sha256(
        json.dumps([VERSION, [s.__dict__ for s in screens()]]).encode()
    ).hexdigest()[:16]
    root = cache_dir() / "ocr-screens"
    if _complete(root, key):
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=".ocr-screens-", dir=root.parent))
    try:
        with tempfile.TemporaryDirectory(prefix="mnemo-ocr-screens-") as tmp:
            _render_all(fresh, Path(tmp))
        (fresh / ".key").write_text(key)
        if not _complete(root, key):  # another process may have finished first
            shutil.rmtree(root, ignore_errors=True)
            os.replace(fresh, root)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
    return root


def _complete(root: Path, key: str) -> bool:
    return (
        (root / ".key").is_file()
        and (root / ".key").read_text() == key
        and all((root / f"{s.name}.png").is_file() for s in screens())
    )


def render(screen: Screen, size: str = "1280x800"):
    """One screen rendered on a desktop of ``size`` (``WxH``) and grabbed, as an RGB array."""
    import tempfile

    import numpy as np

    from bench.xdesktop import Desktop

    if why := missing_tools():
        raise RuntimeError(f"rendering a screen needs real X programs: {why}")
    with tempfile.TemporaryDirectory(prefix="mnemo-screen-") as tmp:
        desk = Desktop(Path(tmp), size=size)
        try:
            _open(desk, screen, Path(tmp))
            shot = _settled_grab(desk.display)
            return (
                np.frombuffer(shot.rgb, dtype=np.uint8).reshape(shot.height, shot.width, 3).copy()
            )
        finally:
            desk.close()


def missing_tools() -> str:
    from bench.xdesktop import missing_tools as x_missing

    why = x_missing()
    if shutil.which("chromium") is None:
        why = (
            why + "; " if why else ""
        ) + "no chromium: apt-get install chromium (make xtools does it as root)"
    return why


def _render_all(root: Path, tmp: Path) -> None:
    import mss
    import mss.tools

    from bench.xdesktop import Desktop

    if why := missing_tools():
        raise RuntimeError(f"bench ocr renders its screens with real X programs: {why}")
    desk = Desktop(tmp, size="1280x800")
    try:
        for screen in screens():
            proc = _open(desk, screen, tmp)
            shot = _settled_grab(desk.display)
            mss.tools.to_png(shot.rgb, shot.size, output=str(root / f"{screen.name}.png"))
            proc.terminate()
            proc.wait(timeout=20)
            time.sleep(0.3)
    finally:
        desk.close()


def _settled_grab(display: str, every_s: float = 0.3, timeout_s: float = 30.0):
    """The screen once two grabs ``every_s`` apart are the same: a program on a machine busy with
    other work may still be painting after the fixed wait in ``_open``. The last grab when it never
    settles."""
    import mss

    with mss.MSS(display=display) as grab:
        shot = grab.grab(grab.monitors[1])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            time.sleep(every_s)
            again = grab.grab(grab.monitors[1])
            if again.rgb == shot.rgb:
                break
            shot = again
    return shot


def _open(desk, screen: Screen, tmp: Path) -> subprocess.Popen:
    """Show one screen's text in its program and return the process once the window is drawn."""
    if screen.program.startswith("xterm"):
        text = tmp / f"{screen.name}.txt"
        text.write_text("\n".join(screen.lines) + "\n")
        font = (
            ["-fa", f"{screen.font}:pixelsize={screen.px}"]
            if screen.program == "xterm"
            else ["-fn", screen.font]
        )
        cmd = [
            "xterm",
            *font,
            "-geometry",
            "76x26+40+40",
            "-T",
            "notes",
            "-hold",
            "-e",
            "cat",
            str(text),
        ]
        cls = "XTerm"
    elif screen.program == "xmessage":
        cmd = [
            "xmessage",
            "-center",
            "-xrm",
            f"*font: {screen.font}",
            "-buttons",
            ",".join(XMESSAGE_BUTTONS),
            "\n".join(XMESSAGE_LINES),
        ]
        cls = "Xmessage"
    else:
        page = tmp / f"{screen.name}.html"
        page.write_text(_page(screen.font, screen.px), encoding="utf-8")
        cmd = [
            "chromium",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-dev-shm-usage",
            "--test-type",
            f"--user-data-dir={tmp / 'chromium'}",
            "--window-position=0,0",
            "--window-size=1280,800",
            f"--app=file://{page}",
        ]
        cls = "Chromium"
    proc = subprocess.Popen(
        cmd, env=desk.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp
    )
    desk.procs.append(proc)
    # focused, as a person reads it (the frame and the cursor are drawn as for a focused window)
    desk.focus(desk.wait_window(cls))
    time.sleep(
        4.0 if cls == "Chromium" else 1.5
    )  # drawn: Chromium lays out and paints after mapping
    return proc


def _page(font: str, px: int) -> str:
    e = html.escape
    menu = "".join(f"<span>{e(m)}</span>" for m in UI_MENU)
    body = "".join(f"<p>{e(t)}</p>" for t in UI_BODY)
    title, *message = UI_DIALOG
    buttons = "".join(f"<button>{e(b)}</button>" for b in UI_BUTTONS)
    return f"""<!doctype html><html><head><meta charset="utf-8"><style>
body {{ margin: 0; font: {px}px '{font}'; color: #222; background: #fff; white-space: nowrap; }}
nav {{ background: #eee; padding: 6px 12px; border-bottom: 1px solid #ccc; }}
nav span {{ margin-right: 22px; }}
main {{ padding: 10px 24px; }} p {{ margin: 0 0 {px}px; }}
.dialog {{ position: absolute; left: 640px; top: 380px; width: 560px; border: 1px solid #999;
  box-shadow: 0 4px 16px #0003; background: #fafafa; }}
.dialog h2 {{ font-size: {px + 2}px; margin: 0; padding: 10px 16px; background: #dde4ee; }}
.dialog div {{ padding: 6px 16px; }} .buttons {{ text-align: right; }}
button {{ font: {px}px '{font}'; margin-left: 10px; padding: 5px 14px; }}
</style></head><body><nav>{menu}</nav><main>{body}</main>
<section class="dialog"><h2>{e(title)}</h2>{"".join(f"<div>{e(m)}</div>" for m in message)}
<div class="buttons">{buttons}</div></section></body></html>"""
