"""What every desktop backend reports, whatever the display server: windows with their geometry,
the lockers that mean the screen is locked, the errors that end or interrupt capture, and the
``DesktopSession`` protocol the daemon reads a desktop through (X11 in ``x11.py``, sway in
``wayland.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

# lockers (X11 WM_CLASS, Wayland app id or process name, lower case); one up means the screen is locked
LOCKERS = frozenset(
    {
        "i3lock",
        "xscreensaver",
        "light-locker",
        "xsecurelock",
        "slock",
        "xlock",
        "xtrlock",
        "physlock",
        "gnome-screensaver",
        "mate-screensaver",
        "cinnamon-screensaver",
        "kscreenlocker",
        "kscreenlocker_greet",
        "xfce4-screensaver",
        "swaylock",
        "betterlockscreen",
        "hyprlock",
        "gtklock",
        "waylock",
    }
)


def is_locker(*names: str) -> bool:
    return any(n.lower() in LOCKERS for n in names if n)


class DesktopLost(RuntimeError):
    """The display server went away for good (logout, crash): capture stops with this message."""


class Unreadable(RuntimeError):
    """What the desktop shows cannot be read or trusted just now (the window tree, a frame, an
    output): this grab is dropped, never stored unchecked, and capture resumes when it can."""


class Unsupported(RuntimeError):
    """This session's display server is one capture cannot read with its privacy guarantees."""


@dataclass(frozen=True)
class Rect:
    x: int
    y: int
    width: int
    height: int

    def intersects(self, other: Rect) -> bool:
        return (
            self.x < other.x + other.width
            and other.x < self.x + self.width
            and self.y < other.y + other.height
            and other.y < self.y + self.height
        )

    def contains(self, x: int, y: int) -> bool:
        return self.x <= x < self.x + self.width and self.y <= y < self.y + self.height

    def center_in(self, other: Rect) -> bool:
        cx, cy = self.x + self.width // 2, self.y + self.height // 2
        return other.x <= cx < other.x + other.width and other.y <= cy < other.y + other.height


@dataclass(frozen=True)
class WindowInfo:
    wid: int
    app: str  # X11: WM_CLASS class; Wayland: the app id (an XWayland window: its WM_CLASS class)
    instance: str  # X11: WM_CLASS instance; Wayland: the app id again (XWayland: the instance)
    title: str
    pid: int | None
    rect: Rect | None  # on screen, decorations included; None when hidden or unknown
    # the application's own window on screen (sway: the view's content, its title bar and
    # borders apart); None where unknown, or where applications know where they are (X11)
    content: Rect | None = None


class DesktopSession(Protocol):
    """One display server, as the capture loop reads it. Errors: ``DesktopLost`` ends capture,
    ``Unreadable`` drops this grab, and ``dropped_errors`` are the backend's own exceptions that
    mean a window went away mid-query (the grab is dropped and retried at once, unlogged)."""

    kind: str  # "x11" or "sway"
    dropped_errors: tuple[type[BaseException], ...]

    def outputs(self) -> list[Rect]:
        """The monitors now, in a stable order (the first is monitor 1)."""
        ...

    def grab(self, index: int, rect: Rect) -> np.ndarray:
        """Monitor ``index`` (1-based, as ``outputs``) as a BGR or BGRA image."""
        ...

    def focused(self) -> WindowInfo | None: ...

    def stacking(self) -> list[WindowInfo]:
        """Client windows bottom to top."""
        ...

    def saver(self) -> tuple[bool, float]:
        """Whether the screens are blanked, and seconds since the last keyboard or mouse input."""
        ...

    def idle_s(self) -> float: ...

    def locked(self, windows: list[WindowInfo], focused: WindowInfo | None) -> bool: ...

    def close(self) -> None: ...
