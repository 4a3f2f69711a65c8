"""A real PulseAudio server for tests and benches: a call's two sides without a sound card.

``PulseServer(folder)`` starts ``pulseaudio`` (Debian's ``pulseaudio``, ``pulseaudio-utils``) for
the current user with its socket in ``folder``, and no hardware: a null sink ``call`` (the default
sink: what the computer plays, the far side of a call) and a virtual microphone ``vmic`` (the
default source), which hears what is played into the null sink ``micsrc``. ``env`` points Pulse's
clients at it; ``play`` plays a sound file into a sink as a call or a voice in the room would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from perception.capture.pulse import stop_child

CALL_SINK = "call"  # the default sink: the far side of a call is played here
MIC_FEED = "micsrc"  # what is played here, the virtual microphone hears
MIC = "vmic"  # the default source
TOOLS = ("pulseaudio", "pactl", "parec", "paplay")
PACKAGES = "pulseaudio pulseaudio-utils"


def missing_tools() -> str:
    """What is missing to run a server here, or ""."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    return (
        f"{', '.join(missing)} not found; install them with `make xtools` (apt-get install {PACKAGES})"
        if missing
        else ""
    )


class PulseServer:
    def __init__(self, folder: Path, microphone: bool = True) -> None:
        self.folder = Path(folder)
        self.socket = self.folder / "native"
        self.env = {
            **os.environ,
            "PULSE_SERVER": f"unix:{self.socket}",
            "PULSE_RUNTIME_PATH": str(self.folder / "runtime"),
            "PULSE_STATE_PATH": str(self.folder / "state"),
            "PULSE_COOKIE": str(self.folder / "cookie"),
        }
        self.microphone = microphone
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        """Start the server (again, after ``kill``) with its sinks and virtual microphone."""
        for sub in ("runtime", "state"):
            (self.folder / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
        self.socket.unlink(missing_ok=True)
        self.proc = subprocess.Popen(
            [
                "pulseaudio",
                "-n",  # no default.pa: no sound card, no module of the machine's
                "--daemonize=no",
                "--exit-idle-time=-1",
                "--use-pid-file=no",
                "--log-target=stderr",
                "--log-level=warning",
                "-L",
                f"module-native-protocol-unix socket={self.socket} auth-anonymous=1",
                "-L",
                f"module-null-sink sink_name={CALL_SINK}",
            ],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=open(self.folder / "server.log", "ab"),  # noqa: SIM115 - the child holds it
        )
        deadline = time.monotonic() + 15
        while self.pactl_ok("info") is False:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                log = (self.folder / "server.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"pulseaudio did not start: {log}")
            time.sleep(0.1)
        if self.microphone:
            self.add_microphone()
        self.pactl("set-default-sink", CALL_SINK)

    def add_microphone(self) -> None:
        """The virtual microphone ``vmic``, made the default source."""
        self.pactl("load-module", "module-null-sink", f"sink_name={MIC_FEED}")
        self.pactl(
            "load-module", "module-remap-source", f"master={MIC_FEED}.monitor", f"source_name={MIC}"
        )
        self.pactl("set-default-source", MIC)

    def pactl(self, *args: str) -> str:
        done = subprocess.run(
            ["pactl", *args], env=self.env, capture_output=True, text=True, timeout=10
        )
        if done.returncode != 0:
            raise RuntimeError(f"pactl {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout.strip()

    def pactl_ok(self, *args: str) -> bool:
        try:
            self.pactl(*args)
            return True
        except (RuntimeError, subprocess.TimeoutExpired):
            return False

    def module_of(self, name: str) -> str:
        """The index of the module that made sink or source ``name``."""
        for line in self.pactl("list", "short", "modules").splitlines():
            index, module, args = (line.split("\t") + ["", ""])[:3]
            if f"sink_name={name}" in args or f"source_name={name}" in args:
                return index
        raise RuntimeError(f"no module made {name}")

    def play(self, wav: Path, sink: str = CALL_SINK, wait: bool = True) -> subprocess.Popen:
        """Play ``wav`` into ``sink`` (``MIC_FEED``: the virtual microphone hears it)."""
        p = subprocess.Popen(
            ["paplay", f"--device={sink}", str(wav)],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        if wait:
            _, err = p.communicate(timeout=120)
            if p.returncode != 0:
                raise RuntimeError(f"paplay {wav}: {err.decode(errors='replace').strip()}")
        return p

    def kill(self) -> None:
        stop_child(self.proc, 5, after_kill_s=5)

    close = kill
