"""The desktop a ``bench capture`` session runs on, X11 or sway: terminals, a clock, focus,
typing, a locker (``Desk``), and where its windows are (all of them whole on the screen)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from bench.call import SIXEL_COLOURS

if TYPE_CHECKING:
    from bench.capture_apps import AppDesk


class Desk:
    """What a scripted session needs of a desktop, X11 or sway: terminals, a clock, focus,
    typing, a locker, and the environment mnemo runs in."""

    def __init__(self, workdir: Path, wayland: bool) -> None:
        self.wayland = wayland
        if wayland:
            from bench.waydesktop import Sway

            self.sway = Sway()
            self.env = self.sway.client_env()
        else:
            from bench.xdesktop import Desktop

            self.x = Desktop(workdir)
            self.env = dict(self.x.env)
        self.kind = "sway" if wayland else "x11"
        self.apps: AppDesk | None = None  # when the session runs real apps

    def term(
        self,
        title: str,
        cls: str,
        at: tuple[int, int, int, int],
        command: list[str] | None = None,
        sixel: bool = False,
    ):
        """A terminal at ``at`` (columns, rows, x, y; on sway a floating window of about that
        size, as on X11) running ``command``, else a shell whose prompt is ``$``: the same width on
        every machine, whatever its host name and folder, so that a line of typed words fits.
        ``sixel``: one that draws sixel pictures (xterm as a VT340; foot always does)."""
        cols, rows, x, y = at
        command = command or ["env", "PS1=$ ", "bash", "--norc", "--noprofile"]
        if self.wayland:
            view = self.sway.foot(title, cls, command, font_pt=12)
            self.sway.floating(view, x, y, cols * FOOT_CELL[0], rows * FOOT_CELL[1])
            whole_on_screen(title, self.sway.rect(view))
            return view
        geometry = f"{cols}x{rows}+{x}+{y}"
        options = (
            ("-ti", "vt340", "-xrm", f"XTerm*numColorRegisters: {SIXEL_COLOURS}") if sixel else ()
        )
        window = self.x.xterm(
            title, cls=cls, geometry=geometry, font_px=16, command=command, options=options
        )
        whole_on_screen(title, self.x.geometry(window))
        return window

    def close_window(self, window) -> None:
        if self.wayland:
            self.sway.msg(f"[con_id={window}]", "kill")
        else:
            self.x.run(["xdotool", "windowclose", window])

    def clock(self) -> None:
        if self.wayland:
            self.sway.floating(self.sway.clock(), 1710, 10, 200, 60)
        else:
            self.x.xclock("200x200-10+10")

    def focus(self, window) -> None:
        (self.sway if self.wayland else self.x).focus(window)

    def type(self, text: str) -> None:
        (self.sway if self.wayland else self.x).type(text)

    def page_down(self) -> None:
        """The focused reader shows its next page: a space on X11 (less and Chromium both turn
        one on it), Page Down on sway (Chromium there ignores wtype's space)."""
        if self.wayland:
            self.sway.key("Next")
        else:
            self.x.type(" ")

    def lock(self) -> None:
        if self.wayland:
            self.sway.lock()
        else:
            self.x.spawn(["i3lock", "-n", "-c", "000000"])

    def close(self) -> None:
        if self.apps is not None:
            self.apps.close()
        (self.sway if self.wayland else self.x).close()


# a foot cell at 12 pt in pixels (width, height), about; xterm's at -fs 16 (DejaVu Sans Mono) is
# 13 by 27 under Xvfb (1304x814 px for 100x30), so that the terminals below, 100 columns wide, fit
# a 1920 px screen side by side where they overlap
FOOT_CELL = (10, 20)
SCREEN = (1920, 1080)
# where the session's terminals are: (columns, rows, x, y); a line of five typed words and the
# prompt is under 80 columns, so none wraps, and every window is whole on a 1920x1080 screen in
# xterm's taller cells too (``Desk.term`` checks it): a shell or reader whose last rows ran off the
# bottom hid the words typed there once its output reached them (an hour's typing did, on X11)
NOTES_AT = (100, 30, 80, 80)
SHELL_AT = (100, 22, 580, 420)
READER_AT = (100, 34, 300, 100)
# the apps' windows (x, y, width, height), where the terminals are
EDITOR_BOX = (80, 80, 1300, 800)
SHELL_BOX = (580, 420, 1300, 600)
BROWSER_BOX = (300, 100, 1300, 900)
CALL_AT = (38, 20, 1400, 480)  # the call's window: its 360 px frames fit xterm's cells and foot's
READING = (
    "/usr/share/common-licenses/GPL-3"  # a long text every Debian has, paged through with less
)


def whole_on_screen(title: str, rect: tuple[int, int, int, int]) -> None:
    """Refuse a session window (x, y, width, height) that runs off the screen: what is typed in its
    hidden rows is in no frame, and the bench would count it as lost by the daemon."""
    x, y, width, height = rect
    if x < 0 or y < 0 or x + width > SCREEN[0] or y + height > SCREEN[1]:
        raise RuntimeError(
            f"bench capture: the window {title!r} ({width}x{height} at {x},{y}) is not whole on "
            f"the {SCREEN[0]}x{SCREEN[1]} screen; make it fewer rows or columns"
        )
