"""``killed_watcher``: the capture daemon (``mnemo capture --ingest`` on a real X display, Xvfb) runs
its watcher under ``mnemo.supervise``. The watcher is SIGKILLed while frames arrive: it must come
back and ingest the frames written while it was dead; then the daemon is SIGKILLed: no process of
its tree may stay.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from bench.capture_argv import capture_and_ingest
from bench.faults import Context, Tally, mnemo_argv
from bench.faults.processes_kit import (
    alive_pids,
    child_env,
    cmdline_of,
    describe_pid,
    kill_pids,
    missing_in_ci,
    wait_gone,
)

# ------------------------------------------------------------------------------------------------
# killed_watcher

WATCH_CLIP_S = 4.0  # short clips, so a try sees several close while it runs
GAP_S = 4.0  # the frames of this long after the kill are the ones only a restarted watcher ingests


def killed_watcher(
    ctx: Context,
    tally: Tally,
    *,
    prelude: str = "",
    ingest_wait_s: float = 60.0,
    gap_wait_s: float = 90.0,
    orphan_wait_s: float = 30.0,
) -> None:
    """``ingest_wait_s``: how long the first watcher may take to ingest; ``gap_wait_s``: how long after
    the kill the frames of the gap may take to be ingested (a restart, models loaded, the folder read);
    ``orphan_wait_s``: how long the daemon's tree may take to end after its SIGKILL (the parent-death
    signal ends the watcher at once)."""
    from bench.xdesktop import Desktop, missing_tools

    if why := missing_tools():
        tally.run(ok=False, note=missing_in_ci(f"no X display to capture: {why}"))
        return
    desktop = Desktop(
        ctx.workdir, size="640x480"
    )  # small frames: the watcher keeps up on a busy 2-core machine
    try:
        term = desktop.xterm("notes", geometry="60x12+20+20")
        desktop.focus(term)
        for i in range(ctx.runs):
            lost, orphans, ok, note = _watcher_try(
                ctx.workdir / f"try{i}",
                desktop,
                prelude,
                ingest_wait_s,
                gap_wait_s,
                orphan_wait_s,
                ctx.progress,
            )
            tally.run(lost=lost, orphans=orphans, ok=ok, note=note)
    finally:
        desktop.close()


def _watcher_try(
    folder: Path,
    desktop,
    prelude: str,
    ingest_wait_s: float,
    gap_wait_s: float,
    orphan_wait_s: float,
    progress: Callable[[str], None],
) -> tuple[int, int, bool, str]:
    from embeddings.base import build_text_embedder
    from graph.store import Store
    from perception.capture.owned import frame_time, is_frame_name

    folder.mkdir(parents=True)
    out, store_dir = folder / "screens", folder / "store"
    env = child_env(
        **{k: v for k, v in desktop.env.items() if k in ("DISPLAY", "XDG_RUNTIME_DIR")},
        MNEMO_CAPTURE__IDLE_AFTER_S="3600",
        MNEMO_PERCEPTION__CLIP_S=f"{WATCH_CLIP_S:g}",
        MNEMO_PERCEPTION__IMAGE_BACKEND="none",
        MNEMO_PERCEPTION__OCR_BACKEND="none",
    )
    # typing keeps frames coming (input and changed pixels), as a user at work does
    typist = subprocess.Popen(
        ["xdotool", "type", "--delay", "80", "the parking spot is level 3 bay 42. " * 100],
        env=desktop.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    log_path = folder / "daemon.log"
    with open(log_path, "w") as log_file:
        daemon = subprocess.Popen(
            mnemo_argv(capture_and_ingest(out, store_dir, "600s"), prelude),
            env=env,
            cwd=folder,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    tree: set[int] = set()
    try:

        def watchers() -> list[psutil.Process]:
            try:
                kids = psutil.Process(daemon.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                return []
            tree.update(k.pid for k in kids)
            return [k for k in kids if "watch" in cmdline_of(k)]

        def said(text: str) -> bool:
            return text in log_path.read_text(errors="replace")

        deadline = time.monotonic() + ingest_wait_s
        while not said("clip(s),") and time.monotonic() < deadline and daemon.poll() is None:
            watchers()
            time.sleep(0.3)
        if not said("clip(s),"):
            return (
                0,
                0,
                False,
                f"the watcher ingested nothing in {ingest_wait_s:g} s: {log_path.read_text()[-600:]}",
            )
        (first,) = watchers()
        killed_at = time.time()
        first.send_signal(signal.SIGKILL)
        progress(
            f"faults: killed_watcher: SIGKILLed the watcher (pid {first.pid}) while frames arrive"
        )
        # frames keep arriving; the restarted watcher (if any) must ingest those of the gap
        time.sleep(GAP_S)
        restarted = [w for w in watchers() if w.pid != first.pid]
        deadline = time.monotonic() + gap_wait_s
        gap: list[float] = []
        missing: list[float] = []
        store = None
        while time.monotonic() < deadline:
            gap = sorted(
                t
                for p in out.rglob("*.jpg")
                if is_frame_name(p.name)
                and p.with_name(p.name + ".json").exists()
                and (taken := frame_time(p.name)) is not None
                and killed_at <= (t := taken.timestamp()) < killed_at + GAP_S
            )
            if store is None and (store_dir / "clips.lance").exists():
                store = Store(store_dir, build_text_embedder("hash"), read_consistency_s=0)
            spans = []
            if store is not None:
                store.catch_up()
                spans = [
                    (r["start_ts"], r["end_ts"])
                    for r in store.clips.search()
                    .select(["start_ts", "end_ts"])
                    .limit(None)
                    .to_list()
                ]
            missing = [t for t in gap if not any(s <= t < e for s, e in spans)]
            if gap and not missing:
                break
            restarted = restarted or [w for w in watchers() if w.pid != first.pid]
            time.sleep(0.5)
        restarted = restarted or [w for w in watchers() if w.pid != first.pid]
        backoff = said("exited with code -9; restarting it in")
        # the daemon killed: nothing it started may outlive it (the watcher and whatever that started)
        watchers()
        daemon.send_signal(signal.SIGKILL)
        daemon.wait(timeout=30)
        since_kill = time.monotonic()
        left = wait_gone(sorted(tree), orphan_wait_s)
        lingering = [describe_pid(pid) for pid in left]  # before the SIGKILL below ends them
        kill_pids(left)
        progress(
            f"faults: killed_watcher: {len(left)} process(es) of the daemon's tree left {orphan_wait_s:g} s after "
            f"its SIGKILL"
            if left
            else f"faults: killed_watcher: the daemon's tree ended "
            f"{time.monotonic() - since_kill:.1f} s after its SIGKILL"
        )
        notes = []
        if not gap:
            notes.append(
                f"no frame was captured in the {GAP_S:g} s after the kill (the typist stalled?)"
            )
        if missing:
            notes.append(
                f"{len(missing)} of {len(gap)} frame(s) captured while the watcher was dead were never "
                f"ingested (restarted: {bool(restarted)})"
            )
        if not restarted or not backoff:
            notes.append(
                "the watcher was not restarted after its SIGKILL"
                if not restarted
                else "the daemon did not say it restarts the watcher after a delay"
            )
        if left:
            notes.append(
                f"{len(left)} process(es) of the daemon's tree outlived its SIGKILL by {orphan_wait_s:g} s: "
                + ", ".join(lingering)
                + "; the daemon's log ends: "
                + log_path.read_text(errors="replace")[-800:]
            )
        return len(missing), len(left), bool(gap and restarted and backoff), "; ".join(notes)
    finally:
        typist.kill()
        typist.wait()
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
        kill_pids(alive_pids(sorted(tree)))
