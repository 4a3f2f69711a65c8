"""Which desktop capture reads: chosen at start from the session's environment.

- sway (``SWAYSOCK``, or sway's socket in ``XDG_RUNTIME_DIR``): ``wayland.SwayDesktop``. An
  XWayland window there is one more window in sway's tree.
- Any other Wayland session (GNOME, KDE Plasma, Hyprland, river, labwc…): refused, saying why.
  What these give a program without a portal is pixels at most, never which window is where, so
  exclusions could not be honoured (GNOME's and KDE's portals ask the user and hand over a stream
  of the screen; Hyprland's IPC has the window list, but capture has not been tested on it).
- Otherwise X11 (``DISPLAY``): ``x11.X11Desktop``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from perception.capture.windows import DesktopSession, Unsupported

SUPPORTED = "X11 sessions and sway"


def open_desktop(
    display_name: str | None = None, env: Mapping[str, str] | None = None
) -> DesktopSession:
    """The desktop of this session (or of the X display ``display_name``)."""
    from perception.capture.wayland import SwayDesktop, sway_socket
    from perception.capture.x11 import X11Desktop

    env = os.environ if env is None else env
    if display_name:
        return X11Desktop(display_name)
    if sock := sway_socket(env):
        return SwayDesktop(sock, env)
    if env.get("WAYLAND_DISPLAY") or env.get("XDG_SESSION_TYPE") == "wayland":
        raise Unsupported(refusal(env))
    return X11Desktop(None)


def refusal(env: Mapping[str, str]) -> str:
    """Why this Wayland session cannot be captured, and what to do instead."""
    desk = env.get("XDG_CURRENT_DESKTOP") or env.get("DESKTOP_SESSION") or ""
    if env.get("HYPRLAND_INSTANCE_SIGNATURE"):
        which = (
            "Hyprland: its IPC lists every window, but mnemo capture has not been built and "
            "tested against it yet"
        )
    elif any(d in desk.upper() for d in ("GNOME", "KDE", "PLASMA", "UNITY", "CINNAMON")):
        which = (
            f"{desk} on Wayland: a program may see the screen only through the desktop portal, "
            "which hands over the pixels but not which window is where, so an excluded window "
            "(a password manager, a private browser window) could not be left out or blacked out"
        )
    else:
        which = (
            f"{desk or 'this compositor'} on Wayland: without sway's IPC there is no list of "
            "windows with their titles and places, so exclusions could not be honoured"
        )
    return (
        f"mnemo capture supports {SUPPORTED}; this is {which}. It does not capture what it "
        'cannot keep private. Log in to an X11 session ("GNOME on Xorg", "Plasma (X11)") or '
        "to sway to capture; ingesting screenshot folders (mnemo ingest) works everywhere"
    )
