"""The ordinary hour on a desktop people use (``mnemo bench capture --minutes N``, X11): Chromium
reading a long local page, Mousepad as the editor, xfce4-terminal as the shell, in a session with
an accessibility bus (``bench.a11y_session``), so that the daemon reads their text from the tree and
OCR only what has none (the clock, the call's window, the terminals' neighbours on sway).

The page is the GPL-3 text every Debian has, cut into screen-high sections that snap into place, so
a page down shows exactly the next one; each carries a marker sentence with a word of its own
(``marker``), and ``pages_found`` asks the store's search, as a user would, for each page shown.
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Callable
from pathlib import Path

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
    """The apps on X desktop ``x``, in an accessibility session of their own."""

    def __init__(self, x: Desktop, workdir: Path) -> None:
        from bench.a11y_session import A11ySession

        self.x = x
        self.workdir = workdir
        self.session = A11ySession(x.display)
        self.env = {"DBUS_SESSION_BUS_ADDRESS": self.session.env["DBUS_SESSION_BUS_ADDRESS"]}

    def _window(self, pattern: str, timeout_s: float = 60.0) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = self.x.run(
                ["xdotool", "search", "--onlyvisible", "--name", pattern], check=False
            ).split()
            if found:
                return found[-1]
            time.sleep(0.5)
        raise RuntimeError(f"bench capture: no window named {pattern!r} in {timeout_s:g} s")

    def _place(self, wid: str, at: tuple[int, int, int, int]) -> str:
        x, y, w, h = at
        self.x.run(["xdotool", "windowsize", "--sync", wid, str(w), str(h)], check=False)
        self.x.run(["xdotool", "windowmove", "--sync", wid, str(x), str(y)], check=False)
        return wid

    def browser(self, page: Path, at: tuple[int, int, int, int]) -> str:
        x, y, w, h = at
        profile = self.workdir / "chromium-profile"
        self.session.spawn(
            ["chromium", "--no-sandbox", "--force-renderer-accessibility", "--no-first-run"]
            + ["--disable-infobars", "--test-type", "--disable-gpu"]
            + [f"--user-data-dir={profile}", f"--window-position={x},{y}"]
            + [f"--window-size={w},{h}", page.as_uri()],
            ready=None,
        )
        return self._window(f"^{re.escape(PAGE_TITLE)} - Chromium$")

    def editor(self, path: Path, at: tuple[int, int, int, int]) -> str:
        path.touch()
        self.session.spawn(["mousepad", str(path)], ready=None)
        return self._place(self._window(f"{re.escape(path.name)} - Mousepad$"), at)

    def terminal(self, title: str, at: tuple[int, int, int, int], cols_rows: str) -> str:
        x, y, _, _ = at
        self.session.spawn(
            ["xfce4-terminal", "--disable-server", "--hide-menubar", "--hide-toolbar"]
            + ["--hide-scrollbar", "--title", title, f"--geometry={cols_rows}+{x}+{y}"]
            + ["-x", "env", "PS1=$ ", "bash", "--norc", "--noprofile"],
            ready=None,
        )
        return self._window(f"^{re.escape(title)}$")

    def close(self) -> None:
        self.session.close()


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
