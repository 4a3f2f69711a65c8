"""``mnemo doctor``'s checks of the desktop that ``mnemo capture`` records: the display server (X11,
sway, another Wayland session, none; reachable or not) and the accessibility tree it reads screen
text from."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from mnemo.doctor_check import Check

log = logging.getLogger(__name__)


def display_check(env: Mapping[str, str]) -> Check:
    """The display server, for ``mnemo capture`` (X11 and sway): sway (reachable or not), another
    Wayland session, X11 (reachable or not) or none."""
    from perception.capture.session import SUPPORTED, refusal
    from perception.capture.wayland import sway_socket

    if sock := sway_socket(env):
        why = _sway_unreachable(sock)
        if why:
            return Check(
                "display",
                "warn",
                f"sway's IPC socket {sock} cannot be reached: {why}",
                "run mnemo inside the sway session, or set SWAYSOCK, WAYLAND_DISPLAY and "
                "XDG_RUNTIME_DIR to its",
            )
        return Check("display", "ok", f"sway at {sock}: mnemo capture can run")
    if env.get("WAYLAND_DISPLAY") or env.get("XDG_SESSION_TYPE") == "wayland":
        return Check(
            "display",
            "warn",
            f"a Wayland session that is not sway: mnemo capture supports {SUPPORTED}; "
            "ingesting screenshot folders works",
            'to capture, log in to an X11 session ("GNOME on Xorg", "Plasma (X11)") or to sway; '
            f"why: {refusal(env)}",
        )
    name = env.get("DISPLAY")
    if not name:
        return Check(
            "display",
            "warn",
            "no display server (DISPLAY is not set): mnemo capture cannot run here; "
            "ingest, ask and serve work without one",
            "to capture, run mnemo inside an X11 session (or set DISPLAY=:0)",
        )
    why = _x11_unreachable(name)
    if why:
        return Check(
            "display",
            "warn",
            f"DISPLAY={name}, but its X server cannot be reached: {why}",
            "start the X session, or set DISPLAY to the one you are logged in to (e.g. DISPLAY=:0)",
        )
    return Check("display", "ok", f"X11 at DISPLAY={name}: mnemo capture can run")


def _sway_unreachable(sock) -> str | None:
    from perception.capture.wayland import GET_VERSION, SwayIPC
    from perception.capture.windows import Unreadable

    ipc = SwayIPC(sock, timeout_s=2.0)
    try:
        ipc.request(GET_VERSION)
    except Unreadable as e:
        return str(e)
    finally:
        ipc.close()
    return None


def _x11_unreachable(name: str) -> str | None:
    try:
        from Xlib import display as xdisplay
        from Xlib import error as xerror
    except ImportError as e:
        return f"python-xlib is not installed ({e})"
    try:
        xdisplay.Display(name).close()
    except (xerror.DisplayError, xerror.ConnectionClosedError, OSError, ValueError) as e:
        log.debug("no X server at %s", name, exc_info=True)
        return str(e) or type(e).__name__
    return None


def accessibility_check(env: Mapping[str, str]) -> Check:
    """Whether ``mnemo capture`` can read screen text from the accessibility tree (else OCR reads
    all of it). No desktop here (no display, no session bus): a note, not a warning."""
    from perception.capture.a11y_switch import TURN_ON, status

    name = "accessibility tree"
    st = status(env)
    if not st.desktop and not st.apps:  # a server: no windows, nothing to publish a tree
        why = st.why or f"{len(st.apps)} application(s) on its accessibility bus"
        return Check(
            name,
            "ok",
            "no desktop session here (no display): nothing to read; where mnemo capture runs, "
            f"`mnemo capture a11y status` says whether it can ({why})",
        )
    if not st.readable:
        return Check(
            name,
            "warn",
            f"not readable ({st.desktop}): {st.why}; capture reads all screen text by OCR",
            st.fix,
        )
    apps = f": {', '.join(st.apps[:8])}{', ...' if len(st.apps) > 8 else ''}" if st.apps else ""
    said = f"readable, {len(st.apps)} application(s) publish a tree{apps}"
    if st.is_enabled is not True:
        return Check(
            name,
            "warn",
            f"{said}; but the session's accessibility flag is off (org.a11y.Status IsEnabled), "
            "so Qt, Chromium/Electron and Firefox applications publish none (OCR reads them)",
            TURN_ON,
        )
    return Check(name, "ok", f"{said}; accessibility on (org.a11y.Status IsEnabled)")
