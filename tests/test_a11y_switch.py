"""``mnemo capture a11y on|off|status`` and doctor's "accessibility tree" line, against a real
private D-Bus session (at-spi2-core's launcher and registry started by D-Bus activation, dconf
in the session's own home), and real applications that honour the flag: a Qt 5 window and
Chromium publish their tree only when it is on."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bench.a11y_session import start_bus
from conftest import run_cli, unavailable
from mnemo import doctor
from perception.capture.a11y_switch import TURN_ON

ROOT = Path(__file__).resolve().parent.parent
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's: python3-pyqt5 belongs to it
MARK = "MNEMO_A11Y_SWITCH_TEST"  # in the environment of every process a session starts
TOOLS = {
    "/usr/bin/dbus-daemon": "dbus-daemon",
    "/usr/libexec/at-spi-bus-launcher": "at-spi2-core",
    "/usr/share/dbus-1/services/org.a11y.Bus.service": "at-spi2-core",
}
# a session bus without service files: no at-spi2-core to start
BARE_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <auth>EXTERNAL</auth>
  <listen>unix:tmpdir=/tmp</listen>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""
QT_APP = """
import sys
from PyQt5.QtWidgets import QApplication, QLabel
app = QApplication(sys.argv)
app.setApplicationName("mnemo-qt-probe")
label = QLabel("words a Qt window shows")
label.setWindowTitle("mnemo qt probe")
label.show()
app.processEvents()
print("ready", flush=True)
sys.exit(app.exec_())
"""


class Session:
    """A D-Bus session bus of its own (a folder in /tmp: runtime dir, home, dconf), through which
    at-spi2-core starts as on a desktop. ``close`` ends every process it started."""

    def __init__(self, display: str = "", config: str = "", **env: str) -> None:
        if missing := sorted({pkg for path, pkg in TOOLS.items() if not os.path.exists(path)}):
            unavailable(f"missing {missing}: apt-get install {' '.join(missing)}")
        self.mark = secrets.token_hex(8)
        self.apps: list[subprocess.Popen] = []
        # short: a unix socket's path may not pass 107 bytes
        self.root = Path(tempfile.mkdtemp(prefix="mnemo-a11ysw-"))
        run, home = self.root / "run", self.root / "home"
        for d in (run, home / ".config", home / ".cache"):
            d.mkdir(mode=0o700, parents=True)
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "HOME": str(home),
            "XDG_RUNTIME_DIR": str(run),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            MARK: self.mark,
            **({"DISPLAY": display} if display else {}),
        }
        bus_env = {**self.env, **env}  # the bus and what it starts (the launcher, dconf-service)
        if config:
            (self.root / "bus.conf").write_text(config)
            how = [f"--config-file={self.root / 'bus.conf'}"]
        else:
            how = ["--session", f"--address=unix:path={run / 'bus'}"]
        # below a child subreaper: D-Bus starts services by a double fork, which would leave
        # at-spi's launcher and registry to init (and as zombies where init does not reap)
        self.daemon, address = start_bus(how, bus_env)
        if not address:
            self.close()
            raise RuntimeError("dbus-daemon printed no address")
        self.env["DBUS_SESSION_BUS_ADDRESS"] = address

    def use(self, monkeypatch) -> None:
        """This process (the CLI, doctor, gsettings) talks to this session, and to its dconf."""
        for k in ("DBUS_SESSION_BUS_ADDRESS", "HOME", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME"):
            monkeypatch.setenv(k, self.env[k])
        monkeypatch.delenv("AT_SPI_BUS_ADDRESS", raising=False)

    def spawn(self, cmd: list[str], **env: str) -> subprocess.Popen:
        """An application in the session, in a process group of its own (Chromium's many)."""
        app = subprocess.Popen(
            cmd,
            env={**self.env, **env},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.apps.append(app)
        return app

    def marked(self) -> list[int]:
        needle = f"{MARK}={self.mark}".encode()
        pids = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                try:
                    if needle in (entry / "environ").read_bytes().split(b"\0"):
                        pids.append(int(entry.name))
                except OSError:
                    pass
        return pids

    def close(self) -> None:
        """The applications' process groups ended first (SIGTERM, then SIGKILL after 10 s), then
        every other process of the session but the reaper, which reaps them and exits once none
        is left."""
        for app in self.apps:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(app.pid, sig)
                except ProcessLookupError:
                    pass
                try:
                    app.wait(timeout=10)
                    break
                except subprocess.TimeoutExpired:
                    continue
            app.wait(timeout=10)
            if app.stdout is not None:
                app.stdout.close()
        self.apps = []
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in self.marked():
                if pid != self.daemon.pid:
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        pass
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and self.daemon.poll() is None:
                time.sleep(0.05)
            if self.daemon.poll() is not None:
                break
        if self.daemon.poll() is None:
            self.daemon.kill()
        self.daemon.wait(timeout=10)
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def session() -> Iterator[Callable[..., Session]]:
    made: list[Session] = []

    def make(**kw: str) -> Session:
        made.append(Session(**kw))
        return made[-1]

    yield make
    for s in made:
        s.close()


def _is_enabled(s: Session) -> bool:
    """IsEnabled as the launcher says, asked here with jeepney directly (not mnemo's code)."""
    from jeepney import DBusAddress, new_method_call
    from jeepney.io.blocking import open_dbus_connection

    with open_dbus_connection(s.env["DBUS_SESSION_BUS_ADDRESS"]) as conn:
        reply = conn.send_and_get_reply(
            new_method_call(
                DBusAddress("/org/a11y/bus", "org.a11y.Bus", "org.freedesktop.DBus.Properties"),
                "Get",
                "ss",
                ("org.a11y.Status", "IsEnabled"),
            ),
            timeout=10,
        )
    return reply.body[0][1]


def _gsetting(s: Session) -> str:
    return subprocess.run(
        ["gsettings", "get", "org.gnome.desktop.interface", "toolkit-accessibility"],
        env=s.env,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout.strip()


def _status(capsys) -> tuple[int, dict, str]:
    code, out, _ = run_cli(capsys, "capture", "a11y", "status", "--json")
    return code, json.loads(out.strip().splitlines()[-1]), out


def _doctor(env: dict[str, str]) -> dict:
    """``mnemo doctor --json``'s "accessibility tree" line, run in its own process."""
    run = subprocess.run(
        [sys.executable, "-m", "mnemo.cli", "doctor", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", **env},
    )
    report = json.loads(run.stdout.strip().splitlines()[-1])
    return next(c for c in report["checks"] if c["name"] == "accessibility tree")


@pytest.mark.slow  # a D-Bus session and at-spi2-core's services in child processes
def test_on_and_off_flip_the_sessions_flag_and_status_and_doctor_report_it(
    session, monkeypatch, capsys
):
    s = session()
    s.use(monkeypatch)
    code, st, out = _status(capsys)
    assert code == 0 and st["readable"] is True and st["is_enabled"] is False, out
    assert st["app_count"] == 0 and "mnemo capture a11y on" in out

    code, out, err = run_cli(capsys, "capture", "a11y", "on")
    assert code == 0, err
    assert _is_enabled(s) is True  # read back past mnemo's own code
    assert "IsEnabled is true" in out and "restart" in out and "Chromium" in out
    if shutil.which("gsettings"):
        assert _gsetting(s) == "true"
        assert "toolkit-accessibility set to true" in out, out
    else:
        assert "no gsettings command" in out, out
    code, st, out = _status(capsys)
    assert code == 0 and st["is_enabled"] is True and st["screen_reader_enabled"] is False, out
    # with a display named: a desktop whose tree is readable, the flag on
    line = _doctor({**s.env, "DISPLAY": ":987"})
    assert line["status"] == "ok" and "readable, 0 application(s)" in line["detail"], line
    assert "accessibility on" in line["detail"]

    code, out, err = run_cli(capsys, "capture", "a11y", "off", "--json")
    assert code == 0, err
    assert _is_enabled(s) is False
    done = json.loads(out.strip().splitlines()[-1])
    assert done["is_enabled"] is False and done["status"]["is_enabled"] is False
    if shutil.which("gsettings"):
        assert _gsetting(s) == "false"
    off = doctor.accessibility_check({**s.env, "DISPLAY": ":987"})
    assert off.status == "warn" and "flag is off" in off.detail and off.fix == TURN_ON
    # no display: a server, whatever its bus says
    assert doctor.accessibility_check(s.env).status == "ok"


@pytest.mark.slow  # a D-Bus session and at-spi2-core's services in child processes
def test_gnomes_copy_of_the_flag_is_set_where_the_launcher_cannot_keep_it(
    session, monkeypatch, capsys
):
    """The launcher writes toolkit-accessibility itself where its GSettings has dconf; here it has
    none (memory), so only mnemo's own gsettings call puts the flag in the user's dconf."""
    if shutil.which("gsettings") is None:
        unavailable("no gsettings command: apt-get install libglib2.0-bin")
    s = session(GSETTINGS_BACKEND="memory")
    s.use(monkeypatch)
    assert _gsetting(s) == "false"
    for what, value in (("on", "true"), ("off", "false"), ("on", "true")):
        code, out, err = run_cli(capsys, "capture", "a11y", what)
        assert code == 0 and _gsetting(s) == value, (what, out, err)
        assert f"toolkit-accessibility set to {value} (kept across logins by dconf)" in out
    # GSettings without dconf in mnemo's process: said, not hidden
    run_cli(capsys, "capture", "a11y", "off")
    monkeypatch.setenv("GSETTINGS_BACKEND", "memory")
    code, out, _ = run_cli(capsys, "capture", "a11y", "on")
    assert code == 0 and "not kept: GSettings has no dconf here" in out, out
    assert _gsetting(s) == "false"  # dconf's value untouched


def test_without_a_session_bus_the_commands_say_so_and_doctor_notes_it(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={tmp_path / 'no-bus'}")
    for what in ("on", "off"):
        code, out, err = run_cli(capsys, "capture", "a11y", what)
        assert code == 1 and not out, out
        assert "session bus" in err and "cannot be reached" in err and str(tmp_path) in err, err
        assert "apt-get install dbus-user-session" in err, err
    code, st, out = _status(capsys)
    assert code == 3 and st["readable"] is False and st["is_enabled"] is None
    assert "cannot be reached" in st["why"] and "dbus-user-session" in st["fix"]
    assert "not readable" in out and "fix: " in out
    code, _, err = run_cli(capsys, "capture", "status", "on")  # on/off/status are a11y's
    assert code == 2 and "capture a11y on" in err

    env = {"DBUS_SESSION_BUS_ADDRESS": f"unix:path={tmp_path / 'no-bus'}"}
    note = doctor.accessibility_check(env)  # a server: no display
    assert note.status == "ok" and "no desktop session" in note.detail and not note.fix, note
    desk = doctor.accessibility_check({**env, "DISPLAY": ":0"})
    assert desk.status == "warn" and "DISPLAY=:0" in desk.detail and "dbus-user-session" in desk.fix
    # nothing set at all: no address, no $XDG_RUNTIME_DIR/bus
    bare = doctor.accessibility_check({"XDG_RUNTIME_DIR": str(tmp_path), "WAYLAND_DISPLAY": "w-0"})
    assert bare.status == "warn" and "DBUS_SESSION_BUS_ADDRESS is not set" in bare.detail, bare


@pytest.mark.slow  # a D-Bus session in a child process
def test_a_session_bus_without_at_spi_names_the_package(session, monkeypatch, capsys):
    s = session(config=BARE_CONFIG)
    s.use(monkeypatch)
    code, out, err = run_cli(capsys, "capture", "a11y", "on")
    assert code == 1 and "at-spi2-core is missing" in err, err
    assert "apt-get install at-spi2-core" in err
    code, st, _ = _status(capsys)
    assert code == 3 and st["readable"] is False and st["session_bus"] and not st["a11y_bus"]
    assert "at-spi2-core" in st["fix"]
    line = doctor.accessibility_check({**s.env, "DISPLAY": ":0"})
    assert line.status == "warn" and "apt-get install at-spi2-core" in line.fix, line


def _qt_or_skip() -> None:
    probe = "import PyQt5.QtWidgets"
    if (
        not os.path.exists(SYSTEM_PYTHON)
        or subprocess.run([SYSTEM_PYTHON, "-c", probe], capture_output=True, timeout=60).returncode
    ):
        unavailable("Debian's python3-pyqt5 is not installed: apt-get install python3-pyqt5")


def _ready(app: subprocess.Popen, timeout_s: float = 30.0) -> None:
    assert app.stdout is not None
    import selectors

    with selectors.DefaultSelector() as sel:
        sel.register(app.stdout, selectors.EVENT_READ)
        assert sel.select(timeout_s), "the Qt window did not say ready"
    assert app.stdout.readline().strip() == b"ready"


def _apps_within(capsys, name: str, timeout_s: float) -> list[str]:
    """The applications on the accessibility bus once ``name`` is among them, or at the end."""
    deadline = time.monotonic() + timeout_s
    while True:
        apps = _status(capsys)[1]["apps"]
        if name in apps or time.monotonic() > deadline:
            return apps
        time.sleep(0.5)


@pytest.mark.slow  # an X server, D-Bus sessions and Qt windows
def test_a_qt5_window_publishes_its_tree_only_when_switched_on(
    desktop, session, monkeypatch, capsys, tmp_path
):
    """Qt 5 reads the flag from at-spi2's launcher (once; where the launcher is not running yet,
    the moment it appears). The window starts before the launcher, then `a11y off` / `a11y on`
    starts it: off, Qt publishes nothing; on, its tree is on the accessibility bus."""
    _qt_or_skip()
    script = tmp_path / "qt_probe.py"
    script.write_text(QT_APP)
    for on, want in ((False, False), (True, True)):
        s = session(display=desktop.display)
        s.use(monkeypatch)
        app = s.spawn([SYSTEM_PYTHON, str(script)], QT_QPA_PLATFORM="xcb")
        _ready(app)
        code, _, err = run_cli(capsys, "capture", "a11y", "on" if on else "off")
        assert code == 0, err
        apps = _apps_within(capsys, "mnemo-qt-probe", 10 if want else 3)
        assert ("mnemo-qt-probe" in apps) is want, (on, apps)
        assert app.poll() is None  # the window was there all along
        s.close()


@pytest.mark.slow  # an X server, a D-Bus session and Chromium, twice
def test_chromium_publishes_its_tree_only_when_switched_on(desktop, session, monkeypatch, capsys):
    """Chromium 156 reads the flag when it starts: off, it is not on the accessibility bus even
    with --force-renderer-accessibility; on (and restarted), it is."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        unavailable("chromium is not installed: apt-get install chromium")
    assert browser is not None
    s = session(display=desktop.display)
    s.use(monkeypatch)
    page = "data:text/html,<title>probe</title><h1>words a page shows</h1>"

    def start(profile: str) -> subprocess.Popen:
        return s.spawn(
            [
                browser,
                "--no-sandbox",  # tests may run as root
                "--no-first-run",
                "--disable-gpu",
                "--force-renderer-accessibility",
                f"--user-data-dir={s.root / profile}",
                page,
            ]
        )

    assert _status(capsys)[1]["is_enabled"] is False
    off = start("off")
    desktop.wait_window("hromium")
    time.sleep(3)  # on, it is on the bus within a second of its window
    assert "Chromium" not in _status(capsys)[1]["apps"]
    os.killpg(off.pid, signal.SIGKILL)  # Chromium told to stop may stay, stopped (state T)
    off.wait(timeout=30)

    code, _, err = run_cli(capsys, "capture", "a11y", "on")
    assert code == 0, err
    start("on")
    apps = _apps_within(capsys, "Chromium", 30)
    assert "Chromium" in apps, apps
