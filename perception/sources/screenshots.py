"""Folders of screenshots and photos as a source: images grouped into 30 s clips by when they were
captured or taken.

Each screenshot may have a sidecar ``<image>.json`` (written by a capture daemon) with
``captured_at`` (ISO 8601), ``app`` and ``window``, and where an app's accessibility tree was rich
enough, ``screen_text``: the tree's lines with their boxes, the boxes it speaks for (OCR reads the
rest) and the windows read (``ScreenText``, ``_screen_text``; checked as untrusted input). A
picture without one whose EXIF names a camera or a time taken is a photo
(``perception.sources.photos``): its time is the EXIF time, its camera and GPS position are kept.
Failing both, the time comes from a ``YYYYmmdd?HHMMSS`` stamp in the file name, and failing that
from the file's modification time (said once per folder).

Clips are aligned to multiples of ``clip_s`` since the epoch, so a screenshot lands in the same clip
whichever run ingests it, and a clip's id is the hash of its grid slot (start and length) and its
images' contents: re-ingesting a folder skips the clips it already stored, a clip that gained a
screenshot is stored anew, and the same pictures at another time (an unchanged screen an hour
later, a screenshot copied into another day) are another clip.

A capture folder may also hold sound (``mnemo capture --audio``): for each 30 s slot of the grid and
each stream that had speech, one ``<slot start>Z_a<stream>.ogg`` (``.ogg.enc`` encrypted; the names
are ``perception.capture.owned``'s), the microphone (``mic``) or what the computer played
(``out``), with a sidecar like a frame's (``duration_s``, ``device``, ``speech_s``). Each such
``AudioPiece`` goes into the clip of the slot it starts in, beside that slot's frames; a slot with
sound and no frame is a clip too (a call in front of a still screen). The pieces' contents count in
the clip's id as the pictures' do, and a folder that holds only sound is found as one holding
pictures is.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from perception.capture.owned import audio_of
from perception.errors import MediaError
from perception.records import Clip, SourceInfo, TextLine
from perception.sources.frames import is_image_file
from perception.sources.media import clip_id, file_sha256
from perception.sources.photos import photo_info

log = logging.getLogger(__name__)

PHOTO_SUFFIXES = {
    ".jpg",
    ".jpeg",
    ".tif",
    ".tiff",
    ".webp",
    ".heic",
    ".heif",
}  # where cameras write EXIF
_STAMP = re.compile(r"(20\d{2})-?(\d{2})-?(\d{2})[ _T-]?(\d{2})[-_.:h]?(\d{2})[-_.:m]?(\d{2})")

# what a sidecar's ``screen_text`` may hold; more is not a screen but a broken or hostile file, and
# the frame is then read by OCR alone (a tree cut short would leave the boxes it speaks for unread)
MAX_TREE_LINES = 5000
MAX_TREE_CHARS = 200_000  # all lines together
MAX_LINE_CHARS = 4000
MAX_PAINT_BOXES = 256
MAX_TREE_WINDOWS = 64
MAX_ROLE_CHARS = 64
MAX_URL_CHARS = 2048  # a longer address is not kept (the text still is)
MAX_COORD = 32768  # boxes are clipped to [0, MAX_COORD], then to the frame when it is read


@dataclass(frozen=True)
class ScreenText:
    """A frame's text from the apps' accessibility trees (the sidecar's ``screen_text``),
    checked."""

    lines: tuple[TextLine, ...]  # source "atspi", confidence 1.0, boxes in the frame's pixels
    # boxes in paint order (later ones over earlier ones); True: the tree speaks for the box, OCR
    # must not read it; False: OCR reads it (a picture in an accessible window, a window without
    # a tree on top). Pixels under no box are read by OCR
    paint: tuple[tuple[int, int, int, int, bool], ...]
    url: str = ""  # the browser's address, where the tree had one ("" otherwise)


@dataclass(frozen=True)
class Screenshot:
    path: Path
    captured_at: datetime
    time_origin: str  # "sidecar", "exif", "exif-local", "filename" or "mtime"
    app: str = ""
    window: str = ""
    photo: bool = False  # a camera's picture (EXIF), not a captured screen
    camera: str = ""
    place: tuple[float, float] | None = None  # EXIF GPS: latitude, longitude
    input: bool = (
        False  # kept while the user typed or moved the mouse (the capture sidecar's "input")
    )
    screen_text: ScreenText | None = None  # the accessibility tree's text, where the capture had it


@dataclass(frozen=True)
class AudioPiece:
    """One stream's sound of one clip slot, as the capture daemon stored it."""

    path: Path
    stream: str  # "mic" (the microphone: the owner speaking) or "out" (what the computer played)
    start: datetime  # the slot's start (UTC), from the file's name
    duration_s: float  # what it covers from ``start`` (the sidecar's; the default slot if none)
    device: str = ""  # the PulseAudio device it was recorded from
    speech_s: float = 0.0  # seconds of speech the daemon's VAD found in it


@dataclass(frozen=True)
class ScreenClip:
    clip: Clip
    shots: tuple[Screenshot, ...]
    audio: tuple[AudioPiece, ...] = ()  # the sound of the slot, one piece per stream

    @property
    def legacy_id(self) -> str:
        """The id that earlier versions gave this clip: its images' contents only, so the
        same pictures at any time had one id (see ``stored_under_legacy_ids``)."""
        return f"screen-{self.clip.source.sha256[:20]}"


def _sidecar_path(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def _sidecar(path: Path) -> dict:
    side = _sidecar_path(path)
    if not side.is_file():
        return {}
    try:
        if path.suffix == ".enc":  # an encrypted screenshot's sidecar is encrypted too
            from perception.capture.crypto import CaptureKeyError, decrypt_file

            try:
                data = json.loads(decrypt_file(side))
            except CaptureKeyError as e:
                raise ValueError(str(e)) from e
        else:
            data = json.loads(side.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError) as e:
        log.warning("%s: unreadable sidecar (%s); using the file name or mtime instead", side, e)
        return {}


class _Malformed(ValueError):
    """Why a sidecar's ``screen_text`` is not used (said once, without the screen's text)."""


def _coord(v: object) -> int:
    """A box coordinate: an integer or a finite number, clipped to [0, MAX_COORD]."""
    if (
        isinstance(v, bool)
        or not isinstance(v, int | float)
        or (isinstance(v, float) and not math.isfinite(v))
    ):
        raise _Malformed(f"a box coordinate is {type(v).__name__}, not a finite number")
    return min(max(round(v), 0), MAX_COORD)


def _box(values: list) -> tuple[int, int, int, int] | None:
    """x0, y0, x1, y1 clipped; None when nothing is left of it."""
    x0, y0, x1, y1 = (_coord(v) for v in values)
    return (x0, y0, x1, y1) if x1 > x0 and y1 > y0 else None


def _url(window: dict) -> str:
    """A window's address when it is a plausible one: a string without spaces or control
    characters, at most ``MAX_URL_CHARS`` long; "" otherwise."""
    url = window.get("url", "")
    if not isinstance(url, str):
        raise _Malformed(f"a window's url is {type(url).__name__}, not a string")
    url = url.strip()
    if len(url) > MAX_URL_CHARS or any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        return ""
    return url


def _parse_screen_text(raw: object, front: str) -> ScreenText:
    """``screen_text`` as ``ScreenText``; ``_Malformed`` when any of it has the wrong type or shape
    or it holds more than the caps allow. Boxes out of range are clipped, and lines and boxes left
    empty are dropped (they show nothing). ``front``: the sidecar's window title, whose window's
    address is preferred."""
    if not isinstance(raw, dict):
        raise _Malformed(f"it is {type(raw).__name__}, not an object")
    if raw.get("source") != "atspi":
        raise _Malformed('its source is not "atspi"')
    lines, paint, windows = raw.get("lines", []), raw.get("paint", []), raw.get("windows", [])
    for name, value, cap in (
        ("lines", lines, MAX_TREE_LINES),
        ("paint", paint, MAX_PAINT_BOXES),
        ("windows", windows, MAX_TREE_WINDOWS),
    ):
        if not isinstance(value, list):
            raise _Malformed(f"its {name} is {type(value).__name__}, not a list")
        if len(value) > cap:
            raise _Malformed(f"{len(value)} {name}, more than {cap}")
    if not all(isinstance(w, dict) for w in windows):
        raise _Malformed("a window is not an object")
    for w in windows:
        for key in ("app", "title"):
            if not isinstance(w.get(key, ""), str):
                raise _Malformed(f"a window's {key} is not a string")
    urls = [_url(w) for w in windows]
    kept: list[TextLine] = []
    chars = 0
    used: list[int] = []  # the windows whose lines are kept, in order
    for k, entry in enumerate(lines):
        if not isinstance(entry, list) or len(entry) != 7:
            raise _Malformed(f"line {k} is not [text, role, x0, y0, x1, y1, window]")
        text, role, *box, window = entry
        if not isinstance(text, str) or not isinstance(role, str):
            raise _Malformed(f"line {k}: its text or role is not a string")
        if len(text) > MAX_LINE_CHARS or len(role) > MAX_ROLE_CHARS:
            raise _Malformed(f"line {k}: longer than {MAX_LINE_CHARS} characters (or its role)")
        chars += len(text)
        if chars > MAX_TREE_CHARS:
            raise _Malformed(f"more than {MAX_TREE_CHARS} characters of text")
        if (
            isinstance(window, bool)
            or not isinstance(window, int)
            or not 0 <= window < len(windows)
        ):
            raise _Malformed(f"line {k}: its window is not an index into the windows")
        xyxy = _box(box)
        if xyxy is not None and text.strip():
            kept.append(TextLine(text, xyxy, 1.0, "atspi"))
            used.append(window)
    boxes = []
    for k, entry in enumerate(paint):
        if not isinstance(entry, list) or len(entry) != 5:
            raise _Malformed(f"paint box {k} is not [x0, y0, x1, y1, flag]")
        *box, flag = entry
        if flag not in (0, 1) or not isinstance(flag, int):
            raise _Malformed(f"paint box {k}: its flag is not 0 or 1")
        xyxy = _box(box)
        if xyxy is not None:
            boxes.append((*xyxy, bool(flag)))
    # the address of the window in front, else of the first window whose text is kept
    order = [i for i, w in enumerate(windows) if w.get("title") == front and front] + used
    url = next((urls[i] for i in order if urls[i]), "")
    return ScreenText(tuple(kept), tuple(boxes), url)


def _screen_text(path: Path, meta: dict) -> ScreenText | None:
    """The sidecar's ``screen_text`` (None without one); a malformed one is ignored, said once
    naming the sidecar, and the frame is read by OCR as if the capture had not had it."""
    if "screen_text" not in meta:
        return None
    try:
        return _parse_screen_text(meta["screen_text"], str(meta.get("window", "")))
    except _Malformed as e:
        log.warning(
            "%s: screen_text ignored (%s); the frame is read by OCR instead",
            _sidecar_path(path),
            e,
        )
        return None


def _when(path: Path, meta: dict) -> tuple[datetime, str]:
    raw = meta.get("captured_at")
    if isinstance(raw, str):
        try:
            ts = datetime.fromisoformat(raw.replace("Z", "+00:00"))
            return (ts if ts.tzinfo else ts.astimezone()), "sidecar"
        except ValueError:
            log.warning("%s: captured_at %r is not ISO 8601; ignored", path, raw)
    m = _STAMP.search(path.stem)
    if m:
        try:
            year, month, day, hour, minute, second = (int(g) for g in m.groups())
            return datetime(year, month, day, hour, minute, second).astimezone(), "filename"
        except ValueError:
            pass
    return datetime.fromtimestamp(path.stat().st_mtime, tz=UTC), "mtime"


def scan(folder: Path) -> list[Screenshot]:
    """The folder's screenshots and photos (not recursive), in capture order."""
    shots = []
    by_mtime = []  # pictures timed by their file's modification time: said once for the folder
    for path in sorted(folder.iterdir()):
        if path.is_file() and is_image_file(path) and not path.name.startswith("."):
            meta = _sidecar(path)
            info = photo_info(path) if not meta and path.suffix.lower() in PHOTO_SUFFIXES else None
            for warning in info.warnings if info is not None else ():
                log.warning("%s: %s", path, warning)
            if info is not None and info.taken is not None:
                when, origin = info.taken, info.time_origin
            else:
                when, origin = _when(path, meta)
                if origin == "mtime":
                    by_mtime.append(path.name)
            if info is not None and info.is_photo:
                shots.append(
                    Screenshot(path, when, origin, photo=True, camera=info.camera, place=info.gps)
                )
            else:
                shots.append(
                    Screenshot(
                        path,
                        when,
                        origin,
                        str(meta.get("app", "")),
                        str(meta.get("window", "")),
                        input=meta.get("input") is True or meta.get("reason") == "input",
                        screen_text=_screen_text(path, meta),
                    )
                )
    if by_mtime:
        log.warning(
            "%s: %d picture(s) carry no time (no sidecar, EXIF time or time in the name: %s); their "
            "file's modification time is used, which a copy may have changed",
            folder,
            len(by_mtime),
            ", ".join(by_mtime[:3]) + (", …" if len(by_mtime) > 3 else ""),
        )
    return sorted(shots, key=lambda s: (s.captured_at, s.path.name))


def is_capture_audio(path: Path) -> bool:
    """A capture daemon's sound file (``<slot start>Z_a<stream>.ogg[.enc]``): part of its folder's
    screen clips, never a recording of its own."""
    return audio_of(path.name) is not None


def scan_audio(folder: Path, default_s: float = 30.0) -> list[AudioPiece]:
    """The capture daemon's sound files in the folder (not recursive), by slot and stream. A piece
    whose sidecar is missing or unreadable is kept (its name says when and which stream), covering
    ``default_s``."""
    pieces = []
    for path in sorted(folder.iterdir()):
        named = audio_of(path.name)
        if named is None or not path.is_file():
            continue
        meta = _sidecar(path)
        start, stream = named
        try:
            duration = float(meta.get("duration_s", default_s))
            speech = float(meta.get("speech_s", 0.0))
        except (TypeError, ValueError):
            log.warning("%s: duration_s or speech_s in the sidecar is not a number", path)
            duration, speech = default_s, 0.0
        if not duration > 0:
            duration = default_s
        pieces.append(
            AudioPiece(path, stream, start, duration, str(meta.get("device", "")), speech)
        )
    return sorted(pieces, key=lambda a: (a.start, a.stream))


AUDIO_RATE = 16000  # what the daemon records and what speech recognition takes


def read_audio_piece(piece: AudioPiece) -> np.ndarray:
    """A piece's sound as 16 kHz mono float32 (decrypted first when it is ``.enc``); ``MediaError``
    naming the file when it cannot be read. Another rate is resampled (linearly: speech only)."""
    import soundfile

    try:
        data = piece.path.read_bytes()
    except OSError as e:
        raise MediaError(
            piece.path, f"cannot read the file ({e.strerror or e}); check that it exists"
        ) from e
    if piece.path.suffix == ".enc":  # written by `mnemo capture` with encryption at rest
        from perception.capture.crypto import CaptureKeyError, decrypt_file

        try:
            data = decrypt_file(piece.path)
        except (CaptureKeyError, ValueError) as e:
            raise MediaError(piece.path, f"cannot decrypt the sound: {e}") from e
    try:
        samples, rate = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=True)
    except (soundfile.LibsndfileError, RuntimeError, ValueError, TypeError) as e:
        raise MediaError(
            piece.path, f"not a sound soundfile can read (Ogg/Opus expected): {e}"
        ) from e
    mono = samples.mean(axis=1).astype(np.float32)
    if rate != AUDIO_RATE and mono.size:
        n = int(round(mono.size * AUDIO_RATE / rate))
        mono = np.interp(np.arange(n) * (rate / AUDIO_RATE), np.arange(mono.size), mono).astype(
            np.float32
        )
    return mono


def folders_with_screenshots(paths: list[str]) -> list[Path]:
    """Folders among ``paths`` (searched recursively) that hold screenshots or a capture daemon's
    sound."""
    out = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            for d in [p, *sorted(x for x in p.rglob("*") if x.is_dir())]:
                if any(
                    c.is_file() and (is_image_file(c) or is_capture_audio(c)) for c in d.iterdir()
                ):
                    out.append(d)
    return out


def plan_screen_clips(
    folder: Path,
    clip_s: float = 30.0,
    closed_before: datetime | None = None,
    since: datetime | None = None,
) -> list[ScreenClip]:
    """One clip per ``clip_s`` window that holds screenshots or sound (a sound file goes to the window
    its slot starts in); unreadable files are left to decoding. With ``closed_before`` (a folder
    still being captured), only windows that ended by then: a window that gains a screenshot or its
    sound later would become a second clip. With ``since``, only windows that start then or later (a
    watcher that already looked at the earlier ones)."""
    windows: dict[int, list[Screenshot]] = {}
    sounds: dict[int, list[AudioPiece]] = {}
    for shot in scan(folder):
        windows.setdefault(int(shot.captured_at.timestamp() // clip_s), []).append(shot)
    for piece in scan_audio(folder, clip_s):
        sounds.setdefault(int(piece.start.timestamp() // clip_s), []).append(piece)
    slots = set(windows) | set(sounds)
    if closed_before is not None:
        slots = {i for i in slots if (i + 1) * clip_s <= closed_before.timestamp()}
    if since is not None:
        slots = {i for i in slots if i * clip_s >= since.timestamp()}
    clips = []
    for index in sorted(slots):
        shots, audio = windows.get(index, []), sounds.get(index, [])
        tz = shots[0].captured_at.tzinfo if shots else UTC
        start = datetime.fromtimestamp(index * clip_s, tz=tz or UTC)
        digest = hashlib.sha256()
        for path in [s.path for s in shots] + [a.path for a in audio]:
            try:
                digest.update(file_sha256(path).encode())
            except OSError:
                digest.update(str(path).encode())  # unreadable: decoding will say so
        sha = digest.hexdigest()
        source = SourceInfo(
            str(folder.resolve()),
            sha,
            clip_s,
            bool(audio),
            bool(shots),
            start,
            shots[0].time_origin if shots else "filename",
        )
        slot_id = f"screen-{clip_id(sha, index, clip_s)[:20]}"  # time and content, as a video's
        clips.append(
            ScreenClip(Clip(slot_id, source, index, 0.0, clip_s), tuple(shots), tuple(audio))
        )
    return clips


def stored_under_legacy_ids(clips: Sequence[ScreenClip], rows: Iterable[dict]) -> set[str]:
    """The ids of those ``clips`` that an earlier version already stored under their
    ``legacy_id``, given the stored clip rows of those legacy ids (``clip_id``, ``start_ts``,
    ``duration_s``).

    A store written by an earlier version holds screenshot clips under a content-only id, which says
    nothing about when; a clip's id now also names its grid slot, so re-ingesting an old folder
    would otherwise store every clip again. A stored row under the legacy id is this clip when it
    covers the same slot (same start and length): a legacy id alone is not enough, since it is also
    the id of the same pictures at any other time, which are other clips now. Rows are compared
    to the millisecond: both starts are the slot's grid time."""
    slots = {(r["clip_id"], round(r["start_ts"], 3), round(r["duration_s"], 3)) for r in rows}
    return {
        c.clip.clip_id
        for c in clips
        if (c.legacy_id, round(c.clip.start_ts, 3), round(c.clip.duration_s, 3)) in slots
    }
