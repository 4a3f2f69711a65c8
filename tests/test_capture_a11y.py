"""The accessibility reader (``perception.capture.atspi``) against real applications: Xvfb and
openbox, a private D-Bus session with at-spi2 (``bench.a11y_session``), GTK 3, Qt 5 and VTE windows
run by Debian's python, Chromium on a local page, an xterm (no tree: OCR's), and a hostile AT-SPI
peer (an endless tree, megabytes of text, a child list that lies, silence). What each window shows
is read exactly, a password field never, only what is in view, and a hostile application costs a
read no more than ``Limits`` allows.

One desktop and one session serve the module; each application starts once, when a test first
asks for it."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from a11y_desk import A11yDesk, a11y_on
from conftest import require_x, unavailable
from perception.capture.atspi import AccessibilityReader, Limits, WindowText
from perception.capture.windows import Rect, WindowInfo

if TYPE_CHECKING:
    from bench.xdesktop import Desktop

pytestmark = pytest.mark.slow

LABELS = ("Quarterly report for the north office", "Meeting moved to Thursday at ten")
ENTRY = "draft invoice 4471 for Ferncastle"
SECRET = "Zq7-wolfram-hunter2"
VIEW = tuple(f"view line {i:02d} of the notes" for i in range(14))
QT_LABELS = ("Shipping address confirmed", "Parcel weight in kilograms")
QT_ENTRY = "Rua das Flores 12 Lisboa"
QT_SECRET = "Qt5-secret-tangerine-88"
TERM_LINES = ("build finished in 42 seconds", "3 warnings, 0 errors", "deploying to staging")
PARAGRAPHS = ("The first paragraph of the page.", "A second paragraph, with more words in it.")
HEADING = "Release notes for version nine"
WEB_SECRET = "chromium-secret-walnut-5"
PAGE = f"""<!doctype html>
<html><head><title>Release notes</title>
<style>body {{ font: 16px sans-serif; margin: 8px }} canvas {{ border: 1px solid #000 }}</style>
</head><body>
<h1>{HEADING}</h1>
<p>{PARAGRAPHS[0]}</p>
<p>{PARAGRAPHS[1]}</p>
<input type="password" value="{WEB_SECRET}">
<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==" width="120" height="60" alt="A chart of sales">
<canvas id="sales" width="160" height="90"></canvas>
</body></html>
"""
SLACK_S = 0.15  # what a read may run past ``Limits.time_s``: the scheduler's share, not the app's


@dataclass
class Env(A11yDesk):
    desktop: Desktop

    def window(self, title: str, timeout_s: float = 30.0) -> WindowInfo:
        """The mapped window titled ``title`` (a regular expression), as capture sees it."""
        return self.window_where(
            lambda w: re.fullmatch(title, w.title) is not None,
            f"window titled {title!r}",
            timeout_s,
        )

    def client(self, win: WindowInfo) -> tuple[int, int, int, int]:
        """The window's content on screen: its rectangle less the window manager's frame."""
        out = self.desktop.run(["xprop", "-id", str(win.wid), "_NET_FRAME_EXTENTS"])
        left, right, top, bottom = (int(v) for v in re.findall(r"\d+", out.split("=")[-1]))
        r = win.rect
        assert r is not None
        return (r.x + left, r.y + top, r.x + r.width - right, r.y + r.height - bottom)


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> Iterator[Env]:
    from bench.a11y_session import A11ySession, missing_tools
    from bench.xdesktop import Desktop
    from perception.capture.session import open_desktop

    require_x()
    if why := missing_tools():
        unavailable(why)
    tmp = tmp_path_factory.mktemp("a11y")
    desktop = Desktop(tmp)
    opened = a11y_on(
        desktop, lambda: A11ySession(desktop.display), lambda: open_desktop(desktop.display)
    )
    with opened as (session, x11):
        yield Env(session, x11, tmp, desktop)


def _read(win: WindowInfo, focused: bool = True, limits: Limits | None = None) -> WindowText:
    got = AccessibilityReader(limits).window_text(win, focused=focused)
    assert got is not None, f"the tree gave nothing for {win}"
    return got


def _inside(box, outer) -> bool:
    return outer[0] <= box[0] < box[2] <= outer[2] and outer[1] <= box[1] < box[3] <= outer[3]


# GTK 3


@pytest.fixture(scope="module")
def gtk(env):
    args = ["--title", "Gtk notes", "--geometry", "520x420+40+40", "--entry", ENTRY]
    args += ["--password", SECRET, "--shown", "4", "--top", "5"]
    for text in LABELS:
        args += ["--label", text]
    for text in VIEW:
        args += ["--line", text]
    app = env.session.python_app("gtk_window", *args)
    shown = [VIEW[int(s.split()[1])] for s in app.lines if s.startswith("visible ")]
    hidden = [VIEW[int(s.split()[1])] for s in app.lines if s.startswith("hidden ")]
    assert len(shown) == 4 and len(hidden) >= 8, app.lines
    return env.window("Gtk notes"), shown, hidden


def test_gtk_labels_and_entry_are_read_exactly_with_their_roles(env, gtk):
    win, shown, _ = gtk
    got = _read(win)
    assert got.app == "gtk_window.py" and got.complete and got.rich
    head = [(ln.text, ln.role) for ln in got.lines[:3]]
    assert head == [(LABELS[0], "label"), (LABELS[1], "label"), (ENTRY, "text")], got.lines
    assert {(t, "text") for t in shown} <= {(ln.text, ln.role) for ln in got.lines}
    # boxes on screen, inside the window's content (openbox's frame around it apart)
    client = env.client(win)
    assert all(_inside(ln.box, client) for ln in got.lines), (client, got.lines)
    assert got.lines[0].box[1] < got.lines[1].box[1] < got.lines[2].box[1]
    assert got.pictures == [] and got.url == ""


def test_gtk_password_entry_is_never_read(env, gtk):
    win, _, _ = gtk
    for focused in (True, False):
        got = _read(win, focused)
        assert SECRET not in repr(got)
        assert all(ln.role != "password text" for ln in got.lines)
    assert ENTRY in [ln.text for ln in got.lines]  # the control: the entry beside it is read


def test_gtk_text_view_gives_only_the_lines_in_view(env, gtk):
    win, shown, hidden = gtk
    got = _read(win)
    view = [ln for ln in got.lines if ln.text in VIEW]
    assert [ln.text for ln in view] == shown, f"shown {shown}, hidden {hidden}, read {view}"
    heights = {ln.box[3] - ln.box[1] for ln in view}
    assert min(heights) >= 12, f"a line's box is a line high: {view}"


# Qt 5


@pytest.fixture(scope="module")
def qt(env):
    args = ["--title", "Qt form", "--geometry", "500x260+620+40", "--entry", QT_ENTRY]
    args += ["--password", QT_SECRET]
    for text in QT_LABELS:
        args += ["--label", text]
    env.session.python_app("qt_window", *args)
    return env.window("Qt form")


def test_qt_line_edit_is_read_exactly(env, qt):
    got = _read(qt)
    assert got.app == "qt_window.py" and got.complete
    assert (QT_ENTRY, "text") in [(ln.text, ln.role) for ln in got.lines], got.lines
    client = env.client(qt)
    assert all(_inside(ln.box, client) for ln in got.lines), (client, got.lines)


def test_qt_labels_are_read(env, qt):
    got = _read(qt)
    assert [(ln.text, ln.role) for ln in got.lines if ln.role == "label"] == [
        (t, "label") for t in QT_LABELS
    ], got.lines


def test_qt_password_line_edit_is_never_read(env, qt):
    # Qt 5 gives its password field the role "text" (not "password text") and an empty text
    for focused in (True, False):
        got = _read(qt, focused)
        assert QT_SECRET not in repr(got)
    assert QT_ENTRY in [ln.text for ln in got.lines]


# VTE


def test_vte_terminal_lines_are_read_exactly(env):
    args = ["--title", "Vte build", "--geometry", "640x300+40+500"]
    for text in TERM_LINES:
        args += ["--line", text]
    env.session.python_app("vte_terminal", *args)
    got = _read(env.window("Vte build"))
    assert got.app == "vte_terminal.py" and got.complete
    assert [(ln.text, ln.role) for ln in got.lines] == [(t, "terminal") for t in TERM_LINES]


# Chromium


@pytest.fixture(scope="module")
def chromium(env):
    import shutil

    if shutil.which("chromium") is None:
        unavailable("chromium is missing: apt-get install chromium")
    page = env.tmp / "page.html"
    page.write_text(PAGE)
    env.session.spawn(
        [
            "chromium",
            "--no-sandbox",  # as root it will not start without; the infobar it adds is read too
            "--force-renderer-accessibility",
            f"--user-data-dir={env.tmp / 'chromium'}",
            "--no-first-run",
            "--no-default-browser-check",
            "--password-store=basic",
            "--disable-background-networking",
            "--window-position=600,330",
            "--window-size=900,700",
            page.as_uri(),
        ],
        ready=None,
    )
    win = env.window(r"Release notes - Chromium", timeout_s=60)
    # the page's tree is built after the window shows: wait for its paragraphs, then for the
    # tree to stop growing
    deadline, counts = time.monotonic() + 30, [-1]
    while True:
        got = AccessibilityReader(Limits(time_s=5.0)).window_text(win, focused=True)
        if got and PARAGRAPHS[1] in [ln.text for ln in got.lines]:
            counts.append(got.nodes)
            if counts[-3:] == [got.nodes] * 3:
                return win, page
        if time.monotonic() > deadline:
            raise AssertionError(f"Chromium's page was not in its tree in 30 s: {got}")
        time.sleep(0.2)


def test_chromium_page_text_is_read_exactly(env, chromium):
    win, _ = chromium
    got = _read(win, limits=Limits(time_s=5.0))
    pairs = [(ln.text, ln.role) for ln in got.lines]
    assert (HEADING, "heading") in pairs and all((p, "paragraph") in pairs for p in PARAGRAPHS)
    assert got.app == "Chromium" and got.complete and got.rich


def test_chromium_each_paragraph_is_read_once(env, chromium):
    win, _ = chromium
    got = _read(win, limits=Limits(time_s=5.0))
    texts = [ln.text for ln in got.lines]
    assert all(texts.count(t) == 1 for t in (*PARAGRAPHS, HEADING)), got.lines


def test_chromium_password_is_never_read(env, chromium):
    win, _ = chromium
    got = _read(win, limits=Limits(time_s=5.0))
    assert WEB_SECRET not in repr(got)


def test_chromium_image_and_canvas_are_left_to_ocr(env, chromium):
    win, _ = chromium
    got = _read(win, limits=Limits(time_s=5.0))
    sizes = [(b[2] - b[0], b[3] - b[1]) for b in got.pictures]

    def near(w: int, h: int) -> bool:  # Chromium rounds its fractional layout either way
        return any(abs(w - sw) <= 1 and abs(h - sh) <= 1 for sw, sh in sizes)

    assert near(120, 60) and near(162, 92), got.pictures  # the canvas with its border
    client = env.client(win)
    assert all(_inside(b, client) for b in got.pictures)


def test_chromium_url_is_the_pages(env, chromium):
    win, page = chromium
    got = _read(win, limits=Limits(time_s=5.0))
    assert got.url == page.as_uri()


# xterm: no tree


@pytest.fixture(scope="module")
def xterm(env, gtk):
    # over the GTK window's labels: words given to the wrong window would land inside its box
    env.desktop.xterm(
        "Plain xterm",
        geometry="50x8+60+70",
        command=["sh", "-c", "echo hello there; sleep 100000"],
    )
    return env.window("Plain xterm")


def test_xterm_is_left_to_ocr(env, xterm, gtk):
    env.desktop.focus(hex(xterm.wid))
    got = AccessibilityReader().window_text(xterm, focused=True)
    assert got is None or not got.rich, got


def test_a_window_without_a_tree_never_gets_another_windows_text(env, xterm, gtk):
    gtk_win, _, _ = gtk
    env.desktop.focus(hex(gtk_win.wid))  # GTK's frame is the ACTIVE one; X is asked a moment later
    got = AccessibilityReader().window_text(xterm, focused=True)
    assert got is None, (got.app, got.lines)


# a hostile peer


def _peer(env, mode: str, *args: str) -> tuple[object, WindowInfo]:
    title = f"Hostile {mode}"
    app = env.session.peer(mode, "--title", title, "--box", "100,100,600,400", *args)
    return app, WindowInfo(1, "Hostile", "hostile", title, app.pid, Rect(100, 100, 600, 400))


@pytest.fixture
def peer(env):
    started = []

    def start(mode: str, *args: str) -> WindowInfo:
        app, win = _peer(env, mode, *args)
        started.append(app)
        return win

    yield start
    for app in started:
        env.session.stop(app)


def _timed_reads(win: WindowInfo, caplog, n: int = 3, limits: Limits | None = None):
    """``n`` reads by one reader: what each gave, how long each took, and the warnings logged."""
    reader = AccessibilityReader(limits)
    assert reader.available()
    out = []
    with caplog.at_level(logging.WARNING, logger="perception.capture.atspi"):
        caplog.clear()
        for _ in range(n):
            t0 = time.monotonic()
            got = reader.window_text(win, focused=False)
            out.append((got, time.monotonic() - t0))
        warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    reader.close()
    return out, warnings


def _bounded(got: WindowText | None, limits: Limits) -> None:
    if got is None:
        return
    assert got.nodes <= limits.nodes and got.chars <= limits.chars
    assert all(len(ln.text) <= limits.node_chars for ln in got.lines)


@pytest.mark.serial  # times the reads
@pytest.mark.parametrize("mode", ["silent", "stall"])
def test_a_peer_that_stops_answering_costs_a_read_time_s_and_one_warning(env, peer, caplog, mode):
    win = peer(mode)
    lim = Limits()
    reads, warnings = _timed_reads(win, caplog)
    assert all(got is None for got, _ in reads)
    # the first read waits its time limit; then the application is not asked for a minute
    assert lim.time_s - 0.01 <= reads[0][1] <= lim.time_s + SLACK_S, reads
    assert all(s <= 0.05 for _, s in reads[1:]), reads
    assert len(warnings) == 1 and "did not answer" in warnings[0].getMessage()


@pytest.mark.serial
def test_a_tree_deeper_than_the_limit_is_cut_in_time(env, peer, caplog):
    win = peer("endless", "--fanout", "1")
    lim = Limits()
    reads, warnings = _timed_reads(win, caplog)
    for got, seconds in reads:
        assert got is not None and not got.complete and seconds <= lim.time_s + SLACK_S
        assert got.nodes <= lim.depth + 1
        _bounded(got, lim)
    assert len(warnings) <= 1


def test_an_endless_tree_is_cut_at_the_node_limit(env, peer, caplog):
    win = peer("endless", "--fanout", "8")
    lim = Limits(nodes=300, time_s=10.0)
    got = _timed_reads(win, caplog, n=1, limits=lim)[0][0][0]
    assert got is not None and not got.complete and 250 <= got.nodes <= lim.nodes
    _bounded(got, lim)


@pytest.mark.serial
def test_a_wide_level_is_read_in_time(env, peer, caplog):
    win = peer("endless", "--fanout", "4000")
    lim = Limits()
    reads, warnings = _timed_reads(win, caplog, n=2)
    assert all(seconds <= lim.time_s + SLACK_S for _, seconds in reads), reads
    assert len(warnings) <= 1


def test_megabytes_of_text_are_cut_at_node_chars(env, peer, caplog):
    win = peer("huge", "--mb", "10")
    lim = Limits(time_s=10.0)
    got = _timed_reads(win, caplog, n=1, limits=lim)[0][0][0]
    assert got is not None and got.lines and got.chars == lim.node_chars
    _bounded(got, lim)


def test_megabytes_of_text_cut_say_the_read_is_incomplete(env, peer, caplog):
    win = peer("huge", "--mb", "10")
    got = _timed_reads(win, caplog, n=1, limits=Limits(time_s=10.0))[0][0][0]
    assert got is not None and not got.complete


@pytest.mark.serial
def test_megabytes_of_text_are_read_in_time(env, peer, caplog):
    win = peer("huge", "--mb", "10")
    lim = Limits()
    reads, warnings = _timed_reads(win, caplog)
    assert all(seconds <= lim.time_s + SLACK_S for _, seconds in reads), reads
    for got, _ in reads:
        _bounded(got, lim)
    assert len(warnings) <= 1


def test_a_child_list_longer_than_its_count_is_cut_to_the_count(env, peer, caplog):
    win = peer("liar", "--count", "400000")
    got = _timed_reads(win, caplog, n=1, limits=Limits(time_s=20.0))[0][0][0]
    assert got is not None and got.nodes == 4  # the frame and the 3 children it owned up to
    assert [ln.text for ln in got.lines] == ["node 0", "node 1", "node 2"]


@pytest.mark.serial
def test_a_lying_child_list_costs_one_slow_read_then_none(env, peer, caplog):
    """A GetChildren reply is parsed whole (jeepney reads a message before anyone can look at its
    size): a frame that says it has 3 children and lists 400,000 (22 MB) costs a read about 1 s.
    It costs that once: the application is then not asked for SHUN_S, and said so once."""
    win = peer("liar", "--count", "400000")
    reads, warnings = _timed_reads(win, caplog)
    assert reads[0][1] <= 3.0, reads  # the bus's largest message, parsed once
    assert all(got is None and seconds <= 0.05 for got, seconds in reads[1:]), reads
    assert len(warnings) == 1


def test_a_hung_peer_does_not_stop_other_windows_being_read(env, peer, gtk):
    peer("silent")
    gtk_win, _, _ = gtk
    t0 = time.monotonic()
    got = _read(gtk_win)
    assert LABELS[0] in [ln.text for ln in got.lines]
    assert time.monotonic() - t0 < Limits().time_s  # the hung application was not asked


# the session itself


def test_the_session_leaves_no_process_behind(env, tmp_path):
    from bench.a11y_session import A11ySession
    from bench.xdesktop import Desktop

    desktop = Desktop(tmp_path)  # a display of its own: at-spi's launcher marks the display's root
    try:
        session = A11ySession(desktop.display)
        root = session.root
        session.python_app("gtk_window", "--title", "Short lived", "--label", "bye")
        session.peer("silent")
        pids = session.marked()
        # the bus, its launcher, the accessibility bus, its registry, two apps, their reapers
        assert len(pids) >= 8, pids
        session.close()
        assert session.marked() == [] and not root.exists()
        for pid in pids:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue  # gone and reaped
            raise AssertionError(f"process {pid} left behind in state {state}")
    finally:
        desktop.close()


def test_the_reader_finds_the_tree_through_the_session_bus(env, gtk, monkeypatch):
    """The reader finds the accessibility bus through this process's session bus, which
    ``activated`` pointed at the session's; without it, it finds nothing and says why."""
    win, _, _ = gtk
    assert _read(win).lines
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={env.tmp}/no-bus")
    reader = AccessibilityReader()
    assert reader.window_text(win) is None and reader.why


@pytest.mark.serial
def test_a_window_missed_while_its_application_was_busy_is_read_at_a_later_tick(env, peer):
    """The capture loop keeps a frame as a page appears; if the browser is busy then, that frame's
    text is OCR's, and the tree is asked again on the next ticks (the application put aside for
    ``SHUN_FIRST_S`` first): once it answers, its words are there."""
    import numpy as np

    from perception.capture.atspi import SHUN_FIRST_S
    from perception.capture.screen_tree import MonitorView, ScreenText
    from perception.capture.windows import Rect

    win = peer("busy", "--busy", "1.0")
    screen = ScreenText(AccessibilityReader())
    view = MonitorView(Rect(0, 0, 1280, 800), win, [win], set(), np.zeros((800, 1280), np.uint8))
    assert screen.of_monitor(view) is None  # busy: left to OCR
    assert screen.retry(view) is None  # put aside: not asked yet
    time.sleep(SHUN_FIRST_S + 0.2)
    again = screen.retry(view)
    assert again is not None and [ln[0] for ln in again["lines"]] == ["node 0", "node 1", "node 2"]
    assert screen.recovered == 1
    assert screen.retry(view) is None  # nothing missed any more
