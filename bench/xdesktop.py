"""A real X desktop for the capture tests and bench: Xvfb (or Xorg's dummy driver, for monitors
that come and go) with openbox and real X clients (xterm, xclock), driven with xdotool. Debian's
xvfb, openbox, xterm, x11-apps, x11-utils, xdotool, x11-xserver-utils, fonts-dejavu-core,
xserver-xorg-core and xserver-xorg-video-dummy provide them (`make test` installs them)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

TOOLS = ("Xvfb", "openbox", "xterm", "xclock", "xdotool", "xset", "xprop")
APT = "apt-get install xvfb openbox xterm x11-apps x11-utils xdotool x11-xserver-utils fonts-dejavu-core xfonts-base"


def missing_tools() -> str:
    """Empty when every tool is installed, else what is missing and how to install it."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    return f"missing X tools {missing}: {APT}" if missing else ""


# Xorg with the dummy video driver: unlike Xvfb, its 16 outputs (DUMMY0..DUMMY15) can be switched
# on and off with xrandr, so monitors can be plugged in and out (Debian's xserver-xorg-core and
# xserver-xorg-video-dummy)
DUMMY_CONF = """\
Section "Device"
    Identifier "dummy"
    Driver "dummy"
    VideoRam 65536
EndSection
Section "Monitor"
    Identifier "monitor"
    HorizSync 5.0-1000.0
    VertRefresh 5.0-200.0
EndSection
Section "Screen"
    Identifier "screen"
    Device "dummy"
    Monitor "monitor"
    DefaultDepth 24
    SubSection "Display"
        Depth 24
        Virtual 4096 2048
    EndSubSection
EndSection
"""


def missing_dummy_server() -> str:
    """Empty when Xorg and its dummy driver are installed, else how to install them."""
    if shutil.which("Xorg") and Path("/usr/lib/xorg/modules/drivers/dummy_drv.so").exists():
        return ""
    return "Xorg with the dummy driver is missing: apt-get install xserver-xorg-core xserver-xorg-video-dummy"


class Desktop:
    """One X display with a window manager; ``xterm`` and ``xclock`` open windows on it. The
    server is Xvfb, or with ``monitors=True`` Xorg's dummy driver, whose monitors ``plug`` and
    ``unplug`` add and remove (Xorg needs root)."""

    def __init__(self, tmp: Path, size: str = "1920x1080", monitors: bool = False) -> None:
        if why := missing_tools() or (monitors and missing_dummy_server()):
            raise RuntimeError(why)
        read, write = os.pipe()
        self.procs: list[subprocess.Popen] = []
        if monitors:
            conf = tmp / "xorg-dummy.conf"
            conf.write_text(DUMMY_CONF)
            cmd = [
                "Xorg",
                "-config",
                str(conf),
                "-logfile",
                str(tmp / "xorg.log"),
                "-displayfd",
                str(write),
            ]
        else:
            cmd = ["Xvfb", "-displayfd", str(write), "-screen", "0", f"{size}x24"]
        self.server = subprocess.Popen(
            [*cmd, "-nolisten", "tcp", "-noreset"],
            pass_fds=(write,),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(write)
        with os.fdopen(read) as f:
            self.display = ":" + f.readline().strip()
        self.env = {**os.environ, "DISPLAY": self.display, "XDG_RUNTIME_DIR": str(tmp / "run")}
        self.env.pop("WAYLAND_DISPLAY", None)
        (tmp / "run").mkdir(mode=0o700, exist_ok=True)
        self.spawn(["openbox"])
        # the window manager up before any window: without it windows have no frame and no focus
        # (this went on regardless after 10 s; a busy machine may take longer)
        deadline = time.time() + 60
        while "_NET_SUPPORTING_WM_CHECK" not in self.run(["xprop", "-root"], check=False):
            if time.time() > deadline:
                self.close()
                raise RuntimeError(f"openbox did not start on {self.display} in 60 s")
            time.sleep(0.1)
        self.run(["xset", "s", "off"], check=False)  # tests turn the screen saver on themselves

    def spawn(self, cmd: list[str]) -> subprocess.Popen:
        p = subprocess.Popen(
            cmd, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self.procs.append(p)
        return p

    def run(self, cmd: list[str], check: bool = True) -> str:
        out = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=30)
        if check and out.returncode:
            raise RuntimeError(f"{cmd} failed: {out.stderr}")
        return out.stdout

    def xterm(
        self,
        title: str,
        cls: str = "XTerm",
        geometry: str = "80x24+100+100",
        font_px: int = 14,
        latin1: bool = False,
        command: list[str] | None = None,
        options: tuple[str, ...] = (),
    ) -> str:
        """Open an xterm with this title and WM_CLASS class; returns its window id once mapped. In
        a UTF-8 locale xterm sets WM_NAME as COMPOUND_TEXT; with ``latin1`` (the C locale, a
        Latin-1 title) as STRING. ``command`` runs in it instead of a shell; ``options`` are
        xterm's own, added to these."""
        arg = title.encode("latin-1") if latin1 else title.encode()
        env = {**self.env, "LC_ALL": "C" if latin1 else "C.UTF-8"}
        self.procs.append(
            subprocess.Popen(
                [
                    b"xterm",
                    b"-class",
                    cls.encode(),
                    b"-T",
                    arg,
                    b"-fa",
                    b"DejaVu Sans Mono",
                    b"-fs",
                    str(font_px).encode(),
                    b"-geometry",
                    geometry.encode(),
                    b"-xrm",
                    b"XTerm*allowTitleOps: false",
                    *(o.encode() for o in options),
                    *([b"-e", *(c.encode() for c in command)] if command else []),
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        return self.wait_window(cls)

    def xclock(self, geometry: str = "200x200-0+0") -> str:
        self.spawn(["xclock", "-update", "1", "-geometry", geometry])
        return self.wait_window("XClock")

    def wait_window(self, cls: str, timeout_s: float = 30.0) -> str:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                out = self.run(["xdotool", "search", "--sync", "--onlyvisible", "--class", cls])
                return out.split()[-1]
            except (
                RuntimeError
            ) as e:  # a window that went away while xdotool looked at it: look again
                if "BadWindow" not in str(e) or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def geometry(self, wid: str) -> tuple[int, int, int, int]:
        """A window's content on screen (x, y, width, height), its frame apart (xdotool's)."""
        out = dict(
            line.split("=", 1)
            for line in self.run(["xdotool", "getwindowgeometry", "--shell", wid]).split()
        )
        return int(out["X"]), int(out["Y"]), int(out["WIDTH"]), int(out["HEIGHT"])

    def plug(self, output: str, mode: str = "800x600", right_of: str = "DUMMY0") -> None:
        """Switch a dummy output on (``monitors=True``): a monitor plugged in."""
        self.run(
            ["xrandr", "--addmode", output, mode], check=False
        )  # once per output; again is an error
        self.run(["xrandr", "--output", output, "--mode", mode, "--right-of", right_of])

    def unplug(self, output: str) -> None:
        self.run(["xrandr", "--output", output, "--off"])

    def focus(self, wid: str) -> None:
        self.run(["xdotool", "windowactivate", "--sync", wid])
        time.sleep(0.2)

    def type(self, text: str, delay_ms: int = 20) -> None:
        self.run(["xdotool", "type", "--delay", str(delay_ms), text])

    def close(self) -> None:
        for p in reversed(self.procs):
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        self.server.terminate()
        self.server.wait(timeout=10)
