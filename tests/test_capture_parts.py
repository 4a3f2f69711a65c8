"""The capture daemon's parts without an X server: tile dedup, blackout, storage, encryption, titles."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta

import cv2
import numpy as np
import pytest
from skimage import data

from perception.capture.ctext import decode_compound_text
from perception.capture.privacy import Exclusions, blackout
from perception.capture.storage import CaptureStore
from perception.capture.tiles import TileTracker
from perception.capture.x11 import Rect, WindowInfo
from perception.errors import MediaError
from perception.sources.frames import read_image
from perception.sources.screenshots import plan_screen_clips


def _screen() -> np.ndarray:
    """A 1080p grey screen with a real page of text (scikit-image's page.png) in it."""
    screen = np.full((1080, 1920), 235, np.uint8)
    page = data.page()
    screen[100 : 100 + page.shape[0], 200 : 200 + page.shape[1]] = page
    return screen


def test_a_twenty_character_edit_is_a_change_that_whole_frame_measures_miss():
    before = _screen()
    after = before.copy()
    cv2.putText(after, "meeting moved to 3pm", (900, 700), cv2.FONT_HERSHEY_PLAIN, 1.0, 0, 1)
    mean_diff = float(np.abs(after.astype(int) - before.astype(int)).mean())
    assert mean_diff < 0.1  # what a mean-difference / similarity dedup sees: "unchanged"
    tracker = TileTracker()
    tracker.observe(before, had_input=True)
    tracker.kept(before)
    assert tracker.observe(before, had_input=False).changed == 0
    change = tracker.observe(after, had_input=True)
    assert change.changed >= 5 and change.fraction < 0.01


def test_tiles_that_change_without_input_become_volatile_and_stop_counting():
    tracker = TileTracker(volatile_window=8, volatile_hits=3)
    frame = _screen()
    tracker.observe(frame, had_input=False)
    tracker.kept(frame)
    for second in range(4):  # a clock in the corner ticks while nobody types
        frame = frame.copy()
        frame[10:40, 1800:1900] = 40 * second
        change = tracker.observe(frame, had_input=False)
    assert change.changed == 0 and change.volatile_changed > 0
    typed = frame.copy()
    cv2.putText(typed, "hello", (900, 700), cv2.FONT_HERSHEY_PLAIN, 1.0, 0, 1)
    assert tracker.observe(typed, had_input=True).changed > 0


def _win(wid, rect, app="App", title="t"):
    return WindowInfo(wid, app, app.lower(), title, None, rect)


def test_blackout_paints_the_excluded_window_but_not_what_covers_it():
    frame = np.full((100, 200, 4), 200, np.uint8)
    monitor = Rect(0, 0, 200, 100)
    stack = [_win(1, Rect(10, 10, 100, 60), "KeePassXC"), _win(2, Rect(80, 40, 100, 50), "Editor")]
    painted = blackout(frame, monitor, stack, [1])
    assert painted == 1
    assert frame[20, 20, :3].max() == 0  # the password manager
    assert frame[50, 90, :3].min() == 200  # the editor on top of it
    assert frame[95, 5, :3].min() == 200  # the desktop


def test_exclusion_rules():
    ex = Exclusions(classes=("Slack",), titles=(r"^bank",))
    assert ex.why(_win(1, None, "slack"))
    assert ex.why(_win(1, None, "Firefox", "Bank statement - Firefox"))
    assert ex.why(_win(1, None, "firefox", "Mozilla Firefox Private Browsing"))
    assert ex.why(_win(1, None, "KeePassXC", "Passwords"))
    assert ex.why(_win(1, None, "Code", "notes.md - Code")) is None
    with pytest.raises(ValueError, match="not a valid regular expression"):
        Exclusions(titles=("(",))


def test_compound_text_titles():
    assert (
        decode_compound_text(b"\x1b$(BF|K\\8l$N%a%b\x1b(B \x1b%G\xe2\x9c\x93\x1b%@")
        == "日本語のメモ ✓"
    )
    assert decode_compound_text(b"na\xefve caf\xe9") == "naïve café"
    assert decode_compound_text(b"\x1b-L\xbf\xe0\xd8\xd2\xd5\xe2") == "Привет"


def _jpeg(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    ok, buf = cv2.imencode(".jpg", rng.integers(0, 255, (120, 160, 3), dtype=np.uint8))
    return buf.tobytes()


def test_store_budget_recovery_and_age(tmp_path):
    store = CaptureStore(tmp_path / "screens", budget_bytes=60_000)
    store.recover()
    t = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
    for i in range(12):
        store.write(
            _jpeg(i),
            {"app": "a", "window": "w", "reason": "input"},
            t + timedelta(seconds=2 * i),
            1,
        )
        on_disk = sum(p.stat().st_size for p in store.root.rglob("*") if p.is_file())
        assert on_disk <= store.budget_bytes
    assert store.deleted > 0
    day = next(store.root.rglob("*.jpg")).parent
    assert (
        oct(day.stat().st_mode & 0o777) == "0o700"
        and oct(store.root.stat().st_mode & 0o777) == "0o700"
    )
    assert all(oct(p.stat().st_mode & 0o777) == "0o600" for p in day.iterdir())
    side = json.loads(sorted(day.glob("*.json"))[-1].read_text())
    assert side["captured_at"] == "2026-11-20T09:00:22.000+00:00" and side["monitor"] == 1

    (day / ".20261120T090040.000Z_m1.jpg.tmp").write_bytes(b"half")  # what a kill mid-write leaves
    (day / "20261120T090100.000Z_m1.jpg").write_bytes(_jpeg(99))  # killed before the sidecar
    again = CaptureStore(tmp_path / "screens", max_age_days=1)
    assert again.recover() == {"temps": 1, "orphans": 1, "frames": len(list(day.glob("*.jpg")))}
    assert again.expire(now=(t + timedelta(days=2)).timestamp()) > 0
    assert not list(day.glob("*.jpg")) and not list(day.glob("*.json"))


def test_encrypted_screenshots_are_read_back_by_ingest(tmp_path, monkeypatch):
    from cryptography.fernet import Fernet

    from perception.capture.crypto import load_cipher

    monkeypatch.setenv("MNEMO_CAPTURE_KEY", Fernet.generate_key().decode())
    store = CaptureStore(tmp_path / "screens", cipher=load_cipher())
    store.recover()
    written = store.write(
        _jpeg(1),
        {"app": "Firefox", "window": "Salary review 2026", "reason": "start"},
        datetime.now(UTC),
        1,
    )
    store.heartbeat({"app": "Firefox", "window": "Salary review 2026", "reason": "static"})
    assert written.image.name.endswith(".jpg.enc")
    assert not written.image.read_bytes().startswith(b"\xff\xd8")  # not a JPEG on disk
    on_disk = [p for p in (tmp_path / "screens").rglob("*") if p.is_file()]
    assert (
        len(on_disk) == 4
    )  # the folder's marker, image, sidecar, heartbeat log: none shows the title
    assert not [p for p in on_disk if b"Salary" in p.read_bytes() or b"Firefox" in p.read_bytes()]
    assert read_image(written.image).shape == (120, 160, 3)
    (clip,) = plan_screen_clips(written.image.parent)
    assert (clip.shots[0].app, clip.shots[0].window) == ("Firefox", "Salary review 2026")
    monkeypatch.setenv("MNEMO_CAPTURE_KEY", Fernet.generate_key().decode())
    with pytest.raises(MediaError, match="does not decrypt with this key"):
        read_image(written.image)
    monkeypatch.delenv("MNEMO_CAPTURE_KEY")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "nokey"))
    with pytest.raises(MediaError, match="mnemo capture keygen"):
        read_image(written.image)


def test_one_configured_key_file_serves_capture_and_ingest(tmp_path, monkeypatch):
    """[capture] key_file reaches every reader: `mnemo` puts it in MNEMO_CAPTURE__KEY_FILE."""
    from perception.capture.crypto import KEY_FILE_ENV, generate_key, load_cipher

    monkeypatch.delenv("MNEMO_CAPTURE_KEY", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "nokey"))
    key = generate_key(tmp_path / "keys" / "mine.key")
    monkeypatch.setenv(KEY_FILE_ENV, str(key))
    store = CaptureStore(tmp_path / "screens", cipher=load_cipher())
    written = store.write(_jpeg(2), {"app": "a", "window": "w"}, datetime.now(UTC), 1)
    assert read_image(written.image).shape == (120, 160, 3)
    assert plan_screen_clips(written.image.parent)[0].shots[0].window == "w"
    monkeypatch.delenv(KEY_FILE_ENV)
    with pytest.raises(MediaError, match="mnemo capture keygen"):
        read_image(written.image)


def test_the_control_socket_answers_bad_requests_and_keeps_serving(tmp_path):
    """A JSON array, a string, broken JSON or a request whose handling fails gets an error reply;
    the socket keeps answering, so a second daemon on the same folder is still refused."""
    from perception.capture.control import ControlServer, request, send

    def handle(req: dict) -> dict:
        if req.get("cmd") == "boom":
            raise KeyError("boom")
        return {"state": "capturing"}

    path = tmp_path / "run" / "capture.sock"
    server = ControlServer(handle, path)
    try:
        for payload in (b"[1]\n", b'"status"\n', b"{not json\n", b"null\n"):
            assert "bad request" in send(payload, path)["error"], payload
        assert "KeyError" in request({"cmd": "boom"}, path)["error"]
        assert request({"cmd": "status"}, path) == {"state": "capturing"}
        with pytest.raises(RuntimeError, match="already listens"):
            ControlServer(handle, path)
    finally:
        server.close()
    path.touch()  # a socket file left by a daemon that died: the next one takes its place
    ControlServer(handle, path).close()


def test_exclusions_change_while_the_built_in_ones_stay():
    from perception.capture.privacy import Exclusions
    from perception.capture.x11 import WindowInfo

    ex = Exclusions(("SecretApp",), ())
    more = ex.changed(True, title="^Bank")
    window = WindowInfo(1, "Firefox", "firefox", "Bank of Mars - statement", 1, None)
    assert ex.why(window) is None and more.why(window) == "title /^Bank/"
    fewer = more.changed(False, cls="SecretApp")
    assert fewer.classes == () and fewer.titles == ("^Bank",)
    assert (
        fewer.why(WindowInfo(2, "KeePassXC", "keepassxc", "db", 1, None)) == "class keepassxc"
    )  # built in
    with pytest.raises(ValueError, match="not an exclusion added by you"):
        fewer.changed(False, cls="keepassxc")
    with pytest.raises(ValueError, match="valid regular expression"):
        fewer.changed(True, title="([")


def test_one_daemon_a_capture_folder(tmp_path):
    """A second daemon on the folder (another socket, another user session) is refused, saying who
    holds it; once the first ends, the folder is free."""
    from perception.capture.storage import CaptureFolderBusy, hold_folder

    fd = hold_folder(tmp_path / "out")
    with pytest.raises(CaptureFolderBusy, match=f"pid {os.getpid()}"):
        hold_folder(tmp_path / "out")
    os.close(fd)
    os.close(hold_folder(tmp_path / "out"))


def _node(kind: str, id: int, **kw) -> dict:
    base = {"id": id, "type": kind, "nodes": [], "floating_nodes": [], "focused": False}
    base["rect"] = kw.pop("rect", {"x": 0, "y": 0, "width": 1920, "height": 1080})
    return base | kw


def _view(id: int, app: str | None, title: str, rect, floating=False, **kw) -> dict:
    """A view as sway 1.7's get_tree gives it (a 27 px title bar above ``rect``)."""
    x, y, w, h = rect
    return _node(
        "floating_con" if floating else "con",
        id,
        name=title,
        app_id=app,
        pid=1000 + id,
        visible=kw.pop("visible", True),
        shell="xdg_shell" if app else "xwayland",
        rect={"x": x, "y": y, "width": w, "height": h},
        deco_rect={"x": 0, "y": 0, "width": w, "height": 27},
        fullscreen_mode=kw.pop("fullscreen_mode", 0),
        **kw,
    )


def _sway_tree() -> dict:
    split = _node(
        "con",
        10,
        layout="splitv",
        nodes=[
            _view(11, "notes.app", "notes", (0, 27, 960, 513)),
            _view(
                12,
                None,
                "xterm",
                (0, 567, 960, 513),
                window_properties={"class": "XTerm", "instance": "xterm", "title": "xterm"},
                focused=True,
            ),
        ],
    )
    ws = _node(
        "workspace",
        3,
        name="1",
        nodes=[split, _view(13, "bank.app", "bank", (960, 27, 960, 1053))],
        floating_nodes=[_view(14, "popup.app", "popup", (600, 300, 400, 300), floating=True)],
    )
    hidden_ws = _node(
        "workspace", 4, name="2", nodes=[_view(15, "mail", "m", (0, 27, 9, 9), visible=False)]
    )
    scratch = _node(
        "output",
        1,
        name="__i3",
        nodes=[
            _node(
                "workspace",
                2,
                name="__i3_scratch",
                floating_nodes=[_view(16, "secret", "s", (0, 0, 9, 9), floating=True)],
            )
        ],
    )
    return _node(
        "root",
        0,
        name="root",
        nodes=[scratch, _node("output", 5, name="HEADLESS-1", nodes=[ws, hidden_ws])],
    )


def test_the_sway_tree_gives_windows_bottom_to_top_with_title_bars_and_xwayland_classes():
    from perception.capture.wayland import parse_tree

    windows, focused = parse_tree(_sway_tree())
    assert [w.wid for w in windows] == [11, 12, 13, 15, 14]  # tiled, then floating on top
    assert focused is not None and (focused.app, focused.instance) == ("XTerm", "xterm")
    assert windows[0].rect == Rect(0, 0, 960, 540)  # the title bar is part of the window
    assert next(w for w in windows if w.wid == 15).rect is None  # another workspace: not shown
    assert 16 not in [w.wid for w in windows]  # the scratchpad is never shown
    full = _sway_tree()
    full["nodes"][1]["nodes"][0]["nodes"][1]["fullscreen_mode"] = 1
    assert [w.wid for w in parse_tree(full)[0]][-1] == 13  # a fullscreen view is above all


@pytest.mark.parametrize(
    "tree",
    [
        None,
        [],
        "root",
        {"type": "root", "nodes": [{"nodes": [{"nodes": [{"type": "con", "app_id": "a"}]}]}]},
        {"type": "root", "nodes": 5},
    ],
)
def test_a_sway_tree_that_cannot_be_parsed_is_unreadable(tree):
    from perception.capture.wayland import parse_tree
    from perception.capture.windows import Unreadable

    with pytest.raises(Unreadable, match="could not be parsed"):
        parse_tree(tree)


def test_sway_outputs_only_active_ones_and_garbage_is_unreadable():
    from perception.capture.wayland import parse_outputs
    from perception.capture.windows import Unreadable

    reply = [
        {
            "name": "eDP-1",
            "active": True,
            "dpms": True,
            "rect": {"x": 0, "y": 0, "width": 1280, "height": 800},
        },
        {"name": "HDMI-A-1", "active": False, "rect": {"x": 0, "y": 0, "width": 0, "height": 0}},
        {
            "name": "DP-2",
            "active": True,
            "power": False,
            "rect": {"x": 1280, "y": 0, "width": 1920, "height": 1080},
        },
    ]
    assert parse_outputs(reply) == [
        ("eDP-1", Rect(0, 0, 1280, 800), True),
        ("DP-2", Rect(1280, 0, 1920, 1080), False),
    ]
    with pytest.raises(Unreadable):
        parse_outputs([{"name": "x", "active": True}])


@pytest.mark.parametrize(
    "env, says",
    [
        ({"WAYLAND_DISPLAY": "wayland-0", "XDG_CURRENT_DESKTOP": "GNOME"}, "desktop portal"),
        ({"XDG_SESSION_TYPE": "wayland", "XDG_CURRENT_DESKTOP": "KDE"}, "desktop portal"),
        ({"WAYLAND_DISPLAY": "wayland-1", "HYPRLAND_INSTANCE_SIGNATURE": "abc"}, "Hyprland"),
        ({"WAYLAND_DISPLAY": "wayland-1", "XDG_CURRENT_DESKTOP": "river"}, "without sway's IPC"),
    ],
)
def test_wayland_sessions_other_than_sway_are_refused_saying_why(env, says):
    from perception.capture.session import open_desktop
    from perception.capture.windows import Unsupported

    with pytest.raises(Unsupported) as e:
        open_desktop(env=env)
    assert says in str(e.value) and "X11 sessions and sway" in str(e.value)
    assert "X11 session" in str(e.value)


def test_a_sway_socket_that_answers_garbage_is_unreadable(tmp_path):
    """A socket at SWAYSOCK that is no sway (or a broken one): refused, never trusted."""
    import socket
    import struct
    import threading

    from perception.capture.wayland import GET_TREE, SwayIPC
    from perception.capture.windows import Unreadable

    path = tmp_path / "sway-ipc.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()
    replies = [
        b"HTTP/1.1 200 OK\r\n\r\n",
        b"i3-ipc" + struct.pack("<II", 5, GET_TREE) + b"{oops",
        b"i3-ipc" + struct.pack("<II", 1 << 30, GET_TREE),
    ]

    def serve():
        for reply in replies:
            conn, _ = server.accept()
            conn.recv(64)
            conn.sendall(reply)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    ipc = SwayIPC(path, timeout_s=2)
    for says in ("no i3-ipc message", "could not be parsed", "refused"):
        with pytest.raises(Unreadable, match=says):
            ipc.request(GET_TREE)
        ipc.close()
    server.close()
    path.unlink()
    with pytest.raises(Unreadable, match="cannot be read"):
        SwayIPC(path).request(GET_TREE)


def _ogg(seconds: float = 30.0) -> bytes:
    from perception.capture.audio import encode_opus

    t = np.arange(int(16000 * seconds)) / 16000
    return encode_opus((0.2 * np.sin(2 * np.pi * 300 * t)).astype(np.float32))


def test_sound_shares_the_budget_the_recovery_and_its_own_age(tmp_path):
    """A slot's sound is the daemon's file as a frame is: within the byte budget (the oldest of
    either goes first), cleared of crash leftovers on start, deleted after ``keep_audio_days`` while
    the frames of the same time stay, and only the daemon's names are ever touched."""
    from perception.capture.owned import kind

    ogg = _ogg()
    store = CaptureStore(tmp_path / "screens", budget_bytes=len(ogg) * 3)
    store.recover()
    t = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
    for i in range(5):
        store.write_audio(ogg, {"stream": "out"}, t + timedelta(seconds=30 * i), "out")
        store.write(_jpeg(i), {"app": "a"}, t + timedelta(seconds=30 * i + 2), 1)
        on_disk = sum(p.stat().st_size for p in store.root.rglob("*") if p.is_file())
        assert on_disk <= store.budget_bytes
    day = next(store.root.rglob("*.ogg")).parent
    sounds = sorted(p.name for p in day.glob("*.ogg"))
    assert sounds and sounds[0] > "20261120T090000.000Z_aout.ogg"  # the oldest went first
    assert kind(store.root, day / sounds[0]) == "audio"
    side = json.loads((day / (sounds[-1] + ".json")).read_text())
    assert side == {"captured_at": "2026-11-20T09:02:00.000+00:00", "stream": "out"}

    (day / ".20261120T090300.000Z_amic.ogg.tmp").write_bytes(b"half")
    (day / "20261120T090300.000Z_amic.ogg").write_bytes(ogg)  # killed before its sidecar
    (day / "notes.ogg").write_bytes(b"the user's")  # not a name the daemon writes
    again = CaptureStore(tmp_path / "screens", keep_audio_days=1)
    found = again.recover()
    assert found["temps"] == 1 and found["orphans"] == 1
    frames = sorted(p.name for p in day.glob("*.jpg"))
    assert again.expire(now=(t + timedelta(days=2)).timestamp()) == len(sounds)
    assert not list(day.glob("*Z_a*")), "sound past keep_audio_days stayed"
    assert sorted(p.name for p in day.glob("*.jpg")) == frames  # frames keep to max_age_days
    assert (day / "notes.ogg").read_bytes() == b"the user's"


def test_forgetting_a_clip_deletes_its_sound(tmp_path):
    """``forget`` deletes the sound of the slots a forgotten clip covers, with their sidecars,
    and nothing of the slots beside it."""
    from mnemo.forget_with_media import forget_screenshots, screenshots_to_delete

    store = CaptureStore(tmp_path / "screens")
    store.recover()
    t = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
    for i in range(3):
        store.write_audio(_ogg(1.0), {"stream": "mic"}, t + timedelta(seconds=30 * i), "mic")
    day = next(store.root.rglob("*.ogg")).parent
    clip = {"source_path": str(day), "start_ts": t.timestamp() + 30, "end_ts": t.timestamp() + 60}
    doomed = sorted(p.name for p in screenshots_to_delete([clip]))
    assert doomed == ["20261120T090030.000Z_amic.ogg", "20261120T090030.000Z_amic.ogg.json"]
    assert forget_screenshots([clip]) == 1
    assert sorted(p.name for p in day.glob("*.ogg")) == [
        "20261120T090000.000Z_amic.ogg",
        "20261120T090100.000Z_amic.ogg",
    ]
