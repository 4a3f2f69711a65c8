"""What a sway desktop shows (Wayland, wlroots): windows from sway's IPC, pixels from the
screencopy protocol, idle time from the idle-notify protocol, and whether a locker is up.

- **Windows** (``get_tree`` on sway's IPC socket, the i3 protocol, one connection kept open): every
  view with its app id (an XWayland window: its WM_CLASS), title, pid, geometry with its title bar,
  focus and visibility. Tiled views are below floating ones, a fullscreen view above all.
- **Pixels**: ``grim`` (the wlr-screencopy client) writes each output as PPM to a pipe.
- **Idle time**: a ``swayidle`` child (ext-idle-notify, or KDE's idle protocol) says when a second
  passes without input and when input comes back.
- **Lock**: lockers on ext-session-lock (swaylock, hyprlock, gtklock, waylock) draw on no window in
  the tree, so a locker process of the session's user means locked.

Anything that cannot be read (the socket gone, a tree that does not parse, a compositor without
screencopy, an output unplugged mid-grab) raises ``Unreadable``: the daemon drops that grab, says
why once, and tries again. The connection is opened again when sway comes back.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import cast

import numpy as np

from perception.capture.windows import Rect, Unreadable, Unsupported, WindowInfo, is_locker

log = logging.getLogger(__name__)

MAGIC = b"i3-ipc"
GET_OUTPUTS, GET_TREE, GET_VERSION = 3, 4, 7
MAX_REPLY_B = 64 << 20  # a window tree is kilobytes; more is not sway talking
GRAB_TIMEOUT_S = 10.0
IDLE_STEP_S = 1  # swayidle's timeout: input in the last second counts as now
RESTART_IDLE_S = 10.0  # a swayidle that died is started again at most this often


def sway_socket(env: Mapping[str, str]) -> Path | None:
    """sway's IPC socket: ``SWAYSOCK``, else the one sway made in ``XDG_RUNTIME_DIR``."""
    if env.get("SWAYSOCK"):
        return Path(env["SWAYSOCK"])
    runtime = env.get("XDG_RUNTIME_DIR")
    if not runtime or not env.get("WAYLAND_DISPLAY"):
        return None
    found = sorted(Path(runtime).glob("sway-ipc.*.sock"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


class SwayIPC:
    """sway's IPC socket, one connection opened again whenever a request fails."""

    def __init__(self, path: Path, timeout_s: float = 5.0) -> None:
        self.path = path
        self.timeout_s = timeout_s
        self._sock: socket.socket | None = None

    def _connect(self) -> socket.socket:
        path = self.path
        if not path.exists():  # sway restarted: a new socket beside the old one's place
            newer = sorted(path.parent.glob("sway-ipc.*.sock"), key=lambda p: p.stat().st_mtime)
            path = newer[-1] if newer else path
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout_s)
        try:
            s.connect(str(path))
        except OSError:
            s.close()
            raise
        self.path = path
        return s

    def request(self, kind: int, payload: bytes = b"") -> object:
        """The reply to one message, parsed; ``Unreadable`` when sway cannot be asked or answers
        what is not JSON."""
        for attempt in (0, 1):  # a connection sway closed is opened once more
            try:
                if self._sock is None:
                    self._sock = self._connect()
                self._sock.sendall(MAGIC + struct.pack("<II", len(payload), kind) + payload)
                head = self._read(14)
                if head[:6] != MAGIC:
                    raise Unreadable(f"sway's IPC socket {self.path} answered no i3-ipc message")
                size, _ = struct.unpack("<II", head[6:])
                if size > MAX_REPLY_B:
                    raise Unreadable(f"sway's IPC socket {self.path} sent {size} bytes; refused")
                body = self._read(size)
                break
            except (OSError, ConnectionError) as e:
                self.close()
                if attempt:
                    raise Unreadable(f"sway's IPC socket {self.path} cannot be read ({e})") from e
        try:
            return json.loads(body)
        except (UnicodeDecodeError, ValueError) as e:
            raise Unreadable(f"sway's reply could not be parsed ({e})") from e

    def _read(self, n: int) -> bytes:
        assert self._sock is not None
        chunks, got = [], 0
        while got < n:
            chunk = self._sock.recv(min(n - got, 1 << 20))
            if not chunk:
                raise ConnectionError("sway closed the connection")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _rect(node: dict, key: str = "rect") -> Rect:
    r = node[key]
    return Rect(int(r["x"]), int(r["y"]), int(r["width"]), int(r["height"]))


def _view(node: dict) -> WindowInfo:
    """A view of the tree as a window; its title bar (``deco_rect``, above the content) is part of
    it, as a window manager's frame is on X11. Its ``content`` is where the application's surface
    shows (``window_rect``, relative to ``rect``: inside the borders, below the title bar), the
    origin of what the application calls window coordinates (the accessibility tree's boxes)."""
    props = node.get("window_properties") or {}
    app = node.get("app_id") or props.get("class") or ""
    rect = content = None
    if node.get("visible"):
        r = _rect(node)
        deco = int((node.get("deco_rect") or {}).get("height") or 0)
        rect = Rect(r.x, r.y - deco, r.width, r.height + deco)
        try:  # where it is missing or malformed, boxes are placed at ``rect`` as before
            w = _rect(node, "window_rect")
            content = Rect(r.x + w.x, r.y + w.y, w.width, w.height)
        except (TypeError, KeyError, ValueError):
            pass
    pid = node.get("pid")
    return WindowInfo(
        int(node["id"]),
        str(app),
        str(props.get("instance") or app),
        str(node.get("name") or props.get("title") or ""),
        int(pid) if isinstance(pid, int) and pid > 0 else None,
        rect,
        content,
    )


def _is_view(node: dict) -> bool:
    return (
        node.get("type") in ("con", "floating_con")
        and not node.get("nodes")
        and ("app_id" in node or "window_properties" in node)
    )


def _leaves(node: dict) -> Iterator[dict]:
    if _is_view(node):
        yield node
        return
    for child in node.get("nodes", []):
        yield from _leaves(child)
    for child in node.get("floating_nodes", []):
        yield from _leaves(child)


def parse_tree(tree: object) -> tuple[list[WindowInfo], WindowInfo | None]:
    """The views of ``get_tree``'s reply bottom to top, and the focused one (None when focus is on
    an empty workspace). ``Unreadable`` when the tree is not the shape sway sends."""
    try:
        if not isinstance(tree, dict) or tree.get("type") != "root":
            raise TypeError("no root node")
        tiled: list[WindowInfo] = []
        floating: list[WindowInfo] = []
        full: list[WindowInfo] = []
        focused = None
        for output in tree.get("nodes", []):
            if output.get("name") == "__i3":  # the scratchpad: never shown
                continue
            for ws in output.get("nodes", []):
                for node in (*_iter(ws.get("nodes", [])), *_iter(ws.get("floating_nodes", []))):
                    view = _view(node)
                    target = floating if node.get("type") == "floating_con" else tiled
                    (full if node.get("fullscreen_mode") else target).append(view)
                    if node.get("focused"):
                        focused = view
        return [*tiled, *floating, *full], focused
    except (TypeError, KeyError, ValueError, AttributeError) as e:
        raise Unreadable(f"sway's window tree could not be parsed ({e!r})") from e


def _iter(nodes: list) -> Iterator[dict]:
    for n in nodes:
        yield from _leaves(n)


def parse_outputs(reply: object) -> list[tuple[str, Rect, bool]]:
    """``get_outputs``'s active outputs: (name, rect in the layout, powered on)."""
    try:
        return [
            (str(o["name"]), _rect(o), bool(o.get("power", o.get("dpms", True))))
            for o in cast(list, reply)
            if o.get("active")
        ]
    except (TypeError, KeyError, ValueError, AttributeError) as e:
        raise Unreadable(f"sway's output list could not be parsed ({e!r})") from e


class IdleWatch:
    """Seconds since the last input, from a ``swayidle`` child that prints when a second has gone
    by without input and when input came back. Without swayidle the user always counts as active
    (grabs keep the active pace: more frames, never fewer)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)
        self.proc: subprocess.Popen | None = None
        self.idle_since: float | None = None  # monotonic; None: active
        self.last_start = 0.0
        self.warned = False
        self._lock = threading.Lock()

    def idle_s(self) -> float:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        with self._lock:
            since = self.idle_since
        return 0.0 if since is None else time.monotonic() - since

    def _start(self) -> None:
        if time.monotonic() - self.last_start < RESTART_IDLE_S:
            return
        self.last_start = time.monotonic()
        exe = shutil.which("swayidle")
        if exe is None:
            if not self.warned:
                log.warning(
                    "swayidle is missing: idle time cannot be read, so grabs keep the active "
                    "pace (apt-get install swayidle)"
                )
                self.warned = True
            return
        self.proc = subprocess.Popen(
            [exe, "timeout", str(IDLE_STEP_S), "echo idle", "resume", "echo active"],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # it complains of D-Bus where there is none
            text=True,
        )
        threading.Thread(target=self._follow, args=(self.proc,), daemon=True).start()

    def _follow(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            with self._lock:
                if line.strip() == "idle":
                    self.idle_since = time.monotonic() - IDLE_STEP_S
                elif line.strip() == "active":
                    self.idle_since = None
        with self._lock:
            self.idle_since = None  # it died (the compositor went away): active until it says

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def locker_running(uid: int | None) -> bool:
    """Whether a known locker process of ``uid`` (any user's when None) runs."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if uid is not None and entry.stat().st_uid != uid:
                continue
            comm = Path(entry.path, "comm").read_text().strip()
        except OSError:  # gone since the listing
            continue
        if is_locker(comm):
            return True
    return False


class SwayDesktop:
    """The sway ``DesktopSession``; ``env`` is the session's (``WAYLAND_DISPLAY``,
    ``XDG_RUNTIME_DIR``): root can capture a user's session given that user's."""

    kind = "sway"
    dropped_errors: tuple[type[BaseException], ...] = ()

    def __init__(self, sock: Path, env: Mapping[str, str] | None = None) -> None:
        env = dict(os.environ if env is None else env)
        self.grim = shutil.which("grim")
        if self.grim is None:
            raise Unsupported(
                "grim is missing: mnemo capture reads a sway desktop's pixels with it "
                "(apt-get install grim)"
            )
        if not env.get("WAYLAND_DISPLAY") or not env.get("XDG_RUNTIME_DIR"):
            raise Unsupported(
                "WAYLAND_DISPLAY and XDG_RUNTIME_DIR must be set to the sway session's (e.g. "
                "wayland-1 and /run/user/1000) to capture it"
            )
        self.env = env
        self.ipc = SwayIPC(sock)
        try:
            self.uid: int | None = sock.stat().st_uid
        except OSError as e:
            raise Unsupported(f"sway's IPC socket {sock} cannot be reached ({e})") from e
        self.ipc.request(GET_OUTPUTS)  # fails now, with the reason, when sway is not there
        self.idle = IdleWatch(env)
        self._names: list[str] = []
        self._power: list[bool] = []

    def outputs(self) -> list[Rect]:
        found = parse_outputs(self.ipc.request(GET_OUTPUTS))
        self._names = [name for name, _, _ in found]
        self._power = [on for _, _, on in found]
        return [rect for _, rect, _ in found]

    def grab(self, index: int, rect: Rect) -> np.ndarray:
        import cv2

        name = self._names[index - 1] if 0 < index <= len(self._names) else "?"
        try:
            done = subprocess.run(
                [str(self.grim), "-t", "ppm", "-o", name, "-"],
                env=self.env,
                capture_output=True,
                timeout=GRAB_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired as e:
            raise Unreadable(f"grim did not grab output {name} in {GRAB_TIMEOUT_S:g} s") from e
        if done.returncode:
            why = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
            raise Unreadable(f"grim could not grab output {name}: {why[0]}")
        frame = cv2.imdecode(np.frombuffer(done.stdout, np.uint8), cv2.IMREAD_COLOR)
        if frame is None:
            raise Unreadable(f"grim's image of output {name} could not be decoded")
        return frame

    def _tree(self) -> tuple[list[WindowInfo], WindowInfo | None]:
        return parse_tree(self.ipc.request(GET_TREE))

    def focused(self) -> WindowInfo | None:
        return self._tree()[1]

    def stacking(self) -> list[WindowInfo]:
        return self._tree()[0]

    def idle_s(self) -> float:
        return self.idle.idle_s()

    def saver(self) -> tuple[bool, float]:
        """Blanked when every output is powered off (``output * power off``, or DPMS)."""
        blanked = bool(self._power) and not any(self._power)
        return blanked, self.idle_s()

    def locked(self, windows: list[WindowInfo], focused: WindowInfo | None) -> bool:
        on_top = [w for w in windows if w.rect is not None][-1:]
        if any(is_locker(w.app, w.instance) for w in [*on_top, *([focused] if focused else [])]):
            return True
        return locker_running(self.uid)

    def close(self) -> None:
        self.ipc.close()
        self.idle.close()
