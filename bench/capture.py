"""``mnemo bench capture``: the capture daemon on a real X desktop (Xvfb 1920x1080, openbox, xterm,
xclock) through a scripted session, with live ingestion.

The session: an active phase (a word typed into an xterm every ~3 s, a switch between two xterms
every 15 s), then a static phase (nothing but xclock's second hand). ``mnemo capture --ingest``
runs as its own process, as a user runs it. Its cost is the whole process tree's (``TreeMeter``):
the daemon, the ingesting ``mnemo watch`` child it starts and anything under that; the daemon's
own share is shown beside. The frames and bytes come from the files it wrote, its ticks from its
control socket. A typed word is kept when a frame stored while it is the latest word shows it: the
OCR of the frame holds it (``typing_kept``). The lag is from typing a token to the token being in
a stored memory.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from bench.metrics import meets
from bench.xdesktop import Desktop

TARGETS = {
    "cpu_pct": ("<=", 3.0),
    "rss_mb": ("<=", 150.0),
    "static_dedup": (">=", 0.95),
    "typing_kept": ("==", 1.0),
    "ingest_lag_s": ("<=", 60.0),
}
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


class TreeMeter:
    """CPU seconds and resident memory of a process and every process under it.

    - CPU (``cpu_s``): user and system time of the root and its live descendants, plus the time of
      the children each of them has waited for (``children_user``/``children_system``: an ingest
      child, or one it ran, that has exited). A descendant that exits unwaited, orphaned to init, is
      lost; ``mnemo capture`` waits for its watcher.
    - Memory: a thread samples the tree every ``every_s`` while the meter runs; ``peak_rss_mb`` is
      the highest summed RSS of the tree in one sample (a spike shorter than ``every_s`` may be
      missed), ``root_peak_rss_mb`` the root's own peak as the kernel kept it (VmHWM).
    """

    def __init__(self, pid: int, every_s: float = 0.25) -> None:
        import psutil

        self.root = psutil.Process(pid)
        self.every_s = every_s
        self.peak_rss_mb = 0.0
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
        return self._each(lambda p: p.memory_info().rss) / 2**20

    def root_peak_rss_mb(self) -> float:
        for line in Path(f"/proc/{self.root.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def _sample(self) -> None:
        while True:
            self.peak_rss_mb = max(self.peak_rss_mb, self.rss_mb())
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


def _normal(text: str) -> str:
    return "".join(text.lower().split())  # OCR's word spacing may differ from what was typed


def typing_kept(
    typed: list[tuple[str, float]],
    end: float,
    frames: list[tuple[float, Path]],
    read_text: Callable[[Path], str],
    slack_s: float = 0.5,
) -> list[bool]:
    """For each typed ``(word, typing began)``, in order: whether a frame stored from the moment its
    typing began until the next word's began (the last word: ``end``), plus ``slack_s``, shows the
    word: the frame's OCR (``read_text``), lower-cased and without spaces, contains it. A frame
    stored in that time that does not show the word (grabbed mid-word, or of another window) does
    not count. Each frame is read at most once."""
    texts: dict[Path, str] = {}
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
    """The k-th typed word: each one different, so that no earlier one on screen stands in for it."""
    return WORDS[k % len(WORDS)] + (str(k // len(WORDS)) if k >= len(WORDS) else "")


def _frames(out: Path) -> list[dict]:
    return [
        json.loads(p.read_text())
        | {"bytes": p.stat().st_size + Path(str(p)[:-5]).stat().st_size, "path": str(p)[:-5]}
        for p in sorted(out.rglob("*.jpg.json"))
    ]


def _memory_has(store: Path, token: str) -> bool:
    import lancedb

    if not (store / "memories.lance").exists():
        return False
    texts = lancedb.connect(str(store)).open_table("memories").to_arrow().column("text").to_pylist()
    return any(token in t for t in texts)


def run(
    workdir: Path,
    active_s: float = 60.0,
    static_s: float = 60.0,
    interval_s: float = 2.0,
    ocr=None,
    progress: Callable[[str], None] = print,
) -> dict:
    """The session and its figures; ``ocr`` (a ``perception.ocr`` ``TextReader``) reads the stored
    frames for ``typing_kept``, which is None without one."""
    out, store, sock = (
        workdir / "screens",
        workdir / "store",
        workdir / "run" / "mnemo" / "capture.sock",
    )
    desk = Desktop(workdir)
    try:
        notes = desk.xterm("notes.txt - editor", cls="Editor", geometry="100x30+80+80", font_px=16)
        shell = desk.xterm("build shell", cls="Shell", geometry="100x30+900+400", font_px=16)
        desk.xclock("200x200-10+10")
        desk.focus(notes)
        env = {**desk.env, "HF_HUB_OFFLINE": "1"}
        cap = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mnemo",
                "capture",
                "--out",
                str(out),
                "--interval",
                f"{interval_s:g}s",
                "--ingest",
                "--store",
                str(store),
            ],
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
        progress(f"bench capture: active phase, {active_s:.0f} s of typing and window switches")
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
        typed: list[tuple[str, float]] = []  # (word, typing began)
        cpu0, own0, t0, start = meter.cpu_s(), meter.root_cpu_s(), time.time(), time.time()
        focus, k = notes, 0
        while time.time() - start < active_s:
            if k and k % 5 == 0:  # a window switch every ~15 s
                focus = shell if focus == notes else notes
                desk.focus(focus)
            word, begin = _word(k), time.time()
            desk.type(word + " ")
            typed.append((word, begin))
            k += 1
            time.sleep(3.0)
        active_end = time.time()
        progress(f"bench capture: static phase, {static_s:.0f} s of a ticking clock")
        s0 = request({"cmd": "status"}, sock)
        time.sleep(static_s)
        s1 = request({"cmd": "status"}, sock)
        static_end = time.time()
        cpu_s, own_s, wall_s = meter.cpu_s() - cpu0, meter.root_cpu_s() - own0, time.time() - t0
        meter.stop()
        rss_mb, own_rss_mb = meter.peak_rss_mb, meter.root_peak_rss_mb()
        poller.join(timeout=max(0.0, 240 - (time.time() - typed_at)))
        lag = found[0] if found else None
        cap.send_signal(signal.SIGTERM)
        log, _ = cap.communicate(timeout=180)
    finally:
        desk.close()
    frames = _frames(out)
    ts = [(f, _epoch(f["captured_at"])) for f in frames]
    active = [f for f, t in ts if t0 <= t < active_end]
    static = [f for f, t in ts if active_end <= t < static_end]
    kept = None
    if ocr is not None and typed:
        progress(
            f"bench capture: reading the frames stored while each of {len(typed)} words was typed"
        )
        stored = [(t, Path(f["path"])) for f, t in ts]
        kept = sum(typing_kept(typed, active_end, stored, ocr_text(ocr)))
    static_ticks = s1["ticks"] - s0["ticks"]
    static_written = s1["written"] - s0["written"]
    figures = {
        "cpu_pct": round(100 * cpu_s / wall_s, 2),
        "rss_mb": round(rss_mb, 1),
        "cpu_pct_daemon": round(100 * own_s / wall_s, 2),
        "rss_mb_daemon": round(own_rss_mb, 1),
        "mb_per_hour_active": round(
            sum(f["bytes"] for f in active) / 1e6 / ((active_end - t0) / 3600), 1
        ),
        "mb_per_hour_static": round(
            sum(f["bytes"] for f in static) / 1e6 / ((static_end - active_end) / 3600), 2
        ),
        "static_dedup": round(1 - static_written / static_ticks, 4) if static_ticks else None,
        "typing_kept": round(kept / len(typed), 4) if kept is not None else None,
        "ingest_lag_s": round(lag, 1) if lag is not None else None,
        "frames_active": len(active),
        "frames_static": len(static),
        "static_ticks": static_ticks,
        "typing_events": len(typed),
        "interval_s": interval_s,
    }
    progress(log[-2000:])
    return figures


def _epoch(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso).timestamp()


def format_report(f: dict) -> str:
    rows = [
        ("capture + ingest CPU, % of one core", f["cpu_pct"], "cpu_pct"),
        ("  of which the daemon itself", f["cpu_pct_daemon"], None),
        ("capture + ingest peak RSS, MB", f["rss_mb"], "rss_mb"),
        ("  the daemon's own peak RSS, MB", f["rss_mb_daemon"], None),
        ("MB per hour, active", f["mb_per_hour_active"], None),
        ("MB per hour, static", f["mb_per_hour_static"], None),
        ("static ticks that wrote nothing", f["static_dedup"], "static_dedup"),
        ("typed words in a stored frame's OCR", f["typing_kept"], "typing_kept"),
        ("live-ingest lag, s (typed → in memory)", f["ingest_lag_s"], "ingest_lag_s"),
    ]
    lines = [
        f"capture every {f['interval_s']:g} s under Xvfb 1920x1080: {f['frames_active']} frames while active, "
        f"{f['frames_static']} in {f['static_ticks']} static ticks, {f['typing_events']} typing events"
    ]
    for label, value, key in rows:
        target = ""
        if key:
            op, bound = TARGETS[key]
            target = f"target {op} {bound:g}: {'met' if value is not None and meets(value, op, bound) else 'MISSED'}"
        lines.append(f"  {label:<42} {value if value is not None else 'n/a':>10}  {target}")
    return "\n".join(lines)


def summary(f: dict) -> dict:
    return {
        k: f[k]
        for k in (
            "cpu_pct",
            "rss_mb",
            "mb_per_hour_active",
            "static_dedup",
            "typing_kept",
            "ingest_lag_s",
        )
    }
