"""What the X11 desktop shows, read on one Xlib connection, and its pixels (mss): the focused window, the stack of
visible windows with their geometry, input idleness and the screen saver.

No subprocess per tick: every query is a round trip on the connection opened once. A lost
connection raises ``XConnectionLost`` so the daemon can stop with a clear error.
"""

from __future__ import annotations

import logging
import os

import numpy as np

from perception.capture.ctext import decode_compound_text
from perception.capture.windows import (
    DesktopLost,
    Rect,
    Unsupported,
    WindowInfo,
    is_locker,
)

log = logging.getLogger(__name__)


class XConnectionLost(DesktopLost):
    """The X server went away (logout, crash) or cannot be reached."""


class NotX11(Unsupported):
    """The session is not an X11 session capture can read."""


def check_session() -> None:
    """Raise ``NotX11`` with what to do when DISPLAY is not set (which display server a session
    runs is ``perception.capture.session.open_desktop``'s choice)."""
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
        if any(is_locker(w.app, w.instance) for w in [*top, *([focused] if focused else [])]):
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
                    if is_locker(cls[1] or "", cls[0] or ""):
                        return True
            except (xerror.BadWindow, xerror.BadMatch):  # gone since the query (a tooltip, a menu)
                continue
        return False


class X11Desktop(X11Session):
    """The X11 ``DesktopSession``: the Xlib connection for windows and input, mss for pixels."""

    kind = "x11"

    def __init__(self, display_name: str | None = None) -> None:
        super().__init__(display_name)
        from Xlib.error import XError

        self.dropped_errors: tuple[type[BaseException], ...] = (XError,)
        self.display_name = display_name
        self.grabber = self._mss()
        self._rects = self._read_rects(self.grabber)

    def _mss(self):
        import mss

        try:
            return mss.MSS(display=self.display_name) if self.display_name else mss.MSS()
        except mss.exception.ScreenShotError as e:
            raise XConnectionLost(f"cannot grab the screen: {e}") from e

    @staticmethod
    def _read_rects(grabber) -> list[Rect]:
        import mss

        try:  # mss's first entry is all monitors together
            return [
                Rect(g["left"], g["top"], g["width"], g["height"]) for g in grabber.monitors[1:]
            ]
        except mss.exception.ScreenShotError as e:
            raise XConnectionLost(f"cannot read the monitor layout: {e}") from e

    def outputs(self) -> list[Rect]:
        """The layout read afresh (mss caches it per instance): a new grabber when it changed."""
        fresh = self._mss()
        try:
            rects = self._read_rects(fresh)
        except XConnectionLost:
            fresh.close()
            raise
        if rects == self._rects:
            fresh.close()
        else:
            self.grabber.close()
            self.grabber, self._rects = fresh, rects
        return list(rects)

    def grab(self, index: int, rect: Rect) -> np.ndarray:
        import mss

        try:
            shot = self.grabber.grab(
                {"left": rect.x, "top": rect.y, "width": rect.width, "height": rect.height}
            )
        except mss.exception.ScreenShotError as e:
            raise XConnectionLost(f"grabbing monitor {index} failed: {e}") from e
        return np.frombuffer(shot.raw, dtype=np.uint8).reshape(shot.height, shot.width, 4)

    def close(self) -> None:
        super().close()
        try:
            self.grabber.close()
        except Exception:  # noqa: BLE001 - as above
            pass
