"""What the process scenarios share (``processes_watcher``, ``processes_ray``, ``processes_folders``):
``mnemo`` run as a real process (``bench.faults.mnemo_argv``, with a ``prelude``), folders snapshotted before and after, the
user's files, and processes waited for, signalled and killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import psutil

# ------------------------------------------------------------------------------------------------
# running mnemo as a process


def finished(
    cmd: list[str], env: dict[str, str], cwd: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    """``cmd`` run to its end in ``cwd`` with ``env``, its output caught as text."""
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment for a mnemo child: offline, the fast text embedder, no display
    unless given one (and ``extra``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    env.update({"HF_HUB_OFFLINE": "1", "MNEMO_GRAPH__TEXT_EMBEDDER": "hash"})
    if "MNEMO_CACHE" in os.environ:
        env["MNEMO_CACHE"] = os.environ["MNEMO_CACHE"]
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    env.update(extra)
    return env


def snapshot_tree(root: Path) -> dict[str, tuple]:
    """Every entry under ``root`` (root included): sha-256 of its bytes, mtime and mode."""
    import hashlib

    def one(p: Path) -> tuple:
        st = p.lstat()
        digest = (
            hashlib.sha256(p.read_bytes()).hexdigest()
            if p.is_file() and not p.is_symlink()
            else None
        )
        return digest, st.st_mtime_ns, st.st_mode

    return {".": one(root), **{str(p.relative_to(root)): one(p) for p in sorted(root.rglob("*"))}}


def changed_files(before: dict[str, tuple], after: dict[str, tuple]) -> tuple[list[str], list[str]]:
    """(entries of ``before`` deleted or changed in bytes, mtime or mode; entries added)."""
    lost = [k for k, v in before.items() if after.get(k) != v]
    return lost, [k for k in after if k not in before]


def jpeg_photo(k: int, size: int) -> bytes:
    """A real photo as JPEG bytes, no EXIF: quarter ``k`` (0-3) of insightface's group photo (the
    one the demo uses, fetched and checked by ``bench.fixtures``), scaled to ``size``."""
    import cv2

    from bench.fixtures import group_photo

    image = cv2.imread(str(group_photo()))
    if image is None:
        raise RuntimeError(
            f"{group_photo()}: cannot read the group photo; fetch the bench fixtures again"
        )
    h, w = image.shape[:2]
    part = image[(k // 2) * h // 2 : (k // 2 + 1) * h // 2, (k % 2) * w // 2 : (k % 2 + 1) * w // 2]
    ok, buf = cv2.imencode(".jpg", cv2.resize(part, (size, size)))
    if not ok:
        raise RuntimeError(
            f"cannot encode part {k} of the group photo as JPEG (cv2.imencode failed)"
        )
    return buf.tobytes()


def user_file(path: Path, content: bytes, mtime: float, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    os.chmod(path, mode)
    os.utime(path, (mtime, mtime))


OLD = datetime(2019, 6, 1, 12, 0, tzinfo=UTC).timestamp()  # when the user's files were last touched


def alive_pids(pids: list[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out


def wait_gone(pids: list[int], timeout_s: float) -> list[int]:
    """Those of ``pids`` still running after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while (left := alive_pids(pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def signal_pids(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def kill_pids(pids: list[int]) -> None:
    signal_pids(pids, signal.SIGKILL)


def missing_in_ci(why: str) -> str:
    return why + (
        " (CI=true: a tool the bench needs is missing)" if os.environ.get("CI") == "true" else ""
    )


def cmdline_of(p: psutil.Process) -> list[str]:
    """``p``'s command line, or none once it has exited: a killed watcher is a zombie until the
    daemon reaps it, and psutil refuses a zombie's command line."""
    try:
        return p.cmdline()
    except psutil.NoSuchProcess:  # ZombieProcess too
        return []


def describe_pid(pid: int) -> str:
    try:
        p = psutil.Process(pid)
        with p.oneshot():
            return (
                f"pid {pid} ({' '.join(p.cmdline())[:80]}; {p.status()}, {p.num_threads()} thread(s), "
                f"{sum(p.cpu_times()[:2]):.1f} s of CPU)"
            )
    except psutil.NoSuchProcess:
        return f"pid {pid} (gone)"
