"""Where captured screenshots go: ``YYYY/MM/DD/<UTC time>Z_m<monitor>.jpg`` with a sidecar
``<image>.json``, private to the user, within a byte budget and a maximum age; and the sound of a
clip slot, ``<UTC slot start>Z_a<stream>.ogg`` with its sidecar, counted in the same budget and
age limit, and deleted sooner where ``keep_audio_days`` says so.

The folder is marked as mnemo's (``perception/capture/owned.py``) before anything is written; one
that holds files and no marker is refused. Recovery, the budget and the age limit delete only the
daemon's own files there (names defined in ``owned``): the user's files in the folder stay.

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
import threading
import time
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from perception.capture.owned import (
    HEARTBEATS,
    LOCK,
    audio_name,
    claim,
    day_folder,
    day_folders,
    frame_name,
    is_audio_name,
    kind,
    sidecar_of,
    temp_name,
)

log = logging.getLogger(__name__)


class CaptureFolderBusy(RuntimeError):
    pass


def hold_folder(root: Path) -> int:
    """This process's claim on a capture folder: ``flock`` on ``<root>/.capture.lock``, naming the
    holder, kept until the returned descriptor is closed (or the process ends). A second daemon on
    the folder would write into it and, starting, delete the first one's frames in flight as crash
    leftovers; it gets ``CaptureFolderBusy`` instead. The folder is claimed first (``owned.claim``:
    a folder with files and no marker raises ``NotACaptureFolder`` and gets no lock file)."""
    import fcntl

    claim(root)
    fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
        os.close(fd)
        raise CaptureFolderBusy(
            f"{root} is being captured into by {holder}; stop that daemon "
            "(`mnemo capture stop`) or capture into another --out"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()}".encode(), 0)
    return fd


@dataclass(frozen=True)
class Written:
    image: Path
    bytes: int  # image and sidecar


class CaptureStore:
    """The capture folder, its budget and its age limit."""

    def __init__(
        self,
        root: str | Path,
        budget_bytes: int = 0,
        max_age_days: float = 0,
        min_free_bytes: int = 0,
        cipher=None,
        keep_audio_days: float = 0,
    ) -> None:
        self.root = Path(root).expanduser()
        self.keep_audio_days = keep_audio_days  # 0: sound is kept as long as frames are
        self.budget_bytes = budget_bytes  # 0: no budget
        self.max_age_days = max_age_days  # 0: keep forever
        self.min_free_bytes = min_free_bytes
        self.cipher = cipher  # a cryptography Fernet, or None to store plain JPEG
        self._frames: deque[tuple[Path, int]] = deque()  # frames and sound, oldest first
        self.total_bytes = 0
        self.deleted = 0
        self._claimed = False
        self._lock = threading.Lock()  # frames come from the grab loop, sound from its own thread

    def claim(self) -> None:
        """Mark a new or empty folder as the capture's, or raise ``NotACaptureFolder`` (before
        anything is written or deleted there)."""
        if not self._claimed:
            claim(self.root)
            self._claimed = True

    def recover(self) -> dict[str, int]:
        """Make the folder private, drop what a crash left half written, and count what is stored.
        Call once before writing. Only the daemon's own files are looked at (``owned.kind``), in its
        day folders; raises ``NotACaptureFolder`` for a folder it may not use."""
        self.claim()
        os.chmod(self.root, 0o700)
        temps = orphans = 0
        frames = []
        for day in day_folders(self.root):
            for path in sorted(day.iterdir()):
                what = kind(self.root, path)
                if (
                    what not in ("temp", "frame", "audio")
                    or not path.is_file()
                    or path.is_symlink()
                ):
                    continue
                if what == "temp":
                    path.unlink(missing_ok=True)
                    temps += 1
                elif not sidecar_of(path).is_file():
                    path.unlink(
                        missing_ok=True
                    )  # killed between the image's rename and the sidecar's
                    orphans += 1
                else:
                    frames.append((path, path.stat().st_size + sidecar_of(path).stat().st_size))
        frames.sort(key=lambda f: f[0].name)  # names start with the UTC time
        self._frames = deque(frames)
        self.total_bytes = sum(s for _, s in frames)
        if temps or orphans:
            log.info(
                "%s: removed %d temp file(s) and %d image(s) without a sidecar left by a crash",
                self.root,
                temps,
                orphans,
            )
        return {"temps": temps, "orphans": orphans, "frames": len(frames)}

    def free_bytes(self) -> int:
        return shutil.disk_usage(self.root).free

    def low_on_disk(self) -> bool:
        return bool(self.min_free_bytes) and self.free_bytes() < self.min_free_bytes

    def write(self, jpeg: bytes, meta: dict, captured_at: datetime, monitor: int) -> Written:
        """Store one frame and its sidecar (``meta`` plus ``captured_at`` and ``monitor``)."""
        name = frame_name(captured_at, monitor, self.cipher is not None)
        return self._write(name, jpeg, {"monitor": monitor, **meta}, captured_at)

    def write_audio(self, ogg: bytes, meta: dict, slot_start: datetime, stream: str) -> Written:
        """Store the sound of one clip slot of ``stream`` and its sidecar (``meta`` plus
        ``captured_at``, the slot's start)."""
        name = audio_name(slot_start, stream, self.cipher is not None)
        return self._write(name, ogg, meta, slot_start)

    def _write(self, name: str, body: bytes, meta: dict, captured_at: datetime) -> Written:
        self.claim()
        day = day_folder(self.root, captured_at)
        data = self.cipher.encrypt(body) if self.cipher is not None else body
        path = day / name
        side = json.dumps(
            {"captured_at": captured_at.astimezone(UTC).isoformat(timespec="milliseconds"), **meta},
            ensure_ascii=False,
        ).encode()
        if self.cipher is not None:  # the window title is as private as the pixels
            side = self.cipher.encrypt(side)
        size = len(data) + len(side)
        with self._lock:
            self._make_room(size)
            _atomic_write(path, data)
            try:
                _atomic_write(sidecar_of(path), side)
            except BaseException:  # a full disk between the two: no file without its sidecar
                path.unlink(missing_ok=True)
                raise
            _fsync_dir(day)
            self._frames.append((path, size))
            self.total_bytes += size
        return Written(path, size)

    def heartbeat(self, record: dict) -> None:
        """A line in the day's heartbeat log: the daemon ran and the screen had not changed."""
        self.claim()
        day = day_folder(self.root, datetime.now())
        fd = os.open(
            day / HEARTBEATS, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600
        )
        line = json.dumps(record, ensure_ascii=False)
        if self.cipher is not None:  # a Fernet token per line
            line = self.cipher.encrypt(line.encode()).decode("ascii")
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def _make_room(self, size: int) -> None:
        if not self.budget_bytes:
            return
        if size > self.budget_bytes:
            raise OSError(
                f"one frame or sound ({size} bytes) is larger than the capture budget ({self.budget_bytes} bytes); "
                "raise [capture] budget_mb"
            )
        while self._frames and self.total_bytes + size > self.budget_bytes:
            self._delete_oldest()

    def _expire_audio(self, now: float) -> int:
        stamp = datetime.fromtimestamp(now - self.keep_audio_days * 86400, tz=UTC).strftime(
            "%Y%m%dT%H%M%S"
        )
        with self._lock:
            old = [
                (p, size)
                for p, size in self._frames
                if is_audio_name(p.name) and p.name[:15] < stamp
            ]
            for path, size in old:
                self._frames.remove((path, size))
                self._delete(path, size)
        return len(old)

    def _delete_oldest(self) -> None:
        path, size = (
            self._frames.popleft()
        )  # only files recover() found or write() wrote: the daemon's
        self._delete(path, size)

    def _delete(self, path: Path, size: int) -> None:
        sidecar_of(path).unlink(missing_ok=True)  # sidecar first: never a sidecar-less image
        path.unlink(missing_ok=True)
        self.total_bytes -= size
        self.deleted += 1

    def expire(self, now: float | None = None) -> int:
        """Delete frames and sound (and heartbeat logs) older than ``max_age_days``, and sound older
        than ``keep_audio_days``; returns the files deleted (sidecars not counted)."""
        now = now or time.time()
        n = self._expire_audio(now) if self.keep_audio_days else 0
        if not self.max_age_days:
            return n
        cutoff = datetime.fromtimestamp(now - self.max_age_days * 86400, tz=UTC)
        stamp = cutoff.strftime("%Y%m%dT%H%M%S")
        with self._lock:
            while self._frames and self._frames[0][0].name[:15] < stamp:
                self._delete_oldest()
                n += 1
        for day in reversed(day_folders(self.root)):
            log_file = day / HEARTBEATS
            if (
                log_file.is_file()
                and not log_file.is_symlink()
                and log_file.stat().st_mtime < cutoff.timestamp()
            ):
                log_file.unlink(missing_ok=True)
            if day.stat().st_mtime < (cutoff - timedelta(days=1)).timestamp() and not any(
                day.iterdir()
            ):
                day.rmdir()  # an empty day folder of the daemon's layout: nothing of the user's in it
        return n


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(temp_name(path.name))
    fd = os.open(
        tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600
    )  # never through a link
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
