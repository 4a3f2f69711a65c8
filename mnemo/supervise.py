"""A child process kept alive by its parent: restarted with backoff when it dies, ended with it.

``mnemo capture --ingest`` runs its watcher this way: a watcher that crashes (a model that fails
to load, a store it cannot open for a while) comes back without the user noticing a gap, one that
keeps crashing is retried ever more slowly, and none outlives the daemon, even a daemon killed
with SIGKILL: Linux's parent-death signal then kills it, SIGKILL too. A child that was sent SIGTERM
instead (to commit the clip in hand first) outlived its dead daemon by over 30 s once in CI, for a
reason nothing recorded; nothing is lost to the SIGKILL, as a commit cut short is undone by the
next writer (``graph.commit``) and the clip is ingested again. A daemon that stops normally
ends its child with SIGTERM and waits for it (``stop``).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _libc():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc if hasattr(libc, "prctl") else None
    except OSError:
        return None


class Supervised:
    """Runs ``cmd`` until ``stop``; restarts it ``first_delay_s`` after it exits, doubling the delay
    up to ``max_delay_s`` while it keeps exiting, back to ``first_delay_s`` once a run lasted
    ``healthy_s``."""

    def __init__(
        self,
        cmd: list[str],
        name: str,
        say: Callable[[str], None] = print,
        first_delay_s: float = 1.0,
        max_delay_s: float = 60.0,
        healthy_s: float = 60.0,
        **popen,
    ) -> None:
        self.cmd, self.name, self.say, self.popen = cmd, name, say, popen
        self.first_delay_s, self.max_delay_s, self.healthy_s = first_delay_s, max_delay_s, healthy_s
        self.restarts = 0
        self._proc: subprocess.Popen | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"supervise-{name}", daemon=True)
        self._libc = _libc()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self) -> Supervised:
        self._thread.start()
        return self

    def _spawn(self) -> subprocess.Popen | None:
        with self._lock:
            if self._stopping.is_set():
                return None
            self._proc = subprocess.Popen(self._with_parent_death(self.cmd), **self.popen)
            return self._proc

    def _with_parent_death(self, cmd: list[str]) -> list[str]:
        """``cmd`` started through ``python -m mnemo.supervise PID``, which asks for the parent-death
        signal and then becomes ``cmd`` (exec keeps it). Not a ``preexec_fn``: in a process with
        threads, the forked child of a ``preexec_fn`` can deadlock on a lock another thread held at
        the fork (one did: the parent waited in ``_execute_child`` and the fast tier hung)."""
        if self._libc is None:
            return cmd
        return [sys.executable, "-m", "mnemo.supervise", str(os.getpid()), *cmd]

    def _run(self) -> None:
        delay = self.first_delay_s
        while True:
            try:
                proc = (
                    self._spawn()
                )  # this thread lives as long as the child: the parent-death signal is tied to it
            except OSError as e:  # no memory or processes left to start it: try again later
                self.say(f"{self.name} could not be started ({e}); trying again in {delay:g} s")
                if self._stopping.wait(delay):
                    return
                delay = min(delay * 2, self.max_delay_s)
                continue
            if proc is None:
                return
            started = time.monotonic()
            code = proc.wait()
            if self._stopping.is_set():
                return
            if time.monotonic() - started >= self.healthy_s:
                delay = self.first_delay_s
            self.restarts += 1
            self.say(
                f"{self.name} (pid {proc.pid}) exited with code {code}; restarting it in {delay:g} s "
                f"(restart {self.restarts})"
            )
            if self._stopping.wait(delay):
                return
            delay = min(delay * 2, self.max_delay_s)

    def stop(self, timeout_s: float = 120.0) -> int | None:
        """End the child (SIGTERM, SIGKILL after ``timeout_s``) and stop restarting it; its exit code."""
        with self._lock:
            self._stopping.set()
            proc = self._proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._thread.join(timeout=5)
        return proc.returncode


def _die_with_parent_then_exec(argv: list[str]) -> None:
    """``python -m mnemo.supervise PARENT_PID CMD...``: SIGKILL when the thread that started this
    process ends, then exec ``CMD`` (the signal survives the exec)."""
    parent, cmd = int(argv[0]), argv[1:]
    libc = _libc()
    if libc is None or libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
        print(
            f"mnemo.supervise: cannot ask for the parent-death signal; not starting {cmd[0]}",
            file=sys.stderr,
        )
        os._exit(1)
    if os.getppid() != parent:  # the parent died before the prctl: nobody would end this one
        os._exit(1)
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    _die_with_parent_then_exec(sys.argv[1:])
