"""A private accessibility session for the capture tests and bench: a D-Bus session bus of its own
(``dbus-daemon --session``), through which at-spi2-core's bus launcher and registry start as they
do on a desktop (activated from /usr/share/dbus-1), and the environment that makes GTK, Qt, VTE and
Chromium publish their widgets on it. Debian's dbus-daemon, at-spi2-core, libatk-adaptor,
python3-gi, gir1.2-gtk-3.0, gir1.2-vte-2.91 and python3-pyqt5 provide it and the apps in
``bench/a11y_apps`` (`make test` installs them as root).

Everything lives in a folder of its own (runtime dir, home, caches: at-spi puts its bus socket in
``$XDG_RUNTIME_DIR/at-spi``), so sessions side by side never meet. The processes D-Bus activates
are not our children (the launcher, the accessibility bus and the registry are reparented as they
start), so each carries a mark in its environment, and ``close`` ends every process that has it.
"""

from __future__ import annotations

import functools
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from perception.capture.a11y_bus import PROPS
from perception.capture.a11y_switch import (
    BUS_NAME,
    BUS_PATH,
    STATUS,
    call,
    connect,
    registry_children,
)

APPS = Path(__file__).parent / "a11y_apps"
TREE = Path(__file__).resolve().parents[1]  # the folder holding ``bench``, for Debian's python
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's: the one python3-gi and python3-pyqt5 belong to
PACKAGES = (
    "dbus-daemon at-spi2-core libatk-adaptor python3-gi gir1.2-gtk-3.0 gir1.2-vte-2.91 "
    "python3-pyqt5"
)
APT = f"apt-get install {PACKAGES}"
# a session bus run as another user that lets root (the reader) in as well
ROOT_TOO = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <include>/usr/share/dbus-1/session.conf</include>
  <policy context="default"><allow user="root"/></policy>
</busconfig>
"""
# Chromium as a Wayland client (``A11ySession.on_sway``)
WAYLAND_CHROMIUM = ("--ozone-platform=wayland",)
MARK = "MNEMO_A11Y_SESSION"  # in the environment of every process a session starts
# one call on the session's buses: the first starts at-spi2-core, slow on a busy machine
CALL_S = 30.0
# what each file is, and the Debian package it comes from
FILES = {
    "/usr/bin/dbus-daemon": "dbus-daemon",
    "/usr/libexec/at-spi-bus-launcher": "at-spi2-core",
    "/usr/libexec/at-spi2-registryd": "at-spi2-core",
    "/usr/share/dbus-1/services/org.a11y.Bus.service": "at-spi2-core",
    SYSTEM_PYTHON: "python3",
}
# what Debian's python must import, and the package that makes it importable
MODULES = {
    "import gi": "python3-gi",
    "gi.require_version('Gtk', '3.0'); from gi.repository import Gtk": "gir1.2-gtk-3.0",
    "gi.require_version('Vte', '2.91'); from gi.repository import Vte": "gir1.2-vte-2.91",
    "import PyQt5.QtWidgets": "python3-pyqt5",
}
# each import tried apart; the packages of those that fail printed
PROBE = """
for code, pkg in {modules!r}.items():
    try:
        exec("import gi\\n" + code if "gi." in code else code, {{}})
    except Exception:
        print(pkg)
"""
# every process a session starts runs below one of these: a child subreaper that runs the command
# and reaps it and whatever it leaves (D-Bus activates services by double fork, so at-spi's launcher
# and registry would otherwise be reparented to init, and zombies where init does not reap), passes
# SIGTERM on to the command, and exits when nothing is left below it
REAPER = """
import ctypes, os, signal, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
child = os.fork()
if child == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
def forward(sig, _):
    try:
        os.kill(child, sig)
    except ProcessLookupError:
        pass
signal.signal(signal.SIGTERM, forward)
signal.signal(signal.SIGINT, forward)
code = 0
while True:
    try:
        pid, status = os.waitpid(-1, 0)
    except ChildProcessError:
        break
    if pid == child:
        code = os.waitstatus_to_exitcode(status)
sys.exit(code)
"""


@functools.cache
def missing_tools() -> str:
    """Empty when the session and its apps can run here, else which Debian packages are missing
    and how to install them."""
    missing = [pkg for path, pkg in FILES.items() if not os.path.exists(path)]
    if not list(Path("/usr/lib").glob("*/gtk-2.0/modules/libatk-bridge.so")):
        missing.append("libatk-adaptor")
    if os.path.exists(SYSTEM_PYTHON):
        out = subprocess.run(
            [SYSTEM_PYTHON, "-c", PROBE.format(modules=MODULES)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        missing += out.stdout.split() if out.returncode == 0 else list(MODULES.values())
    missing = list(dict.fromkeys(missing))
    return f"missing accessibility packages {missing}: {APT}" if missing else ""


class App:
    """A command started in the session (below its reaper); ``lines`` is what it printed before
    "ready", ``pid`` the command's own process id (the one its windows carry)."""

    def __init__(self, proc: subprocess.Popen, lines: list[str]) -> None:
        self.proc = proc  # the reaper
        self.lines = lines
        self._pid = 0

    @property
    def pid(self) -> int:
        if not self._pid:
            self._pid = _first_child(self.proc.pid)
        return self._pid


def _first_child(pid: int, timeout_s: float = 5.0) -> int:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            kids = []
        if kids:
            return int(kids[0])
        if time.monotonic() > deadline:
            raise RuntimeError(f"process {pid} started no command")
        time.sleep(0.01)


def _reaped(cmd: list[str], **kw: Any) -> subprocess.Popen:
    # as another user, Debian's python: this one may live where that user cannot read (~root)
    python = SYSTEM_PYTHON if kw.get("user") is not None else sys.executable
    return subprocess.Popen([python, "-c", REAPER, *cmd], **kw)


def _as(user: tuple[int, int] | None) -> dict[str, Any]:
    """Popen's arguments that run a command as ``user`` (uid, gid); none for this process's."""
    return {"user": user[0], "group": user[1], "extra_groups": []} if user else {}


def start_bus(
    args: list[str], env: dict[str, str], user: tuple[int, int] | None = None
) -> tuple[subprocess.Popen, str]:
    """``dbus-daemon --nofork`` with ``args`` (``--session``, or ``--config-file=...``), below a
    reaper, in ``env`` (as ``user``, uid and gid, when given); and the address it printed once
    ready ("" when it printed none)."""
    read, write = os.pipe()
    daemon = _reaped(
        ["dbus-daemon", *args, "--nofork", "--nosyslog", f"--print-address={write}"],
        env=env,
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        **_as(user),
    )
    os.close(write)
    with os.fdopen(read) as f:
        return daemon, f.readline().strip()


class A11ySession:
    """One D-Bus session with at-spi2's accessibility bus, for windows on X display ``display``.
    ``env`` is the environment its applications run in; ``activated`` points this process (the
    reader) at it.

    ``user`` (uid, gid): the buses, at-spi2 and every application run as that user (a Wayland
    session's, whose compositor socket only its user may open), ``extra`` is added to their
    environment; the reader, as root, still reaches the buses (at-spi2's accessibility bus lets
    root in). ``on_sway`` makes such a session for a ``bench.waydesktop.Sway``."""

    def __init__(
        self,
        display: str,
        user: tuple[int, int] | None = None,
        extra: dict[str, str] | None = None,
    ) -> None:
        if why := missing_tools():
            raise RuntimeError(why)
        self.mark = secrets.token_hex(8)
        self.user = user
        # short and in /tmp: a unix socket's path may not pass 107 bytes (pytest's tmp_path can)
        self.root = Path(tempfile.mkdtemp(prefix="mnemo-a11y-"))
        run, home = self.root / "run", self.root / "home"
        for d in (run, home, home / ".cache", home / ".config", home / ".local/share"):
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
        if user is not None:
            for d in (self.root, *self.root.rglob("*")):
                os.chown(d, *user)
        self.env: dict[str, str] = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "HOME": str(home),
            "XDG_RUNTIME_DIR": str(run),  # at-spi's bus socket: $XDG_RUNTIME_DIR/at-spi/bus_N
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local/share"),
            "DISPLAY": display,
            # settings kept in memory: the launcher writes org.a11y.Status there instead of
            # activating dconf-service on the bus (one more process, and files in HOME)
            "GSETTINGS_BACKEND": "memory",
            # Qt publishes its tree only when it believes a screen reader wants it
            "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1",
            "QT_ACCESSIBILITY": "1",
            # Chromium (and old Qt) read this as "assistive technology is running"
            "ACCESSIBILITY_ENABLED": "1",
            "GTK_A11Y": "atspi",  # GTK 4 picks its accessibility backend by this
            MARK: self.mark,
        }
        if not display:
            del self.env["DISPLAY"]
        self.env |= extra or {}
        self.apps: list[App] = []
        self._daemon: subprocess.Popen | None = None
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    @classmethod
    def on_sway(cls, sway: Any) -> A11ySession:
        """A session whose applications are Wayland clients of ``sway`` (a
        ``bench.waydesktop.Sway``), run as its user: GTK by ``GDK_BACKEND``, Qt by
        ``QT_QPA_PLATFORM`` (where its Wayland plugin is installed), Chromium with
        ``WAYLAND_CHROMIUM`` on its command line."""
        return cls(
            "",
            user=(sway.uid, sway.gid),
            extra={
                # a path: the session keeps a runtime folder of its own
                "WAYLAND_DISPLAY": str(
                    Path(sway.env["XDG_RUNTIME_DIR"], sway.env["WAYLAND_DISPLAY"])
                ),
                "SWAYSOCK": sway.env["SWAYSOCK"],
                "XDG_SESSION_TYPE": "wayland",
                "GDK_BACKEND": "wayland",
                "QT_QPA_PLATFORM": "wayland",
            },
        )

    # the bus
    def _start(self) -> None:
        sock = Path(self.env["XDG_RUNTIME_DIR"]) / "bus"
        how = ["--session"]
        if self.user is not None:  # run as another user: the reader (this process) let in too
            conf = self.root / "bus.conf"
            conf.write_text(ROOT_TOO)
            os.chown(conf, *self.user)  # under mnemo's umask (077) only its writer could read it
            how = [f"--config-file={conf}"]
        self._daemon, address = start_bus(
            [*how, f"--address=unix:path={sock}"], self.env, self.user
        )
        if not address:
            raise RuntimeError("dbus-daemon --session did not start (it printed no address)")
        self.env["DBUS_SESSION_BUS_ADDRESS"] = address
        # start the accessibility bus and its registry now, and say assistive technology runs
        with connect(address) as conn:
            (self.a11y_address,) = call(
                conn, BUS_PATH, BUS_NAME, BUS_NAME, "GetAddress", timeout_s=CALL_S
            )
            call(
                conn,
                BUS_PATH,
                BUS_NAME,
                PROPS,
                "Set",
                "ssv",
                (STATUS, "IsEnabled", ("b", True)),
                timeout_s=CALL_S,
            )
        self.registry_children()

    def registry_children(self, timeout_s: float = CALL_S) -> list[tuple[str, str]]:
        """The applications at-spi2's registry lists (starting the registry if it is not up)."""
        with connect(self.a11y_address) as conn:
            return registry_children(conn, timeout_s)

    @contextmanager
    def activated(self) -> Iterator[None]:
        """This process's session bus is the session's while inside (the reader finds the
        accessibility bus through it)."""
        keys = ("DBUS_SESSION_BUS_ADDRESS", "AT_SPI_BUS_ADDRESS")
        old = {k: os.environ.get(k) for k in keys}
        os.environ["DBUS_SESSION_BUS_ADDRESS"] = self.env["DBUS_SESSION_BUS_ADDRESS"]
        os.environ.pop("AT_SPI_BUS_ADDRESS", None)
        try:
            yield
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    # applications
    def spawn(
        self,
        cmd: list[str],
        ready: str | None = "ready",
        timeout_s: float = 30.0,
        env: dict[str, str] | None = None,
    ) -> App:
        """Start ``cmd`` in the session; with ``ready``, wait until it prints that line (its
        window is shown). Its stderr goes to this process's."""
        proc = _reaped(
            cmd,
            env={**self.env, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if ready else subprocess.DEVNULL,
            stderr=subprocess.DEVNULL if ready is None else None,
            cwd=self.root if self.user else None,
            **_as(self.user),
        )
        app = App(proc, [])
        self.apps.append(app)
        if ready is None:
            return app
        assert proc.stdout is not None
        fd, buf = proc.stdout.fileno(), b""
        deadline = time.monotonic() + timeout_s
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.decode(errors="replace").strip() == ready:
                        return app
                    app.lines.append(line.decode(errors="replace"))
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise RuntimeError(f"{cmd[:3]} did not say {ready!r} in {timeout_s:g} s")
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise RuntimeError(f"{cmd[:3]} ended ({proc.wait()}) before {ready!r}")
                buf += chunk

    def python_app(
        self, name: str, *args: str, env: dict[str, str] | None = None, **kw: Any
    ) -> App:
        """An app of ``bench/a11y_apps`` run by Debian's python (its GTK and Qt bindings), as a
        module of this tree (the windows share ``a11y_apps/window.py``)."""
        cmd = [SYSTEM_PYTHON, "-m", f"bench.a11y_apps.{name}", *args]
        return self.spawn(cmd, env={"PYTHONPATH": str(TREE), **(env or {})}, **kw)

    def peer(self, *args: str, **kw: Any) -> App:
        """The hostile AT-SPI peer (``a11y_apps/hostile_peer.py``), run by this python (jeepney)."""
        return self.spawn([sys.executable, str(APPS / "hostile_peer.py"), *args], **kw)

    def stop(self, app: App) -> None:
        """End ``app`` and what it started (SIGTERM, then SIGKILL after 5 s)."""
        if app.proc.poll() is None:
            app.proc.terminate()
            try:
                app.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._end(_below(app.proc.pid))
                app.proc.wait()
        if app.proc.stdout is not None:
            app.proc.stdout.close()

    # the end
    def marked(self) -> list[int]:
        """The processes alive that this session started, however they were started."""
        needle = f"{MARK}={self.mark}".encode()
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                env = (entry / "environ").read_bytes()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if needle in env.split(b"\0") and state != "Z":
                pids.append(int(entry.name))
        return pids

    @staticmethod
    def _end(pids: list[int]) -> None:
        """SIGTERM, then after 5 s SIGKILL, to ``pids``; returns when they are gone."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 5
            while (pids := [p for p in pids if _alive(p)]) and time.monotonic() < deadline:
                time.sleep(0.02)
            if not pids:
                return

    def close(self) -> None:
        """End every process the session started (apps, bus launcher, buses, registry), the
        reapers last so that they reap the rest, and remove the session's folder."""
        for app in reversed(self.apps):
            self.stop(app)
        reapers = [a.proc for a in self.apps] + ([self._daemon] if self._daemon else [])
        self.apps = []
        ours = {r.pid for r in reapers}
        self._end([p for p in self.marked() if p not in ours])
        for r in reapers:
            try:
                r.wait(timeout=5)  # nothing is left below it: it has gone
            except subprocess.TimeoutExpired:
                r.kill()
                r.wait()
        self._end(self.marked())  # anything that escaped its reaper
        shutil.rmtree(self.root, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _below(pid: int) -> list[int]:
    """``pid``'s descendants, deepest last."""
    out, level = [], [pid]
    while level:
        nxt = []
        for p in level:
            try:
                nxt += [int(c) for c in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
            except OSError:
                pass
        out += nxt
        level = nxt
    return out
