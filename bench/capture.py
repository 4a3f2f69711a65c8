"""``mnemo bench capture``: the capture daemon on a real X desktop (Xvfb 1920x1080, openbox, xterm,
xclock) through a scripted session, with live ingestion.

The session: an active phase (a word typed into an xterm every ~3 s, a switch between two xterms
every 15 s), then a static phase (nothing but xclock's second hand). ``mnemo capture --ingest``
runs as its own process, as a user runs it; its CPU time and peak RSS come from /proc (the
ingesting child is measured apart), the frames and bytes from the files it wrote, its ticks from
its control socket. The lag is from typing a token to the token being in a stored memory.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from bench.metrics import meets
from bench.xdesktop import Desktop

TARGETS = {"cpu_pct": ("<=", 3.0), "rss_mb": ("<=", 150.0), "static_dedup": (">=", 0.95), "typing_kept": ("==", 1.0),
           "ingest_lag_s": ("<=", 60.0)}
WORDS = ("apple", "banana", "cherry", "damson", "elder", "fig", "grape", "hazel", "iris", "juniper", "kiwi", "lemon",
         "mango", "nectar", "olive", "peach", "quince", "rowan", "sloe", "tansy")


def _proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _proc_peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _frames(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) | {"bytes": p.stat().st_size + Path(str(p)[:-5]).stat().st_size}
            for p in sorted(out.rglob("*.jpg.json"))]


def _memory_has(store: Path, token: str) -> bool:
    import lancedb

    if not (store / "memories.lance").exists():
        return False
    texts = lancedb.connect(str(store)).open_table("memories").to_arrow().column("text").to_pylist()
    return any(token in t for t in texts)


def run(workdir: Path, active_s: float = 60.0, static_s: float = 60.0, interval_s: float = 2.0,
        progress: Callable[[str], None] = print) -> dict:
    out, store, sock = workdir / "screens", workdir / "store", workdir / "run" / "mnemo" / "capture.sock"
    desk = Desktop(workdir)
    try:
        notes = desk.xterm("notes.txt - editor", cls="Editor", geometry="100x30+80+80", font_px=16)
        shell = desk.xterm("build shell", cls="Shell", geometry="100x30+900+400", font_px=16)
        desk.xclock("200x200-10+10")
        desk.focus(notes)
        env = {**desk.env, "HF_HUB_OFFLINE": "1"}
        cap = subprocess.Popen([sys.executable, "-m", "mnemo", "capture", "--out", str(out), "--interval", str(interval_s),
                                "--ingest", "--store", str(store)], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        from perception.capture.control import request

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
        typed: list[tuple[float, float]] = []  # (typing started, typing ended)
        cpu0, t0, start = _proc_cpu_s(cap.pid), time.time(), time.time()
        focus, k = notes, 0
        while time.time() - start < active_s:
            if k and k % 5 == 0:  # a window switch every ~15 s
                focus = shell if focus == notes else notes
                desk.focus(focus)
            begin = time.time()
            desk.type(WORDS[k % len(WORDS)] + " ")
            typed.append((begin, time.time()))
            k += 1
            time.sleep(3.0)
        active_end = time.time()
        progress(f"bench capture: static phase, {static_s:.0f} s of a ticking clock")
        s0 = request({"cmd": "status"}, sock)
        time.sleep(static_s)
        s1 = request({"cmd": "status"}, sock)
        static_end = time.time()
        cpu_s, wall_s = _proc_cpu_s(cap.pid) - cpu0, time.time() - t0
        rss_mb = _proc_peak_rss_mb(cap.pid)
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
    kept = 0
    for i, (begin, _) in enumerate(typed):
        nxt = typed[i + 1][0] if i + 1 < len(typed) else active_end
        kept += any(begin <= t <= nxt + 0.5 for _, t in ts)  # a frame stored during or after it
    static_ticks = s1["ticks"] - s0["ticks"]
    static_written = s1["written"] - s0["written"]
    figures = {
        "cpu_pct": round(100 * cpu_s / wall_s, 2),
        "rss_mb": round(rss_mb, 1),
        "mb_per_hour_active": round(sum(f["bytes"] for f in active) / 1e6 / ((active_end - t0) / 3600), 1),
        "mb_per_hour_static": round(sum(f["bytes"] for f in static) / 1e6 / ((static_end - active_end) / 3600), 2),
        "static_dedup": round(1 - static_written / static_ticks, 4) if static_ticks else None,
        "typing_kept": round(kept / len(typed), 4) if typed else None,
        "ingest_lag_s": round(lag, 1) if lag is not None else None,
        "frames_active": len(active), "frames_static": len(static), "static_ticks": static_ticks,
        "typing_events": len(typed), "interval_s": interval_s,
    }
    progress(log[-2000:])
    return figures


def _epoch(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso).timestamp()


def format_report(f: dict) -> str:
    rows = [("capture CPU, % of one core", f["cpu_pct"], "cpu_pct"), ("capture peak RSS, MB", f["rss_mb"], "rss_mb"),
            ("MB per hour, active", f["mb_per_hour_active"], None), ("MB per hour, static", f["mb_per_hour_static"], None),
            ("static ticks that wrote nothing", f["static_dedup"], "static_dedup"),
            ("typing events kept", f["typing_kept"], "typing_kept"),
            ("live-ingest lag, s (typed → in memory)", f["ingest_lag_s"], "ingest_lag_s")]
    lines = [f"capture every {f['interval_s']:g} s under Xvfb 1920x1080: {f['frames_active']} frames while active, "
             f"{f['frames_static']} in {f['static_ticks']} static ticks, {f['typing_events']} typing events"]
    for label, value, key in rows:
        target = ""
        if key:
            op, bound = TARGETS[key]
            target = f"target {op} {bound:g}: {'met' if value is not None and meets(value, op, bound) else 'MISSED'}"
        lines.append(f"  {label:<42} {value if value is not None else 'n/a':>10}  {target}")
    return "\n".join(lines)


def summary(f: dict) -> dict:
    return {k: f[k] for k in ("cpu_pct", "rss_mb", "mb_per_hour_active", "static_dedup", "typing_kept", "ingest_lag_s")}
