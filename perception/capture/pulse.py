"""PulseAudio's own tools as child processes: which devices are the defaults, their events, and
one recording stream a device.

mnemo records through the PulseAudio protocol, which PipeWire serves too (pipewire-pulse). It
drives Pulse's own clients (``pactl``, ``parec``, Debian's ``pulseaudio-utils``) rather than
binding libpulse in-process: a client library in the daemon's process that hangs or crashes on a
server restart takes the screen capture with it, while a child that dies is seen at once (its pipe
ends) and started again; a recording child costs about 1 % of a core, and no PyPI package is
needed. The price is one ``pactl`` run (a few ms) when the server says something changed.

``parec`` is told the device by name, never ``@DEFAULT_SOURCE@``: the recorder knows what it
records, and moves to a new default itself (``perception/capture/audio.py``).
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

SAMPLE_RATE = 16000  # what the speech models read; parec resamples
PACTL_TIMEOUT_S = 5.0
INSTALL = "install pulseaudio-utils (Debian, Ubuntu: apt-get install pulseaudio-utils)"


class PulseUnavailable(RuntimeError):
    """No Pulse server answers (or its tools are missing), with what to do."""


@dataclass(frozen=True)
class Defaults:
    source: str  # the default source: the microphone, unless it is a monitor
    sink: str  # the default sink: what the computer plays

    @property
    def monitor(self) -> str:
        return f"{self.sink}.monitor"


def tools_missing() -> list[str]:
    return [t for t in ("pactl", "parec") if shutil.which(t) is None]


def pactl(*args: str) -> str:
    """``pactl args`` and its output; ``PulseUnavailable`` saying why when it fails."""
    missing = tools_missing()
    if missing:
        raise PulseUnavailable(f"{', '.join(missing)} not found; {INSTALL}")
    try:
        done = subprocess.run(
            ["pactl", *args], capture_output=True, text=True, timeout=PACTL_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        raise PulseUnavailable(
            f"the sound server did not answer `pactl {' '.join(args)}` in {PACTL_TIMEOUT_S:g} s"
        ) from None
    if done.returncode != 0:
        why = (done.stderr or done.stdout).strip().splitlines()
        raise PulseUnavailable(
            f"no sound server answers ({why[-1] if why else f'pactl exit {done.returncode}'}); "
            "audio resumes when PulseAudio or pipewire-pulse runs"
        )
    return done.stdout.strip()


def stop_child(
    proc: subprocess.Popen | None, wait_s: float, after_kill_s: float | None = None
) -> None:
    """End a child that still runs: SIGTERM, and SIGKILL when it has not exited ``wait_s`` later
    (then, with ``after_kill_s``, wait that long for it to go)."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(wait_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        if after_kill_s is not None:
            proc.wait(after_kill_s)


def defaults() -> Defaults:
    """The default source and sink now."""
    return Defaults(pactl("get-default-source"), pactl("get-default-sink"))


def is_monitor(source: str) -> bool:
    """A sink's monitor: what a default source is when the computer has no microphone."""
    return source.endswith(".monitor")


class Events:
    """``pactl subscribe`` in a child process: ``on_change()`` is called from its thread when the
    server, a source, a sink or a card changes (a default moved, a device came or went). It is
    started again when it ends (a server restart) while ``running``."""

    def __init__(self, on_change: Callable[[], None]) -> None:
        self.on_change = on_change
        self.proc: subprocess.Popen | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mnemo-pulse-events", daemon=True)

    def start(self) -> Events:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            if tools_missing():
                self._stop.wait(5.0)
                continue
            try:
                self.proc = subprocess.Popen(
                    ["pactl", "subscribe"],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    stdin=subprocess.DEVNULL,
                    text=True,
                )
            except OSError as e:
                log.debug("pactl subscribe: %s", e)
                self._stop.wait(2.0)
                continue
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                if any(f" on {what} " in line for what in ("server", "source", "sink", "card")):
                    self.on_change()
            self.proc.wait()
            self.on_change()  # the server went away (or came back): look again
            self._stop.wait(1.0)

    def stop(self) -> None:
        self._stop.set()
        stop_child(self.proc, 2.0)


class Recording:
    """``parec`` recording ``device`` as 16 kHz mono 16-bit samples; ``on_chunk(samples, at)`` is
    called from its thread for each chunk read, ``at`` the wall-clock time it arrived. When the
    child ends (the device went away, the server stopped) ``ended`` holds why."""

    CHUNK = SAMPLE_RATE // 50  # samples a read: 20 ms (when they arrive says when they were heard)

    def __init__(self, device: str, name: str, on_chunk: Callable[[bytes, float], None]) -> None:
        self.device = device
        self._clock = time.time
        self.on_chunk = on_chunk
        self.ended = ""
        self.proc = subprocess.Popen(
            [
                "parec",
                "--raw",
                "--format=s16le",
                f"--rate={SAMPLE_RATE}",
                "--channels=1",
                f"--device={device}",
                "--client-name=mnemo capture",
                f"--stream-name={name}",
                "--latency-msec=20",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )
        self._thread = threading.Thread(target=self._read, name=f"mnemo-parec-{name}", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None and self.proc.stderr is not None
        size = self.CHUNK * 2
        while chunk := self.proc.stdout.read(size):
            self.on_chunk(chunk, self._clock())
        rc = self.proc.wait()
        err = self.proc.stderr.read().decode(errors="replace").strip().splitlines()
        self.ended = f"{err[-1] if err else 'parec'} (exit {rc})"

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        stop_child(self.proc, 2.0)
        self._thread.join(2.0)
