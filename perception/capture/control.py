"""The daemon's control socket: one JSON request per connection, one JSON reply.

Requests: ``{"cmd": "status"}``, ``{"cmd": "pause", "for_s": 900}`` (``for_s`` optional),
``{"cmd": "resume"}``, ``{"cmd": "stop"}``. The socket lives in ``$XDG_RUNTIME_DIR/mnemo/`` (a
folder only the user can enter), else ``/tmp/mnemo-<uid>/``.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)


class DaemonNotRunning(RuntimeError):
    pass


def socket_path() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR")
    folder = Path(base) / "mnemo" if base else Path(f"/tmp/mnemo-{os.getuid()}")
    return folder / "capture.sock"


def request(message: dict, path: Path | None = None, timeout_s: float = 5.0) -> dict:
    return send(json.dumps(message).encode() + b"\n", path, timeout_s)


def send(payload: bytes, path: Path | None = None, timeout_s: float = 5.0) -> dict:
    """``payload`` as it is (one request line) to the daemon, and its JSON reply."""
    path = path or socket_path()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout_s)
            s.connect(str(path))
            s.sendall(payload)
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
    except (FileNotFoundError, ConnectionRefusedError) as e:
        raise DaemonNotRunning(
            f"no capture daemon is listening on {path}; start one with `mnemo capture start`"
        ) from e
    return json.loads(data or b"{}")


class ControlServer:
    """Serves requests on a thread; ``handle`` runs on that thread and must be thread-safe."""

    def __init__(self, handle: Callable[[dict], dict], path: Path | None = None) -> None:
        self.path = path or socket_path()
        self.handle = handle
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.path.parent, 0o700)
        if self.path.exists():
            try:
                request({"cmd": "status"}, self.path, timeout_s=1.0)
            except DaemonNotRunning:
                self.path.unlink()  # left by a daemon that died
            except (OSError, ValueError) as e:  # something accepted the connection: a daemon, stuck
                raise RuntimeError(
                    f"a process listens on {self.path} but does not answer ({e}); stop the "
                    "capture daemon that runs there before starting another"
                ) from e
            else:
                raise RuntimeError(
                    f"a capture daemon already listens on {self.path}; stop it with "
                    "`mnemo capture stop` or use it"
                )
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(self.path))
        os.chmod(self.path, 0o600)
        self.sock.listen(8)
        self.sock.settimeout(0.5)
        self._stop = threading.Event()
        self.thread = threading.Thread(
            target=self._serve, name="mnemo-capture-control", daemon=True
        )
        self.thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                break
            with conn:
                try:
                    conn.settimeout(2.0)
                    data = b""
                    while not data.endswith(b"\n") and len(data) < 65536:
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                    try:
                        message = json.loads(data)
                        if not isinstance(message, dict):
                            raise ValueError('a request is one JSON object, like {"cmd": "status"}')
                        reply = self.handle(message)
                    except (ValueError, TypeError) as e:
                        reply = {"error": f"bad request: {e}"}
                    except Exception as e:  # noqa: BLE001 - the socket outlives any one request
                        log.exception("control request failed")
                        reply = {"error": f"the request failed: {type(e).__name__}"}
                    conn.sendall(json.dumps(reply).encode() + b"\n")
                except OSError as e:
                    log.debug("control connection failed: %s", e)

    def close(self) -> None:
        self._stop.set()
        self.thread.join(timeout=2)
        self.sock.close()
        self.path.unlink(missing_ok=True)
