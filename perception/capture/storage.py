"""Where captured screenshots go: ``YYYY/MM/DD/<UTC time>_m<monitor>.jpg`` with a sidecar
``<image>.json``, private to the user, within a byte budget and a maximum age.

Each file is written to a temp file, fsynced and renamed; the sidecar goes last, so an image with a
sidecar is complete. A crash can leave a temp file or an image without its sidecar; ``recover``
removes both when the daemon starts. Folders are 0700 and files 0600. The oldest frames are
deleted to make room for a new one, so the budget holds before every write.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

log = logging.getLogger(__name__)

TMP_SUFFIX = ".tmp"
HEARTBEATS = "heartbeat.jsonl"


class CaptureFolderBusy(RuntimeError):
    pass


def hold_folder(root: Path) -> int:
    """This process's claim on a capture folder: ``flock`` on ``<root>/.capture.lock``, naming the
    holder, kept until the returned descriptor is closed (or the process ends). A second daemon on
    the folder would write into it and, starting, delete the first one's frames in flight as crash
    leftovers; it gets ``CaptureFolderBusy`` instead."""
    import fcntl

    _mkdir_private(root)
    fd = os.open(root / ".capture.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
        os.close(fd)
        raise CaptureFolderBusy(f"{root} is being captured into by {holder}; stop that daemon "
                                "(`mnemo capture stop`) or capture into another --out") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()}".encode(), 0)
    return fd


def _is_frame(path: Path) -> bool:
    return path.suffix in (".jpg", ".enc") and not path.name.startswith(".")


@dataclass(frozen=True)
class Written:
    image: Path
    bytes: int  # image and sidecar


class CaptureStore:
    """The capture folder, its budget and its age limit."""

    def __init__(self, root: str | Path, budget_bytes: int = 0, max_age_days: float = 0,
                 min_free_bytes: int = 0, cipher=None) -> None:
        self.root = Path(root).expanduser()
        self.budget_bytes = budget_bytes  # 0: no budget
        self.max_age_days = max_age_days  # 0: keep forever
        self.min_free_bytes = min_free_bytes
        self.cipher = cipher  # a cryptography Fernet, or None to store plain JPEG
        self._frames: deque[tuple[Path, int]] = deque()  # oldest first
        self.total_bytes = 0
        self.deleted = 0

    def recover(self) -> dict[str, int]:
        """Make the folder private, drop what a crash left half written, and count what is stored.
        Call once before writing."""
        _mkdir_private(self.root)
        os.chmod(self.root, 0o700)
        temps = orphans = 0
        frames = []
        for path in sorted(self.root.rglob("*")):
            if not path.is_file():
                continue
            if path.name.endswith(TMP_SUFFIX):
                path.unlink(missing_ok=True)
                temps += 1
            elif _is_frame(path):
                if not path.with_name(path.name + ".json").is_file():
                    path.unlink(missing_ok=True)  # killed between the image's rename and the sidecar's
                    orphans += 1
                else:
                    size = path.stat().st_size + path.with_name(path.name + ".json").stat().st_size
                    frames.append((path, size))
        frames.sort(key=lambda f: f[0].name)  # names start with the UTC time
        self._frames = deque(frames)
        self.total_bytes = sum(s for _, s in frames)
        if temps or orphans:
            log.info("%s: removed %d temp file(s) and %d image(s) without a sidecar left by a crash",
                     self.root, temps, orphans)
        return {"temps": temps, "orphans": orphans, "frames": len(frames)}

    def free_bytes(self) -> int:
        return shutil.disk_usage(self.root).free

    def low_on_disk(self) -> bool:
        return bool(self.min_free_bytes) and self.free_bytes() < self.min_free_bytes

    def write(self, jpeg: bytes, meta: dict, captured_at: datetime, monitor: int) -> Written:
        """Store one frame and its sidecar (``meta`` plus ``captured_at`` and ``monitor``)."""
        day = self.root / captured_at.astimezone().strftime("%Y/%m/%d")
        _mkdir_private(day)
        stamp = captured_at.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%S") + f".{captured_at.microsecond // 1000:03d}Z"
        data = self.cipher.encrypt(jpeg) if self.cipher is not None else jpeg
        image = day / f"{stamp}_m{monitor}.jpg{'.enc' if self.cipher is not None else ''}"
        side = json.dumps({"captured_at": captured_at.astimezone(timezone.utc).isoformat(timespec="milliseconds"),
                           "monitor": monitor, **meta}, ensure_ascii=False).encode()
        if self.cipher is not None:  # the window title is as private as the pixels
            side = self.cipher.encrypt(side)
        size = len(data) + len(side)
        self._make_room(size)
        _atomic_write(image, data)
        try:
            _atomic_write(image.with_name(image.name + ".json"), side)
        except BaseException:  # a full disk between the two: no image without its sidecar
            image.unlink(missing_ok=True)
            raise
        _fsync_dir(day)
        self._frames.append((image, size))
        self.total_bytes += size
        return Written(image, size)

    def heartbeat(self, record: dict) -> None:
        """A line in the day's heartbeat log: the daemon ran and the screen had not changed."""
        day = self.root / datetime.now().astimezone().strftime("%Y/%m/%d")
        _mkdir_private(day)
        fd = os.open(day / HEARTBEATS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        line = json.dumps(record, ensure_ascii=False)
        if self.cipher is not None:  # a Fernet token per line
            line = self.cipher.encrypt(line.encode()).decode("ascii")
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def _make_room(self, size: int) -> None:
        if not self.budget_bytes:
            return
        if size > self.budget_bytes:
            raise OSError(f"one frame ({size} bytes) is larger than the capture budget ({self.budget_bytes} bytes); "
                          "raise [capture] budget_mb")
        while self._frames and self.total_bytes + size > self.budget_bytes:
            self._delete_oldest()

    def _delete_oldest(self) -> None:
        path, size = self._frames.popleft()
        path.with_name(path.name + ".json").unlink(missing_ok=True)  # sidecar first: never a sidecar-less image
        path.unlink(missing_ok=True)
        self.total_bytes -= size
        self.deleted += 1

    def expire(self, now: float | None = None) -> int:
        """Delete frames (and heartbeat logs) older than ``max_age_days``; returns frames deleted."""
        if not self.max_age_days:
            return 0
        cutoff = datetime.fromtimestamp((now or time.time()) - self.max_age_days * 86400, tz=timezone.utc)
        stamp = cutoff.strftime("%Y%m%dT%H%M%S")
        n = 0
        while self._frames and self._frames[0][0].name[:15] < stamp:
            self._delete_oldest()
            n += 1
        for log_file in self.root.glob(f"*/*/*/{HEARTBEATS}"):
            if log_file.stat().st_mtime < cutoff.timestamp():
                log_file.unlink(missing_ok=True)
        for day in sorted(self.root.glob("*/*/*"), reverse=True):
            if day.is_dir() and day.stat().st_mtime < (cutoff - timedelta(days=1)).timestamp() and not any(day.iterdir()):
                day.rmdir()
        return n


def _mkdir_private(path: Path) -> None:
    """Create the folder and any missing parents as 0700 (mkdir's mode is masked by the umask and
    parents=True gives the parents the default mode)."""
    missing = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        folder.mkdir(mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}{TMP_SUFFIX}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
