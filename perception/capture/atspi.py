"""Screen text from the accessibility tree (AT-SPI2 over D-Bus), read where applications expose it.

GTK, Qt, VTE, Chromium/Electron and Firefox publish their widgets on the session's accessibility
bus (``org.a11y.Bus``): each window is a tree of nodes with a role ("label", "text", "document
web", "password text", ...), a box on screen and, for text, the exact characters. Reading that tree
costs milliseconds where OCR of the same page costs seconds, and gives the words as they are.

The client is jeepney (pure Python, no C library to crash the daemon, blocking calls with a
deadline): one connection to the accessibility bus, calls sent a tree level at a time and their
replies gathered until a deadline, so a window costs a few round trips, not one per node.

Everything an application says is hostile input: a tree that never ends, a node with megabytes of
text, a peer that never answers. A window's read is bounded (``Limits``: nodes, depth, characters,
time); a read cut short keeps what it got and says so (``complete`` false), and an application that
times out is logged once, not once a frame. Password fields ("password text") are never read, and
the caller never asks for an excluded window.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from perception.capture.a11y_bus import (
    ACCESSIBLE,
    COMPONENT,
    DOCUMENT,
    PROPS,
    REGISTRY,
    ROOT,
    TEXT,
    Caller,
    Unanswered,
    is_int,
    object_refs,
    open_a11y_bus,
    reply_str,
    states_of,
    variant_str,
)
from perception.capture.boxes import (
    area,
    center_in,
    clip,
    inside,
    line_box,
    overlap,
    rect_box,
)
from perception.capture.windows import WindowInfo

log = logging.getLogger(__name__)

# AtspiStateType bits (at-spi2-core's atspi-constants.h)
STATE_ACTIVE = 1
STATE_MULTI_LINE = 17
STATE_SHOWING = 25
STATE_VISIBLE = 30
# AtspiCoordType
SCREEN, WINDOW = 0, 1

# roles whose text is never read (what a password field holds is the password, whatever it shows)
SECRET_ROLES = frozenset({"password text"})
# roles that show pixels, not text the tree holds: OCR reads inside their box
PICTURE_ROLES = frozenset({"image", "canvas", "animation", "video", "embedded", "drawing area"})
# a childless node without text this large (a share of its window) is drawn, not described: a
# shared screen in a call, a page of a document viewer, a canvas app's surface; OCR reads it
PICTURE_SHARE = 0.1
# roles whose words are their name where they have no text (Qt's labels, buttons, tabs)
NAMED_ROLES = frozenset(
    "label|static|push button|toggle button|check box|radio button|heading|link|list item|"
    "menu item|page tab|table cell|column header|row header".split("|")
)
# an application whose window did not answer in time, or took this many times the time limit, is
# not asked again for SHUN_FIRST_S, twice that after each next failure, at most SHUN_MAX_S: a busy
# moment costs a few seconds of OCR, a hostile application one slow read a minute
SHUN_OVER = 3.0
SHUN_FIRST_S = 5.0
SHUN_MAX_S = 60.0
# roles whose own text is a summary of their children (reading both would say each line twice)
CONTAINER_ROLES = frozenset(
    {"application", "frame", "window", "dialog", "filler", "panel", "scroll pane", "viewport"}
)
# fewer characters than this from a window (an Electron app with accessibility off shows a frame and
# nothing else) and the tree does not speak for it: OCR reads it; a window that shows some text and
# an empty page (a browser whose page is not published) has that page's box in ``pictures``
MIN_RICH_CHARS = 1
# what a node's text holds in place of each child object (a link, an image inside a paragraph)
EMBEDDED = "\ufffc"
# WINDOW coordinates count from the application's surface, which may hold more than the window
# the compositor shows: a shadow drawn around it (GTK with a header bar, Chromium). The first of
# these levels of the tree whose shown boxes together are the window's size is the window
INSET_DEPTH, INSET_NODES = 4, 64


@dataclass(frozen=True)
class Limits:
    """What one window's read may cost (screenpipe bounds its walk the same way: depth 30, 5,000
    nodes, 250 ms)."""

    nodes: int = 5000
    depth: int = 30
    chars: int = 200_000  # of text over the window
    node_chars: int = 20_000  # of text from one node (a huge document is read where it is shown)
    time_s: float = 0.25


@dataclass(frozen=True)
class TreeLine:
    text: str
    role: str
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 on screen


@dataclass
class WindowText:
    """What the tree says of one window."""

    app: str  # the toolkit's name for the application
    lines: list[TreeLine] = field(default_factory=list)
    pictures: list[tuple[int, int, int, int]] = field(default_factory=list)  # OCR reads these
    url: str = ""  # a browser's address, where the tree has it
    nodes: int = 0
    complete: bool = True  # False: a limit cut the read short
    seconds: float = 0.0

    @property
    def chars(self) -> int:
        return sum(len(line.text) for line in self.lines)

    @property
    def rich(self) -> bool:
        """The tree speaks for the window: OCR need not read it (but for ``pictures``)."""
        return self.chars >= MIN_RICH_CHARS


@dataclass
class _Node:
    name: str  # D-Bus bus name of the application
    path: str
    key: tuple[int, ...]  # child indices from the window: document order
    depth: int
    role: str = ""
    label: str = ""
    ifaces: tuple[str, ...] = ()
    states: int = 0
    box: tuple[int, int, int, int] | None = None
    children: int = 0
    quiet: bool = False  # an ancestor's text said what this one holds (Chromium: a paragraph's)


class AccessibilityReader:
    """Reads windows' text from the session's accessibility bus; ``available`` says whether there
    is one. Not thread-safe: one reader per capture loop."""

    RETRY_S = 30.0  # a bus that could not be reached is looked for again this often

    def __init__(self, limits: Limits | None = None, coords: int = SCREEN) -> None:
        """``coords``: SCREEN (X11: applications know where their windows are) or WINDOW (Wayland:
        boxes relative to the window, placed at its rectangle)."""
        self.limits = limits or Limits()
        self.coords = coords
        self._bus: Any = None  # a Caller while connected
        self._next_try = 0.0
        self._pids: dict[str, int | None] = {}
        # bus name -> (until when it is not asked, for how long it was last put aside)
        self._shunned: dict[str, tuple[float, float]] = {}
        self.failed = False  # the last window's application did not answer (or is put aside)
        self._asked: list[str] = []  # the applications of the window being read, by its process
        self._said: set[str] = set()  # what was logged once
        self.why = ""  # why the tree cannot be read, while it cannot
        self.seen = False  # the bus was reached at least once
        self._at = (0, 0)  # where the window being read has its window coordinates' (0, 0)
        # (bus name, frame, the frame's size, the window's) -> where its window is in its surface
        self._insets: dict[tuple, tuple[int, int]] = {}

    # connection
    def available(self) -> bool:
        if self._bus is not None:
            return True
        if time.monotonic() < self._next_try:
            return False
        self._next_try = time.monotonic() + self.RETRY_S
        try:
            self._bus = Caller(open_a11y_bus())
        except Exception as e:  # no session bus, no at-spi bus launcher, a refused connection
            self._say("bus", f"the accessibility tree cannot be read ({e}); screen text is OCR's")
            self.why = str(e)
            return False
        self.why, self.seen = "", True
        return True

    def close(self) -> None:
        if self._bus is not None:
            self._bus.close()
            self._bus = None

    def _lost(self, e: Exception) -> None:
        self._say(
            "lost", f"the accessibility bus went away ({e}); trying again in {self.RETRY_S:g} s"
        )
        self.close()
        self._next_try = time.monotonic() + self.RETRY_S

    def _say(self, key: str, message: str) -> None:
        if key not in self._said:
            self._said.add(key)
            log.warning("%s", message)

    def _pid(self, name: str, deadline: float) -> int | None:
        if name not in self._pids:
            dbus = ("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus")
            call = (*dbus, "GetConnectionUnixProcessID", "s", (name,))
            (got,) = self._bus.batch([call], deadline)
            self._pids[name] = got[0] if isinstance(got, tuple) and is_int(got[0]) else None
        return self._pids[name]

    # reading
    def window_text(self, window: WindowInfo, focused: bool = False) -> WindowText | None:
        """The text the tree shows of ``window``; None when no application on the bus owns it
        (an application without accessibility, a terminal like xterm) or the bus is gone."""
        self.failed = False
        if not self.available():
            return None
        t0 = time.monotonic()
        node = None
        self._asked = []
        try:
            frame = self._frame_of(window, focused, t0 + self.limits.time_s)
            if frame is None:
                return None
            app, node = frame
            text = WindowText(app=app)
            self._at = self._origin(node, window, t0 + self.limits.time_s)
            self._walk(node, window, text, t0 + self.limits.time_s)
        except Unanswered as e:
            # the application asked (its window's, known by its process), not asked for a while
            for name in [node.name] if node is not None else self._asked:
                self._shun(name)
            self.failed = True
            self._say(
                f"slow:{window.app}",
                f"{window.app or 'an application'}'s accessibility "
                f"tree did not answer within {self.limits.time_s:g} s ({e}); its windows "
                "are read by OCR when that happens",
            )
            return None
        except (OSError, ConnectionError, EOFError) as e:
            self._lost(e)
            return None
        text.seconds = time.monotonic() - t0
        if text.seconds > SHUN_OVER * self.limits.time_s:  # a reply too large to read in time
            self._shun(node.name)
            self._say(
                f"big:{window.app}",
                f"{window.app or 'an application'}'s accessibility tree took "
                f"{text.seconds:.2f} s to read; it is read by OCR for a while after that",
            )
        else:
            self._shunned.pop(node.name, None)
        return text

    def _shun(self, name: str) -> None:
        last = self._shunned.get(name, (0.0, 0.0))[1]
        wait = min(SHUN_MAX_S, 2 * last) if last else SHUN_FIRST_S
        self._shunned[name] = (time.monotonic() + wait, wait)

    def _frame_of(
        self, window: WindowInfo, focused: bool, deadline: float
    ) -> tuple[str, _Node] | None:
        """The application's top node for ``window``: among the applications of its process (any
        application when its process is unknown), the frame titled as the window, else the active
        one when it has focus, else an application's only frame."""
        (apps,) = self._bus.batch([(REGISTRY, ROOT, ACCESSIBLE, "GetChildren", None, ())], deadline)
        now = time.monotonic()
        every = object_refs(apps)
        mine = [
            r for r in every if window.pid is not None and self._pid(r[0], deadline) == window.pid
        ]
        if window.pid is not None and not mine:
            return None  # its process publishes no tree: never another window's
        refs = [r for r in every if self._shunned.get(r[0], (0.0, 0.0))[0] <= now]
        if mine and not (mine := [r for r in mine if r in refs]):
            self.failed = True  # its application is put aside for now
            return None
        self._asked = [r[0] for r in mine]
        refs = mine or refs
        heads = self._bus.batch(
            [(n, p, ACCESSIBLE, "GetChildren", None, ()) for n, p in refs]
            + [(n, p, PROPS, "Get", "ss", (ACCESSIBLE, "Name")) for n, p in refs],
            deadline,
        )
        frames: list[tuple[str, str, str]] = []  # app name, bus name, path
        for (name, _), kids, app_name in zip(refs, heads[: len(refs)], heads[len(refs) :]):
            label = variant_str(app_name)
            frames += [(label, n, p) for n, p in object_refs(kids) if n == name]
        if not frames:
            return None
        info = self._bus.batch(
            [(n, p, PROPS, "Get", "ss", (ACCESSIBLE, "Name")) for _, n, p in frames]
            + [(n, p, ACCESSIBLE, "GetState", None, ()) for _, n, p in frames],
            deadline,
        )
        names = [variant_str(b) for b in info[: len(frames)]]
        states = [states_of(b) for b in info[len(frames) :]]
        pick = next((i for i, nm in enumerate(names) if nm and nm == window.title), None)
        if pick is None and focused:
            pick = next((i for i, s in enumerate(states) if s >> STATE_ACTIVE & 1), None)
        if pick is None and mine and len(frames) == 1:
            pick = 0  # the window's process has one frame (its title differs: a toolkit's own)
        if pick is None:
            return None
        app, name, path = frames[pick]
        return app, _Node(name, path, (), 0)

    def _walk(self, top: _Node, window: WindowInfo, out: WindowText, deadline: float) -> None:
        """Breadth first, a level per round of calls; lines sorted back into document order."""
        lim = self.limits
        level, found = [top], []
        win_box = rect_box(window.content or window.rect)
        chars = 0
        while level:
            if out.nodes + len(level) > lim.nodes:
                level = level[: max(0, lim.nodes - out.nodes)]
                out.complete = False
            if not level:
                break
            out.nodes += len(level)
            self._describe(level, deadline)
            texts = [
                n
                for n in level
                if TEXT in n.ifaces
                and n.role not in SECRET_ROLES
                and n.role not in CONTAINER_ROLES
                and not n.quiet
                and _shown(n)
            ]
            spoke: set[tuple[int, ...]] = set()  # nodes whose text was kept: their children's is it
            for n, got in zip(texts, self._texts(texts, win_box, deadline)):
                if n.box is None:
                    continue
                if len(got) >= lim.node_chars:
                    out.complete = False
                shown = n.box if win_box is None or inside(n.box, win_box) else clip(n.box, win_box)
                if got.replace(EMBEDDED, "").strip():
                    spoke.add(n.key)
                for k, line in enumerate(got.split("\n")):
                    line = line.replace(EMBEDDED, "").strip()
                    if line and chars < lim.chars:
                        line = line[: lim.chars - chars]
                        chars += len(line)
                        found.append(((*n.key, k), TreeLine(line, n.role, line_box(shown, k, got))))
                if chars >= lim.chars:
                    out.complete = False
            for n in level:  # a label or button without text: its name is what it shows
                if (
                    n.role in NAMED_ROLES
                    and TEXT not in n.ifaces
                    and n.label.strip()
                    and n.box is not None
                    and not n.quiet
                    and _shown(n)
                    and chars < lim.chars
                ):
                    line = n.label.strip()[: lim.chars - chars]
                    chars += len(line)
                    spoke.add(n.key)
                    found.append(((*n.key, 0), TreeLine(line, n.role, n.box)))
            for n in level:
                if n.role in PICTURE_ROLES and n.box is not None and _shown(n):
                    out.pictures.append(n.box)
                elif (
                    not n.children
                    and n.box is not None
                    and TEXT not in n.ifaces
                    and not n.label
                    and _shown(n)
                    and win_box is not None
                    and area(n.box) >= PICTURE_SHARE * area(win_box)
                ):
                    out.pictures.append(n.box)  # drawn, not described
            if not out.url:
                out.url = self._url([n for n in level if DOCUMENT in n.ifaces], deadline)
            parents = [
                n for n in level if n.children and n.role not in SECRET_ROLES and _shown(n, top)
            ]
            if parents and parents[0].depth + 1 > lim.depth:
                out.complete = False
                break
            level = self._children(parents, lim.nodes - out.nodes, deadline)
            for c in level:
                c.quiet = c.key[:-1] in spoke or any(
                    p.quiet for p in parents if p.key == c.key[:-1]
                )
            if len(level) < sum(min(p.children, lim.nodes) for p in parents):
                out.complete = False
        out.lines = [line for _, line in sorted(found, key=lambda kv: kv[0])]
        if win_box is not None:  # what lies outside the window is not shown (scrolled away)
            out.lines = [ln for ln in out.lines if center_in(ln.box, win_box)]
            out.pictures = [clip(b, win_box) for b in out.pictures if overlap(b, win_box)]

    def _describe(self, nodes: list[_Node], deadline: float) -> None:
        calls = []
        for n in nodes:
            calls += [
                (n.name, n.path, ACCESSIBLE, "GetRoleName", None, ()),
                (n.name, n.path, PROPS, "Get", "ss", (ACCESSIBLE, "Name")),
                (n.name, n.path, ACCESSIBLE, "GetInterfaces", None, ()),
                (n.name, n.path, ACCESSIBLE, "GetState", None, ()),
                (n.name, n.path, COMPONENT, "GetExtents", "u", (self.coords,)),
                (n.name, n.path, PROPS, "Get", "ss", (ACCESSIBLE, "ChildCount")),
            ]
        got = self._bus.batch(calls, deadline)
        for i, n in enumerate(nodes):
            role, name, ifaces, states, extents, count = got[6 * i : 6 * i + 6]
            n.role = reply_str(role)
            n.label = variant_str(name)
            n.ifaces = tuple(
                x
                for x in (ifaces[0] if isinstance(ifaces, tuple) and ifaces else ())
                if isinstance(x, str)
            )
            n.states = states_of(states)
            n.box = self._box(extents)
            n.children = _count(count)

    def _box(self, extents: Any) -> tuple[int, int, int, int] | None:
        """A node's box on screen (WINDOW coordinates placed at the window's ``_origin``)."""
        box = _extents(extents)
        if box is None or self.coords != WINDOW:
            return box
        (ox, oy), (x0, y0, x1, y1) = self._at, box
        return (x0 + ox, y0 + oy, x1 + ox, y1 + oy)

    def _origin(self, top: _Node, window: WindowInfo, deadline: float) -> tuple[int, int]:
        """Where (0, 0) of ``window``'s WINDOW coordinates is on screen: its content's corner
        (``WindowInfo.content``: sway's view, title bar and borders apart), less the margin the
        application draws around it (a shadow: ``INSET_DEPTH``), found by the first level of the
        tree whose boxes together have the content's size; without one, the frame's surplus
        split evenly."""
        rect = window.content or window.rect
        if self.coords != WINDOW or rect is None:
            return (0, 0)
        frame = self._placed([top], top, deadline)
        if not frame:
            return (rect.x, rect.y)
        fx0, fy0, fx1, fy1 = frame[0]
        key = (top.name, top.path, fx1 - fx0, fy1 - fy0, rect.width, rect.height)
        if key not in self._insets:  # known while neither size changes
            dx, dy = max(0, fx1 - fx0 - rect.width) // 2, max(0, fy1 - fy0 - rect.height) // 2
            self._insets[key] = (fx0 + dx, fy0 + dy)
            boxes, level = frame, [top]
            for _ in range(INSET_DEPTH):
                x0, y0 = min(b[0] for b in boxes), min(b[1] for b in boxes)
                x1, y1 = max(b[2] for b in boxes), max(b[3] for b in boxes)
                if abs(x1 - x0 - rect.width) <= 1 and abs(y1 - y0 - rect.height) <= 1:
                    self._insets[key] = (x0, y0)
                    break
                level = self._children([n for n in level if n.children], INSET_NODES, deadline)
                if not (boxes := self._placed(level, top, deadline)):
                    break
        dx, dy = self._insets[key]
        return (rect.x - dx, rect.y - dy)

    def _placed(
        self, level: list[_Node], top: _Node, deadline: float
    ) -> list[tuple[int, int, int, int]]:
        """The boxes (WINDOW coordinates, as the application says them) of ``level``'s nodes
        shown; each node's box, states and child count set."""
        ask: list[tuple] = [(COMPONENT, "GetExtents", "u", (WINDOW,))]
        ask += [
            (ACCESSIBLE, "GetState", None, ()),
            (PROPS, "Get", "ss", (ACCESSIBLE, "ChildCount")),
        ]
        got = self._bus.batch([(n.name, n.path, *a) for n in level for a in ask], deadline)
        boxes = []
        for i, n in enumerate(level):
            n.box, n.states = _extents(got[3 * i]), states_of(got[3 * i + 1])
            n.children = _count(got[3 * i + 2])
            if n.box is not None and _shown(n, top):
                boxes.append(n.box)
        return boxes

    def _texts(
        self, nodes: list[_Node], win_box: tuple[int, int, int, int] | None, deadline: float
    ) -> list[str]:
        """Each node's text where it is shown: a node larger than the window (a long document in a
        scrolled view) is read from the offset at the window's top left to the one at its bottom
        right, at most ``node_chars``."""
        if not nodes:
            return []
        cap = self.limits.node_chars
        counting = [(n.name, n.path, PROPS, "Get", "ss", (TEXT, "CharacterCount")) for n in nodes]
        counts = self._bus.batch(counting, deadline)
        spans: list[tuple[int, int]] = []
        probe: list[tuple] = []
        ox, oy = self._at if self.coords == WINDOW else (0, 0)  # points as the app counts them
        for n, c in zip(nodes, counts):
            total = _count(c)
            spans.append((0, total))
            if total and n.box is not None and _narrowed(n, win_box):
                x0, y0, x1, y1 = clip(n.box, win_box) if win_box is not None else n.box
                at, k = (n.name, n.path, TEXT, "GetOffsetAtPoint", "iiu"), self.coords
                probe += [(*at, (x0 - ox, y0 - oy, k)), (*at, (x1 - 1 - ox, y1 - 1 - oy, k))]
        offsets = iter(self._bus.batch(probe, deadline)) if probe else iter(())
        for i, (n, (_, total)) in enumerate(zip(nodes, spans)):
            if total and n.box is not None and _narrowed(n, win_box):
                a, b = next(offsets), next(offsets)
                start = a[0] if isinstance(a, tuple) and a and is_int(a[0]) and a[0] >= 0 else 0
                end = (
                    b[0] + 1 if isinstance(b, tuple) and b and is_int(b[0]) and b[0] >= 0 else total
                )
                spans[i] = (min(start, total), min(max(end, start), total))
        spans = [(a, min(b, a + cap)) for a, b in spans]
        asked = [
            (n.name, n.path, TEXT, "GetText", "ii", s) for n, s in zip(nodes, spans) if s[1] > s[0]
        ]
        texts = iter(self._bus.batch(asked, deadline))
        return [reply_str(next(texts))[:cap] if b > a else "" for a, b in spans]

    def _children(self, parents: list[_Node], room: int, deadline: float) -> list[_Node]:
        """The next level: each parent's children, at most ``room`` in all. A parent with more
        children than there is room for is asked for the first few by index, never for a list an
        application could make as long as it likes."""
        calls: list[tuple] = []
        whose: list[tuple[_Node, int | None]] = []
        for p in parents:
            if p.children <= room:
                calls.append((p.name, p.path, ACCESSIBLE, "GetChildren", None, ()))
                whose.append((p, None))
            else:
                for k in range(max(0, min(room, 64))):
                    calls.append((p.name, p.path, ACCESSIBLE, "GetChildAtIndex", "i", (k,)))
                    whose.append((p, k))
        got = self._bus.batch(calls, deadline) if calls else []
        out: list[_Node] = []
        for (p, at), body in zip(whose, got):
            refs = (
                object_refs(body)
                if at is None
                else object_refs(((body[0],),) if isinstance(body, tuple) and body else ())
            )
            for j, (name, path) in enumerate(refs[: p.children]):
                if name != p.name or len(out) >= room:
                    continue  # a child in another process (an embedded plug) is not followed
                out.append(_Node(name, path, (*p.key, j if at is None else at), p.depth + 1))
        return out

    def _url(self, docs: list[_Node], deadline: float) -> str:
        if not docs:
            return ""
        got = self._bus.batch(
            [(n.name, n.path, DOCUMENT, "GetAttributes", None, ()) for n in docs], deadline
        )
        for body in got:
            attrs = (
                body[0] if isinstance(body, tuple) and body and isinstance(body[0], dict) else {}
            )
            for key in ("DocURL", "URI", "URL", "url"):
                url = attrs.get(key)
                if isinstance(url, str) and url.startswith(("http://", "https://", "file://")):
                    return url[:2048]
        return ""


def _extents(body: Any) -> tuple[int, int, int, int] | None:
    """A GetExtents reply as (x0, y0, x1, y1); None when it is not a box."""
    vals = body[0] if isinstance(body, tuple) and body and isinstance(body[0], tuple) else ()
    if len(vals) != 4 or not all(is_int(v) for v in vals) or vals[2] <= 0 or vals[3] <= 0:
        return None
    x, y, w, h = vals
    return (x, y, x + w, y + h)


def _count(body: Any) -> int:
    """A Properties.Get reply of ChildCount; 0 unless a positive number."""
    ok = isinstance(body, tuple) and body and isinstance(body[0], tuple) and len(body[0]) == 2
    c = body[0][1] if ok else 0
    return c if is_int(c) and c > 0 else 0


def _shown(n: _Node, top: _Node | None = None) -> bool:
    """On screen: SHOWING and VISIBLE (the window's own node is followed whatever it says: some
    toolkits leave a frame's SHOWING unset without a window manager)."""
    if top is not None and n is top:
        return True
    return bool(n.states >> STATE_SHOWING & 1 and n.states >> STATE_VISIBLE & 1)


def _narrowed(n: _Node, win_box: tuple[int, int, int, int] | None) -> bool:
    """Whether only part of ``n``'s text may be in view: it runs past the window, or it holds
    lines a scrolled view shows some of (a text view's box is its viewport's, inside the window)."""
    if n.box is None:
        return False
    if win_box is not None and not inside(n.box, win_box):
        return True
    return bool(n.states >> STATE_MULTI_LINE & 1)
