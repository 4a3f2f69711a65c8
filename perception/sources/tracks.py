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
drops are counted in the clip's notes. A gap of more than ``MAX_GAP_S`` without fixes ends a move
(where the owner went meanwhile is not known) but not a stay whose fixes on both sides are within
its radius (a phone indoors loses the sky, not its owner), up to ``STAY_MAX_GAP_S``.

GPX is XML from outside: a file that declares a DTD is refused (GPX needs none, and entity
expansion is how an XML file eats memory), and only the elements above are read.
"""

from __future__ import annotations

import hashlib
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from perception.errors import MediaError
from perception.records import Clip, SourceInfo, TrackSegment

TRACK_SUFFIXES = frozenset({".gpx"})
STAY_RADIUS_M = 100.0
STAY_MIN_S = 10 * 60.0
MAX_GAP_S = 15 * 60.0
STAY_MAX_GAP_S = 12 * 3600.0  # a night at home with the phone's GPS off; beyond, not known
MAX_BYTES = 256 << 20  # a day of 1 Hz fixes is about 10 MB of GPX
EARLIEST = datetime(1990, 1, 1, tzinfo=timezone.utc)
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
    if not text:
        return None
    try:
        t = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=timezone.utc)  # GPX times are UTC


def read_gpx(path: str | Path, now: datetime | None = None) -> Track:
    """The recorded fixes of a GPX file; ``MediaError`` naming the file when it cannot be read or
    holds no point with a time and a position."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_BYTES:
            raise MediaError(str(p), f"{size >> 20} MiB is more than a GPS track holds "
                             f"(at most {MAX_BYTES >> 20} MiB); split it")
        data = p.read_bytes()
    except OSError as e:
        raise MediaError(str(p), f"cannot be read ({e.strerror or e}); check the path and its permissions") from e
    head = data[:data.find(b"<gpx")] if b"<gpx" in data else data
    if b"<!DOCTYPE" in head or b"<!ENTITY" in data:
        raise MediaError(str(p), "declares a DTD or entities, which GPX never needs; refused (open and re-export it)")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        raise MediaError(str(p), f"is not well-formed XML ({e}); is it a GPX file, and is it whole?") from e
    if _local(root.tag) != "gpx":
        raise MediaError(str(p), f"is XML but not GPX (its root is <{_local(root.tag)}>)")
    now = now or datetime.now(timezone.utc)
    dropped: dict[str, int] = {}
    fixes: dict[float, Fix] = {}
    for el in root.iter():
        if _local(el.tag) != "trkpt":
            continue
        when = next((_time(c.text) for c in el if _local(c.tag) == "time"), None)
        why = ""
        try:
            lat, lon = float(el.get("lat", "nan")), float(el.get("lon", "nan"))
        except ValueError:
            lat = lon = math.nan
        if when is None:
            why = "no time"
        elif not (math.isfinite(lat) and math.isfinite(lon) and -90 <= lat <= 90 and -180 <= lon <= 180):
            why = "position out of range"
        elif lat == 0 and lon == 0:
            why = "at 0, 0 (no fix)"
        elif not EARLIEST <= when <= now + timedelta(days=1):
            why = "time not plausible (a clock never set?)"
        if why:
            dropped[why] = dropped.get(why, 0) + 1
            continue
        fixes.setdefault(when.timestamp(), Fix(when.timestamp(), lat, lon))
    if not fixes:
        left = "; ".join(f"{n} point(s): {why}" for why, n in dropped.items())
        raise MediaError(str(p), "holds no recorded point with a time and a position"
                         + (f" ({left})" if left else " (a planned route or waypoints only?)"))
    return Track(str(p), tuple(fixes[t] for t in sorted(fixes)), dropped)


def _centre(fixes: list[Fix]) -> tuple[float, float]:
    lats, lons = sorted(f.lat for f in fixes), sorted(f.lon for f in fixes)
    return round(lats[len(lats) // 2], 6), round(lons[len(lons) // 2], 6)


def _segment(kind: str, fixes: list[Fix]) -> TrackSegment:
    km = sum(distance_m(a, b) for a, b in zip(fixes, fixes[1:])) / 1000
    gap = max((b.ts - a.ts for a, b in zip(fixes, fixes[1:])), default=0.0)
    first, last = fixes[0], fixes[-1]
    return TrackSegment(kind, first.ts, last.ts, (round(first.lat, 6), round(first.lon, 6)),
                        (round(last.lat, 6), round(last.lon, 6)),
                        _centre(fixes) if kind == "stay" else None, round(km, 3), len(fixes), gap)


def segments(track: Track, radius_m: float = STAY_RADIUS_M, min_stay_s: float = STAY_MIN_S,
             max_gap_s: float = MAX_GAP_S) -> list[TrackSegment]:
    """The track's stays and the moves between them, in time order. A move is cut at every gap
    longer than ``max_gap_s``; a stretch that never leaves ``radius_m`` of where it began (a single
    fix, a short wait) went nowhere and is left out."""
    fx = track.fixes
    stays: list[tuple[int, int]] = []
    i = 0
    while i < len(fx):
        j = i
        while (j + 1 < len(fx) and distance_m(fx[i], fx[j + 1]) <= radius_m
               and fx[j + 1].ts - fx[j].ts <= STAY_MAX_GAP_S):
            j += 1
        if fx[j].ts - fx[i].ts >= min_stay_s:
            stays.append((i, j))
            i = j + 1
        else:
            i += 1
    out: list[TrackSegment] = []

    def move(run: list[Fix]) -> None:
        if any(distance_m(run[0], f) > radius_m for f in run[1:]):  # else it went nowhere, too briefly to stay
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
            out.append(_segment("stay", list(fx[start:end + 1])))
    return out


def plan_track_clips(path: str | Path) -> tuple[Track, list[tuple[Clip, TrackSegment]]]:
    """The track and its clips, one per stay or move; ``MediaError`` when it cannot be read."""
    from perception.sources.media import file_sha256

    track = read_gpx(path)
    first = track.fixes[0].ts
    source = SourceInfo(str(path), file_sha256(Path(path)), track.fixes[-1].ts - first, False, False,
                        datetime.fromtimestamp(first, timezone.utc), "track")
    out = []
    for k, seg in enumerate(segments(track)):
        clip_id = hashlib.sha256(f"{source.sha256}:track:{k}:{seg.start_ts!r}".encode()).hexdigest()[:24]
        out.append((Clip(clip_id, source, k, seg.start_ts - first, max(seg.end_ts - seg.start_ts, 1.0)), seg))
    return track, out


def dropped_note(track: Track) -> str:
    """Why points of the track were left out, said once for the file ("" when none were)."""
    return "; ".join(f"{n} point(s) left out: {why}" for why, n in track.dropped.items())
