"""What a camera wrote into a photo: when it was taken, which way up it is, where, and with what.

A picture is a photo, not a screenshot, when it has no capture sidecar and its EXIF names a camera
(Make or Model) or a time it was taken (DateTimeOriginal). Read with Pillow, which mnemo already
has; HEIC/HEIF pictures are read when ``pillow-heif`` is installed (``pip install 'mnemo[heic]'``).

- **time**: DateTimeOriginal (else DateTimeDigitized, else DateTime) with its OffsetTimeOriginal
  (else OffsetTime): an exact instant; without an offset the camera's clock is read in this
  machine's zone, and the origin says so. A time before 1990 or more than a day in the future is a
  camera whose clock was never set: ignored, with a warning.
- **orientation**: the EXIF Orientation tag (1 to 8), applied when the picture is decoded
  (``oriented``), so faces and tags see it upright.
- **place**: GPSLatitude/GPSLongitude with their N/S and E/W refs, in degrees. A position outside
  ±90°/±180°, or exactly 0,0 (a receiver without a fix writes that), is dropped with a warning.
- **camera**: Make and Model, as written.

Broken EXIF (truncated, wrong types) gives what could be read and a warning, never an error: the
picture itself may still be good.
"""

from __future__ import annotations

import io
import logging
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

HEIF_SUFFIXES = {".heic", ".heif"}
EARLIEST = datetime(1990, 1, 1, tzinfo=UTC)  # before this, a camera clock that was never set
# EXIF tags (Pillow's ExifTags numbers)
MAKE, MODEL, ORIENTATION, DATETIME = 271, 272, 274, 306
EXIF_IFD, GPS_IFD = 0x8769, 0x8825
DATETIME_ORIGINAL, DATETIME_DIGITIZED = 36867, 36868
OFFSET_TIME, OFFSET_TIME_ORIGINAL, OFFSET_TIME_DIGITIZED = 36880, 36881, 36882
GPS_LAT_REF, GPS_LAT, GPS_LON_REF, GPS_LON = 1, 2, 3, 4


@dataclass(frozen=True)
class PhotoInfo:
    taken: datetime | None  # zone-aware
    time_origin: (
        str  # "exif" (with its offset), "exif-local" (no offset: this machine's zone), or ""
    )
    orientation: int  # 1 (as stored) to 8
    gps: tuple[float, float] | None  # (latitude, longitude) in degrees
    camera: str  # "Canon PowerShot S40", "" when not written
    warnings: tuple[str, ...] = ()

    @property
    def is_photo(self) -> bool:
        return bool(self.camera) or self.time_origin.startswith("exif")


def heif_available() -> bool:
    """Whether HEIC/HEIF pictures can be read (``pillow-heif`` installed); registers its opener."""
    try:
        from pillow_heif import register_heif_opener
    except ImportError:
        return False
    register_heif_opener()
    return True


def _text(value) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return str(value).replace("\x00", "").strip() if value is not None else ""


def _offset(text: str) -> timezone | None:
    """``+08:00`` / ``-05:30`` as a zone; None when absent or malformed."""
    t = text.strip()
    if len(t) != 6 or t[0] not in "+-" or t[3] != ":" or not (t[1:3] + t[4:]).isdigit():
        return None
    minutes = int(t[1:3]) * 60 + int(t[4:])
    if minutes > 14 * 60:
        return None
    return timezone(timedelta(minutes=minutes if t[0] == "+" else -minutes))


def _when(exif, sub, warnings: list[str], now: datetime) -> tuple[datetime | None, str]:
    for tag, offset_tag in (
        (DATETIME_ORIGINAL, OFFSET_TIME_ORIGINAL),
        (DATETIME_DIGITIZED, OFFSET_TIME_DIGITIZED),
        (DATETIME, OFFSET_TIME),
    ):
        raw = _text(sub.get(tag) if tag != DATETIME else exif.get(tag))
        if not raw:
            continue
        try:
            naive = datetime.strptime(raw[:19], "%Y:%m:%d %H:%M:%S")
        except ValueError:
            warnings.append(f"EXIF time {raw!r} is not a date; ignored")
            continue
        zone = _offset(_text(sub.get(offset_tag) or sub.get(OFFSET_TIME)))
        taken = naive.replace(tzinfo=zone) if zone is not None else naive.astimezone()
        if not EARLIEST <= taken <= now + timedelta(days=1):
            warnings.append(
                f"EXIF time {raw} is not a plausible time (a camera clock never set?); ignored"
            )
            return None, ""
        return taken, "exif" if zone is not None else "exif-local"
    return None, ""


def _degrees(value) -> float:
    d, m, s = (float(x) for x in value)
    return d + m / 60 + s / 3600


def _gps(gps, warnings: list[str]) -> tuple[float, float] | None:
    if not gps or GPS_LAT not in gps or GPS_LON not in gps:
        return None
    try:
        lat, lon = _degrees(gps[GPS_LAT]), _degrees(gps[GPS_LON])
    except (TypeError, ValueError, ZeroDivisionError):
        warnings.append("EXIF GPS position is malformed; no place kept")
        return None
    if _text(gps.get(GPS_LAT_REF)).upper() == "S":
        lat = -lat
    if _text(gps.get(GPS_LON_REF)).upper() == "W":
        lon = -lon
    if not (math.isfinite(lat) and math.isfinite(lon) and -90 <= lat <= 90 and -180 <= lon <= 180):
        warnings.append(f"EXIF GPS position {lat:g}, {lon:g} is out of range; no place kept")
        return None
    if lat == 0 and lon == 0:
        warnings.append("EXIF GPS position is 0, 0 (a receiver without a fix); no place kept")
        return None
    return round(lat, 6), round(lon, 6)


def photo_info(
    path: str | Path, data: bytes | None = None, now: datetime | None = None
) -> PhotoInfo:
    """What the picture's EXIF says (``data``: its bytes, when already read); a picture without
    EXIF, or one Pillow cannot open, gives an empty ``PhotoInfo`` (``is_photo`` false)."""
    from PIL import Image, UnidentifiedImageError

    path = Path(path)
    if path.suffix.lower() in HEIF_SUFFIXES:
        heif_available()
    warnings: list[str] = []
    try:
        with Image.open(io.BytesIO(data) if data is not None else path) as im:
            exif = im.getexif()
            sub = exif.get_ifd(EXIF_IFD) if exif else {}
            gps_ifd = exif.get_ifd(GPS_IFD) if exif else {}
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as e:
        return PhotoInfo(
            None,
            "",
            1,
            None,
            "",
            (f"EXIF unreadable ({e})",) if path.suffix.lower() != ".png" else (),
        )
    if not exif:
        return PhotoInfo(None, "", 1, None, "")
    taken, origin = _when(exif, sub, warnings, now or datetime.now(UTC))
    orientation = exif.get(ORIENTATION, 1)
    if not isinstance(orientation, int) or not 1 <= orientation <= 8:
        warnings.append(f"EXIF orientation {orientation!r} is not 1 to 8; read as stored")
        orientation = 1
    make, model = _text(exif.get(MAKE)), _text(exif.get(MODEL))
    camera = (
        model
        if make and model.lower().startswith(make.split()[0].lower())
        else " ".join(x for x in (make, model) if x)
    )
    return PhotoInfo(taken, origin, orientation, _gps(gps_ifd, warnings), camera, tuple(warnings))


def oriented(image: np.ndarray, orientation: int) -> np.ndarray:
    """``image`` (rows, columns[, channels]) turned upright for EXIF ``orientation`` (as Pillow's
    ``ImageOps.exif_transpose``)."""
    if orientation == 2:
        out = image[:, ::-1]
    elif orientation == 3:
        out = image[::-1, ::-1]
    elif orientation == 4:
        out = image[::-1]
    elif orientation == 5:
        out = image.swapaxes(0, 1)
    elif orientation == 6:
        out = np.rot90(image, k=-1)
    elif orientation == 7:
        out = image[::-1, ::-1].swapaxes(0, 1)
    elif orientation == 8:
        out = np.rot90(image, k=1)
    else:
        return image
    return np.ascontiguousarray(out)


def place_text(gps: tuple[float, float]) -> str:
    lat, lon = gps
    return f"{abs(lat):.5f}° {'N' if lat >= 0 else 'S'}, {abs(lon):.5f}° {'E' if lon >= 0 else 'W'}"
