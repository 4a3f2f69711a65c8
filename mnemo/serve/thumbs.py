"""Small JPEGs for the page: a clip's keyframe (or a frame at a moment of it) and a person's face,
cut on demand from the clip's media and cached in the store.

The cache is ``<store>/.thumbs/<clip_id>/``: inside the store (mnemo's, mode 0700), never beside
the user's recordings, and one folder per clip so that forgetting a clip drops its pictures with it
(``drop_forgotten``). A clip's pictures are served only while the store holds the clip, and a
picture of encrypted screenshots is never written to disk (the cache would keep in the clear what
the capture folder keeps encrypted). A store in a bucket caches nothing.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import threading
from pathlib import Path

import numpy as np

from graph.rows import Memory
from mnemo.serve.media import MediaGone, clip_media

log = logging.getLogger(__name__)

CACHE = ".thumbs"
THUMB_W = 320
FACE_SIDE = 160
_FACE_ID = re.compile(r":f\d+\.(\d+)$")  # perception.faces.stage: "<clip>:f<frame>.<face in frame>"


def cache_dir(store) -> Path | None:
    """The store's picture cache, or None for a store in a bucket."""
    return None if "://" in store.uri else Path(store.uri) / CACHE


def _cached(store, clip_id: str, name: str, make) -> bytes:
    """The picture ``name`` of ``clip_id`` from the cache, else ``make()`` → (JPEG, may be kept),
    kept when allowed and the clip is still in the store once written (a forget may run meanwhile)."""
    root = cache_dir(store)
    path = root / clip_id / name if root else None
    if path is not None and path.is_file():
        return path.read_bytes()
    data, keep = make()
    if path is not None and keep:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_suffix(
            f".{os.getpid()}-{threading.get_ident()}.tmp"
        )  # routes run on a thread pool
        tmp.write_bytes(data)
        tmp.replace(path)
        store.catch_up()  # another process may have forgotten the clip while it was cut
        if not store.has_clip(clip_id):
            shutil.rmtree(path.parent, ignore_errors=True)
    return data


def _decode(data: bytes) -> np.ndarray:
    import cv2

    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        raise MediaGone("the clip's picture does not decode as an image")
    return image


def _jpeg(bgr: np.ndarray, quality: int = 80) -> bytes:
    import cv2

    ok, buf = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise MediaGone("the picture could not be encoded as JPEG")
    return buf.tobytes()


def _scaled(bgr: np.ndarray, width: int) -> np.ndarray:
    import cv2

    h, w = bgr.shape[:2]
    if w <= width:
        return bgr
    return cv2.resize(bgr, (width, max(1, round(h * width / w))), interpolation=cv2.INTER_AREA)


def thumbnail(store, row: dict, at_s: float | None = None, width: int = THUMB_W) -> bytes:
    """A JPEG ``width`` px wide of the clip in ``row``: its frame at ``at_s`` seconds into it
    (default its middle, a screenshot clip's nearest screenshot). ``MediaGone`` for a clip with no
    picture (audio, a GPS track, a moved file)."""
    if at_s is not None:  # to the second: a caller's ?at= cannot fill the cache with near copies
        at_s = float(round(at_s))
    name = f"w{width}-{'mid' if at_s is None else f'{at_s:.0f}'}.jpg"

    def make() -> tuple[bytes, bool]:
        frame = clip_media(row, "frame", at_s)
        return _jpeg(_scaled(_decode(frame.data), width)), not frame.encrypted

    return _cached(store, row["clip_id"], name, make)


def _sighting(memory) -> str | None:
    """The face a "<face_N> is visible" memory (one face, written from face observations) is about."""
    ids, prov = memory.entity_ids, memory.provenance
    if (
        len(ids) == 1
        and ids[0].startswith("face_")
        and prov
        and all(_FACE_ID.search(p) for p in prov)
    ):
        return ids[0]
    return None


def face_moments(store, entity_ids: list[str]) -> list[tuple[Memory, float]]:
    """(memory, absolute time) where one of ``entity_ids`` (a person's faces) was seen and no other
    face was, the longest sightings first: the only frames whose face cannot be someone else's.
    A sighting's first and last frames are its lowest and highest frame numbers (``:f<frame>.``),
    seen at its start and end; another face seen in the same frame rules that frame out. Empty when
    the person's face was always seen beside another (a card then shows initials)."""
    from graph import sql

    faces = {e for e in entity_ids if e.startswith("face_")}
    if not faces:
        return []
    shown = [m for m in store.memories_where(sql.involves(sorted(faces))) if _sighting(m) in faces]
    sightings: dict[str, list[Memory]] = {}  # clip -> its sightings of any face, read at once
    for o in store.memories_of_clips(sorted({m.clip_id for m in shown})):
        if _sighting(o):
            sightings.setdefault(o.clip_id, []).append(o)
    moments = []
    for m in sorted(shown, key=lambda m: (-(m.end_ts - m.start_ts), -m.start_ts)):
        crowded = {  # frames of this clip where another face was seen (the person's other faces too)
            _frame(p)
            for o in sightings.get(m.clip_id, [])
            if _sighting(o) != _sighting(m)
            for p in o.provenance
        }
        frames = sorted({_frame(p) for p in m.provenance})
        ends = {frames[0]: m.start_ts, frames[-1]: m.end_ts}
        moments += [(m, at) for frame, at in ends.items() if frame not in crowded]
    return moments


def _frame(observation_id: str) -> int:
    """The frame number of a face observation id (``<clip>:f<frame>.<face in frame>``)."""
    return int(observation_id.rsplit(":f", 1)[1].split(".", 1)[0])


def face_crop(store, row: dict, memory, at_ts: float, side: int = FACE_SIDE) -> bytes:
    """A square JPEG of the one face in the frame of the clip in ``row`` at ``at_ts`` (a moment of
    ``face_moments``), found again with dlib's HOG detector. ``MediaGone`` unless exactly one face is
    found there: a crop that could show someone else is not made."""
    at = min(max(0.0, at_ts - float(row["start_ts"])), float(row["duration_s"]))
    entity = _sighting(memory) or "face"

    def make() -> tuple[bytes, bool]:
        frame = clip_media(row, "frame", at)
        bgr = _decode(frame.data)
        boxes = _faces(bgr)
        if len(boxes) != 1:
            raise MediaGone(
                f"{len(boxes)} faces are found again in the frame of clip {row['clip_id']} at "
                f"{at:.1f} s, where one was seen"
            )
        x, y, w, h = boxes[0]
        return _jpeg(_square(bgr, x, y, w, h, side)), not frame.encrypted

    return _cached(store, row["clip_id"], f"{entity}-{at:.2f}-{side}.jpg", make)


def _faces(bgr: np.ndarray, max_side: int = 640) -> list[tuple[int, int, int, int]]:
    """Face boxes (x, y, w, h) in ``bgr``, found on it scaled to ``max_side`` as the dlib backend does."""
    import cv2
    import dlib

    scale = min(1.0, max_side / max(bgr.shape[:2]))
    small = (
        cv2.resize(bgr, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        if scale < 1
        else bgr
    )
    rgb = np.ascontiguousarray(small[:, :, ::-1])
    found = dlib.get_frontal_face_detector()(rgb, 1)
    return [
        (
            round(r.left() / scale),
            round(r.top() / scale),
            round(r.width() / scale),
            round(r.height() / scale),
        )
        for r in found
    ]


def _square(bgr: np.ndarray, x: int, y: int, w: int, h: int, side: int) -> np.ndarray:
    """The face with some hair and chin around it, square, ``side`` px."""
    import cv2

    half = round(max(w, h) * 0.8)
    cx, cy = x + w // 2, y + h // 2
    H, W = bgr.shape[:2]
    x0, y0, x1, y1 = max(0, cx - half), max(0, cy - half), min(W, cx + half), min(H, cy + half)
    return cv2.resize(bgr[y0:y1, x0:x1], (side, side), interpolation=cv2.INTER_AREA)


def drop_forgotten(store) -> int:
    """Delete the cached pictures of clips the store no longer holds (forgotten); how many clips'."""
    root = cache_dir(store)
    if root is None or not root.is_dir():
        return 0
    names = [p.name for p in root.iterdir() if p.is_dir()]
    held = {r["clip_id"] for r in store.get_clips(names)} if names else set()
    gone = [n for n in names if n not in held]
    for name in gone:
        shutil.rmtree(root / name, ignore_errors=True)
    if gone:
        log.info("%s: deleted the cached pictures of %d forgotten clip(s)", store.uri, len(gone))
    return len(gone)
