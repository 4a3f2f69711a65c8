"""``mnemo bench capture``: the capture daemon on a real desktop through a scripted session, with
live ingestion: X11 (Xvfb 1920x1080, openbox, xterm, xclock) and, with ``--wayland``, the same
session on a headless sway (foot windows, wtype's typing, a clock in a terminal) in the same run.

The session: an active phase (a word typed into a terminal every ~3 s, a switch between two
terminals every 15 s), then a static phase (nothing but a clock's second hand). With ``--minutes
N``, an ordinary hour scaled to N minutes instead (``HOUR``): reading with scrolling, bursts of
typing with window switches, idle stretches, and the screen locked at the end. ``mnemo capture --ingest``
runs as its own process, as a user runs it. Its cost is the whole process tree's (``TreeMeter``):
the daemon, the ingesting ``mnemo watch`` child it starts and anything under that; the daemon's
own share is shown beside. The frames and bytes come from the files it wrote, its ticks from its
control socket. A typed word is kept when a frame stored while it is the latest word shows it: the
OCR of the frame holds it (``typing_kept``). The lag is from typing a token to the token being in
a stored memory.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bench.call import SIXEL_COLOURS, call_command, call_frames
from bench.metrics import meets

if TYPE_CHECKING:
    from bench.capture_apps import AppDesk

TARGETS = {
    "cpu_pct": ("<=", 3.0),
    "rss_mb": ("<=", 150.0),
    "static_dedup": (">=", 0.95),
    "typing_kept": ("==", 1.0),
    "ingest_lag_s": ("<=", 60.0),
}
HOUR_TARGETS = {  # the ordinary hour: the daemon and its ingest together
    "cpu_pct": ("<=", 10.0),
    "rss_mb": ("<=", 1000.0),
    "static_dedup": (">=", 0.95),
    "typing_kept": ("==", 1.0),
    "ingest_lag_s": ("<=", 60.0),
    "pages_found": (">=", 0.98),
}
SWAY_OVER_X11 = 1.5  # the daemon's CPU and memory on sway, at most this times X11's in one run
# the ordinary hour, in minutes: (what, minutes); scaled to --minutes
HOUR = (
    ("read", 10),
    ("type", 10),
    ("call", 6),
    ("idle", 8),
    ("read", 8),
    ("type", 8),
    ("idle", 6),
    ("lock", 4),
)
WORDS = (
    "apple",
    "banana",
    "cherry",
    "damson",
    "elder",
    "fig",
    "grape",
    "hazel",
    "iris",
    "juniper",
    "kiwi",
    "lemon",
    "mango",
    "nectar",
    "olive",
    "peach",
    "quince",
    "rowan",
    "sloe",
    "tansy",
)


COLOURS = (
    "amber",
    "blue",
    "coral",
    "dun",
    "ebony",
    "fawn",
    "gold",
    "henna",
    "indigo",
    "jade",
    "khaki",
    "lilac",
    "mauve",
    "navy",
    "ochre",
    "pink",
    "rose",
    "sand",
    "teal",
    "umber",
)


class TreeMeter:
    """CPU seconds and resident memory of a process and every process under it.

    - CPU (``cpu_s``): user and system time of the root and its live descendants, plus the time of
      the children each of them has waited for (``children_user``/``children_system``: an ingest
      child, or one it ran, that has exited). A descendant that exits unwaited, orphaned to init, is
      lost; ``mnemo capture`` waits for its watcher.
    - Memory: a thread samples the tree every ``every_s`` while the meter runs; ``peak_rss_mb`` is
      the highest summed RSS of the tree in one sample (a spike shorter than ``every_s`` may be
      missed), ``root_peak_rss_mb`` the root's own peak as the kernel kept it (VmHWM).
      ``peak_at`` is when that sample was taken and ``peak_by`` what each process held in it (by
      ``_label``), so that a peak can be told apart from the steady state and put on one process.
      ``peak_pss_mb`` is the same of the summed PSS (proportional set size: a page shared by n
      processes counts 1/n in each), where the RSS counts the libraries the daemon and its watcher
      both map twice.
    """

    def __init__(self, pid: int, every_s: float = 0.25) -> None:
        import psutil

        self.root = psutil.Process(pid)
        self.every_s = every_s
        self.peak_rss_mb = 0.0
        self.peak_at: float | None = None  # time.time() of the sample with the peak RSS
        self.peak_by: dict[str, float] = {}  # MB each process held in it
        self.peak_pss_mb = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def members(self) -> list:
        import psutil

        try:
            return [self.root, *self.root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def _each(self, what: Callable) -> float:
        import psutil

        total = 0.0
        for p in self.members():
            try:
                total += what(p)
            except (psutil.NoSuchProcess, psutil.ZombieProcess):  # gone between listing and reading
                pass
        return total

    def cpu_s(self) -> float:
        """The tree's CPU seconds so far."""
        return self._each(
            lambda p: sum(p.cpu_times()[:4])
        )  # user, system, children_user, children_system

    def root_cpu_s(self) -> float:
        """The root's own CPU seconds so far (its children apart)."""
        t = self.root.cpu_times()
        return t.user + t.system

    def rss_mb(self) -> float:
        """The tree's summed resident memory now."""
        return sum(self._rss_by().values())

    def pss_mb(self) -> float:
        """The tree's summed proportional set size now (0 where the kernel does not give it)."""
        return self._each(lambda p: _pss_kb(p.pid)) / 1024

    def root_peak_rss_mb(self) -> float:
        for line in Path(f"/proc/{self.root.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def _rss_by(self) -> dict:
        """Each live process of the tree (a ``psutil.Process``) -> its resident memory now, MB."""
        import psutil

        out = {}
        for p in self.members():
            try:
                out[p] = p.memory_info().rss / 2**20
            except (psutil.NoSuchProcess, psutil.ZombieProcess):
                pass
        return out

    def _sample(self) -> None:
        while True:
            by = self._rss_by()
            total = sum(by.values())
            if total > self.peak_rss_mb:  # labelled only here: a new peak is rare, samples are not
                self.peak_rss_mb, self.peak_at = total, time.time()
                self.peak_by = {_label(p): round(mb, 1) for p, mb in by.items()}
            self.peak_pss_mb = max(self.peak_pss_mb, self.pss_mb())
            if self._stop.wait(self.every_s):
                return

    def start(self) -> TreeMeter:
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def _label(p) -> str:
    """A process as a person reads it in a report: its program and first argument ("mnemo watch")
    and its pid."""
    import psutil

    try:
        args = p.cmdline() or [p.name()]
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        args = ["gone"]  # exited since the sample that held it
    # python -m mnemo watch ... -> mnemo watch
    if len(args) > 2 and args[1] == "-m":
        args = args[2:]
    return f"{' '.join(Path(a).name for a in args[:2])} ({p.pid})"


def _pss_kb(pid: int) -> float:
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:  # gone, or a kernel without it
        return 0.0
    return next(
        (float(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:")), 0.0
    )


def _normal(text: str) -> str:
    return "".join(text.lower().split())  # OCR's word spacing may differ from what was typed


def typing_kept(
    typed: list[tuple[str, float]],
    end: float,
    frames: list[tuple[float, Path]],
    read_text: Callable[[Path], str],
    slack_s: float = 0.5,
    texts: dict[Path, str] | None = None,
) -> list[bool]:
    """For each typed ``(word, typing began)``, in order: whether a frame stored from the moment its
    typing began until the next word's began (the last word: ``end``), plus ``slack_s``, shows the
    word: the frame's OCR (``read_text``), lower-cased and without spaces, contains it. A frame
    stored in that time that does not show the word (grabbed mid-word, or of another window) does
    not count. Each frame is read at most once: its text is kept in ``texts``."""
    texts = {} if texts is None else texts
    kept = []
    for i, (word, begin) in enumerate(typed):
        until = (typed[i + 1][1] if i + 1 < len(typed) else end) + slack_s
        want = _normal(word)
        found = False
        for t, path in frames:
            if begin <= t <= until:
                if path not in texts:
                    texts[path] = _normal(read_text(path))
                if want in texts[path]:
                    found = True
                    break
        kept.append(found)
    return kept


def ocr_text(ocr) -> Callable[[Path], str]:
    """A stored frame's on-screen text, read by ``ocr`` (a ``perception.ocr`` ``TextReader``)."""

    def read(path: Path) -> str:
        import cv2

        bgr = cv2.imread(str(path))
        if bgr is None:
            return ""
        return "\n".join(line.text for line in ocr.read(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)))

    return read


def _word(k: int) -> str:
    """The k-th typed word: each one different, so that no earlier one on screen stands in for it;
    letters only, as words are (a digit appended to a word is read as a letter as often as not:
    "banana1" as "bananal"). Past ``WORDS``, a word with a colour after it: never typed alone, so
    two words typed one after the other never spell one of these."""
    first = WORDS[k % len(WORDS)]
    return first if k < len(WORDS) else first + COLOURS[(k // len(WORDS) - 1) % len(COLOURS)]


def _frames(out: Path) -> list[dict]:
    return [
        json.loads(p.read_text())
        | {"bytes": p.stat().st_size + Path(str(p)[:-5]).stat().st_size, "path": str(p)[:-5]}
        for p in sorted(out.rglob("*.jpg.json"))
    ]


def _faces_stored(store: Path) -> int:
    """The faces the store holds as entities (the call's, on an ordinary hour's screens)."""
    import lancedb

    if not (store / "entities.lance").exists():
        return 0
    kinds = lancedb.connect(str(store)).open_table("entities").to_arrow().column("kind")
    return kinds.to_pylist().count("face")


def _memory_has(store: Path, token: str) -> bool:
    import lancedb

    if not (store / "memories.lance").exists():
        return False
    texts = lancedb.connect(str(store)).open_table("memories").to_arrow().column("text").to_pylist()
    return any(token in t for t in texts)


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
            _whole_on_screen(title, self.sway.rect(view))
            return view
        geometry = f"{cols}x{rows}+{x}+{y}"
        options = (
            ("-ti", "vt340", "-xrm", f"XTerm*numColorRegisters: {SIXEL_COLOURS}") if sixel else ()
        )
        window = self.x.xterm(
            title, cls=cls, geometry=geometry, font_px=16, command=command, options=options
        )
        _whole_on_screen(title, self.x.geometry(window))
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
WORD_S = 3.0  # a typed word every this many seconds
READING = (
    "/usr/share/common-licenses/GPL-3"  # a long text every Debian has, paged through with less
)


def _whole_on_screen(title: str, rect: tuple[int, int, int, int]) -> None:
    """Refuse a session window (x, y, width, height) that runs off the screen: what is typed in its
    hidden rows is in no frame, and the bench would count it as lost by the daemon."""
    x, y, width, height = rect
    if x < 0 or y < 0 or x + width > SCREEN[0] or y + height > SCREEN[1]:
        raise RuntimeError(
            f"bench capture: the window {title!r} ({width}x{height} at {x},{y}) is not whole on "
            f"the {SCREEN[0]}x{SCREEN[1]} screen; make it fewer rows or columns"
        )


def run(
    workdir: Path,
    active_s: float = 60.0,
    static_s: float = 60.0,
    interval_s: float = 2.0,
    ocr=None,
    progress: Callable[[str], None] = print,
    wayland: bool = False,
    minutes: float | None = None,
    keep: Path | None = None,
    sound=None,
    apps: bool = True,
) -> dict:
    """The session (or with ``minutes`` the ordinary hour scaled to that) and its figures, on X11
    or (``wayland``) sway; ``ocr`` (a ``perception.ocr`` ``TextReader``) reads the stored frames
    for ``typing_kept``, which is None without one. ``keep``: a folder to copy the stored frames
    into, with what was typed when and the text read in each frame (``_keep``). ``sound``: a
    ``bench.capture_sound.CallSound``: the daemon also records sound, and the call is heard
    (its figures join these). ``apps``: the hour on X11 reads a page in Chromium and types in
    Mousepad and xfce4-terminal, whose text the accessibility tree gives (``bench.capture_apps``);
    else, and on sway, in terminals (OCR only)."""
    out, store = workdir / "screens", workdir / "store"
    # the call's frames, where the desktop's user can read them (sway runs as a user of its own)
    from bench.fixtures import group_photo

    call_dir = Path(tempfile.mkdtemp(prefix="mnemo-call-"))
    faces = call_frames(group_photo(), call_dir) if minutes else []
    desk = Desk(workdir, wayland)
    sock = Path(desk.env["XDG_RUNTIME_DIR"]) / "mnemo" / "capture.sock"
    app_desk = None
    markers: list[str] = []  # the reading page's marker sentences (apps)
    page = 0  # the page of it shown
    pages: set[int] = set()  # the pages read
    reader: str | None = None
    try:
        if apps and minutes and not wayland:
            from bench import capture_apps

            if why := capture_apps.missing():
                raise RuntimeError(f"bench capture: {why} (or run it with --terminals)")
            app_desk = desk.apps = capture_apps.AppDesk(desk.x, workdir)
            reading, markers = capture_apps.reading_page(workdir, 200)
            notes = app_desk.editor(workdir / "notes.txt", EDITOR_BOX)
            shell = app_desk.terminal("build shell", SHELL_BOX, f"{SHELL_AT[0]}x{SHELL_AT[1]}")
            reader = app_desk.browser(reading, BROWSER_BOX)
        else:
            notes = desk.term("notes.txt - editor", "Editor", NOTES_AT)
            shell = desk.term("build shell", "Shell", SHELL_AT)
            reader = (
                desk.term("GPL-3 - less", "Reader", READER_AT, ["less", READING])
                if minutes
                else None
            )
        desk.clock()
        desk.focus(notes)
        env = {
            **desk.env,
            "HF_HUB_OFFLINE": "1",
            **(sound.env if sound is not None else {}),
            **(app_desk.env if app_desk is not None else {}),
        }
        cap = subprocess.Popen(
            [sys.executable, "-m", "mnemo", "capture", "--out", str(out)]
            + ["--interval", f"{interval_s:g}s", "--ingest", "--store", str(store)]
            + (["--audio"] if sound is not None else []),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        from perception.capture.control import request

        meter = TreeMeter(cap.pid).start()
        deadline = time.time() + 60
        while not sock.exists() and time.time() < deadline:
            time.sleep(0.2)
        time.sleep(2 * interval_s)
        token = "48213"  # digits: OCR's word-spacing may split "zebra48213", never the number
        desk.type(f"echo zebra{token} is the token\n")
        typed_at = time.time()
        found: list[float] = []

        def poll_store() -> None:  # from the moment the token is typed, while the session goes on
            while not found and time.time() - typed_at < 240:
                if _memory_has(store, token):
                    found.append(time.time() - typed_at)
                else:
                    time.sleep(1.0)

        poller = threading.Thread(target=poll_store, daemon=True)
        poller.start()
        if sound is not None:
            sound.watch_store(store)
        minutes_log = _PerMinute(meter).start()
        typed: list[tuple[str, float]] = []  # (word, typing began)
        typing: list[tuple[float, float]] = []  # stretches of typing (start, end)
        static: list[tuple[dict, dict]] = []  # status before and after each static stretch
        idle: list[tuple[float, float]] = []  # the static stretches (start, end)
        calls: list[tuple[float, float]] = []  # the video calls (start, end)
        cpu0, own0, t0 = meter.cpu_s(), meter.root_cpu_s(), time.time()
        script = (
            [(what, m * 60 * minutes / 60) for what, m in HOUR]
            if minutes
            else [("type", active_s), ("idle", static_s)]
        )
        unended = None  # the window whose line of typed words the last stretch left open
        for what, seconds in script:
            progress(f"bench capture on {desk.kind}: {what} for {seconds:.0f} s")
            begin = time.time()
            if what == "type":
                unended = _typing(desk, (notes, shell), seconds, typed, unended)
                typing.append((begin, time.time()))
            elif what == "read":  # a page every 20 s, each shown for at least 5 s
                desk.focus(reader)
                pages.add(page)
                while (left := seconds - (time.time() - begin)) > 0:
                    time.sleep(min(20.0, left))
                    if seconds - (time.time() - begin) < 5.0:
                        break
                    desk.type(" ")  # a page down
                    page += 1
                    pages.add(page)
            elif what == "call":  # a window with a moving face, over the others, then hung up
                call = desk.term("call - Meet", "Call", CALL_AT, call_command(faces), sixel=True)
                desk.focus(call)
                if sound is not None:  # the call is heard: its sound at least once through
                    sound.play(seconds)
                else:
                    time.sleep(seconds)
                desk.close_window(call)
                calls.append((begin, time.time()))
            elif what == "idle":
                s0 = request({"cmd": "status"}, sock)
                time.sleep(seconds)
                static.append((s0, request({"cmd": "status"}, sock)))
                idle.append((begin, time.time()))
            elif what == "lock":
                desk.lock()
                time.sleep(seconds)
        end = time.time()
        cpu_s, own_s, wall_s = meter.cpu_s() - cpu0, meter.root_cpu_s() - own0, end - t0
        minutes_log.stop()
        meter.stop()
        rss_mb, own_rss_mb, pss_mb = meter.peak_rss_mb, meter.root_peak_rss_mb(), meter.peak_pss_mb
        poller.join(timeout=max(0.0, 240 - (time.time() - typed_at)))
        lag = found[0] if found else None
        tree = (request({"cmd": "status"}, sock) or {}).get("tree") or {}
        cap.send_signal(signal.SIGTERM)
        log, _ = cap.communicate(timeout=180)
    finally:
        desk.close()
        shutil.rmtree(call_dir, ignore_errors=True)
    frames = _frames(out)
    ts = [(f, _epoch(f["captured_at"])) for f in frames]
    kept: int | None = None
    missed: list[str] = []
    texts: dict[Path, str] = {}
    if ocr is not None and typed:
        progress(
            f"bench capture: reading the frames stored while each of {len(typed)} words was typed"
        )
        stored = [(t, Path(f["path"])) for f, t in ts]
        kept = 0
        for begin, stop in typing:  # each stretch's last word is kept until the stretch ends
            words = [(w, t) for w, t in typed if begin <= t <= stop]
            shown = typing_kept(words, stop, stored, ocr_text(ocr), texts=texts)
            kept += sum(shown)
            missed += [w for (w, _), ok in zip(words, shown) if not ok]
    static_ticks = sum(b["ticks"] - a["ticks"] for a, b in static)
    static_written = sum(b["written"] - a["written"] for a, b in static)
    in_typing = [f for f, t in ts if any(b <= t < e for b, e in typing)]
    in_idle = [f for f, t in ts if any(b <= t < e for b, e in idle)]
    in_call = [f for f, t in ts if any(b <= t < e for b, e in calls)]
    typing_s, idle_s = sum(e - b for b, e in typing), sum(e - b for b, e in idle)
    figures = {
        "desktop": desk.kind,
        "minutes": minutes,
        "cpu_pct": round(100 * cpu_s / wall_s, 2),
        "cpu_pct_peak_minute": max(minutes_log.cpu_pct, default=None),
        "rss_mb": round(rss_mb, 1),
        "pss_mb": round(pss_mb, 1),
        # when the peak was (seconds into the session; below 0: while the daemon started) and what
        # each process held then
        "rss_peak_at_s": round(meter.peak_at - t0, 1) if meter.peak_at is not None else None,
        "rss_peak_by": meter.peak_by,
        "rss_mb_steady": round(statistics.median(minutes_log.rss_mb), 1)
        if minutes_log.rss_mb
        else None,
        "cpu_pct_daemon": round(100 * own_s / wall_s, 2),
        "rss_mb_daemon": round(own_rss_mb, 1),
        "mb_per_hour": round(sum(f["bytes"] for f in frames) / 1e6 / (wall_s / 3600), 1),
        "mb_per_hour_active": round(sum(f["bytes"] for f in in_typing) / 1e6 / (typing_s / 3600), 1)
        if typing_s
        else None,
        "mb_per_hour_static": round(sum(f["bytes"] for f in in_idle) / 1e6 / (idle_s / 3600), 2)
        if idle_s
        else None,
        "static_dedup": round(1 - static_written / static_ticks, 4) if static_ticks else None,
        "typing_kept": round(kept / len(typed), 4) if kept is not None else None,
        "typing_missed": missed,
        "ingest_lag_s": round(lag, 1) if lag is not None else None,
        "frames_active": len(in_typing),
        "frames_static": static_written,
        "frames_call": len(in_call) if calls else None,
        "faces_stored": _faces_stored(store) if calls else None,
        "frames": len(frames),
        "static_ticks": static_ticks,
        "typing_events": len(typed),
        "interval_s": interval_s,
    }
    ocr_s = sum(float(s) for s in re.findall(r"; OCR ([0-9.]+) s", log))
    figures |= {  # the CPU each source of screen text costs, % of one core over the session
        "text_tree_pct": round(100 * float(tree.get("cpu_s") or 0.0) / wall_s, 2),
        "text_tree_wait_pct": round(100 * float(tree.get("seconds") or 0.0) / wall_s, 2),
        "text_ocr_pct": round(100 * ocr_s / wall_s, 2),
        "frames_from_tree": tree.get("frames"),
        "apps": app_desk is not None,
    }
    if app_desk is not None:  # the store's search looks for them (``capture_apps.pages_found``)
        figures["pages_read"] = {k + 1: markers[k] for k in sorted(pages)}
        figures["store"] = str(store)
    if sound is not None:
        figures |= sound.figures(store, out, wall_s)
    progress(log[-2000:])
    if keep is not None:
        _keep(keep / desk.kind, out, figures, log, typed, typing, ts, texts)
        progress(f"bench capture: the frames and what was typed kept in {keep / desk.kind}")
    return figures


def _keep(
    to: Path,
    out: Path,
    figures: dict,
    log: str,
    typed: list[tuple[str, float]],
    typing: list[tuple[float, float]],
    ts: list[tuple[dict, float]],
    texts: dict[Path, str],
) -> None:
    """The session's stored frames (``screens/``), its daemon's log, and ``session.json``: the
    figures, each typed word with when its typing began, the typing stretches, and each stored
    frame with when it was captured and, where ``typing_kept`` read it, its text."""
    import shutil

    to.mkdir(parents=True, exist_ok=True)
    if out.exists():
        shutil.copytree(out, to / "screens", dirs_exist_ok=True)
    (to / "capture.log").write_text(log)
    frames = [
        {
            "at": t,
            "path": str(Path(f["path"]).relative_to(out)),
            "text": texts.get(Path(f["path"])),
        }
        for f, t in ts
    ]
    session = {"figures": figures, "typed": typed, "typing": typing, "frames": frames}
    (to / "session.json").write_text(json.dumps(session, indent=1))


def _typing(
    desk: Desk,
    windows: tuple,
    seconds: float,
    typed: list[tuple[str, float]],
    unended=None,
):
    """A word every ``WORD_S`` into the focused terminal, and a switch between ``windows`` after
    five words and Enter: lines a person ends, not one line the terminal wraps inside words. A line
    the last stretch left open (``unended``) is ended first. Each word is given its whole
    ``WORD_S``: none is begun in the stretch's last moment. Returns the window whose line this
    stretch leaves open, if any."""
    start, k, focus = time.time(), 0, windows[0]
    if unended is not None:
        desk.focus(unended)
        desk.type("\n")
    desk.focus(focus)
    while time.time() - start + WORD_S <= seconds:
        if k and k % 5 == 0:
            desk.type("\n")  # the line ends before the switch (never as a stretch ends: its
            # output would land in the idle stretch that follows)
            focus = windows[1] if focus == windows[0] else windows[0]
            desk.focus(focus)
        word, begin = _word(len(typed)), time.time()
        desk.type(word + " ")
        typed.append((word, begin))
        k += 1
        time.sleep(max(0.0, WORD_S - (time.time() - begin)))
    return focus if k % 5 else None


class _PerMinute:
    """Each minute: the tree's CPU over it (% of one core) and its resident memory at its end."""

    def __init__(self, meter: TreeMeter) -> None:
        self.meter = meter
        self.cpu_pct: list[float] = []
        self.rss_mb: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> _PerMinute:
        self._thread.start()
        return self

    def _run(self) -> None:
        last, at = self.meter.cpu_s(), time.time()
        while not self._stop.wait(60.0):
            now, cpu = time.time(), self.meter.cpu_s()
            self.cpu_pct.append(round(100 * (cpu - last) / (now - at), 2))
            self.rss_mb.append(round(self.meter.rss_mb(), 1))
            last, at = cpu, now

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _epoch(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso).timestamp()


def format_report(f: dict) -> str:
    targets = HOUR_TARGETS if f.get("minutes") else TARGETS
    rows = [
        ("capture + ingest CPU, % of one core", f["cpu_pct"], "cpu_pct"),
        ("  its busiest minute", f.get("cpu_pct_peak_minute"), None),
        ("  of which the daemon itself", f["cpu_pct_daemon"], None),
        ("capture + ingest peak RSS, MB", f["rss_mb"], "rss_mb"),
        ("  steady (median at each minute's end)", f.get("rss_mb_steady"), None),
        ("  peak PSS (shared pages split), MB", f.get("pss_mb"), None),
        ("  the daemon's own peak RSS, MB", f["rss_mb_daemon"], None),
        ("MB stored per hour", f.get("mb_per_hour"), None),
        ("  while typing", f["mb_per_hour_active"], None),
        ("  static", f["mb_per_hour_static"], None),
        ("static ticks that wrote nothing", f["static_dedup"], "static_dedup"),
        ("typed words in a stored frame's OCR", f["typing_kept"], "typing_kept"),
        ("live-ingest lag, s (typed → in memory)", f["ingest_lag_s"], "ingest_lag_s"),
        ("screen text from the tree, % of a core", f.get("text_tree_pct"), None),
        ("  the daemon waiting on the apps, % of the time", f.get("text_tree_wait_pct"), None),
        ("  frames with text from the tree", f.get("frames_from_tree"), None),
        ("screen text by OCR, % of a core", f.get("text_ocr_pct"), None),
    ]
    if f.get("apps"):
        rows.append(("pages read found by search", f.get("pages_found"), "pages_found"))
    what = (
        f"an ordinary hour in {f['minutes']:g} min"
        if f.get("minutes")
        else f"{f['frames_active']} frames while typing"
    )
    screen = "headless sway 1920x1080" if f.get("desktop") == "sway" else "Xvfb 1920x1080"
    lines = [
        f"capture every {f['interval_s']:g} s under {screen}: {what}, {f['frames']} frames, "
        f"{f['frames_static']} in {f['static_ticks']} static ticks, {f['typing_events']} typing events"
    ]
    for label, value, key in rows:
        target = ""
        if key:
            op, bound = targets[key]
            target = f"target {op} {bound:g}: {'met' if value is not None and meets(value, op, bound) else 'MISSED'}"
        lines.append(f"  {label:<42} {value if value is not None else 'n/a':>10}  {target}")
    if f.get("rss_peak_by"):
        held = ", ".join(f"{who} {mb:g}" for who, mb in f["rss_peak_by"].items())
        lines.append(f"  the peak of RSS, {f['rss_peak_at_s']} s into the session: {held} MB")
    if f.get("frames_call") is not None:
        lines.append(
            f"  {'the video call: frames stored, faces in the store':<42} "
            f"{f['frames_call']:>4}, {f['faces_stored']}"
        )
    if f.get("pages_missed"):
        lines.append(f"  pages read that search did not find: {f['pages_missed']}")
    if f.get("typing_missed"):
        lines.append(f"  typed words not in a stored frame's OCR: {', '.join(f['typing_missed'])}")
    if "wer_mic" in f:
        lines += [f"  {label:<42} {f.get(key)}" for label, key in SOUND_ROWS if key in f]
    return "\n".join(lines)


# the call heard (``--audio``): report lines, and with the targets of issue 66 where it sets one
SOUND_ROWS = (
    ("the call played (times)", "call_plays"),
    ("WER of the microphone's stream", "wer_mic"),
    ("  the same track ingested as a file", "wer_mic_file"),
    ("WER of the computer's sound", "wer_out"),
    ("  the same track ingested as a file", "wer_out_file"),
    ("owner attribution (target >= 0.95)", "owner_attribution"),
    ("sentences stored twice (target 0)", "duplicated_sentences"),
    ("sound stored, MB an hour", "audio_mb_per_hour"),
    ("lag from speech to memory, s (target <= 60)", "speech_lag_s"),
    ("CPU % of a core the sound adds (target <= 15)", "audio_cpu_pct_added"),
    ("peak RSS the sound adds, MB (target <= 200)", "audio_rss_mb_added"),
)


def compare(x11: dict, sway: dict) -> str:
    """The daemon on sway against X11 in the same run."""
    lines = ["sway against X11 in this run (the daemon itself):"]
    for key, label in (("cpu_pct_daemon", "CPU"), ("rss_mb_daemon", "peak RSS")):
        ratio = sway[key] / x11[key] if x11[key] else None
        ok = ratio is not None and ratio <= SWAY_OVER_X11
        lines.append(
            f"  {label:<10} {x11[key]:>8} on X11, {sway[key]:>8} on sway: "
            f"{'n/a' if ratio is None else f'{ratio:.2f}x'}  target <= {SWAY_OVER_X11:g}x: "
            f"{'met' if ok else 'MISSED'}"
        )
    return "\n".join(lines)


def summary(f: dict) -> dict:
    base = (
        "desktop",
        "cpu_pct",
        "cpu_pct_peak_minute",
        "rss_mb",
        "rss_mb_steady",
        "pss_mb",
        "mb_per_hour",
        "mb_per_hour_active",
        "static_dedup",
        "typing_kept",
        "ingest_lag_s",
        "text_tree_pct",
        "text_ocr_pct",
        "frames_from_tree",
        "pages_found",
    )
    heard = [key for _, key in SOUND_ROWS if key in f]  # with --audio
    return {k: f.get(k) for k in (*base, *heard)}


def add_arguments(parser) -> None:
    """``mnemo bench capture``'s own options."""
    parser.add_argument(
        "--wayland",
        action="store_true",
        help="run the session on X11 and then on a headless sway, and compare the daemons",
    )
    parser.add_argument(
        "--minutes",
        type=float,
        metavar="N",
        help="an ordinary hour (reading, typing, idle, locked) scaled to N minutes, against the "
        "hour's targets (60: the whole hour)",
    )
    parser.add_argument(
        "--audio",
        action="store_true",
        help="the hour's call is heard (a real recorded call through a PulseAudio server the bench "
        "starts); the session runs twice, without and with `capture --audio`, and reports what "
        "the sound adds, each stream's WER, owner attribution, duplicates and lag",
    )
    parser.add_argument(
        "--terminals",
        action="store_true",
        help="the hour on X11 in xterms and less, as before the apps (OCR alone); by default it "
        "reads a page in Chromium and types in Mousepad and xfce4-terminal, their text from the "
        "accessibility tree",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="keep each desktop's stored frames, its daemon's log and session.json (what was "
        "typed when, each frame's time and text) in DIR/x11 and DIR/sway",
    )
