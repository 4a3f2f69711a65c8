"""``mnemo bench capture``: the capture daemon on a real desktop through a scripted session, with
live ingestion: X11 (Xvfb 1920x1080, openbox, xterm, xclock) and, with ``--wayland``, the same
session on a headless sway (foot windows, wtype's typing, a clock in a terminal) in the same run.

The session: an active phase (a word typed into a terminal every ~3 s, a switch between two
terminals every 15 s), then a static phase (nothing but a clock's second hand). With ``--minutes
N``, an ordinary hour scaled to N minutes instead (``HOUR``): reading with scrolling, bursts of
typing with window switches, idle stretches, and the screen locked at the end; on both desktops in
Chromium, Mousepad and xfce4-terminal, whose text the daemon reads from the accessibility tree
(``bench.capture_apps``), unless ``--terminals``. ``mnemo capture --ingest``
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

from bench.call import call_command, call_frames
from bench.capture_desk import (
    BROWSER_BOX,
    CALL_AT,
    EDITOR_BOX,
    NOTES_AT,
    READER_AT,
    READING,
    SHELL_AT,
    SHELL_BOX,
    Desk,
)
from bench.capture_report import compare, format_report, summary
from bench.capture_sound import wait_for_clip
from bench.capture_typing import ocr_text, type_stretch, typing_kept
from bench.tree_meter import PerMinute, TreeMeter

__all__ = ["HOUR", "add_arguments", "compare", "format_report", "run", "summary"]

CALL_INGEST_S = 600.0  # after the session, how long the watcher may take to ingest the call's clips

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
    (its figures join these). ``apps``: the hour reads a page in Chromium and types in Mousepad
    and xfce4-terminal, whose text the accessibility tree gives (``bench.capture_apps``; on sway
    as its Wayland clients); else in terminals and ``less`` (xterm or foot: OCR only)."""
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
        if apps and minutes:
            from bench import capture_apps

            if why := capture_apps.missing():
                raise RuntimeError(f"bench capture: {why} (or run it with --terminals)")
            app_desk = desk.apps = (
                capture_apps.SwayApps(desk.sway)
                if wayland
                else capture_apps.X11Apps(desk.x, workdir)
            )
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
        # the window typed into stays in front until a frame has shown the token: the hour begins
        # by reading in another window, and the token was then first seen ten minutes later
        time.sleep(3 * interval_s)
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
        minutes_log = PerMinute(meter).start()
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
                unended = type_stretch(desk, (notes, shell), seconds, typed, unended)
                typing.append((begin, time.time()))
            elif what == "read":  # a page every 20 s, each shown for at least 5 s
                desk.focus(reader)
                pages.add(page)
                while (left := seconds - (time.time() - begin)) > 0:
                    time.sleep(min(20.0, left))
                    if seconds - (time.time() - begin) < 5.0:
                        break
                    desk.page_down()
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
        # the call's words are scored once its clips are in: the watcher may lag on a busy machine
        call_in = not sound or wait_for_clip(store, sound.heard_by, CALL_INGEST_S, progress)
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
        figures |= sound.figures(store, out, wall_s, ingested=call_in)
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


def _epoch(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso).timestamp()


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
        help="the hour in terminals and less (xterm on X11, foot on sway), as before the apps "
        "(OCR alone); by default it reads a page in Chromium and types in Mousepad and "
        "xfce4-terminal, their text from the accessibility tree (on sway as Wayland clients)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="keep each desktop's stored frames, its daemon's log and session.json (what was "
        "typed when, each frame's time and text) in DIR/x11 and DIR/sway",
    )
