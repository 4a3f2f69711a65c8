"""What the X11 desktop shows, read on one Xlib connection: the focused window, the stack of
visible windows with their geometry, input idleness and the screen saver.

No subprocess per tick: every query is a round trip on the connection opened once. A lost
connection raises ``XConnectionLost`` so the daemon can stop with a clear error.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from perception.capture.ctext import decode_compound_text

log = logging.getLogger(__name__)

# lockers' WM_CLASS (lower case); their window on top means the screen is locked
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
    }
)


def _is_locker(app: str, instance: str) -> bool:
    return app.lower() in LOCKERS or instance.lower() in LOCKERS


class XConnectionLost(RuntimeError):
    """The X server went away (logout, crash) or cannot be reached."""


class NotX11(RuntimeError):
    """The session is not an X11 session capture can read."""


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

    def center_in(self, other: Rect) -> bool:
        cx, cy = self.x + self.width // 2, self.y + self.height // 2
        return other.x <= cx < other.x + other.width and other.y <= cy < other.y + other.height


@dataclass(frozen=True)
class WindowInfo:
    wid: int
    app: str  # WM_CLASS class
    instance: str  # WM_CLASS instance
    title: str  # _NET_WM_NAME, else WM_NAME
    pid: int | None
    rect: Rect | None  # on screen, window-manager frame included; None when unmapped or unknown


def check_session() -> None:
    """Raise ``NotX11`` with what to do when this is not an X11 session."""
    if os.environ.get("WAYLAND_DISPLAY") or os.environ.get("XDG_SESSION_TYPE") == "wayland":
        raise NotX11(
            "this is a Wayland session: mnemo capture supports X11 only for now (Wayland compositors "
            "do not let one client read other windows' pixels or titles without a portal). Log in to "
            'an X11 session ("GNOME on Xorg", "Plasma (X11)") to capture; ingesting screenshot '
            "folders works everywhere"
        )
    if not os.environ.get("DISPLAY"):
        raise NotX11(
            "DISPLAY is not set: run mnemo capture inside an X11 session (or set DISPLAY=:0)"
        )


def decode_text(display, prop, utf8: bool = False) -> str:
    """A text property as str: UTF8_STRING, STRING (Latin-1) or COMPOUND_TEXT (ISO 2022).
    ``utf8``: a property that is UTF-8 by definition (_NET_WM_NAME), whatever type a client gave it
    (xdotool's set_window writes it as STRING)."""
    if prop is None or prop.value is None:
        return ""
    raw = prop.value if isinstance(prop.value, bytes) else bytes(prop.value)
    kind = display.get_atom_name(prop.property_type) if prop.property_type else ""
    if kind == "UTF8_STRING" or utf8:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw.decode("latin-1")
    if kind == "COMPOUND_TEXT":
        return decode_compound_text(raw)
    return raw.decode("latin-1")


class X11Session:
    """One connection to the X server, with the atoms interned once."""

    def __init__(self, display_name: str | None = None) -> None:
        if display_name is None:
            check_session()
        from Xlib import display as xdisplay
        from Xlib import error as xerror

        try:
            self.display = xdisplay.Display(display_name)
        except (xerror.DisplayError, xerror.ConnectionClosedError, OSError) as e:
            raise XConnectionLost(
                f"cannot connect to the X server {display_name or os.environ.get('DISPLAY')}: {e}"
            ) from e
        self.root = self.display.screen().root
        self._atoms = {
            name: self.display.intern_atom(name)
            for name in (
                "_NET_ACTIVE_WINDOW",
                "_NET_WM_NAME",
                "UTF8_STRING",
                "_NET_WM_PID",
                "_NET_CLIENT_LIST_STACKING",
                "_NET_FRAME_EXTENTS",
                "_NET_WM_STATE",
                "_NET_WM_STATE_HIDDEN",
                "WM_STATE",
            )
        }
        self.has_screensaver = self.display.has_extension("MIT-SCREEN-SAVER")

    def close(self) -> None:
        try:
            self.display.close()
        except Exception:  # noqa: BLE001 - closing a dead connection must not mask why it died
            pass

    def _call(self, fn, *args):
        from Xlib import error as xerror

        try:
            return fn(*args)
        except (xerror.ConnectionClosedError, BrokenPipeError, ConnectionResetError) as e:
            raise XConnectionLost(
                f"the X server closed the connection ({e}); capture stopped"
            ) from e

    def _prop(self, window, name: str):
        from Xlib import X
        from Xlib import error as xerror

        try:
            return window.get_full_property(self._atoms[name], X.AnyPropertyType)
        except (xerror.BadWindow, xerror.BadMatch):
            return None

    def _window(self, wid: int) -> WindowInfo | None:
        from Xlib import X, Xatom
        from Xlib import error as xerror

        win = self.display.create_resource_object("window", wid)
        try:
            cls = win.get_wm_class() or ("", "")
            title = decode_text(
                self.display, self._prop(win, "_NET_WM_NAME"), utf8=True
            ) or decode_text(self.display, win.get_full_property(Xatom.WM_NAME, X.AnyPropertyType))
            pid_prop = self._prop(win, "_NET_WM_PID")
            pid = int(pid_prop.value[0]) if pid_prop is not None and len(pid_prop.value) else None
            return WindowInfo(wid, cls[1] or "", cls[0] or "", title, pid, self._rect(win))
        except (xerror.BadWindow, xerror.BadDrawable, xerror.BadMatch):
            return None  # closed between the list and the query

    def _rect(self, win) -> Rect | None:
        from Xlib import X

        attrs = win.get_attributes()
        if attrs.map_state != X.IsViewable:
            return None
        state = self._prop(win, "_NET_WM_STATE")
        if state is not None and self._atoms["_NET_WM_STATE_HIDDEN"] in state.value:
            return None
        geo = win.get_geometry()
        pos = win.translate_coords(self.root, 0, 0)
        left, right, top, bottom = 0, 0, 0, 0
        ext = self._prop(win, "_NET_FRAME_EXTENTS")
        if ext is not None and len(ext.value) == 4:
            left, right, top, bottom = (int(v) for v in ext.value)
        return Rect(
            -pos.x - left, -pos.y - top, geo.width + left + right, geo.height + top + bottom
        )

    def focused(self) -> WindowInfo | None:
        """The active window (EWMH), else the input focus; None when nothing has focus."""
        return self._call(self._focused)

    def _focused(self) -> WindowInfo | None:
        prop = self._prop(self.root, "_NET_ACTIVE_WINDOW")
        wid = int(prop.value[0]) if prop is not None and len(prop.value) else 0
        if not wid:
            focus = self.display.get_input_focus().focus
            wid = getattr(focus, "id", 0)
            if wid in (0, 1, self.root.id):  # None / PointerRoot / the root
                return None
        return self._window(wid)

    def stacking(self) -> list[WindowInfo]:
        """Client windows bottom to top (EWMH stacking list, else the root's children)."""
        return self._call(self._stacking)

    def _stacking(self) -> list[WindowInfo]:
        prop = self._prop(self.root, "_NET_CLIENT_LIST_STACKING")
        wids = (
            [int(w) for w in prop.value]
            if prop is not None
            else [c.id for c in self.root.query_tree().children]
        )
        return [w for w in (self._window(wid) for wid in wids) if w is not None]

    def idle_s(self) -> float:
        """Seconds since the last keyboard or mouse input (0 without the screen-saver extension)."""
        return self.saver()[1]

    def saver(self) -> tuple[bool, float]:
        """Whether the screen saver is on, and seconds since the last input: one round trip.
        Without the screen-saver extension: off, and 0 s idle."""
        if not self.has_screensaver:
            return False, 0.0
        info = self._call(self.root.screensaver_query_info)
        return info.state == 1, info.idle / 1000.0  # state 1: ScreenSaverOn

    def locked(self, windows: list[WindowInfo], focused: WindowInfo | None) -> bool:
        """A known screen locker is focused, on top of the stack, or shown as an override-redirect
        window (i3lock, slock and xsecurelock map one over everything, which no window manager
        lists among its clients)."""
        top = [w for w in windows if w.rect is not None][-1:]
        if any(_is_locker(w.app, w.instance) for w in [*top, *([focused] if focused else [])]):
            return True
        return self._call(self._override_locker)

    def _override_locker(self) -> bool:
        from Xlib import X
        from Xlib import error as xerror

        for child in reversed(self.root.query_tree().children):  # top first
            try:
                attrs = child.get_attributes()
                if attrs.override_redirect and attrs.map_state == X.IsViewable:
                    cls = child.get_wm_class() or ("", "")
                    if _is_locker(cls[1] or "", cls[0] or ""):
                        return True
            except (xerror.BadWindow, xerror.BadMatch):  # gone since the query (a tooltip, a menu)
                continue
        return False
