"""The capture loop: grab each monitor, drop what is private, keep what changed, write it.

Each tick reads the focused window before and after the grab and drops the grab when focus moved
in between (the pixels and the metadata would disagree); before a chosen frame is written it looks
again for a locker, so a lock that comes up during the grab stores nothing. Exclusions fail closed:
if the focused window cannot be read, or is excluded, nothing of its monitor is stored. A frame is
kept when the app or window changed, when enough of the screen changed, or when any (non-volatile)
tile changed while the user typed or moved the mouse; a static screen writes only a heartbeat line
now and then.
The loop grabs slower when the user is idle and stops grabbing while the screen saver is on, the
screen is locked, the user paused it, or the disk is nearly full.

Each kept frame's sidecar also holds the screen text the accessibility tree gives for the windows
on its monitor (``screen_text``, ``perception/capture/screen_tree.py``): the lines with their role and box, and in paint
order the boxes the tree speaks for (OCR leaves them alone at ingest) and those OCR still reads
(pictures in an accessible window, windows without a tree). Excluded windows are never asked.

With sound (``audio``, ``perception/capture/audio.py``), each tick also decides whether the
microphone and the computer's sound may be recorded until the next one (``sound_gate``): not while
the screen is locked, an excluded window has focus, the user paused capture or the sound, the disk
is full or the desktop cannot be read, nor when no tick has said so lately (fail closed).
"""

from __future__ import annotations

import errno
import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from perception.capture.config import CaptureConfig
from perception.capture.privacy import Exclusions, blackout
from perception.capture.screen_tree import MonitorView, ScreenText
from perception.capture.storage import CaptureStore
from perception.capture.tiles import TileTracker
from perception.capture.windows import DesktopLost, DesktopSession, Rect, Unreadable, WindowInfo

if TYPE_CHECKING:
    from perception.capture.atspi import AccessibilityReader
    from perception.capture.audio import AudioRecorder

log = logging.getLogger(__name__)

DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
RESUME_FREE_B = 8 << 20  # after a full disk, capture resumes once this much is free (a few frames)
MAX_PAUSE_S = (
    366 * 86400.0
)  # a pause "for" longer than a year is a mistake; without for_s it lasts until resumed
PAUSE_POLL_S = 0.2  # how often, between grabs, the daemon looks whether a burst of input has ended
LAYOUT_CHECK_S = 5.0  # how often the monitor layout is read again (a monitor plugged in or out)


@dataclass
class Counters:
    ticks: int = 0
    written: int = 0
    bytes_written: int = 0
    static_ticks: int = (
        0  # grabs that kept nothing because nothing (outside volatile tiles) changed
    )
    focus_changed: int = 0  # grabs dropped because focus moved during the grab
    excluded: int = 0  # monitor grabs not stored: an excluded window had focus
    blacked_out: int = 0  # excluded windows painted black in stored frames
    heartbeats: int = 0
    layout_changes: int = 0  # monitors plugged in, unplugged or moved while capturing
    reasons: dict[str, int] = field(default_factory=dict)


@dataclass
class _Monitor:
    index: int  # 1 is the first monitor
    rect: Rect
    tiles: TileTracker
    last_meta: tuple[str, str] | None = None


@dataclass
class _Kept:
    """A monitor's grab chosen to be stored, held until the tick has checked the screen is not
    locked since the grab."""

    monitor: _Monitor
    frame: np.ndarray
    gray: np.ndarray
    meta: tuple[str, str]
    side: dict
    at: float


class Capturer:
    """The daemon's state; ``run`` loops until ``stop`` or the duration ends."""

    def __init__(
        self,
        cfg: CaptureConfig,
        store: CaptureStore,
        display_name: str | None = None,
        on_frame=None,
        desktop: DesktopSession | None = None,
        audio: AudioRecorder | None = None,
        tree: AccessibilityReader | None = None,
    ) -> None:
        """``desktop``: the session to read (default: the one this process runs in, or the X
        display ``display_name``; ``perception.capture.session.open_desktop``). ``tree``: the
        accessibility reader (default: one for this desktop when ``read_tree``)."""
        self.cfg = cfg
        self.store = store
        self.exclusions = Exclusions(
            tuple(cfg.exclude_classes), tuple(cfg.exclude_titles), cfg.builtin_exclusions
        )
        if desktop is None:
            from perception.capture.session import open_desktop

            desktop = open_desktop(display_name)
        self.x = desktop
        self.monitors = self._layout(desktop.outputs(), [])
        self.last_layout_check = time.monotonic()
        self.counters = Counters()
        self.on_frame = on_frame  # called with (image path, sidecar dict) after each write
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._user_pause_until: float | None = None  # inf: until resumed
        self.state = "starting"
        self.why = ""
        self.last_tick = 0.0
        self.last_input = 0.0
        self.last_heartbeat = 0.0
        self.error = ""
        self.unreadable = ""  # why the desktop could not be read, while it cannot
        self.disk_full = False  # the last write failed for want of space: wait for RESUME_FREE_B
        self.audio = audio  # an AudioRecorder, started and stopped with the loop; None: no sound
        if tree is None and cfg.read_tree:
            from perception.capture.atspi import SCREEN, WINDOW, AccessibilityReader

            tree = AccessibilityReader(coords=SCREEN if desktop.kind == "x11" else WINDOW)
        self.tree = tree  # None: screen text is OCR's alone
        self.screen_text = ScreenText(tree) if tree is not None else None
        self._sound_why = "capture is starting"  # why sound may not be recorded now ("": it may)
        self._sound_at = 0.0  # when a tick last decided it

    # control (called from the socket thread)
    def handle(self, req: dict) -> dict:
        cmd = req.get("cmd")
        with self._lock:
            sound_only = req.get("audio") is True
            if sound_only and cmd in ("pause", "resume") and self.audio is None:
                return {"error": "this daemon records no sound (start it with --audio)"}
            if cmd == "pause":
                for_s = req.get("for_s")
                if for_s is not None and not (
                    isinstance(for_s, (int, float)) and 0 < for_s <= MAX_PAUSE_S
                ):
                    return {
                        "error": f"for_s is seconds to pause, more than 0 and at most {MAX_PAUSE_S:g}; "
                        f"not {for_s!r}"[:300]
                    }
                if sound_only and self.audio is not None:
                    self.audio.pause(for_s)
                else:
                    self._user_pause_until = time.time() + for_s if for_s else float("inf")
            elif cmd == "resume":
                if sound_only and self.audio is not None:
                    self.audio.resume()
                else:
                    self._user_pause_until = None
            elif cmd == "stop":
                self._stop.set()
            elif cmd in ("exclude", "include"):
                try:
                    self.exclusions = self.exclusions.changed(
                        cmd == "exclude", req.get("class"), req.get("title")
                    )
                except ValueError as e:
                    return {"error": str(e)}
                return self.exclusions.listing()  # in force from the next frame
            elif cmd == "exclusions":
                return self.exclusions.listing()
            elif cmd != "status":
                return {
                    "error": f"unknown command {cmd!r}; one of status, pause, resume, stop, exclusions, "
                    "exclude, include"
                }
        return self.status()

    def status(self) -> dict:
        state, why = self.state, self.why
        late = time.time() - self.last_tick
        if (
            state == "capturing"
            and self.last_tick
            and late > 3 * max(self.cfg.interval_s, self.cfg.idle_interval_s) + 5
        ):
            state, why = "stalled", f"no grab for {late:.0f} s"
        c = self.counters
        return {
            "state": state,
            "why": why,
            "out": str(self.store.root),
            "ticks": c.ticks,
            "written": c.written,
            "bytes_stored": self.store.total_bytes,
            "static_ticks": c.static_ticks,
            "excluded": c.excluded,
            "focus_changed": c.focus_changed,
            "last_tick": self.last_tick,
            "paused_until": self._user_pause_until
            if self._user_pause_until not in (None, float("inf"))
            else None,
            "audio": self.audio.status() if self.audio is not None else None,
            "tree": None
            if self.tree is None
            else {
                "readable": self.tree.why == "" and self.tree.seen,
                "why": self.tree.why,
                "frames": self.screen_text.frames if self.screen_text else 0,
                "seconds": round(self.screen_text.seconds, 3) if self.screen_text else 0.0,
                "cpu_s": round(self.screen_text.cpu_s, 3) if self.screen_text else 0.0,
            },
        }

    def sound_gate(self) -> str:
        """Why sound may not be recorded now; "" when it may (called for each chunk of sound)."""
        stale = max(self.cfg.interval_s, self.cfg.idle_interval_s) * 3 + 5
        if time.time() - self._sound_at > stale:
            return "the screen's state is not known (capture is not looking)"
        return self._sound_why

    def _sound(self, why: str) -> None:
        self._sound_why, self._sound_at = why, time.time()

    def stop(self) -> None:
        self._stop.set()

    # the loop
    def run(self, duration_s: float | None = None) -> Counters:
        self.store.recover()
        end = time.monotonic() + duration_s if duration_s else float("inf")
        if self.audio is not None:
            self.audio.start()
        try:
            while not self._stop.is_set() and time.monotonic() < end:
                try:
                    wait = self.tick()
                except self.x.dropped_errors as e:
                    # a window vanished mid-query: this grab is dropped, the next one is fresh
                    log.debug("%s error during a grab, dropped: %s", self.x.kind, e)
                    wait = min(0.5, self.cfg.interval_s)
                except Unreadable as e:
                    # fail closed: nothing of this grab is stored; look again soon, saying why
                    # once for as long as the same thing stays unreadable
                    why = f"{e}; nothing is stored until it can be read"
                    wait = self._pause(why, 2.0, warn=True, say=why != self.unreadable)
                    self.unreadable = why
                self._sleep(min(wait, end - time.monotonic()))
        finally:
            self.state, self.why = "stopped", self.error or "stopped"
            self._sound("capture stopped")
            if self.audio is not None:
                self.audio.stop()  # the slot in progress is finished and stored
            self.x.close()
            if self.tree is not None:
                self.tree.close()
        return self.counters

    def _sleep(self, seconds: float) -> None:
        """Wait; a long (idle) wait ends early at the first keyboard or mouse input, and any wait
        ends once input since the last grab has paused for ``pause_grab_s`` (``_burst_ended``)."""
        deadline = time.monotonic() + max(0.0, seconds)
        step = 1.0 if seconds > self.cfg.interval_s or not self.cfg.pause_grab_s else PAUSE_POLL_S
        while not self._stop.is_set() and (left := deadline - time.monotonic()) > 0:
            self._stop.wait(min(left, step))
            if self.state != "capturing":
                continue
            idle = self.x.idle_s()
            since_grab = time.time() - self.last_tick
            if idle < since_grab and (
                seconds > self.cfg.interval_s or self._burst_ended(idle, since_grab)
            ):
                return

    def _burst_ended(self, idle: float, since_grab: float) -> bool:
        """Input came since the last grab (``idle`` < ``since_grab``) and has paused for
        ``pause_grab_s``: grab now, so that a word typed is in a frame before the next one or a
        window switch, not only when a tick happens to fall in the pause. At most once a burst
        (then the grab is newer than the input), and not sooner than half an interval after the
        last grab."""
        return 0 < self.cfg.pause_grab_s <= idle and since_grab >= self.cfg.interval_s / 2

    def _pause(self, why: str, wait: float, warn: bool = False, say: bool = True) -> float:
        """Capture nothing for ``wait`` seconds, saying why once (``warn``: a problem to solve)."""
        if say and (self.state != "paused" or self.why != why):
            (log.warning if warn else log.info)("capture paused: %s", why)
        self.state, self.why = "paused", why
        if why != "the screen saver is on":  # a call goes on under a screen saver (tick)
            self._sound(why)
        for m in self.monitors:
            m.tiles.reset()  # the first grab after a pause is kept
        self.last_tick = time.time()
        return wait

    def tick(self) -> float:
        """One grab of every monitor; returns the seconds to wait before the next."""
        now = time.time()
        with self._lock:
            until = self._user_pause_until
            if until is not None and now >= until:
                self._user_pause_until = until = None
        if until is not None:
            return self._pause(
                "paused by the user"
                + (
                    ""
                    if until == float("inf")
                    else f" until {datetime.fromtimestamp(until).astimezone().isoformat(timespec='seconds')}"
                ),
                min(1.0, self.cfg.interval_s),
            )
        saver_on, idle = self.x.saver()
        if saver_on:
            if self.audio is not None:  # a locker behind the saver stops the sound too
                self._sound(
                    "the screen is locked"
                    if self.x.locked(self.x.stacking(), self.x.focused())
                    else ""
                )
            return self._pause("the screen saver is on", 1.0)
        if self.disk_full and self.store.free_bytes() < RESUME_FREE_B:
            return self._pause(
                self.why, 10.0, warn=True
            )  # still full: no write to fail, no log line
        if self.store.low_on_disk():
            return self._pause(
                f"less than {self.cfg.min_free_mb:g} MB free on the disk of {self.store.root}; "
                "capture resumes when space is freed",
                10.0,
                warn=True,
            )
        had_input = now - idle > self.last_tick if self.last_tick else True
        if had_input:
            self.last_input = now - idle
        else:  # what input causes a moment later (a command's output, a page that loads) counts as input
            had_input = now - self.last_input <= self.cfg.input_settle_s
        focused = self.x.focused()
        windows = self.x.stacking()
        if self.x.locked(windows, focused):
            return self._pause("the screen is locked", 1.0)
        top = focused or next((w for w in reversed(windows) if w.rect is not None), None)
        self._sound(
            "an excluded window has focus" if top is not None and self.exclusions.why(top) else ""
        )
        if self.state != "capturing" and not self.unreadable:
            log.info("capture resumed")
        self.state, self.why = "capturing", ""
        self.last_tick = now
        self.counters.ticks += 1
        if time.monotonic() - self.last_layout_check >= LAYOUT_CHECK_S and self.check_layout():
            return min(
                0.3, self.cfg.interval_s
            )  # windows move with monitors: grab from a fresh look
        try:
            grabs = [self.x.grab(m.index, m.rect) for m in self.monitors]
        except (DesktopLost, Unreadable):
            if not self.check_layout():  # not a monitor unplugged since the last look
                raise
            return min(0.3, self.cfg.interval_s)
        if self.unreadable:
            log.warning("capture resumed: the desktop can be read again")
            self.unreadable = ""
        after = self.x.focused()
        if _key(after) != _key(focused):
            self.counters.focus_changed += 1
            return min(0.3, self.cfg.interval_s)  # grab again soon, when focus has settled
        try:
            kept = [
                k
                for m, frame in zip(self.monitors, grabs)
                if (k := self._consider(m, frame, focused, windows, had_input, now)) is not None
            ]
            if kept and self.x.locked(self.x.stacking(), after):
                # a locker came up during the grab: the pixels may be it, or what it covers
                return self._pause("the screen is locked", 1.0)
            for k in kept:
                self._keep(k)
        except OSError as e:
            if e.errno not in DISK_FULL:
                raise
            # nothing half-written stays (storage.write); look again in 10 s, as when space runs low
            self.disk_full = True
            return self._pause(
                f"the disk of {self.store.root} is full ({e.strerror}); capture resumes when "
                "space is freed",
                10.0,
                warn=True,
            )
        self.disk_full = False
        if self.store.max_age_days and self.counters.ticks % 300 == 1:
            self.store.expire()
        return self.cfg.idle_interval_s if idle >= self.cfg.idle_after_s else self.cfg.interval_s

    def _layout(self, rects: list[Rect], known: list[_Monitor]) -> list[_Monitor]:
        """Monitors at ``rects``; one already ``known`` at the same place keeps its state."""
        by_rect = {m.rect: m for m in known}
        out = []
        for i, rect in enumerate(rects, start=1):
            old = by_rect.get(rect)
            out.append(
                _Monitor(
                    i,
                    rect,
                    old.tiles if old else TileTracker(self.cfg.tile_px),
                    old.last_meta if old else None,
                )
            )
        return out

    def check_layout(self) -> bool:
        """Read the monitor layout again (a monitor plugged in, unplugged or moved); True if it
        changed. A monitor that stays where it was keeps its change tracking."""
        self.last_layout_check = time.monotonic()
        monitors = self._layout(self.x.outputs(), self.monitors)
        if [m.rect for m in monitors] == [m.rect for m in self.monitors]:
            return False
        log.warning("the monitors changed: %s -> %s", _rects(self.monitors), _rects(monitors))
        self.monitors = monitors
        self.counters.layout_changes += 1
        return True

    def _consider(
        self,
        m: _Monitor,
        frame: np.ndarray,
        focused: WindowInfo | None,
        windows: list[WindowInfo],
        had_input: bool,
        now: float,
    ) -> _Kept | None:
        """What of monitor ``m``'s grab is to be stored, or None (excluded, or nothing changed)."""
        import cv2

        focused_here = self._focus_on(m, focused, windows)
        if focused_here is not None and self.exclusions.why(focused_here):
            self.counters.excluded += 1
            m.tiles.reset()
            return None
        excluded = [w.wid for w in windows if self.exclusions.why(w)]
        if excluded:
            frame = frame.copy()
            self.counters.blacked_out += blackout(frame, m.rect, windows, excluded)
        gray = cv2.cvtColor(
            frame, cv2.COLOR_BGRA2GRAY if frame.shape[2] == 4 else cv2.COLOR_BGR2GRAY
        )
        change = m.tiles.observe(gray, had_input)
        top = focused_here or next(
            (
                w
                for w in reversed(windows)
                if w.rect is not None and w.rect.intersects(m.rect) and w.wid not in excluded
            ),
            None,
        )
        meta = (top.app, top.title) if top is not None else ("", "")
        view = MonitorView(m.rect, focused_here, windows, set(excluded), gray)
        text: dict | None = None  # the screen text from the tree, where a retry read it
        if m.last_meta is None:
            reason = "start"
        elif meta != m.last_meta:
            reason = "window"
        elif change.fraction >= self.cfg.min_changed_fraction:
            reason = "change"
        elif change.changed and had_input:
            reason = "input"
        elif self.screen_text is not None and (text := self.screen_text.retry(view)) is not None:
            reason = "tree"  # the same screen, now with the text its busy application held back
        else:
            self.counters.static_ticks += 1
            if now - self.last_heartbeat >= self.cfg.heartbeat_s:
                self.store.heartbeat(
                    {
                        "at": datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds"),
                        "monitor": m.index,
                        "app": meta[0],
                        "window": meta[1],
                        "reason": "static",
                    }
                )
                self.last_heartbeat = now
                self.counters.heartbeats += 1
            return None
        side: dict[str, Any] = {
            "app": meta[0],
            "window": meta[1],
            "pid": top.pid if top is not None else None,
            "reason": reason,
            "changed_tiles": change.changed,
            "input": bool(had_input) and reason != "start",
        }  # the first grab is no sign of anyone typing
        if self.screen_text is not None:
            if reason != "tree":
                text = self.screen_text.of_monitor(view)
            if text is not None:
                side["screen_text"] = text
        return _Kept(m, frame, gray, meta, side, now)

    def _keep(self, k: _Kept) -> None:
        """Encode and store a frame ``_consider`` chose."""
        import cv2

        ok, jpeg = cv2.imencode(
            ".jpg", k.frame[:, :, :3], [cv2.IMWRITE_JPEG_QUALITY, self.cfg.jpeg_quality]
        )
        if not ok:
            log.warning("JPEG encoding of monitor %d failed; frame skipped", k.monitor.index)
            return
        at = datetime.fromtimestamp(k.at, UTC)
        written = self.store.write(jpeg.tobytes(), k.side, at, k.monitor.index)
        k.monitor.tiles.kept(k.gray)
        k.monitor.last_meta = k.meta
        reason = k.side["reason"]
        self.counters.written += 1
        self.counters.bytes_written += written.bytes
        self.counters.reasons[reason] = self.counters.reasons.get(reason, 0) + 1
        if self.on_frame is not None:
            self.on_frame(written.image, k.side)

    def _focus_on(
        self, m: _Monitor, focused: WindowInfo | None, windows: list[WindowInfo]
    ) -> WindowInfo | None:
        """The window that has focus on this monitor; where it is unknown, it counts as on every
        monitor, and with nothing focused the top window counts as focused (fail closed)."""
        if focused is None:
            return next(
                (w for w in reversed(windows) if w.rect is not None and w.rect.intersects(m.rect)),
                None,
            )
        if focused.rect is None or len(self.monitors) == 1 or focused.rect.center_in(m.rect):
            return focused
        return None


def _key(w: WindowInfo | None) -> tuple:
    return (w.wid, w.title) if w is not None else (None, None)


def _rects(monitors: list[_Monitor]) -> str:
    return (
        ", ".join(f"{m.rect.width}x{m.rect.height}+{m.rect.x}+{m.rect.y}" for m in monitors)
        or "none"
    )
