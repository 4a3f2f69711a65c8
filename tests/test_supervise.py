"""The capture daemon's watcher is supervised: restarted with backoff when it dies, ended when the
daemon stops, and never left running by a daemon killed with SIGKILL."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import psutil

from mnemo.supervise import Supervised


def _gone(pid: int, timeout_s: float) -> bool:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_a_child_that_keeps_dying_is_restarted_ever_more_slowly() -> None:
    said: list[str] = []
    sup = Supervised(
        [sys.executable, "-c", "import sys; sys.exit(3)"],
        "the watcher",
        say=said.append,
        first_delay_s=0.2,
        max_delay_s=0.8,
    ).start()
    time.sleep(2.5)  # runs at 0, ~0.2, ~0.6, ~1.4, ~2.2 s (delays 0.2, 0.4, 0.8, 0.8)
    sup.stop(timeout_s=5)
    assert 3 <= sup.restarts <= 6, said
    assert "exited with code 3; restarting it in 0.2 s" in said[0]
    assert "restarting it in 0.4 s" in said[1] and "restarting it in 0.8 s" in said[2]
    restarts = sup.restarts
    time.sleep(1.0)
    assert sup.restarts == restarts  # stopped means stopped


def test_stop_ends_a_running_child_and_it_is_not_restarted():
    sup = Supervised(
        [sys.executable, "-c", "import time; time.sleep(60)"], "the watcher", say=lambda m: None
    ).start()
    deadline = time.time() + 10
    while sup.pid is None and time.time() < deadline:
        time.sleep(0.05)
    pid = sup.pid
    assert pid is not None
    assert sup.stop(timeout_s=10) == -15  # SIGTERM
    assert _gone(pid, 5) and sup.restarts == 0


PARENT = textwrap.dedent("""
    import sys, time
    from mnemo.supervise import Supervised
    sup = Supervised([sys.executable, "-c", "import time; time.sleep(120)"], "the watcher").start()
    while sup.pid is None:
        time.sleep(0.05)
    print(sup.pid, flush=True)
    time.sleep(120)
""")


def test_a_daemon_killed_with_sigkill_takes_its_watcher_with_it():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        assert not _gone(child, 0.5)  # it runs
        parent.kill()
        parent.wait(timeout=10)
        assert _gone(child, 5), "the watcher outlived its daemon"
    finally:
        parent.kill()


def test_the_child_is_started_without_a_preexec_fn(monkeypatch):
    """A ``preexec_fn`` runs Python in the forked child of a process with threads; there it can
    wait forever on a lock another thread held at the fork (it hung the fast test tier in
    ``_execute_child``). The parent-death signal is asked for after the exec instead."""
    import mnemo.supervise as supervise

    seen = []
    real = subprocess.Popen

    def popen(cmd, **kw):
        seen.append((cmd, kw))
        return real(cmd, **kw)

    monkeypatch.setattr(supervise.subprocess, "Popen", popen)
    sup = Supervised(
        [sys.executable, "-c", "pass"], "the watcher", say=lambda m: None, first_delay_s=30
    ).start()
    deadline = time.time() + 10
    while not seen and time.time() < deadline:
        time.sleep(0.05)
    sup.stop(timeout_s=5)
    (cmd, kw), *_ = seen
    assert "preexec_fn" not in kw
    assert cmd[1:4] == ["-m", "mnemo.supervise", str(__import__("os").getpid())]


def test_a_child_whose_parent_is_gone_before_it_asks_for_the_signal_does_not_start(tmp_path):
    ran = tmp_path / "ran"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mnemo.supervise",
            "1",
            sys.executable,
            "-c",
            f"open({str(ran)!r}, 'w')",
        ],
        capture_output=True,
        timeout=30,
    )
    assert done.returncode == 1 and not ran.exists()  # its parent is not pid 1: it would outlive it
