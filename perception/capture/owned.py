"""What in a capture folder is mnemo's to delete, and nothing else.

A capture folder carries a marker, ``.mnemo-capture`` (a small JSON with a format number), written
when the daemon creates the folder or is given an empty one. The daemon's files have names that only
it writes, all defined here:

- frames ``YYYY/MM/DD/<YYYYmmddTHHMMSS.mmm>Z_m<monitor>.jpg`` (``.jpg.enc`` when encrypted), the
  time in UTC, the day folder in local time;
- sound ``YYYY/MM/DD/<YYYYmmddTHHMMSS.mmm>Z_a<stream>.ogg`` (``.ogg.enc``): one 30 s clip slot of
  one audio stream (``mic``: the microphone; ``out``: what the computer played), Opus in Ogg, the
  time the slot's start on the clip grid (``perception/capture/audio_store.py``);
- their sidecars, the frame's or sound's name plus ``.json``;
- temp files ``.<frame, sound or sidecar name>.tmp`` (storage's atomic writes), in a day folder;
- ``heartbeat.jsonl`` in a day folder; ``.capture.lock`` and the marker (and its temp) in the root.

Crash recovery, the age limit, the byte budget and ``mnemo forget`` delete only such files, and only
in a marked folder: whatever else is in it (a photo, a ``build.tmp``, a ``draft.enc``) is the user's
and stays. A folder that holds anything and has no marker is refused, never adopted silently; one
written by an older mnemo (frames and sidecars, no marker) is adopted on the user's word with
``mnemo capture --adopt`` (``adopt``).
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

log = logging.getLogger(__name__)

MARKER = ".mnemo-capture"
MARKER_FORMAT = 1
LOCK = ".capture.lock"
HEARTBEATS = "heartbeat.jsonl"
TMP_SUFFIX = ".tmp"
SIDECAR_SUFFIX = ".json"

_FRAME = re.compile(r"(\d{8}T\d{6}\.\d{3})Z_m(\d+)\.jpg(?:\.enc)?")
AUDIO_STREAMS = ("mic", "out")  # the microphone; what the computer played (the sink's monitor)
_AUDIO = re.compile(r"(\d{8}T\d{6}\.\d{3})Z_a(mic|out)\.ogg(?:\.enc)?")
_DAY_PARTS = (re.compile(r"\d{4}"), re.compile(r"\d{2}"), re.compile(r"\d{2}"))


class NotACaptureFolder(RuntimeError):
    """A folder mnemo may not capture into or delete in, with what to do."""


def frame_name(captured_at: datetime, monitor: int, encrypted: bool) -> str:
    """The name of a frame captured at ``captured_at`` on ``monitor``."""
    utc = captured_at.astimezone(UTC)
    return f"{utc:%Y%m%dT%H%M%S}.{utc.microsecond // 1000:03d}Z_m{monitor}.jpg" + (
        ".enc" if encrypted else ""
    )


def is_frame_name(name: str) -> bool:
    return _FRAME.fullmatch(name) is not None


def frame_time(name: str) -> datetime | None:
    """The capture time a frame's name carries (UTC, to the millisecond); None for other names."""
    m = _FRAME.fullmatch(name)
    return datetime.strptime(m.group(1), "%Y%m%dT%H%M%S.%f").replace(tzinfo=UTC) if m else None


def audio_name(slot_start: datetime, stream: str, encrypted: bool) -> str:
    """The name of ``stream``'s sound of the clip slot starting at ``slot_start``."""
    if stream not in AUDIO_STREAMS:
        raise ValueError(f"audio stream {stream!r} is not one of {', '.join(AUDIO_STREAMS)}")
    utc = slot_start.astimezone(UTC)
    return f"{utc:%Y%m%dT%H%M%S}.{utc.microsecond // 1000:03d}Z_a{stream}.ogg" + (
        ".enc" if encrypted else ""
    )


def is_audio_name(name: str) -> bool:
    return _AUDIO.fullmatch(name) is not None


def audio_of(name: str) -> tuple[datetime, str] | None:
    """The slot start (UTC) and the stream a sound's name carries; None for other names."""
    m = _AUDIO.fullmatch(name)
    if m is None:
        return None
    return datetime.strptime(m.group(1), "%Y%m%dT%H%M%S.%f").replace(tzinfo=UTC), m.group(2)


def is_media_name(name: str) -> bool:
    """A frame's or a sound's name: what the daemon stores with a sidecar."""
    return is_frame_name(name) or is_audio_name(name)


def sidecar_of(frame: Path) -> Path:
    return frame.with_name(frame.name + SIDECAR_SUFFIX)


def temp_name(name: str) -> str:
    """The temp file an atomic write of ``name`` goes through."""
    return f".{name}{TMP_SUFFIX}"


def _is_sidecar_name(name: str) -> bool:
    return name.endswith(SIDECAR_SUFFIX) and is_media_name(name[: -len(SIDECAR_SUFFIX)])


def _is_temp_name(name: str) -> bool:
    if not (name.startswith(".") and name.endswith(TMP_SUFFIX)):
        return False
    inner = name[1 : -len(TMP_SUFFIX)]
    return is_media_name(inner) or _is_sidecar_name(inner)


def is_day_folder(root: Path, folder: Path) -> bool:
    """``folder`` is ``root/YYYY/MM/DD``."""
    try:
        parts = folder.relative_to(root).parts
    except ValueError:
        return False
    return len(parts) == 3 and all(p.fullmatch(s) for p, s in zip(_DAY_PARTS, parts))


def kind(root: Path, path: Path) -> str | None:
    """What a file in capture folder ``root`` is to the daemon: ``frame``, ``audio``, ``sidecar``,
    ``temp`` or ``heartbeat`` (in a day folder), ``marker`` or ``lock`` (in the root); None: not the daemon's."""
    name = path.name
    if path.parent == root:
        if name == MARKER or name == temp_name(MARKER):
            return "marker"
        return "lock" if name == LOCK else None
    if not is_day_folder(root, path.parent):
        return None
    if is_frame_name(name):
        return "frame"
    if is_audio_name(name):
        return "audio"
    if _is_sidecar_name(name):
        return "sidecar"
    if _is_temp_name(name):
        return "temp"
    return "heartbeat" if name == HEARTBEATS else None


def day_folders(root: Path) -> list[Path]:
    """The day folders under ``root``, oldest first (no other part of the tree is walked)."""
    out = []
    for year in _subdirs(root, _DAY_PARTS[0]):
        for month in _subdirs(year, _DAY_PARTS[1]):
            out.extend(_subdirs(month, _DAY_PARTS[2]))
    return out


def _subdirs(folder: Path, pattern: re.Pattern) -> list[Path]:
    try:
        return sorted(
            p
            for p in folder.iterdir()
            if pattern.fullmatch(p.name) and p.is_dir() and not p.is_symlink()
        )
    except OSError:
        return []


def is_marked(root: Path) -> bool:
    """``root`` carries a marker this mnemo can read; raises ``NotACaptureFolder`` for a marker from a
    newer mnemo or one that is not a marker at all."""
    marker = root / MARKER
    if not marker.is_file():
        return False
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
        version = data["format"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise NotACaptureFolder(
            f"{marker} is not a capture marker ({e}); remove it if you made it, or capture "
            "into another --out"
        ) from e
    if not isinstance(version, int) or version > MARKER_FORMAT:
        raise NotACaptureFolder(
            f"{marker} has format {version!r}, written by a newer mnemo (this one reads "
            f"format {MARKER_FORMAT}); upgrade mnemo or capture into another --out"
        )
    return True


def inside(root: Path, folder: Path) -> bool:
    """``folder`` (under ``root``) is really inside it: no link on the way leads elsewhere (a year
    folder linked to ``~/Pictures/2024`` would make the user's files look like the daemon's)."""
    return folder.resolve() == root.resolve().joinpath(*folder.relative_to(root).parts)


def day_folder(root: Path, when: datetime) -> Path:
    """The day folder of ``when`` (local time) in capture folder ``root``, made private if new;
    ``NotACaptureFolder`` if a link on its way leads out of ``root``."""
    day = root / when.astimezone().strftime("%Y/%m/%d")
    mkdir_private(day)
    if not inside(root, day):
        raise NotACaptureFolder(
            f"{day} leads out of {root} through a link; mnemo writes and deletes only inside "
            "its capture folder: remove the link, or capture into another --out"
        )
    return day


def capture_root_of(folder: Path) -> Path | None:
    """The marked capture folder whose day folder ``folder`` is (with no link on the way), else None."""
    folder = Path(folder)
    if (
        len(folder.parents) < 3
        or not is_day_folder(folder.parents[2], folder)
        or not inside(folder.parents[2], folder)
    ):
        return None
    try:
        return folder.parents[2] if is_marked(folder.parents[2]) else None
    except NotACaptureFolder as e:
        log.warning("%s; nothing is deleted there", e)
        return None


def _write_marker(root: Path, adopted: bool) -> None:
    body = json.dumps(
        {
            "format": MARKER_FORMAT,
            "written_by": "mnemo capture",
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "adopted": adopted,
            "owns": "YYYY/MM/DD/<UTC>Z_m<monitor>.jpg[.enc] and <UTC>Z_a<stream>.ogg[.enc] with "
            "<file>.json, heartbeat.jsonl",
        }
    )
    tmp = root / temp_name(MARKER)
    fd = os.open(
        tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600
    )  # a link there: refused
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(body + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, root / MARKER)


def mkdir_private(path: Path) -> None:
    """Create the folder and any missing parents as 0700 (mkdir's mode is masked by the umask and
    parents=True gives the parents the default mode)."""
    missing = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        folder.mkdir(mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)


@dataclass(frozen=True)
class Contents:
    frames: int  # capture-named frames in day folders
    others: int  # anything else (files or folders) that is not the daemon's


def survey(root: Path) -> Contents:
    """What a folder holds: the daemon's frames (in its day folders) and the other entries of its
    root and day folders (year and month folders are not walked beyond the day pattern)."""
    frames = others = 0
    for p in root.iterdir():
        others += kind(root, p) is None and not (p.is_dir() and _DAY_PARTS[0].fullmatch(p.name))
    for day in day_folders(root):
        for p in day.iterdir():
            k = kind(root, p)
            frames += k == "frame"
            others += k is None
    return Contents(frames, others)


def claim(root: Path) -> bool:
    """Make ``root`` a capture folder if it may be one: a new folder or an empty one is marked (True);
    a marked one is taken as it is (False). Anything else raises ``NotACaptureFolder``, saying what
    to do, and nothing in the folder is changed."""
    root = Path(root).expanduser()
    if root.exists() and not root.is_dir():
        raise NotACaptureFolder(f"{root} is a file; give --out a folder (a new or empty one)")
    if root.is_dir():
        if is_marked(root):
            return False
        entries = [p.name for p in root.iterdir()]
        if [n for n in entries if n != LOCK]:  # a lone lock: an older mnemo that stored nothing
            found = survey(root)
            older = (
                f" It holds {found.frames} frame(s) named as mnemo's capture names them: if an older mnemo "
                f"captured into it, run `mnemo capture --out {root} --adopt` once to mark it (mnemo will then "
                "delete there only its own frames, sidecars and temp files, never other files)."
                if found.frames
                else ""
            )
            raise NotACaptureFolder(
                f"{root} is not empty and has no {MARKER} marker, so it is not a capture folder mnemo made; "
                "mnemo captures only into a new or empty folder, so that it never deletes or changes your "
                f"files. Choose a new or empty folder with --out (or [capture] out).{older}"
            )
    mkdir_private(root)
    _write_marker(root, adopted=False)
    log.info("%s: marked as a capture folder (%s)", root, MARKER)
    return True


def adopt(root: Path) -> Contents:
    """Mark a folder on the user's word (``mnemo capture --adopt``), typically one an older mnemo
    captured into; returns what it holds. Only the daemon's files there will ever be deleted."""
    root = Path(root).expanduser()
    if not root.is_dir():
        claim(root)
        return Contents(0, 0)
    if is_marked(root):
        return survey(root)
    found = survey(root)
    _write_marker(root, adopted=True)
    log.info(
        "%s: adopted as a capture folder: %d frame(s) of mnemo's, %d other entries left alone",
        root,
        found.frames,
        found.others,
    )
    return found
