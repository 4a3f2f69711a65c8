"""A real Wayland desktop for the capture tests and bench: sway on its headless backend with
software rendering, Wayland-native windows (``foot``), typed input (``wtype``) and a real locker
(``swaylock``). Debian's sway, grim, foot, wtype, swayidle, swaylock and fonts-dejavu-core
provide them (`make test` installs them as root).

sway refuses to run as root, so as root it runs as a user made for it (``USER``, no login shell
beyond /bin/sh and no password) with its runtime folder in /tmp; mnemo itself can then capture that
session as root, given the session's ``env``.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

TOOLS = ("sway", "swaymsg", "grim", "foot", "wtype", "swayidle", "swaylock")
APT = "apt-get install sway grim foot wtype swayidle swaylock fonts-dejavu-core"
USER = "mnemo-desk"
CONFIG = """\
output HEADLESS-1 resolution {size} position 0 0
default_border normal
font monospace 11
focus_follows_mouse no
"""


def missing_tools() -> str:
    """Empty when every tool is installed, else what is missing and how to install it."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    return f"missing Wayland tools {missing}: {APT}" if missing else ""


def _account() -> tuple[int, int]:
    """The uid and gid sway runs as: this user's, or as root the made-for-it ``USER``'s."""
    if os.getuid() != 0:
        return os.getuid(), os.getgid()
    try:
        pw = pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/bin/sh", USER],
            check=True,
            capture_output=True,
        )
        pw = pwd.getpwnam(USER)
    return pw.pw_uid, pw.pw_gid


class Sway:
    """One headless sway session; ``foot`` opens windows on it, ``type`` types into the focused one."""

    def __init__(self, size: str = "1920x1080") -> None:
        if why := missing_tools():
            raise RuntimeError(why)
        self.uid, self.gid = _account()
        self.runtime = Path(tempfile.mkdtemp(prefix="mnemo-sway-"))  # pytest's tmp is root's alone
        os.chown(self.runtime, self.uid, self.gid)
        self.runtime.chmod(0o700)
        conf = self.runtime / "sway.conf"
        conf.write_text(CONFIG.format(size=size))
        os.chown(conf, self.uid, self.gid)  # mnemo's umask leaves it root's alone
        self.log = self.runtime / "sway.log"
        self.env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.runtime),
            "XDG_RUNTIME_DIR": str(self.runtime),
            "LANG": "C.UTF-8",
        }
        self.procs: list[subprocess.Popen] = []
        self.sway = self._spawn(
            ["sway", "-c", str(conf)],
            {
                **self.env,
                "WLR_BACKENDS": "headless",
                "WLR_RENDERER": "pixman",
                "WLR_LIBINPUT_NO_DEVICES": "1",
            },
            log=self.log,
        )
        deadline = time.time() + 20
        while time.time() < deadline:
            socks = list(self.runtime.glob("sway-ipc.*.sock"))
            displays = [p for p in self.runtime.glob("wayland-*") if not p.name.endswith(".lock")]
            if socks and displays and self.sway.poll() is None:
                self.env |= {"SWAYSOCK": str(socks[0]), "WAYLAND_DISPLAY": displays[0].name}
                if self._answers():
                    return
            if self.sway.poll() is not None:
                break
            time.sleep(0.1)
        log = self.log.read_text(errors="replace")[-2000:]
        self.close()
        raise RuntimeError(f"sway did not start: {log}")

    def client_env(self) -> dict[str, str]:
        """This process's environment pointed at the session (as a user's shell in it has):
        mnemo run as root against the session keeps root's home, caches and models."""
        env = {
            **os.environ,
            **{k: self.env[k] for k in ("XDG_RUNTIME_DIR", "WAYLAND_DISPLAY", "SWAYSOCK")},
        }
        env.pop("DISPLAY", None)
        return env

    def _answers(self) -> bool:
        return (
            subprocess.run(
                ["swaymsg", "-t", "get_version"], env=self.env, capture_output=True
            ).returncode
            == 0
        )

    def _spawn(self, cmd: list[str], env: dict, log: Path | None = None) -> subprocess.Popen:
        out = open(log, "ab") if log else subprocess.DEVNULL
        proc = subprocess.Popen(
            cmd,
            env=env,
            user=self.uid,
            group=self.gid,
            cwd=self.runtime,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        if log:
            out.close()  # type: ignore[union-attr]
        self.procs.append(proc)
        return proc

    def spawn(self, cmd: list[str]) -> subprocess.Popen:
        """A client of the session, run as its user."""
        return self._spawn(cmd, self.env)

    def msg(self, *args: str) -> Any:
        done = subprocess.run(
            ["swaymsg", "-r", *args], env=self.env, capture_output=True, text=True, timeout=10
        )
        reply = json.loads(done.stdout) if done.stdout.strip() else None
        if done.returncode:
            raise RuntimeError(f"swaymsg {' '.join(args)} failed: {done.stdout} {done.stderr}")
        return reply

    def views(self) -> list[dict]:
        out = []

        def walk(n: dict) -> None:
            if n.get("type") in ("con", "floating_con") and "pid" in n and not n.get("nodes"):
                out.append(n)
            for c in n.get("nodes", []) + n.get("floating_nodes", []):
                walk(c)

        walk(self.msg("-t", "get_tree"))
        return out

    def wait_view(self, app_id: str, timeout_s: float = 20.0, title: str | None = None) -> dict:
        """The first window of ``app_id`` (its Wayland app_id or X11 class) whose title matches the
        pattern ``title`` (any title without one), once there is one."""
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            found = [
                v
                for v in self.views()
                if app_id in (v.get("app_id"), _cls(v))
                and (title is None or re.search(title, v.get("name") or ""))
            ]
            if found:
                return found[0]
            time.sleep(0.1)
        raise RuntimeError(
            f"no window of app {app_id!r} titled {title!r} appeared: {self.log.read_text()[-1000:]}"
        )

    def foot(
        self, title: str, app_id: str, command: list[str] | None = None, font_pt: int = 12
    ) -> int:
        """A terminal window (a shell, or ``command``); returns its container id once mapped."""
        self.spawn(
            ["foot", "-T", title, "-a", app_id, "-f", f"monospace:size={font_pt}"] + (command or [])
        )
        return int(self.wait_view(app_id)["id"])

    def clock(self) -> int:
        """A window that changes every second and is otherwise static (xclock's part on X11)."""
        return self.foot(
            "clock",
            "clock",
            ["sh", "-c", 'while :; do printf "\\r%s" "$(date +%T)"; sleep 1; done'],
        )

    def focus(self, con_id: int) -> None:
        self.msg(f"[con_id={con_id}]", "focus")

    def floating(self, con_id: int, x: int, y: int, width: int, height: int) -> None:
        self.msg(
            f"[con_id={con_id}]",
            f"floating enable, resize set {width} {height}, move position {x} {y}",
        )

    def rect(self, con_id: int) -> tuple[int, int, int, int]:
        """A window's content on screen (x, y, width, height), title bar apart."""
        view = next(v for v in self.views() if v["id"] == con_id)
        r = view["rect"]
        return r["x"], r["y"], r["width"], r["height"]

    def frame(self, con_id: int) -> tuple[int, int, int, int]:
        """A window on screen with sway's title bar (x, y, width, height): the box ``floating``
        puts it in."""
        view = next(v for v in self.views() if v["id"] == con_id)
        r, bar = view["rect"], view["deco_rect"]["height"]
        return r["x"], r["y"] - bar, r["width"], r["height"] + bar

    def place(self, con_id: int, at: tuple[int, int, int, int], timeout_s: float = 30.0) -> None:
        """Float a window at ``at`` (x, y, width, height, title bar included) and return once sway
        shows it there. Asked again every 2 s: a client that has not drawn its first frame yet
        keeps its tiled size (GTK's did)."""
        deadline, asked = time.monotonic() + timeout_s, -2.0
        while (got := self.frame(con_id)) != tuple(at):
            if time.monotonic() > deadline:
                raise RuntimeError(f"sway did not float window {con_id} at {at}: it is at {got}")
            if time.monotonic() - asked >= 2.0:
                self.floating(con_id, *at)
                asked = time.monotonic()
            time.sleep(0.2)

    def type(self, text: str, delay_ms: int = 20) -> None:
        # -s 150: wtype sends its keymap first, and a key typed at once after it is lost
        subprocess.run(
            ["wtype", "-s", "150", "-d", str(delay_ms), text], env=self.env, check=True, timeout=120
        )

    def key(self, name: str) -> None:
        """Press and release the key ``name`` (an XKB keysym: "Next" is Page Down). Chromium on
        Wayland turns a page on Page Down but not on a typed space (wtype's made-up keymap)."""
        subprocess.run(["wtype", "-s", "150", "-k", name], env=self.env, check=True, timeout=30)

    def lock(self) -> subprocess.Popen:
        """swaylock, on ext-session-lock. Ended without the password, sway keeps the session
        locked: lock last, or on a session of its own."""
        return self.spawn(["swaylock", "-c", "000000"])

    def add_output(self) -> str:
        before = {o["name"] for o in self.msg("-t", "get_outputs")}
        self.msg("create_output")
        after = {o["name"] for o in self.msg("-t", "get_outputs")}
        return (after - before).pop()

    def output(self, name: str, *args: str) -> None:
        self.msg("output", name, *args)

    def close(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, 15)
                except ProcessLookupError:
                    pass
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 9)
                p.wait()
        shutil.rmtree(self.runtime, ignore_errors=True)


def _cls(view: dict) -> str | None:
    return (view.get("window_properties") or {}).get("class")
