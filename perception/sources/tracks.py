"""GPS tracks (GPX): where the owner was, cut into stays and moves.

A track is a source like a recording, but what it holds is positions, not media, so it is not cut
every 30 s: it is cut where the owner stopped. A **stay** is a stretch of at least
``STAY_MIN_S`` whose fixes all lie within ``STAY_RADIUS_M`` of its first fix (the stay-point
rule of Li et al., 2008); a **move** is the stretch between two stays (or a track's start or end
and a stay). Each stay and each move is one clip, so forgetting a time range forgets every stay
or move that touches it, whole.

Only recorded points count: ``<trkpt>`` with a time. Route points (``<rtept>``) are a plan, not
where anyone went, and waypoints are marks. A point without a time, outside ±90°/±180°, at exactly
0,0 (a receiver without a fix), or with a time before 1990 or in the future is dropped, and the
drops are counted and said once for the file. Fixes are kept at most one a second. A gap of more than ``MAX_GAP_S`` without fixes ends a move
(where the owner went meanwhile is not known) but not a stay whose fixes on both sides are within
its radius (a phone indoors loses the sky, not its owner), up to ``STAY_MAX_GAP_S``.

GPX is XML from outside: it is read by expat as a stream, keeping only the points; a file that
declares a DTD or an entity is refused in any encoding (GPX needs none, and entity expansion is
how an XML file eats memory); a stay is scanned in NumPy, so a dense track costs no quadratic
Python loop. A track whose stretches are only re-exported or grown gets the same clip ids for
what did not change, so a forgotten stay is not stored again.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from perception.errors import MediaError
from perception.records import Clip, SourceInfo, TrackSegment
from perception.sources.media import utc_time

TRACK_SUFFIXES = frozenset({".gpx"})
STAY_RADIUS_M = 100.0
STAY_MIN_S = 10 * 60.0
MAX_GAP_S = 15 * 60.0
STAY_MAX_GAP_S = 12 * 3600.0  # a night at home with the phone's GPS off; beyond, not known
MAX_BYTES = 256 << 20  # a day of 1 Hz fixes is about 10 MB of GPX
EARLIEST = datetime(1990, 1, 1, tzinfo=UTC)
EARTH_M = 6_371_008.8


@dataclass(frozen=True)
class Fix:
    ts: float
    lat: float
    lon: float


@dataclass(frozen=True)
class Track:
    path: str
    fixes: tuple[Fix, ...]  # in time order, one per instant
    dropped: dict[str, int]  # why points were left out -> how many


def distance_m(a: Fix, b: Fix) -> float:
    """Great-circle distance (haversine)."""
    p1, p2 = math.radians(a.lat), math.radians(b.lat)
    dp, dl = p2 - p1, math.radians(b.lon - a.lon)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_M * math.asin(min(1.0, math.sqrt(h)))


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _time(text: str | None) -> datetime | None:
    return utc_time(text and text.replace("z", "Z"))  # GPX times are UTC


class _Refused(Exception):
    """A declaration GPX never needs (a DTD, an entity)."""


class _Points:
    """expat handlers that keep only what ``<trkpt>`` elements say: their lat/lon and their
    ``<time>`` text. Memory grows with the points, not with the file."""

    def __init__(self) -> None:
        self.root = ""
        self.points: list[tuple[str, str, str]] = []  # (lat, lon, time text)
        self._in_point: tuple[str, str] | None = None
        self._time: list[str] | None = None

    def start(self, tag: str, attrs: dict) -> None:
        name = _local(tag)
        if not self.root:
            self.root = name
        if name == "trkpt":
            self._in_point, self._time = (attrs.get("lat", ""), attrs.get("lon", "")), []
        elif name == "time" and self._in_point is not None:
            self._time = []

    def text(self, data: str) -> None:
        if self._in_point is not None and self._time is not None and len(self._time) < 64:
            self._time.append(data)

    def end(self, tag: str) -> None:
        if _local(tag) == "trkpt" and self._in_point is not None:
            self.points.append((*self._in_point, "".join(self._time or ())))
            self._in_point, self._time = None, None

    @staticmethod
    def refuse(*_args) -> None:
        raise _Refused


def _parse(p: Path) -> _Points:
    from xml.parsers import expat

    found = _Points()
    parser = expat.ParserCreate(namespace_separator="}")
    parser.StartElementHandler, parser.EndElementHandler = found.start, found.end
    parser.CharacterDataHandler = found.text
    # refused whatever the encoding: GPX needs no DTD, and entities are how XML eats memory
    parser.StartDoctypeDeclHandler = parser.EntityDeclHandler = _Points.refuse
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    try:
        with p.open("rb") as f:
            parser.ParseFile(f)
    except _Refused:
        raise MediaError(
            str(p),
            "declares a DTD or entities, which GPX never needs; refused (open and re-export it)",
        ) from None
    except expat.ExpatError as e:
        raise MediaError(
            str(p),
            f"is not well-formed XML ({expat.ErrorString(e.code)} at line {e.lineno}); "
            "is it a GPX file, and is it whole?",
        ) from e
    except OSError as e:
        raise MediaError(
            str(p), f"cannot be read ({e.strerror or e}); check the path and its permissions"
        ) from e
    return found


def read_gpx(path: str | Path, now: datetime | None = None) -> Track:
    """The recorded fixes of a GPX file, at most one a second (a 10 Hz logger says no more about
    where its owner stayed); ``MediaError`` naming the file when it cannot be read or holds no
    point with a time and a position."""
    p = Path(path)
    try:
        size = p.stat().st_size
    except OSError as e:
        raise MediaError(
            str(p), f"cannot be read ({e.strerror or e}); check the path and its permissions"
        ) from e
    if size > MAX_BYTES:
        raise MediaError(
            str(p),
            f"{size >> 20} MiB is more than a GPS track holds (at most {MAX_BYTES >> 20} MiB); "
            "split it",
        )
    found = _parse(p)
    if found.root != "gpx":
        raise MediaError(str(p), f"is XML but not GPX (its root is <{found.root}>)")
    now = now or datetime.now(UTC)
    dropped: dict[str, int] = {}
    fixes: dict[int, Fix] = {}
    for raw_lat, raw_lon, raw_time in found.points:
        when = _time(raw_time)
        why = ""
        try:
            lat, lon = float(raw_lat), float(raw_lon)
        except ValueError:
            lat = lon = math.nan
        if when is None:
            why = "no time"
        elif not (
            math.isfinite(lat) and math.isfinite(lon) and -90 <= lat <= 90 and -180 <= lon <= 180
        ):
            why = "position out of range"
        elif lat == 0 and lon == 0:
            why = "at 0, 0 (no fix)"
        elif not EARLIEST <= when <= now + timedelta(days=1):
            why = "time not plausible (a clock never set?)"
        if why or when is None:
            dropped[why] = dropped.get(why, 0) + 1
            continue
        fixes.setdefault(math.floor(when.timestamp()), Fix(when.timestamp(), lat, lon))
    if not fixes:
        left = "; ".join(f"{n} point(s): {why}" for why, n in dropped.items())
        raise MediaError(
            str(p),
            "holds no recorded point with a time and a position"
            + (f" ({left})" if left else " (a planned route or waypoints only?)"),
        )
    return Track(str(p), tuple(fixes[t] for t in sorted(fixes)), dropped)


def _centre(fixes: list[Fix]) -> tuple[float, float]:
    lats, lons = sorted(f.lat for f in fixes), sorted(f.lon for f in fixes)
    return round(lats[len(lats) // 2], 6), round(lons[len(lons) // 2], 6)


def _segment(kind: str, fixes: list[Fix]) -> TrackSegment:
    km = sum(distance_m(a, b) for a, b in zip(fixes, fixes[1:])) / 1000
    first, last = fixes[0], fixes[-1]
    return TrackSegment(
        kind,
        first.ts,
        last.ts,
        (round(first.lat, 6), round(first.lon, 6)),
        (round(last.lat, 6), round(last.lon, 6)),
        _centre(fixes) if kind == "stay" else None,
        round(km, 3),
        len(fixes),
    )


def _stay_end(i: int, ts: np.ndarray, lat: np.ndarray, lon: np.ndarray, radius_m: float) -> int:
    """The last fix of a stay anchored at fix ``i``: the fixes up to it lie within ``radius_m`` of
    fix ``i`` with no gap longer than ``STAY_MAX_GAP_S``, but for single fixes outside whose next
    fix is back inside (a GPS glitch does not end a stay). Distances are computed in NumPy, a
    growing chunk at a time, so a long stay costs a few array operations, not a Python loop."""
    n, k, chunk = len(ts), i + 1, 16
    while k < n:
        hi = min(n, k + chunk)
        h = (
            np.sin((lat[k:hi] - lat[i]) / 2) ** 2
            + np.cos(lat[i]) * np.cos(lat[k:hi]) * np.sin((lon[k:hi] - lon[i]) / 2) ** 2
        )
        outside = 2 * EARTH_M * np.arcsin(np.minimum(1.0, np.sqrt(h))) > radius_m
        gap = np.diff(ts[k - 1 : hi]) > STAY_MAX_GAP_S
        bad = np.flatnonzero(outside | gap)
        if not len(bad):
            k, chunk = hi, chunk * 2
            continue
        b = k + int(bad[0])
        glitch = (
            not gap[b - k]
            and b + 1 < n
            and ts[b + 1] - ts[b - 1] <= STAY_MAX_GAP_S
            and distance_m(
                Fix(0, *np.degrees((lat[i], lon[i]))), Fix(0, *np.degrees((lat[b + 1], lon[b + 1])))
            )
            <= radius_m
        )
        if not glitch:
            return b - 1
        k = b + 1
    return n - 1


def segments(
    track: Track,
    radius_m: float = STAY_RADIUS_M,
    min_stay_s: float = STAY_MIN_S,
    max_gap_s: float = MAX_GAP_S,
) -> list[TrackSegment]:
    """The track's stays and the moves between them, in time order. A move is cut at every gap
    longer than ``max_gap_s``; a stretch that never leaves ``radius_m`` of where it began (a single
    fix, a short wait) went nowhere and is left out."""
    fx = track.fixes
    ts = np.array([f.ts for f in fx])
    lat, lon = np.radians([f.lat for f in fx]), np.radians([f.lon for f in fx])
    stays: list[tuple[int, int]] = []
    i = 0
    while i < len(fx):
        j = _stay_end(i, ts, lat, lon, radius_m)
        if ts[j] - ts[i] >= min_stay_s:
            stays.append((i, j))
            i = j + 1
        else:
            i += 1
    out: list[TrackSegment] = []

    def move(run: list[Fix]) -> None:
        if any(
            distance_m(run[0], f) > radius_m for f in run[1:]
        ):  # else it went nowhere, too briefly to stay
            out.append(_segment("move", run))

    edges = [(-1, -1), *stays, (len(fx), len(fx))]
    for (_, prev_end), (start, end) in zip(edges, edges[1:]):
        run: list[Fix] = []
        # a move shares its end fixes with the stays around it: it starts where the stay ended
        for k in range(max(prev_end, 0), min(start, len(fx) - 1) + 1):
            if run and fx[k].ts - run[-1].ts > max_gap_s:
                move(run)
                run = []
            run.append(fx[k])
        move(run)
        if start < len(fx):
            out.append(_segment("stay", list(fx[start : end + 1])))
    return out


def plan_track_clips(path: str | Path) -> tuple[Track, list[tuple[Clip, TrackSegment]]]:
    """The track and its clips, one per stay or move; ``MediaError`` when it cannot be read."""
    from perception.sources.media import file_sha256

    track = read_gpx(path)
    first = track.fixes[0].ts
    source = SourceInfo(
        str(path),
        file_sha256(Path(path)),
        track.fixes[-1].ts - first,
        False,
        False,
        datetime.fromtimestamp(first, UTC),
        "track",
    )
    pieces = segments(track)
    if not pieces:
        raise MediaError(
            str(path),
            f"its {len(track.fixes)} fix(es) never left {STAY_RADIUS_M:g} m of where they "
            f"began and span less than a stay ({STAY_MIN_S / 60:g} min): nothing to remember",
        )
    out = []
    for k, seg in enumerate(pieces):
        # from what the stretch is, not from the file: a re-export, or a track that grew, gives its
        # unchanged stays and moves the same ids (so a forgotten one stays forgotten)
        clip_id = hashlib.sha256(
            f"track:{seg.kind}:{seg.start_ts:.0f}:{seg.end_ts:.0f}:{seg.start}:{seg.end}".encode()
        ).hexdigest()[:24]
        out.append(
            (
                Clip(clip_id, source, k, seg.start_ts - first, max(seg.end_ts - seg.start_ts, 1.0)),
                seg,
            )
        )
    return track, out


def dropped_note(track: Track) -> str:
    """Why points of the track were left out, said once for the file ("" when none were)."""
    return "; ".join(f"{n} point(s) left out: {why}" for why, n in track.dropped.items())
