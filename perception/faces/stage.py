"""Faces of one clip: detect, keep the usable ones, and group them into clip-local people.

The quality filter drops faces that are too small or too blurred to embed reliably (an out-of-focus
face in the background embeds close to everyone); detector-score limits live in each backend because
score scales differ between detectors. Grouping is average-linkage clustering with the rule that two
faces of one frame are two people.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from perception.cluster import agglomerate
from perception.faces.base import FaceAnalyzer
from perception.records import FaceObservation
from perception.sources.frames import SHARP_SIDE, limit_size


@dataclass(frozen=True)
class FacePolicy:
    min_face_px: int = 40  # shorter side of the box
    min_sharpness: float = 20.0  # variance of the Laplacian of the crop resized to 128x128
    cluster_max_distance: float = 0.08  # average cosine distance to group faces within a clip


def sharpness(frame_rgb: np.ndarray, box_xywh: tuple[int, int, int, int]) -> float:
    import cv2

    x, y, w, h = box_xywh
    H, W = frame_rgb.shape[:2]
    x0, y0, x1, y1 = max(0, x), max(0, y), min(W, x + w), min(H, y + h)
    if x1 - x0 < 2 or y1 - y0 < 2:
        return 0.0
    gray = cv2.cvtColor(np.ascontiguousarray(frame_rgb[y0:y1, x0:x1]), cv2.COLOR_RGB2GRAY)
    return float(cv2.Laplacian(cv2.resize(gray, (128, 128)), cv2.CV_64F).var())


def _crop(frame_rgb: np.ndarray, box_xywh: tuple[int, int, int, int], side: int = 112) -> bytes:
    from llm.images import jpeg_bytes

    x, y, w, h = box_xywh
    m = w // 4  # some context around the box
    H, W = frame_rgb.shape[:2]
    return jpeg_bytes(
        np.ascontiguousarray(
            frame_rgb[max(0, y - m) : min(H, y + h + m), max(0, x - m) : min(W, x + w + m)]
        ),
        side,
    )


@dataclass
class LastFaceless:
    """The last frame the analyzer ran on and found nothing in, kept from clip to clip by a
    watcher (``Perceivers.last_faceless``), which sees clips in order: a clip's first frame that
    differs from it only where no face fits is not looked at either."""

    frame: np.ndarray | None = None


def smallest_face(analyzer: FaceAnalyzer, shape: tuple[int, ...], policy: FacePolicy) -> int:
    """The shortest side, in a frame of ``shape``, of a face that can be kept: the policy's
    ``min_face_px``, or the analyzer's own smallest where it says it and that is larger (dlib's
    detector, run on a 1080p screen scaled to 640 px, finds none under 60 px)."""
    own = getattr(analyzer, "smallest_face_px", None)
    return max(policy.min_face_px, own(shape) if own is not None else 0)


def no_room_for_a_face(
    before: np.ndarray, after: np.ndarray, side: int, text: np.ndarray | None = None
) -> bool:
    """Whether two RGB frames of one size differ only in regions (``changed_regions``, changes
    closer than a face's side taken as one) each thinner than ``side`` in width or in height: no
    face's box, ``side`` wide and high, can have come in wholly by changed pixels, so where there
    was none before there is none now. ``text``: where ``after`` shows text that an accessibility
    tree speaks for (``TreeText.mask``; its pictures are not in it), whose changes (a page turned)
    bring no face. Frames of two sizes differ everywhere."""
    import cv2

    from perception.ocr.stage import changed_regions

    if before.shape != after.shape:
        return False
    # a face is large: compared at the size distinct frames are (``limit_size``, ``SHARP_SIDE``)
    a, scale = limit_size(cv2.cvtColor(before, cv2.COLOR_RGB2GRAY), SHARP_SIDE)
    b = limit_size(cv2.cvtColor(after, cv2.COLOR_RGB2GRAY), SHARP_SIDE)[0]
    side = max(1, int(side * scale))
    if text is not None and text.shape == before.shape[:2]:
        spoken = cv2.resize(text.view(np.uint8), a.shape[::-1], interpolation=cv2.INTER_NEAREST)
        a[spoken > 0] = 0
        b[spoken > 0] = 0
    regions = changed_regions(a, b, margin_px=0, gap_px=side)
    return all(min(x1 - x0, y1 - y0) < side for x0, y0, x1, y1 in regions)


def detect_faces(
    clip_id: str,
    frames: list[np.ndarray],
    times_s: list[float],
    analyzer: FaceAnalyzer,
    policy: FacePolicy,
    keep_crops: bool = False,
    analyzed: list[int] | None = None,
    returns: dict[int, int] | None = None,
    text: Sequence[np.ndarray | None] = (),
    last: LastFaceless | None = None,
    where_changed: bool = True,
) -> tuple[list[FaceObservation], int]:
    """Usable faces with a clip-local ``person`` label, and how many detections were dropped.

    ``analyzed`` are the frames to run the analyzer on (default: all); any other frame repeats the
    last analyzed one before it (a near-duplicate, ``distinct_frames``) and gets its faces at its
    own time without detecting and embedding them again. ``returns`` maps a frame that shows again
    what an earlier analyzed frame showed (``returning_views``) to that frame, whose faces it gets
    the same way. A frame that differs from the last one the analyzer found nothing in only where
    no face fits (``no_room_for_a_face``: a word typed, a clock's hand, or, with ``text`` (per
    frame, where a tree speaks for its text), a page of text turned) has no face either, without
    a look; ``last`` holds such a frame from the clips before (``where_changed`` false: every
    frame of ``analyzed`` is looked at). ``keep_crops`` keeps a small JPEG of each face (for an
    LLM memory writer)."""
    todo = set(range(len(frames)) if analyzed is None else analyzed)
    returns = returns or {}
    kept: list[FaceObservation] = []
    frame_of: list[int] = []
    dropped = 0
    found: list[
        tuple[tuple[int, int, int, int], float, np.ndarray, float]
    ] = []  # of the last analyzed frame
    found_in: dict[int, list] = {}  # analyzed frame -> its faces
    empty = last.frame if last is not None else None  # the last analysed with nothing in it
    for i, (frame, t) in enumerate(zip(frames, times_s)):
        if i in todo or i == 0:
            if returns.get(i) in found_in:
                found = found_in[returns[i]]
            elif (
                where_changed
                and empty is not None
                and no_room_for_a_face(
                    empty,
                    frame,
                    smallest_face(analyzer, frame.shape, policy),
                    text[i] if i < len(text) else None,
                )
            ):
                found = []
            else:
                found = []
                detections = analyzer.analyze(frame)
                empty = None if detections else frame
                for box, score, emb in detections:
                    sharp = sharpness(frame, box)
                    if min(box[2], box[3]) < policy.min_face_px or sharp < policy.min_sharpness:
                        dropped += 1
                        continue
                    found.append(
                        (
                            (int(box[0]), int(box[1]), int(box[2]), int(box[3])),
                            float(score),
                            emb,
                            sharp,
                        )
                    )
            found_in[i] = found
        for j, (box, score, emb, sharp) in enumerate(found):
            kept.append(
                FaceObservation(
                    f"{clip_id}:f{i}.{j}",
                    t,
                    box,
                    score,
                    emb,
                    sharp,
                    crop_jpeg=_crop(frame, box) if keep_crops else b"",
                )
            )
            frame_of.append(i)
    if last is not None:
        last.frame = empty
    if not kept:
        return [], dropped
    labels = agglomerate(
        np.stack([f.embedding for f in kept]), policy.cluster_max_distance, frame_of
    )
    return [replace(f, person=f"p{k}") for f, k in zip(kept, labels)], dropped
