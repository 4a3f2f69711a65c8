"""Fault scenarios: processes killed and folders that are the user's.

- ``killed_watcher``: the capture daemon (``mnemo capture --ingest`` on a real X display, Xvfb) runs
  its watcher under ``mnemo.supervise``. The watcher is SIGKILLed while frames arrive: it must come
  back and ingest the frames written while it was dead; then the daemon is SIGKILLed: no process of
  its tree may stay.
- ``killed_ray_worker``: ``mnemo ingest --ray`` against a local Ray (one ``ray start`` for all
  tries, 127.0.0.1 only) of a real call (pyannote's sample.wav, two 15 s clips); a perception worker
  is SIGKILLed from outside mid-ingest. The ingest must finish with every clip stored once and the
  store equal to a sequential ingest; once this run's Ray processes are stopped as ``ray stop`` does
  (SIGTERM, SIGKILL after 16 s; never ``ray stop`` itself, which ends every Ray of the user's) none
  may be left. Not run without the ``[ray]`` extra.
- ``capture_foreign_folder``: ``mnemo capture --out`` on a folder of the user's refuses and changes
  nothing; in a marked capture folder, the recovery the daemon runs at start deletes only its own
  leftovers, never the user's files beside them.
- ``forget_users_folder``: a folder of the user's photos is ingested, then ``mnemo forget --yes``
  over all, part or none of their time: the clips' memories go, every file of the folder stays.

Every mnemo here runs as a real process. ``prelude`` (Python run in that process before mnemo's
``main``) is the seam the tests use to break a guard inside it; the bench passes none.
"""

from __future__ import annotations

import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import psutil

from mnemo.faults import Context, Tally, needs

log = logging.getLogger(__name__)

# ------------------------------------------------------------------------------------------------
# running mnemo as a process


def _mnemo_cmd(argv: list[str], prelude: str = "") -> list[str]:
    """The command that runs ``mnemo argv`` in a new Python, ``prelude`` first (a test's broken guard)."""
    if not prelude:
        return [sys.executable, "-m", "mnemo", *argv]
    return [
        sys.executable,
        "-c",
        f"{prelude}\nimport sys\nfrom mnemo.cli import main\nsys.exit(main({argv!r}))",
    ]


def _env(**extra: str) -> dict[str, str]:
    """This process's environment for a mnemo child: offline, the fast text embedder, no display
    unless given one (and ``extra``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    env.update({"HF_HUB_OFFLINE": "1", "MNEMO_GRAPH__TEXT_EMBEDDER": "hash"})
    if "MNEMO_CACHE" in os.environ:
        env["MNEMO_CACHE"] = os.environ["MNEMO_CACHE"]
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    env.update(extra)
    return env


def _snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under ``root`` (root included): sha-256 of its bytes, mtime and mode."""
    import hashlib

    def one(p: Path) -> tuple:
        st = p.lstat()
        digest = (
            hashlib.sha256(p.read_bytes()).hexdigest()
            if p.is_file() and not p.is_symlink()
            else None
        )
        return digest, st.st_mtime_ns, st.st_mode

    return {".": one(root), **{str(p.relative_to(root)): one(p) for p in sorted(root.rglob("*"))}}


def _changed(before: dict[str, tuple], after: dict[str, tuple]) -> tuple[list[str], list[str]]:
    """(entries of ``before`` deleted or changed in bytes, mtime or mode; entries added)."""
    lost = [k for k, v in before.items() if after.get(k) != v]
    return lost, [k for k in after if k not in before]


def _photo(k: int, size: int) -> bytes:
    """A real photo as JPEG bytes, no EXIF: quarter ``k`` (0-3) of insightface's group photo (the
    one the demo uses, fetched and checked by ``bench.fixtures``), scaled to ``size``."""
    import cv2

    from bench.fixtures import group_photo

    image = cv2.imread(str(group_photo()))
    if image is None:
        raise RuntimeError(
            f"{group_photo()}: cannot read the group photo; fetch the bench fixtures again"
        )
    h, w = image.shape[:2]
    part = image[(k // 2) * h // 2 : (k // 2 + 1) * h // 2, (k % 2) * w // 2 : (k % 2 + 1) * w // 2]
    ok, buf = cv2.imencode(".jpg", cv2.resize(part, (size, size)))
    if not ok:
        raise RuntimeError(
            f"cannot encode part {k} of the group photo as JPEG (cv2.imencode failed)"
        )
    return buf.tobytes()


def _user_file(path: Path, content: bytes, mtime: float, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    os.chmod(path, mode)
    os.utime(path, (mtime, mtime))


OLD = datetime(2019, 6, 1, 12, 0, tzinfo=UTC).timestamp()  # when the user's files were last touched


def _alive(pids: list[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out


def _wait_gone(pids: list[int], timeout_s: float) -> list[int]:
    """Those of ``pids`` still running after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while (left := _alive(pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _kill(pids: list[int]) -> None:
    _signal(pids, signal.SIGKILL)


def _missing_in_ci(why: str) -> str:
    return why + (
        " (CI=true: a tool the bench needs is missing)" if os.environ.get("CI") == "true" else ""
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
        tally.run(ok=False, note=_missing_in_ci(f"no X display to capture: {why}"))
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
    env = _env(
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
            _mnemo_cmd(
                [
                    "capture",
                    "--out",
                    str(out),
                    "--interval",
                    "1s",
                    "--ingest",
                    "--store",
                    str(store_dir),
                    "--duration",
                    "600s",
                ],
                prelude,
            ),
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
            return [k for k in kids if "watch" in _cmdline(k)]

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
        left = _wait_gone(sorted(tree), orphan_wait_s)
        lingering = [_describe(pid) for pid in left]  # before the SIGKILL below ends them
        _kill(left)
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
        _kill(_alive(sorted(tree)))


def _cmdline(p: psutil.Process) -> list[str]:
    """``p``'s command line, or none once it has exited: a killed watcher is a zombie until the
    daemon reaps it, and psutil refuses a zombie's command line."""
    try:
        return p.cmdline()
    except psutil.NoSuchProcess:  # ZombieProcess too
        return []


def _describe(pid: int) -> str:
    try:
        p = psutil.Process(pid)
        with p.oneshot():
            return (
                f"pid {pid} ({' '.join(p.cmdline())[:80]}; {p.status()}, {p.num_threads()} thread(s), "
                f"{sum(p.cpu_times()[:2]):.1f} s of CPU)"
            )
    except psutil.NoSuchProcess:
        return f"pid {pid} (gone)"


# ------------------------------------------------------------------------------------------------
# killed_ray_worker


RAY_CLIP_S = 15.0


@needs("ray")
def killed_ray_worker(ctx: Context, tally: Tally, *, prelude: str = "", seed: int = 42) -> None:
    from bench.fixtures import cache_dir, pyannote_sample
    from embeddings.base import build_text_embedder
    from graph.compare import differences
    from graph.store import Store

    ray_bin = Path(sys.executable).parent / "ray"
    if not ray_bin.exists():  # the ray package is there (faults.run checks the extra)
        tally.run(
            ok=False,
            note=_missing_in_ci(
                f"no `ray` command beside {sys.executable}: pip install 'mnemo[ray]'"
            ),
        )
        return
    recording = (
        pyannote_sample() / "sample.wav"
    )  # a real 30 s call, two clips of RAY_CLIP_S: audio only, cheap
    token = (
        uuid.uuid4().hex
    )  # every process of this Ray carries it in its environment: how orphans are found
    ray_tmp = Path(
        tempfile.mkdtemp(prefix="mf", dir="/tmp")
    )  # Ray's socket paths must stay under 108 bytes
    # Ray keeps a node on 127.0.0.1 only with its single-machine switch off (ray_jobs.ingest.loopback_only);
    # a HOME of its own keeps another Ray's ~/.ray out
    env = {k: v for k, v in _env().items() if not k.startswith("RAY_")}  # not another Ray's address
    env |= {
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_TMPDIR": str(ray_tmp),
        "HOME": str(ray_tmp),
        "MNEMO_CACHE": str(cache_dir()),
        "MNEMO_FAULTS_RUN": token,
        "MNEMO_PERCEPTION__CLIP_S": f"{RAY_CLIP_S:g}",
    }
    sequential = ctx.workdir / "sequential"
    run = subprocess.run(
        _mnemo_cmd(["ingest", str(recording), "--store", str(sequential)]),
        env=env,
        cwd=ctx.workdir,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if run.returncode != 0:
        raise RuntimeError(f"the sequential ingest of {recording} failed: {run.stderr[-800:]}")
    results: list[dict] = []
    port = _free_port()
    try:
        t0 = time.monotonic()
        head = subprocess.run(
            [
                str(ray_bin),
                "start",
                "--head",
                "--node-ip-address=127.0.0.1",
                f"--port={port}",
                "--num-cpus=2",
                "--include-dashboard=false",
                "--disable-usage-stats",
            ],
            env=env,
            cwd=ctx.workdir,
            capture_output=True,
            text=True,
            timeout=180,
        )
        if head.returncode != 0:
            raise RuntimeError(f"`ray start --head` failed: {head.stderr[-800:]}")
        ctx.progress(
            f"faults: killed_ray_worker: Ray up on 127.0.0.1:{port} in {time.monotonic() - t0:.0f} s"
        )
        rng = random.Random(seed)
        for i in range(ctx.runs):
            results.append(
                _ray_try(
                    ctx.workdir / f"try{i}",
                    recording,
                    f"127.0.0.1:{port}",
                    env,
                    prelude,
                    rng.uniform(0.5, 3.0),
                    token,
                    ctx.progress,
                )
            )
            store = Store(ctx.workdir / f"try{i}" / "store", build_text_embedder("hash"))
            seq = Store(sequential, build_text_embedder("hash"))
            rows = store.clips.search().select(["clip_id"]).limit(None).to_list()
            ids = [r["clip_id"] for r in rows]
            expected = {
                r["clip_id"] for r in seq.clips.search().select(["clip_id"]).limit(None).to_list()
            }
            r = results[-1]
            r["lost"] = len(expected - set(ids))
            r["doubles"] = len(ids) - len(set(ids))
            r["diff"] = differences(store, seq) if not r["lost"] and not r["doubles"] else []
    finally:
        # this run's Ray only: `ray stop` ends every Ray process of the user's (another cluster, or
        # another bench's), found by name
        _signal(_carrying(token), signal.SIGTERM)
        _kill(
            _wait_gone(_carrying(token), 16.0)
        )  # as `ray stop` does: SIGKILL after a grace period
        left = _wait_gone(_carrying(token), 15.0)
        _kill(left)
        shutil.rmtree(ray_tmp, ignore_errors=True)
    for i, r in enumerate(results):
        orphans = len(left) if i == len(results) - 1 else 0
        notes = [r["note"]] if r["note"] else []
        if r["lost"]:
            notes.append(f"{r['lost']} clip(s) of the sequential store missing")
        if r["doubles"]:
            notes.append(f"{r['doubles']} clip(s) stored twice")
        if r["diff"]:
            notes.append(f"the store differs from a sequential ingest: {r['diff'][:3]}")
        if orphans:
            notes.append(
                f"{orphans} Ray process(es) still running after SIGTERM and SIGKILL: "
                + ", ".join(_describe(p) for p in left[:4])
            )
        tally.run(
            lost=r["lost"],
            orphans=orphans + r["doubles"],
            ok=r["ok"] and not r["diff"],
            note="; ".join(notes),
        )


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _carrying(token: str) -> list[int]:
    """The processes whose environment holds this run's token (all of its Ray's)."""
    out = []
    for p in psutil.process_iter(["pid"]):
        try:
            if p.environ().get("MNEMO_FAULTS_RUN") == token and p.pid != os.getpid():
                out.append(p.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return out


def _perception_workers(token: str) -> list[psutil.Process]:
    """This run's Ray perception actors: Ray names their processes after the actor class
    (``ray::MapWorker(MapBatches(Perceive))``)."""
    out = []
    for pid in _carrying(token):
        try:
            p = psutil.Process(pid)
            if "Perceive" in " ".join(p.cmdline()):
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


def _ray_try(
    folder: Path,
    recording: Path,
    address: str,
    env: dict,
    prelude: str,
    kill_after_s: float,
    token: str,
    progress: Callable[[str], None],
) -> dict:
    folder.mkdir(parents=True)
    cmd = _mnemo_cmd(
        [
            "ingest",
            str(recording),
            "--store",
            str(folder / "store"),
            "--ray",
            "--address",
            address,
            "--workers",
            "1",
        ],
        prelude,
    )
    with open(folder / "ingest.log", "w") as log_file:
        ingest = subprocess.Popen(
            cmd, env=env, cwd=folder, stdout=log_file, stderr=subprocess.STDOUT
        )
    killed = None
    try:
        deadline = time.monotonic() + 180
        seen_at = None
        while ingest.poll() is None and time.monotonic() < deadline:
            workers = _perception_workers(token)
            if workers and seen_at is None:
                seen_at = time.monotonic()
            if seen_at is not None and time.monotonic() - seen_at >= kill_after_s:
                killed = workers[0]
                killed.send_signal(signal.SIGKILL)
                progress(
                    f"faults: killed_ray_worker: SIGKILLed perception worker pid {killed.pid} "
                    f"{kill_after_s:.1f} s after it started"
                )
                break
            time.sleep(0.1)
        code = ingest.wait(timeout=600)
    finally:
        if ingest.poll() is None:
            ingest.kill()
            ingest.wait()
    text = (folder / "ingest.log").read_text(errors="replace")
    if killed is None:
        return {
            "ok": False,
            "note": f"no perception worker was running to kill (ingest exit {code}): {text[-400:]}",
        }
    if code != 0:
        return {
            "ok": False,
            "note": f"the ingest failed after its worker was killed (exit {code}): {text[-400:]}",
        }
    return {"ok": True, "note": ""}


# ------------------------------------------------------------------------------------------------
# capture_foreign_folder


def _users_tree(root: Path) -> None:
    """A user's folder as people have them: photos in nested folders, build leftovers, an encrypted
    draft, an image without a sidecar, a private file (mode 600)."""
    _user_file(root / "Pictures" / "2019" / "wedding.jpg", _photo(0, 96), OLD)
    _user_file(root / "Pictures" / "2019" / "summer" / "beach.jpg", _photo(1, 64), OLD)
    _user_file(root / "projects" / "build.tmp", b"half a build", OLD)
    _user_file(root / "projects" / "draft.enc", b"my encrypted draft", OLD, mode=0o600)
    _user_file(root / "scan.jpg", _photo(2, 64), OLD)


def capture_foreign_folder(ctx: Context, tally: Tally, *, prelude: str = "") -> None:
    from perception.capture.owned import frame_name, temp_name
    from perception.capture.storage import CaptureStore, hold_folder

    for i in range(ctx.runs):
        # 1. a folder of the user's, no marker: refused, and nothing in it touched
        mine = ctx.workdir / f"try{i}" / "home"
        _users_tree(mine)
        os.chmod(mine, 0o755)
        before = _snapshot(mine)
        run = subprocess.run(
            _mnemo_cmd(["capture", "--out", str(mine), "--duration", "1s"], prelude),
            env=_env(XDG_RUNTIME_DIR=str(ctx.workdir)),
            cwd=ctx.workdir,
            capture_output=True,
            text=True,
            timeout=120,
        )
        lost, added = _changed(before, _snapshot(mine))
        refused = run.returncode != 0 and "not empty" in run.stderr and "--out" in run.stderr
        notes = []
        if not refused:
            notes.append(
                f"capture into a folder of the user's was not refused with a message (exit "
                f"{run.returncode}): {(run.stderr or run.stdout)[-300:]}"
            )
        if lost or added:
            notes.append(
                f"capture changed the user's folder: {len(lost)} entries changed or deleted "
                f"{lost[:4]}, {len(added)} added {added[:4]}"
            )

        # 2. a marked capture folder with the user's files beside the daemon's: the start's recovery
        # (hold the folder, then CaptureStore.recover, as `mnemo capture` does) drops only its own leftovers
        root = ctx.workdir / f"try{i}" / "screens"
        store = CaptureStore(root)
        store.recover()
        t = datetime(2026, 1, 5, 10, 15, tzinfo=UTC)
        for k in range(3):
            store.write(
                _photo(2, 48 + 4 * k),
                {"app": "xterm", "window": f"w{k}", "reason": "input"},
                datetime.fromtimestamp(t.timestamp() + 20 * k, UTC),
                1,
            )
        day = next(root.rglob("*.jpg")).parent
        _users_tree(root)
        for name, content in {
            "holiday.jpg": _photo(0, 64),
            ".notes.txt.tmp": b"an editor's temp file",
            "scan.jpg.enc": b"user's own",
            "20260105T101500Z_m1.jpg": _photo(2, 40),
            "heartbeat.jsonl.bak": b"{}\n",
        }.items():
            _user_file(day / name, content, OLD)  # in a day folder, close to the daemon's names
        users = {k: v for k, v in _snapshot(root).items() if k != "." and not _daemons(root, k)}
        leftovers = [day / frame_name(datetime.fromtimestamp(t.timestamp() + 300, UTC), 1, False)]
        leftovers[0].write_bytes(
            _photo(2, 32)
        )  # killed between the image's rename and its sidecar's
        leftovers += [
            day / temp_name(leftovers[0].name),
            day / temp_name(leftovers[0].name + ".json"),
        ]
        for p in leftovers[1:]:
            p.write_bytes(b"half")
        fd = hold_folder(root)
        try:
            counts = CaptureStore(root).recover()
        finally:
            os.close(fd)
        after = _snapshot(root)
        touched = [k for k, v in users.items() if after.get(k) != v]
        stayed = [str(p.relative_to(root)) for p in leftovers if p.exists()]
        if touched:
            notes.append(
                f"the daemon's recovery changed or deleted {len(touched)} file(s) of the user's: {touched[:4]}"
            )
        if stayed or counts.get("frames") != 3:
            notes.append(
                f"recovery left its own leftovers {stayed} or lost its frames (counted {counts})"
            )
        tally.run(
            lost=len(lost) + len(touched),
            orphans=len(added) + len(stayed),
            ok=refused,
            note="; ".join(notes),
        )


def _daemons(root: Path, rel: str) -> bool:
    from perception.capture.owned import kind

    return kind(root, root / rel) is not None or (root / rel).is_dir()


# ------------------------------------------------------------------------------------------------
# forget_users_folder

PHOTOS = [
    ("IMG_20260105_101500.jpg", 0),
    ("IMG_20260105_101510.jpg", 2),
    ("IMG_20260106_083000.jpg", 1),
    ("IMG_20260110_120000.jpg", 3),
]


def forget_users_folder(ctx: Context, tally: Tally, *, prelude: str = "") -> None:
    from embeddings.base import build_text_embedder
    from graph import sql
    from graph.store import Store

    photos = ctx.workdir / "photos"
    for name, photo_index in PHOTOS:
        _user_file(photos / name, _photo(photo_index, 96), OLD)
    _user_file(
        photos / "IMG_20260105_101500.jpg.json", b'{"note": "my own"}', OLD
    )  # the user's, not a sidecar
    _user_file(photos / "album.json", b'{"title": "January"}', OLD, mode=0o600)
    _user_file(photos / "trip" / "IMG_20260106_090000.jpg", _photo(0, 64), OLD)
    os.chmod(photos, 0o750)
    before = _snapshot(photos)
    built = ctx.workdir / "built"
    # the models a photo clip needs least stay off: what is under test is forget, not perception
    env = _env(
        MNEMO_PERCEPTION__FACES_BACKEND="dlib",
        MNEMO_PERCEPTION__IMAGE_BACKEND="none",
        MNEMO_PERCEPTION__OCR_BACKEND="none",
    )
    run = subprocess.run(
        _mnemo_cmd(["ingest", str(photos), "--store", str(built)]),
        env=env,
        cwd=ctx.workdir,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if run.returncode != 0:
        raise RuntimeError(f"`mnemo ingest {photos}` failed: {run.stderr[-800:]}")
    clips = sorted(
        (r["start_ts"], r["end_ts"], r["clip_id"])
        for r in Store(built, build_text_embedder("hash")).clips.search().limit(None).to_list()
    )
    if len(clips) < 3:
        raise RuntimeError(
            f"the photos made {len(clips)} clip(s), expected one per time window (3 or more)"
        )
    kinds = ["all", "part", "none"]
    for i in range(ctx.runs):
        which = kinds[i % 3]
        store_dir = ctx.workdir / f"try{i}"
        shutil.copytree(built, store_dir)
        if which == "all":
            start, end, gone = clips[0][0] - 60, clips[-1][1] + 60, clips
        elif which == "part":  # the first clips up to halfway to the next one
            k = 1 + i % (len(clips) - 1)
            start, end, gone = clips[0][0] - 60, (clips[k - 1][1] + clips[k][0]) / 2, clips[:k]
        else:
            start, end, gone = clips[0][0] - 86400, clips[0][0] - 3600, []
        window = ["--from", _iso(start), "--to", _iso(end), "--store", str(store_dir)]
        preview = subprocess.run(
            _mnemo_cmd(["forget", *window], prelude),
            env=env,
            cwd=ctx.workdir,
            capture_output=True,
            text=True,
            timeout=300,
        )
        notes = []
        says_kept = (
            (
                f"{photos} is yours and stays as it is" in preview.stdout
                and "would delete 0 file(s)" in preview.stdout
            )
            if gone
            else "nothing matches" in preview.stdout
        )
        if preview.returncode != 0 or not says_kept:
            notes.append(
                f"the preview ({which}) did not say it deletes no file of {photos}: {preview.stdout[-300:]}"
            )
        done = subprocess.run(
            _mnemo_cmd(["forget", *window, "--yes"], prelude),
            env=env,
            cwd=ctx.workdir,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            notes.append(
                f"`mnemo forget --yes` failed (exit {done.returncode}): {done.stderr[-300:]}"
            )
        lost, added = _changed(before, _snapshot(photos))
        if lost or added:
            notes.append(
                f"forget ({which}) changed the user's folder: {lost[:4]} changed or deleted, {added[:4]} added"
            )
        store = Store(store_dir, build_text_embedder("hash"))
        gone_ids = [c for _, _, c in gone]
        kept_ids = [c for _, _, c in clips if c not in gone_ids]
        left = (
            (
                store.clips.count_rows(sql.in_list("clip_id", gone_ids))
                + store.memories.count_rows(sql.in_list("clip_id", gone_ids))
            )
            if gone_ids
            else 0
        )
        stored = {
            r["clip_id"] for r in store.clips.search().select(["clip_id"]).limit(None).to_list()
        }
        wrongly = [c for c in kept_ids if c not in stored]
        if left:
            notes.append(
                f"{left} clip row(s) and memories of the {len(gone_ids)} forgotten clip(s) still stored"
            )
        if wrongly:
            notes.append(f"{len(wrongly)} clip(s) outside the range were forgotten too")
        ok = not notes
        tally.run(
            lost=len(lost) + len(wrongly), orphans=left + len(added), ok=ok, note="; ".join(notes)
        )
        ctx.progress(
            f"faults: forget_users_folder: forgot {len(gone_ids)} of {len(clips)} clip(s) ({which})"
        )


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


SCENARIOS = {
    "killed_watcher": killed_watcher,
    "killed_ray_worker": killed_ray_worker,
    "capture_foreign_folder": capture_foreign_folder,
    "forget_users_folder": forget_users_folder,
}
