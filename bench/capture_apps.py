"""The ordinary hour on a desktop people use (``mnemo bench capture --minutes N``, on X11 and on
sway): Chromium reading a long local page, Mousepad as the editor, xfce4-terminal as the shell, in a
session with an accessibility bus (``bench.a11y_session``), so that the daemon reads their text from
the tree and OCR only what has none (the clock, the call's window). On sway they are its Wayland
clients (Chromium with ``--ozone-platform=wayland``, GTK with ``GDK_BACKEND=wayland``), run as its
user and floated by sway at the boxes the X11 windows have (``SwayApps``).

The page is the GPL-3 text every Debian has, cut into screen-high sections that snap into place, so
a page down shows exactly the next one; each carries a marker sentence with a word of its own
(``marker``), and ``pages_found`` asks the store's search, as a user would, for each page shown.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.a11y_session import A11ySession
    from bench.waydesktop import Sway
    from bench.xdesktop import Desktop

APPS = ("chromium", "mousepad", "xfce4-terminal")
APT = "apt-get install chromium mousepad xfce4-terminal at-spi2-core libatk-adaptor"
GPL = Path("/usr/share/common-licenses/GPL-3")
PAGE_TITLE = "GPL-3 reading"
WORDS_A_PAGE = 90  # of the licence on each page, under the marker: it fits the window at 20 px


def marker(k: int) -> str:
    """Page ``k``'s own word: letters only (a digit beside letters is read as one as often as
    not), never a word of the licence."""
    letters = "bcdfghjklmnpqrstvwxz"
    a, b = divmod(k, len(letters))
    return f"quillon{letters[a % len(letters)]}{letters[b]}ax"


def reading_page(folder: Path, pages: int) -> tuple[Path, list[str]]:
    """The page to read (``pages`` sections of the licence) and each section's marker sentence."""
    words = re.sub(r"\s+", " ", GPL.read_text(encoding="utf-8")).split(" ")
    sentences, sections = [], []
    for k in range(pages):
        chunk = " ".join(words[k * WORDS_A_PAGE : (k + 1) * WORDS_A_PAGE]) or "The end."
        sentence = f"The reading marker for page {k + 1} is {marker(k)}."
        sentences.append(sentence)
        sections.append(
            f"<section><h2>Page {k + 1}</h2><p>{html.escape(sentence)}</p>"
            f"<p>{html.escape(chunk)}</p></section>"
        )
    page = folder / "reading.html"
    page.write_text(
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{PAGE_TITLE}</title><style>"
        "html{scroll-snap-type:y mandatory}body{margin:0}"
        "section{height:100vh;box-sizing:border-box;padding:24px 40px;scroll-snap-align:start;"
        "font:20px/1.4 'DejaVu Sans',sans-serif}</style></head><body>"
        + "".join(sections)
        + "</body></html>",
        encoding="utf-8",
    )
    return page, sentences


def missing() -> str:
    """Why the apps' desktop cannot run here ("" when it can)."""
    import shutil

    from bench.a11y_session import missing_tools

    gone = [a for a in APPS if shutil.which(a) is None]
    if gone:
        return f"missing {gone}: {APT}"
    return missing_tools()


class AppDesk:
    """The apps in an accessibility session of their own (``session``), their files in ``folder``
    (where their user may read and write): what each runs is the same on every desktop; how its
    window is found and put in its box is the desktop's (``X11Apps``, ``SwayApps``). ``env`` is
    what the capture daemon needs to read their trees."""

    chromium: tuple[str, ...] = ()  # the desktop's own Chromium options

    def __init__(self, session: A11ySession, folder: Path) -> None:
        self.session = session
        self.folder = folder
        self.env = {"DBUS_SESSION_BUS_ADDRESS": session.env["DBUS_SESSION_BUS_ADDRESS"]}

    def shared(self, path: Path) -> Path:
        """``path`` where the apps may read and write it: copied into ``folder`` if it is not
        there, and given to the session's user (sway's runs as a user of its own)."""
        here = path if path.parent == self.folder else self.folder / path.name
        if here != path:
            shutil.copyfile(path, here)
        if self.session.user is not None:
            os.chown(here, *self.session.user)
        return here

    def browser(self, page: Path, at: tuple[int, int, int, int]):
        """Chromium showing ``page`` (its tree on: ``--force-renderer-accessibility``) at ``at``
        (x, y, width, height); its window."""
        where = self._browser_at(at)
        self.session.spawn(
            ["chromium", *self.chromium, "--no-sandbox", "--force-renderer-accessibility"]
            + ["--no-first-run", "--disable-infobars", "--test-type", "--disable-gpu"]
            + [f"--user-data-dir={self.folder / 'chromium-profile'}", *where]
            + [self.shared(page).as_uri()],
            ready=None,
        )
        title = f"^{re.escape(PAGE_TITLE)} - Chromium$"
        return self._shown("chromium", title, at, placed=bool(where))

    def editor(self, path: Path, at: tuple[int, int, int, int]):
        """Mousepad editing ``path`` (made empty if it is not there) at ``at``; its window."""
        path.touch()
        self.session.spawn(["mousepad", str(self.shared(path))], ready=None)
        return self._shown("mousepad", f"{re.escape(path.name)} - Mousepad$", at, placed=False)

    def terminal(self, title: str, at: tuple[int, int, int, int], cols_rows: str):
        """xfce4-terminal titled ``title`` running a shell whose prompt is ``$``, at ``at`` (on
        X11 ``cols_rows`` cells from its corner); its window."""
        where = self._terminal_at(at, cols_rows)
        self.session.spawn(
            ["xfce4-terminal", "--disable-server", "--hide-menubar", "--hide-toolbar"]
            + ["--hide-scrollbar", "--title", title, *where]
            + ["-x", "env", "PS1=$ ", "bash", "--norc", "--noprofile"],
            ready=None,
        )
        return self._shown("xfce4-terminal", f"^{re.escape(title)}$", at, placed=bool(where))

    def close(self) -> None:
        self.session.close()

    # what each desktop does its own way
    def _browser_at(self, at: tuple[int, int, int, int]) -> list[str]:
        """Chromium's options that put its window at ``at`` (none where it cannot place itself)."""
        return []

    def _terminal_at(self, at: tuple[int, int, int, int], cols_rows: str) -> list[str]:
        """xfce4-terminal's options that put its window at ``at`` (none where it cannot)."""
        return []

    def _shown(self, app_id: str, title: str, at: tuple[int, int, int, int], placed: bool):
        """The window of ``app_id`` whose title matches the pattern ``title``, once shown, put at
        ``at`` unless its options ``placed`` it there already."""
        raise NotImplementedError


class X11Apps(AppDesk):
    """The apps on X desktop ``x``: windows found by title with xdotool, which moves them."""

    def __init__(self, x: Desktop, workdir: Path) -> None:
        from bench.a11y_session import A11ySession

        super().__init__(A11ySession(x.display), workdir)
        self.x = x

    def _browser_at(self, at: tuple[int, int, int, int]) -> list[str]:
        x, y, w, h = at
        return [f"--window-position={x},{y}", f"--window-size={w},{h}"]

    def _terminal_at(self, at: tuple[int, int, int, int], cols_rows: str) -> list[str]:
        return [f"--geometry={cols_rows}+{at[0]}+{at[1]}"]

    def _shown(self, app_id: str, title: str, at: tuple[int, int, int, int], placed: bool) -> str:
        wid = self._window(title)
        if not placed:
            x, y, w, h = at
            self.x.run(["xdotool", "windowsize", "--sync", wid, str(w), str(h)], check=False)
            self.x.run(["xdotool", "windowmove", "--sync", wid, str(x), str(y)], check=False)
        return wid

    def _window(self, pattern: str, timeout_s: float = 60.0) -> str:
        """The last visible window whose title matches ``pattern``, once there is one."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = self.x.run(
                ["xdotool", "search", "--onlyvisible", "--name", pattern], check=False
            ).split()
            if found:
                return found[-1]
            time.sleep(0.5)
        raise RuntimeError(f"bench capture: no window named {pattern!r} in {timeout_s:g} s")


class SwayApps(AppDesk):
    """The apps as Wayland clients of ``sway`` (a ``bench.waydesktop.Sway``), run as its user:
    each window found by its app_id and title and floated at its box by sway."""

    def __init__(self, sway: Sway) -> None:
        from bench.a11y_session import WAYLAND_CHROMIUM, A11ySession

        session = A11ySession.on_sway(sway)
        super().__init__(session, session.root)
        self.sway = sway
        self.chromium = WAYLAND_CHROMIUM

    def _shown(self, app_id: str, title: str, at: tuple[int, int, int, int], placed: bool) -> int:
        con_id = int(self.sway.wait_view(app_id, timeout_s=60.0, title=title)["id"])
        self.sway.place(con_id, at)
        return con_id


def pages_found(
    search: Callable[[str], list[str]], sentences: dict[int, str], by: str = "word"
) -> tuple[float, list[int]]:
    """Of the pages read (page number: its marker sentence), the share whose marker word is in a
    memory ``search`` gives (the store's search, its first memories' texts), and the pages missed.
    ``by`` "word": searched for the page's own word, as a person looks for what only that page
    said; "sentence": for the whole marker sentence, which every page shares but for its number
    and its word (a test of ranking among pages alike, more than of what was kept)."""
    if not sentences:
        return 1.0, []
    missed = []
    for n, sentence in sentences.items():
        word = sentence.rsplit(" ", 1)[-1].rstrip(".")
        if not any(word in text for text in search(word if by == "word" else sentence)):
            missed.append(n)
    return round(1 - len(missed) / len(sentences), 4), missed
