"""The capture daemon on a real X server (Xvfb + openbox) with real xterm and xclock windows."""

from __future__ import annotations

import json
import shutil
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import cv2
import numpy as np
import pytest

from bench.xdesktop import Desktop, missing_tools
from conftest import require_x, unavailable
from perception.capture.config import CaptureConfig
from perception.capture.control import request
from perception.capture.daemon import Capturer
from perception.capture.storage import CaptureStore

pytestmark = pytest.mark.slow


@contextmanager
def running(capturer: Capturer, join_s: float = 10.0):
    """``capturer`` run on a thread; yields it once it has ticked (or paused), stops it after."""
    thread = threading.Thread(target=capturer.run)
    thread.start()
    try:
        _until(lambda: capturer.counters.ticks > 0 or capturer.state == "paused")
        yield capturer
    finally:
        capturer.stop()
        thread.join(timeout=join_s)


def quick_config(out: Path, **cfg) -> CaptureConfig:
    """The tests' capture config: a grab every 0.5 s, never idle, then ``cfg``."""
    return CaptureConfig(out=str(out), **{"interval_s": 0.5, "idle_after_s": 3600.0, **cfg})


@contextmanager
def capturing(desktop: Desktop, out: Path, budget_bytes: int = 0, **cfg):
    """A capturer on a thread; yields it while it runs."""
    store = CaptureStore(out, budget_bytes=budget_bytes)
    with running(
        Capturer(quick_config(out, **cfg), store, display_name=desktop.display)
    ) as capturer:
        yield capturer


def _until(cond, timeout: float = 10.0) -> None:
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


def _settled(count, quiet_s: float = 1.5, timeout: float = 10.0) -> int:
    """``count()`` once it has not changed for ``quiet_s`` (the daemon's frames of what just happened)."""
    deadline = time.time() + timeout
    last, since = count(), time.time()
    while time.time() - since < quiet_s:
        if time.time() > deadline:
            raise AssertionError("the count did not settle in time")
        time.sleep(0.1)
        if (now := count()) != last:
            last, since = now, time.time()
    return last


def sidecars(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(out.rglob("*.jpg.json"))]


def images(out: Path) -> list[Path]:
    return sorted(out.rglob("*.jpg"))


def test_sidecars_follow_focus_and_titles(desktop, tmp_path):
    a = desktop.xterm("naïve café, Latin-1", cls="AppAlpha", geometry="60x20+50+50", latin1=True)
    b = desktop.xterm("日本語のメモ ✓", cls="AppBeta", geometry="60x20+900+300")
    out = tmp_path / "out"
    with capturing(desktop, out) as cap:
        desktop.focus(a)
        _until(lambda: any(s["app"] == "AppAlpha" for s in sidecars(out)))
        desktop.focus(b)
        _until(lambda: any(s["app"] == "AppBeta" for s in sidecars(out)))
        desktop.run(["xdotool", "set_window", "--name", "renamed ✎ window", b])
        _until(lambda: any(s["window"] == "renamed ✎ window" for s in sidecars(out)))
    by_app = {}
    for s in sidecars(out):
        by_app.setdefault(s["app"], set()).add(s["window"])
    assert by_app["AppAlpha"] == {"naïve café, Latin-1"}  # WM_NAME as STRING
    assert by_app["AppBeta"] >= {
        "日本語のメモ ✓",
        "renamed ✎ window",
    }  # COMPOUND_TEXT, then _NET_WM_NAME
    first = sidecars(out)[0]
    assert set(first) >= {"captured_at", "app", "window", "monitor", "reason", "pid", "input"}
    assert first["captured_at"].endswith("+00:00") and first["monitor"] == 1
    assert cap.counters.written == len(images(out))


def region(out: Path, box: tuple[int, int, int, int]) -> np.ndarray:
    """The newest stored image's pixels inside box (x, y, w, h), as grey levels."""
    img = cv2.imread(str(images(out)[-1]), cv2.IMREAD_GRAYSCALE)
    assert img is not None
    x, y, w, h = box
    return img[y : y + h, x : x + w]


def excluded_then_kept(cap, desktop, out: Path, work, text: str) -> None:
    """With an excluded window focused, frames are excluded (three at least) and none is stored;
    then, ``work`` focused and ``text`` typed there, one is (X11 and sway alike)."""
    _until(lambda: cap.counters.excluded >= 3)
    assert images(out) == [], "a frame was stored while the excluded window had focus"
    desktop.focus(work)
    desktop.type(text)
    _until(lambda: len(images(out)) >= 1)
    time.sleep(1.0)


@pytest.mark.parametrize("rule", ["class", "title", "private"])
def test_excluded_window_never_stored_and_blacked_out(desktop, tmp_path, rule):
    title = {
        "class": "bank statement",
        "title": "Salary review 2026",
        "private": "Mozilla Firefox Private Browsing",
    }[rule]
    secret = desktop.xterm(
        title, cls="SecretApp" if rule == "class" else "XTerm", geometry="60x15+60+60"
    )
    work = desktop.xterm("work notes", cls="WorkApp", geometry="60x15+1000+500")
    desktop.focus(secret)
    desktop.type("top secret 12345")
    out = tmp_path / "out"
    cfg = {
        "exclude_classes": ["SecretApp"] if rule == "class" else [],
        "exclude_titles": ["^salary review"] if rule == "title" else [],
    }
    with capturing(desktop, out, **cfg) as cap:
        excluded_then_kept(cap, desktop, out, work, "hello")
    assert all(s["app"] != "SecretApp" and s["window"] != title for s in sidecars(out))
    x, y, w, h = desktop.geometry(secret)
    inner = region(out, (x + 4, y + 4, w - 8, h - 8))
    assert inner.max() <= 12, "the excluded window's pixels are visible in the stored image"
    wx, wy, ww, wh = desktop.geometry(work)
    assert region(out, (wx, wy, ww, wh)).mean() > 100, (
        "the focused window should be stored as it is"
    )


def test_static_screen_with_ticking_clock_writes_almost_nothing_but_typing_is_kept(
    desktop, tmp_path
):
    term = desktop.xterm("editor", geometry="80x24+100+100")
    desktop.xclock()
    desktop.focus(term)
    out = tmp_path / "out"
    with capturing(desktop, out) as cap:
        static_then_typed(cap, desktop.type)


def static_then_typed(cap, type_text, settle_timeout: float = 10.0) -> None:
    """Eight seconds of a static screen (but for a clock) write at most one frame, then each of
    five words typed 1.2 s apart is kept (X11 and sway alike)."""
    # the window was focused a moment ago, and a change that soon after input is kept as its effect:
    # the static stretch starts when that window has passed
    _until(lambda: time.time() - cap.last_input > cap.cfg.input_settle_s, timeout=settle_timeout)
    written_before, ticks_before = cap.counters.written, cap.counters.ticks
    time.sleep(8)  # a static screen but for the clock's second hand
    static_written = cap.counters.written - written_before
    static_ticks = cap.counters.ticks - ticks_before
    typed_before = cap.counters.reasons.get("input", 0)
    for word in ["alpha", "bravo", "charlie", "delta", "echo"]:
        type_text(word + " ")
        time.sleep(1.2)
    typed = cap.counters.reasons.get("input", 0) - typed_before
    assert static_ticks >= 12
    assert static_written <= 1, f"{static_written} frames written of {static_ticks} static ticks"
    assert typed >= 5, f"only {typed} of 5 typed words kept"


@pytest.mark.serial  # times the grab against the typing: tests beside it slow the daemon's ticks
@pytest.mark.parametrize("pause_grab_s", [0.5, 0.0])
def test_a_burst_of_typing_is_grabbed_when_it_pauses_not_at_the_next_tick(
    desktop, tmp_path, pause_grab_s
) -> None:
    term = desktop.xterm("notes", geometry="80x24+100+100")
    desktop.focus(term)
    with capturing(desktop, tmp_path / "out", interval_s=10.0, pause_grab_s=pause_grab_s) as cap:
        after = typed_until_grabbed(cap, desktop.type)
    if pause_grab_s:
        assert after < 2.0, f"the typed word was grabbed {after:.1f} s after the typing"
    else:
        assert after > 3.0, f"grabbed {after:.1f} s after typing, before the next tick"


def typed_until_grabbed(cap, type_text) -> float:
    """Grabs 10 s apart: a word typed 5.5 s after a grab; the seconds until a frame is written.
    With ``pause_grab_s``, about that long after the typing stops (on sway, whose idle time comes in
    whole seconds, about 1 s), not 4.5 s later at the next tick (X11 and sway alike)."""
    written: list[float] = []
    cap.on_frame = lambda image, side: written.append(time.time())
    ticks = cap.counters.ticks
    _until(lambda: cap.counters.ticks > ticks, timeout=15)  # a grab well after the focus change
    time.sleep(5.5)
    type_text("kiwi")
    typed = time.time()
    _until(lambda: any(t > typed for t in written), timeout=10)
    return min(t for t in written if t > typed) - typed


def test_what_input_causes_a_moment_later_is_kept(desktop, tmp_path) -> None:
    """A command's output drawn after the last key (here 1.5 s after Enter, with no input since) is
    the input's effect, not a static screen's noise: it is kept, though it changes little."""
    term = desktop.xterm("shell", geometry="80x24+100+100")
    desktop.focus(term)
    written: list[tuple[float, str, bool]] = []  # (when, reason, input)
    with capturing(desktop, tmp_path / "out") as cap:
        cap.on_frame = lambda image, side: written.append(
            (time.time(), side["reason"], side["input"])
        )
        time.sleep(1.5)
        desktop.type("sleep 1.5; echo done\n")
        typed = time.time()
        time.sleep(4)
    late = [(round(t - typed, 1), why, at_keys) for t, why, at_keys in written if t >= typed + 1.4]
    assert late, (
        f"the output drawn 1.5 s after Enter was not kept; frames (s after typing): "
        f"{[(round(t - typed, 1), why) for t, why, _ in written]}"
    )
    assert all(at_keys for _, _, at_keys in late), late  # the owner's doing: the sidecar says so


def test_screen_saver_pauses_and_input_resumes(desktop, tmp_path):
    term = desktop.xterm("term")
    desktop.focus(term)
    with capturing(desktop, tmp_path / "out") as cap:
        desktop.run(["xset", "s", "activate"])
        _until(lambda: cap.state == "paused" and "screen saver" in cap.why)
        ticks = cap.counters.ticks
        time.sleep(1.5)
        assert cap.counters.ticks == ticks, "grabbed while the screen saver was on"
        desktop.run(["xdotool", "mousemove", "500", "500"])
        _until(lambda: cap.state == "capturing")
        _until(lambda: cap.counters.ticks > ticks)


def test_pause_resume_status_over_the_socket(desktop, tmp_path):
    term = desktop.xterm("term")
    desktop.focus(term)
    sock = tmp_path / "run" / "mnemo" / "capture.sock"
    from perception.capture.control import ControlServer

    with capturing(desktop, tmp_path / "out") as cap:
        server = ControlServer(cap.handle, sock)
        try:
            assert request({"cmd": "status"}, sock)["state"] == "capturing"
            reply = request({"cmd": "pause", "for_s": 60}, sock)
            assert reply["paused_until"] is not None
            _until(lambda: request({"cmd": "status"}, sock)["state"] == "paused")
            assert "paused by the user" in request({"cmd": "status"}, sock)["why"]
            request({"cmd": "resume"}, sock)
            _until(lambda: request({"cmd": "status"}, sock)["state"] == "capturing")
            assert "error" in request({"cmd": "explode"}, sock)
        finally:
            server.close()
    assert not sock.exists()


def test_byte_budget_never_exceeded_by_more_than_one_frame(desktop, tmp_path):
    term = desktop.xterm("term", geometry="120x40+0+0")
    desktop.focus(term)
    out = tmp_path / "out"
    budget = 400_000
    sizes = []
    with capturing(desktop, out, budget_bytes=budget) as cap:
        for i in range(12):
            desktop.type(f"line {i} of text that fills the budget quickly\n", delay_ms=5)
            sizes.append(
                sum(
                    p.stat().st_size
                    for p in out.rglob("*")
                    if p.is_file() and "heartbeat" not in p.name
                )
            )
            time.sleep(0.6)
        deleted = cap.store.deleted
    largest = max(p.stat().st_size for p in images(out)) + 400
    assert deleted > 0, "the budget was never reached; the test would prove nothing"
    assert max(sizes) <= budget + largest, sizes


def test_lost_x_connection_ends_the_daemon_with_an_error(tmp_path):
    from perception.capture.x11 import XConnectionLost

    require_x()
    d = Desktop(tmp_path)
    term = d.xterm("term")
    d.focus(term)
    c = CaptureConfig(out=str(tmp_path / "out"), interval_s=0.3, idle_after_s=3600.0)
    capturer = Capturer(c, CaptureStore(tmp_path / "out"), display_name=d.display)
    errors = []

    def run():
        try:
            capturer.run()
        except XConnectionLost as e:
            errors.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    _until(lambda: capturer.counters.ticks > 1)
    d.close()  # the X server goes away
    thread.join(timeout=20)
    assert not thread.is_alive() and errors, "the daemon should stop with XConnectionLost"


def test_an_exclusion_added_over_the_socket_holds_from_the_next_frame_and_can_be_taken_out(
    desktop, tmp_path
):
    secret = desktop.xterm("Quarterly payroll", cls="XTerm", geometry="60x15+60+60")
    desktop.focus(secret)
    sock = tmp_path / "run" / "mnemo" / "capture.sock"
    out = tmp_path / "out"
    from perception.capture.control import ControlServer

    with capturing(desktop, out) as cap:
        server = ControlServer(cap.handle, sock)
        try:
            desktop.type("before ")
            _until(lambda: len(images(out)) >= 1)
            listing = request({"cmd": "exclude", "title": "payroll"}, sock)
            assert listing["titles"] == ["payroll"] and "keepassxc" in listing["builtin_classes"]
            excluded, stored = cap.counters.excluded, len(images(out))
            desktop.type("secret salaries ")
            _until(lambda: cap.counters.excluded >= excluded + 3)
            assert len(images(out)) == stored, "a frame was stored after its window was excluded"
            assert "error" in request({"cmd": "include", "title": "not there"}, sock)
            assert "error" in request({"cmd": "exclude"}, sock)
            assert request({"cmd": "include", "title": "payroll"}, sock)["titles"] == []
            desktop.type("after ")
            _until(lambda: len(images(out)) > stored)
        finally:
            server.close()


def test_a_locked_screen_stores_nothing(desktop, tmp_path):
    """A real locker (i3lock, Debian's): while it is up the daemon pauses, saying why, and stores no frame."""
    if shutil.which("i3lock") is None:
        unavailable("no i3lock: apt-get install i3lock (make xtools does it as root)")
    term = desktop.xterm("notes")
    desktop.focus(term)
    out = tmp_path / "out"
    with capturing(desktop, out) as cap:
        desktop.type("before the lock ")
        _until(lambda: len(images(out)) >= 1)
        stored = _settled(lambda: len(images(out)))  # the typing's last frames are in
        locker = desktop.spawn(["i3lock", "-n", "-c", "000000"])
        try:
            _until(lambda: cap.state == "paused" and "locked" in cap.why)
            ticks = cap.counters.ticks
            desktop.run(["xdotool", "mousemove", "300", "300"])  # activity under the lock
            time.sleep(2.5)
            assert len(images(out)) == stored, "a frame was stored while the screen was locked"
            assert cap.counters.ticks == ticks, "grabbed while the screen was locked"
        finally:
            locker.kill()
            locker.wait()
        _until(lambda: cap.state == "capturing")


def test_a_lock_that_comes_up_during_the_grab_stores_nothing(desktop, tmp_path):
    """The race CI once lost: the daemon looks for a locker, i3lock maps its window, then the grab
    reads the locker's pixels. Here i3lock is started inside the grab and the grab waits until its
    black covers the screen; the frame chosen from it must not be written."""
    if shutil.which("i3lock") is None:
        unavailable("no i3lock: apt-get install i3lock (make xtools does it as root)")
    term = desktop.xterm("notes")
    desktop.focus(term)
    out = tmp_path / "out"
    lockers: list = []
    with capturing(desktop, out) as cap:
        desktop.type("before the lock ")
        _until(lambda: len(images(out)) >= 1)
        stored = _settled(lambda: len(images(out)))
        real_grab = cap.x.grab

        def grab_as_the_lock_comes_up(index, rect):
            if not lockers:
                lockers.append(desktop.spawn(["i3lock", "-n", "-c", "000000"]))
                _until(lambda: not real_grab(index, rect)[:, :, :3].any())  # all black: i3lock's
            return real_grab(index, rect)

        cap.x.grab = grab_as_the_lock_comes_up
        try:
            _until(lambda: cap.state == "paused" and "locked" in cap.why)
            time.sleep(1.0)
            assert lockers, "the daemon never grabbed"
            assert len(images(out)) == stored, "the locker's pixels were stored"
        finally:
            for locker in lockers:
                locker.kill()
                locker.wait()
        _until(lambda: cap.state == "capturing")


def test_a_chromium_started_incognito_is_never_stored(desktop, tmp_path):
    """Chromium's incognito window has no mark in its title or X properties; its process's command
    line says it. Real Debian chromium under Xvfb: focused, nothing of its monitor is stored."""
    if shutil.which("chromium") is None:
        unavailable("no chromium: apt-get install chromium (make xtools does it as root)")
    desktop.spawn(
        [
            "chromium",
            "--incognito",
            "--no-sandbox",
            "--no-first-run",
            "--disable-gpu",
            f"--user-data-dir={tmp_path / 'profile'}",
            "data:text/html,<h1>Secret account 4242</h1>",
        ]
    )
    wid = desktop.wait_window("Chromium")
    desktop.focus(wid)
    out = tmp_path / "out"
    with capturing(desktop, out) as cap:
        _until(lambda: cap.counters.excluded >= 3, timeout=30)
        assert images(out) == [], "a frame was stored while the incognito window had focus"


@contextmanager
def small_disk(path: Path, size: str = "8m"):
    """A tmpfs of ``size`` mounted at ``path`` (root only), to be filled for real."""
    import subprocess

    path.mkdir(parents=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if done.returncode:
        unavailable(f"cannot mount a small tmpfs to fill (needs root): {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _fill(path: Path) -> None:
    with open(path, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass


def test_a_full_disk_pauses_capture_and_freed_space_resumes_it(desktop, tmp_path):
    term = desktop.xterm("filling the disk", geometry="100x30+0+0")
    desktop.focus(term)
    words = iter(f"word{i} " for i in range(10_000))

    def type_until(cond, timeout: float) -> bool:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if cond():
                return True
            desktop.type(next(words))
            time.sleep(0.3)
        return cond()

    with (
        small_disk(tmp_path / "disk", "32m") as disk,
        capturing(desktop, disk / "out", min_free_mb=0) as cap,
    ):
        assert type_until(lambda: cap.counters.written >= 1, 20)
        _fill(disk / "filler")
        assert type_until(lambda: cap.state == "paused" and "is full" in cap.why, 20), (
            cap.state,
            cap.why,
        )
        frames = list((disk / "out").rglob("*.jpg"))
        assert not [p for p in (disk / "out").rglob("*") if p.name.endswith(".tmp")], (
            "temp files left"
        )
        assert all(p.with_name(p.name + ".json").is_file() for p in frames), (
            "an image without its sidecar"
        )
        written = cap.counters.written
        (disk / "filler").unlink()
        assert type_until(lambda: cap.counters.written > written, 30), "capture did not resume"
        assert cap.state == "capturing"


def test_a_monitor_plugged_in_and_out_is_picked_up(tmp_path):
    from bench.xdesktop import missing_dummy_server

    if why := missing_tools() or missing_dummy_server():
        unavailable(why)
    desktop = Desktop(tmp_path, monitors=True)  # Xorg's dummy driver: Xvfb cannot add a monitor
    out = tmp_path / "out"
    try:
        desktop.focus(desktop.xterm("one screen", geometry="80x24+50+50"))
        with capturing(desktop, out) as cap:
            assert len(cap.monitors) == 1
            desktop.plug("DUMMY1", "800x600")
            _until(lambda: len(cap.monitors) == 2, timeout=20)
            _until(lambda: list(out.rglob("*_m2.jpg")), timeout=20)  # the new monitor's first frame
            frame = cv2.imread(str(next(out.rglob("*_m2.jpg"))))
            assert frame.shape[:2] == (600, 800)
            desktop.unplug("DUMMY1")
            _until(lambda: len(cap.monitors) == 1, timeout=20)
            ticks = cap.counters.ticks
            _until(lambda: cap.counters.ticks > ticks + 2)  # and capture goes on with one
            assert cap.counters.layout_changes == 2 and cap.state == "capturing"
    finally:
        desktop.close()


def _fuzz_payloads(rng, n: int) -> list[bytes]:
    """Requests as a careless or hostile client sends them: random bytes, broken and truncated
    JSON, JSON of every shape, known commands with arguments of every type, huge lines."""
    import math

    cmds = [
        "status",
        "pause",
        "resume",
        "exclusions",
        "exclude",
        "include",
        "STATUS",
        "",
        "reboot",
        None,
        7,
    ]
    values = [
        None,
        True,
        0,
        -1,
        1e308,
        -1e308,
        math.nan,
        math.inf,
        3.5,
        "",
        "x" * 5000,
        "(",
        "[a-",
        "^Bank$",
        [],
        [1, "a"],
        {},
        {"cmd": ["stop"]},
        "\u202e\u0000",
        2**70,
    ]  # never a real stop

    def value():
        return values[rng.integers(len(values))]

    out = []
    for i in range(n):
        kind = i % 6
        if kind == 0:
            out.append(bytes(rng.integers(0, 256, rng.integers(0, 300), dtype=np.uint8)) + b"\n")
        elif kind == 1:
            msg = {
                "cmd": cmds[rng.integers(len(cmds))],
                "for_s": value(),
                "class": value(),
                "title": value(),
            }
            out.append(
                json.dumps(
                    {k: v for k, v in msg.items() if rng.random() < 0.7}, allow_nan=True
                ).encode()
                + b"\n"
            )
        elif kind == 2:
            text = json.dumps(
                {"cmd": cmds[rng.integers(len(cmds))], "for_s": value()}, allow_nan=True
            )
            out.append(text[: rng.integers(0, len(text) + 1)].encode() + b"\n")
        elif kind == 3:
            out.append(json.dumps(value(), allow_nan=True).encode() + b"\n")
        elif kind == 4:
            depth = int(rng.integers(1, 5000))
            out.append(
                b"[" * depth + b"]" * depth + b"\n" if rng.random() < 0.5 else b"{" * depth + b"\n"
            )  # deep
        else:
            out.append(
                b'{"cmd": "status", "pad": "' + b"A" * int(rng.integers(60_000, 200_000)) + b'"}\n'
            )
    return out


def test_the_control_socket_survives_thousands_of_random_and_malformed_requests(desktop, tmp_path):
    from perception.capture.control import ControlServer, send

    desktop.focus(desktop.xterm("term"))
    sock = tmp_path / "run" / "mnemo" / "capture.sock"
    rng = np.random.default_rng(29)
    with capturing(desktop, tmp_path / "out") as cap:
        server = ControlServer(cap.handle, sock)
        try:
            for payload in _fuzz_payloads(rng, 3000):
                try:
                    reply = send(payload, sock, timeout_s=10)
                except (ConnectionResetError, BrokenPipeError):
                    continue  # a line over 64 KiB: the server answers before reading it all
                assert isinstance(reply, dict) and reply, payload[:200]
            for bad in (
                float("nan"),
                float("inf"),
                -5,
                0,
                "60",
                1e12,
            ):  # a pause that could never end, or no pause
                assert "for_s" in request({"cmd": "pause", "for_s": bad}, sock)["error"]
            assert request({"cmd": "resume"}, sock)["state"] in ("capturing", "paused")
            _until(lambda: request({"cmd": "status"}, sock)["state"] == "capturing")
            ticks = cap.counters.ticks
            _until(lambda: cap.counters.ticks > ticks)  # the daemon still captures
        finally:
            server.close()
