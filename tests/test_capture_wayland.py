"""The capture daemon on a real Wayland desktop: headless sway (software rendering) run as a user
of its own, with Wayland-native foot windows, wtype's typing and swaylock; mnemo reads it as root
through sway's IPC socket, grim and swayidle. The same scenarios as on X11 (tests/test_capture.py)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import cv2
import psutil
import pytest
from test_capture import (
    _settled,
    _until,
    excluded_then_kept,
    images,
    quick_config,
    region,
    running,
    sidecars,
    static_then_typed,
    typed_until_grabbed,
)
from test_capture_cli import ask_once_ingested, inside_one_clip

from bench.waydesktop import Sway
from conftest import unavailable
from mnemo.capture_cli import WATCHER_NICE
from perception.capture.daemon import Capturer
from perception.capture.session import open_desktop
from perception.capture.storage import CaptureStore

pytestmark = pytest.mark.slow


@contextmanager
def capturing(sway: Sway, out: Path, env: dict | None = None, **cfg):
    """A capturer of the sway session on a thread; yields it while it runs."""
    desktop = open_desktop(env=env or sway.env)
    with running(Capturer(quick_config(out, **cfg), CaptureStore(out), desktop=desktop), 15) as c:
        yield c


def test_sidecars_follow_focus_and_titles(sway, tmp_path):
    a = sway.foot("notes — café ✓", "app.alpha")
    b = sway.foot(
        "about to be renamed",
        "app.beta",
        ["sh", "-c", "sleep 4; printf '\\033]2;renamed ✎ window\\007'; sleep 600"],
    )
    out = tmp_path / "out"
    with capturing(sway, out):
        sway.focus(a)
        _until(lambda: any(s["app"] == "app.alpha" for s in sidecars(out)))
        sway.focus(b)
        _until(lambda: any(s["window"] == "renamed ✎ window" for s in sidecars(out)), timeout=15)
    by_app: dict[str, set] = {}
    for s in sidecars(out):
        by_app.setdefault(s["app"], set()).add(s["window"])
    assert by_app["app.alpha"] == {"notes — café ✓"}
    assert "renamed ✎ window" in by_app["app.beta"]
    first = sidecars(out)[0]
    assert first["monitor"] == 1 and first["pid"] and first["captured_at"].endswith("+00:00")


@pytest.mark.parametrize("rule", ["app_id", "title", "floating"])
def test_excluded_window_never_stored_and_blacked_out(sway, tmp_path, rule):
    """Focused, an excluded window keeps its whole output out of the store; visible but not
    focused, it is black in what is stored, its title bar too, and the rest is kept as it is."""
    secret = sway.foot(
        "Salary review 2026" if rule == "title" else "bank statement",
        "bank.app" if rule != "title" else "notes.app",
    )
    work = sway.foot("work notes", "work.app")
    if rule == "floating":  # above the tiled work window, which shows around it
        sway.floating(secret, 100, 100, 700, 400)
    sway.focus(secret)
    sway.type("top secret 12345")
    out = tmp_path / "out"
    cfg = {
        "exclude_classes": ["bank.app"] if rule != "title" else [],
        "exclude_titles": ["^salary review"] if rule == "title" else [],
    }
    with capturing(sway, out, **cfg) as cap:
        excluded_then_kept(cap, sway, out, work, "hello world")
    assert all(s["app"] != "bank.app" and "Salary" not in s["window"] for s in sidecars(out))
    x, y, w, h = sway.rect(secret)
    assert region(out, (x, y - 20, w, h + 20)).max() <= 12, (
        "the excluded window's pixels (or its title bar) are visible in the stored image"
    )
    wx, wy, ww, wh = sway.rect(work)
    assert region(out, (wx, wy, min(ww, 400), 40)).max() > 100, "the work window's text is gone"


def test_an_xwayland_window_is_excluded_by_its_x11_class(sway, tmp_path):
    """An X11 program under sway (xterm through XWayland) is one more window of the tree, known
    by its WM_CLASS: excluded by class, nothing of it is stored."""
    if shutil.which("xterm") is None or shutil.which("Xwayland") is None:
        unavailable("no xterm or Xwayland: apt-get install xterm xwayland (make xtools does it)")
    sway.msg("exec", "xterm -class SecretX -T 'x11 secrets'")
    secret = int(sway.wait_view("SecretX", timeout_s=30)["id"])
    sway.focus(secret)
    out = tmp_path / "out"
    with capturing(sway, out, exclude_classes=["SecretX"]) as cap:
        _until(lambda: cap.counters.excluded >= 3)
        focused = cap.x.focused()
        assert focused is not None and (focused.app, focused.title) == ("SecretX", "x11 secrets")
        assert images(out) == []


def test_static_screen_with_a_clock_writes_almost_nothing_but_typing_is_kept(sway, tmp_path):
    notes = sway.foot("editor", "editor.app")
    sway.clock()
    sway.focus(notes)
    out = tmp_path / "out"
    with capturing(sway, out) as cap:
        static_then_typed(cap, sway.type, settle_timeout=20)


@pytest.mark.serial  # times the grab against the typing: tests beside it slow the daemon's ticks
def test_a_burst_of_typing_is_grabbed_when_it_pauses_not_at_the_next_tick(sway, tmp_path):
    sway.foot("notes", "Notes")
    with capturing(sway, tmp_path / "out", interval_s=10.0) as cap:
        after = typed_until_grabbed(cap, sway.type)
    assert after < 3.0, f"the typed word was grabbed {after:.1f} s after the typing"


def test_idle_time_comes_from_the_compositor(sway, tmp_path):
    sway.focus(sway.foot("notes", "notes.app"))
    with capturing(sway, tmp_path / "out") as cap:
        time.sleep(3.5)
        assert cap.x.idle_s() >= 2.5
        sway.type("x")
        _until(lambda: cap.x.idle_s() < 1.0, timeout=5)


def test_a_locked_screen_stores_nothing(sway, tmp_path):
    """swaylock on ext-session-lock: no window in the tree, so its process tells; while it is up
    nothing is grabbed, typing included."""
    notes = sway.foot("notes", "notes.app")
    sway.focus(notes)
    out = tmp_path / "out"
    with capturing(sway, out) as cap:
        sway.type("before the lock ")
        _until(lambda: len(images(out)) >= 1)
        stored = _settled(lambda: len(images(out)))
        sway.lock()
        _until(lambda: cap.state == "paused" and "locked" in cap.why)
        ticks = cap.counters.ticks
        sway.type("typed at the lock")
        time.sleep(2.5)
        assert len(images(out)) == stored, "a frame was stored while the screen was locked"
        assert cap.counters.ticks == ticks, "grabbed while the screen was locked"


def test_an_output_added_is_picked_up_and_one_gone_mid_grab_is_dropped(sway, tmp_path, caplog):
    """sway 1.7's headless outputs can be created but not unplugged (``output … disable`` and
    ``dpms off`` are accepted and change nothing), so the one gone is a name grim no longer finds,
    as when a monitor is unplugged between the layout's read and the grab."""
    sway.focus(sway.foot("one screen", "notes.app"))
    out = tmp_path / "out"
    with capturing(sway, out) as cap, caplog.at_level("WARNING"):
        assert len(cap.monitors) == 1
        name = sway.add_output()
        sway.output(name, "resolution", "800x600", "position", "1920", "0")
        _until(lambda: len(cap.monitors) == 2, timeout=20)
        _until(lambda: list(out.rglob("*_m2.jpg")), timeout=20)
        frame = cv2.imread(str(next(out.rglob("*_m2.jpg"))))
        assert frame.shape[:2] == (600, 800)
        cap.x._names[1] = "HEADLESS-99"  # unplugged since the layout was read
        _until(lambda: "grim could not grab output HEADLESS-99" in caplog.text, timeout=10)
        ticks = cap.counters.ticks
        _until(lambda: cap.state == "capturing" and cap.counters.ticks > ticks + 2)
    assert not list(out.rglob("*.tmp"))


def test_an_ipc_socket_that_goes_away_drops_frames_and_capture_resumes(sway, tmp_path):
    sway.focus(sway.foot("notes", "notes.app"))
    out = tmp_path / "out"
    sock = Path(sway.env["SWAYSOCK"])
    moved = sock.with_name("moved-away")
    with capturing(sway, out) as cap:
        _until(lambda: len(images(out)) >= 1)
        stored = _settled(lambda: len(images(out)))
        sock.rename(moved)
        cap.x.ipc.close()  # the connection sway would drop going away
        _until(lambda: cap.state == "paused" and "cannot be read" in cap.why)
        sway.type("nobody checked this window")
        time.sleep(2)
        assert len(images(out)) == stored, "a frame was stored while the windows were unknown"
        moved.rename(sock)
        _until(lambda: cap.state == "capturing", timeout=10)
        sway.type(" back")
        _until(lambda: len(images(out)) > stored)


def test_a_compositor_without_screencopy_drops_frames_with_one_line(sway, tmp_path, caplog):
    """weston has no wlr-screencopy: grim fails on it, the grab is dropped and said once."""
    if shutil.which("weston") is None:
        unavailable("no weston: apt-get install weston (make xtools does it as root)")
    weston = sway.spawn(["weston", "--backend=headless-backend.so", "--socket=weston-0"])
    _until(lambda: (Path(sway.env["XDG_RUNTIME_DIR"]) / "weston-0").exists(), timeout=20)
    sway.focus(sway.foot("notes", "notes.app"))
    out = tmp_path / "out"
    try:
        with (
            caplog.at_level("WARNING"),
            capturing(sway, out, env={**sway.env, "WAYLAND_DISPLAY": "weston-0"}) as cap,
        ):
            _until(lambda: cap.state == "paused" and "grim could not grab" in cap.why)
            time.sleep(3)
            assert images(out) == []
    finally:
        weston.terminate()
    said = [r.getMessage() for r in caplog.records if "grim could not grab" in r.getMessage()]
    assert len(said) == 1, said


def test_typed_text_is_answered_while_capture_runs_on_sway(sway, tmp_path):
    """``mnemo capture --ingest`` as a user runs it in a sway session: what is typed into a foot
    window is answered by ``mnemo ask`` while capture goes on."""
    notes = sway.foot("notes", "notes.app", font_pt=14)
    sway.focus(notes)
    out, store = tmp_path / "out", tmp_path / "store"
    env = {**sway.client_env(), "HF_HUB_OFFLINE": "1"}
    cap = subprocess.Popen(
        [sys.executable, "-m", "mnemo", "capture", "--out", str(out), "--interval", "1s"]
        + ["--ingest", "--store", str(store), "--duration", "150s"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )

    def niced() -> None:
        watchers = [
            p for p in psutil.Process(cap.pid).children(recursive=True) if "watch" in p.cmdline()
        ]
        assert watchers and all(p.nice() == WATCHER_NICE for p in watchers), watchers

    answer, lines = None, []
    try:
        time.sleep(3)
        inside_one_clip()
        sway.type("echo the parking spot is level 3 bay 42\n", delay_ms=30)
        answer, lines = ask_once_ingested(cap, store, env, on_ingest=niced)
    finally:
        cap.send_signal(signal.SIGTERM)
        cap.wait(timeout=180)
    assert answer is not None, f"no clip was ingested: {''.join(lines)}"
    assert "level 3 bay 42" in answer["answer"], answer
    assert any(str(out) in c["source"] for c in answer["citations"])
    assert all(s["app"] == "notes.app" for s in sidecars(out))


def test_doctor_sees_the_sway_session(sway):
    from mnemo import doctor

    check = doctor.display_check(sway.client_env())
    assert check.status == "ok" and "sway" in check.detail, check
