"""Frames and still images: colour normalisation, reading, size limits and near-duplicate skipping.

Every image backend receives RGB uint8 (h, w, 3) arrays; ``to_rgb8`` is the one place that turns
grayscale, RGBA, 16-bit and float images into that.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from perception.errors import MediaError
from perception.sources.photos import HEIF_SUFFIXES, heif_available, oriented, photo_info

ENCRYPTED_SUFFIX = ".enc"  # an image encrypted at rest by the capture daemon: <name>.jpg.enc
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff", ".heic", ".heif"}
EXIF_SUFFIXES = {
    ".jpg",
    ".jpeg",
    ".webp",
    ".tif",
    ".tiff",
}  # where a camera writes its Orientation tag


def to_rgb8(image: np.ndarray) -> np.ndarray:
    """RGB uint8 (h, w, 3) from gray (h, w) / (h, w, 1), RGB, RGBA (alpha over white), any bit depth.

    Raises ``ValueError`` for arrays that are not images (wrong rank, empty, 2 or 5+ channels).
    """
    a = np.asarray(image)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    if a.ndim not in (2, 3) or a.size == 0 or (a.ndim == 3 and a.shape[2] not in (3, 4)):
        raise ValueError(
            f"not an image: array of shape {a.shape}; expected (h, w), (h, w, 3) or (h, w, 4)"
        )
    if a.dtype == np.uint8 and a.ndim == 3 and a.shape[2] == 3:
        return np.ascontiguousarray(a)  # already what is asked for (a decoded video frame): no copy
    if a.dtype == np.uint8:
        f = a.astype(np.float32) / 255.0
    elif np.issubdtype(a.dtype, np.integer):
        # 16-bit PNGs and similar: scale by the dtype's range, not by the data's maximum
        f = a.astype(np.float32) / float(np.iinfo(a.dtype).max)
    elif np.issubdtype(a.dtype, np.floating):
        f = np.nan_to_num(a.astype(np.float32), nan=0.0)
        if f.max(initial=0.0) > 1.0:
            f = f / 255.0
    elif a.dtype == bool:
        f = a.astype(np.float32)
    else:
        raise ValueError(f"not an image: dtype {a.dtype}")
    if f.ndim == 2:
        f = np.repeat(f[:, :, None], 3, axis=2)
    elif f.shape[2] == 4:
        alpha = f[:, :, 3:4]
        f = f[:, :, :3] * alpha + (1.0 - alpha)  # transparent screenshot regions read as white
    return np.ascontiguousarray(np.clip(f * 255.0 + 0.5, 0, 255).astype(np.uint8))


def is_image_file(path: Path) -> bool:
    """An image by its suffix, or an encrypted one (``x.jpg.enc``)."""
    suffixes = [s.lower() for s in path.suffixes[-2:]]
    return bool(suffixes) and (
        suffixes[-1] in IMAGE_SUFFIXES
        or (
            suffixes[-1] == ENCRYPTED_SUFFIX
            and len(suffixes) == 2
            and suffixes[0] in IMAGE_SUFFIXES
        )
    )


def read_image(path: str | Path) -> np.ndarray:
    """An image file as RGB uint8; ``MediaError`` naming the file when it cannot be read."""
    import cv2

    path = Path(path)
    try:
        data = np.fromfile(path, dtype=np.uint8)
    except OSError as e:
        raise MediaError(
            path, f"cannot read the file ({e.strerror or e}); check that it exists and is readable"
        ) from e
    if path.suffix == ENCRYPTED_SUFFIX:  # written by `mnemo capture` with encryption at rest
        from perception.capture.crypto import CaptureKeyError, decrypt_file

        try:
            data = np.frombuffer(decrypt_file(path), dtype=np.uint8)
        except (CaptureKeyError, ValueError) as e:
            raise MediaError(path, f"cannot decrypt the screenshot: {e}") from e
    suffix = Path(path.name.removesuffix(ENCRYPTED_SUFFIX)).suffix.lower()
    if (
        suffix in HEIF_SUFFIXES
    ):  # OpenCV does not read HEIC: Pillow with pillow-heif does (orientation applied)
        return _read_heif(path, data)
    image = cv2.imdecode(data, cv2.IMREAD_UNCHANGED) if data.size else None
    if image is None:
        raise MediaError(
            path,
            "not a readable image (empty, truncated or an unsupported format); "
            f"supported: {', '.join(sorted(IMAGE_SUFFIXES))}",
        )
    if image.ndim == 3:  # OpenCV decodes to BGR / BGRA
        image = _rgb_order(image)
    if suffix in EXIF_SUFFIXES:  # a photo taken sideways is stored sideways, with a tag saying so
        image = oriented(image, photo_info(path, data.tobytes()).orientation)
    return to_rgb8(image)


def _rgb_order(image: np.ndarray) -> np.ndarray:
    """A decoded BGR or BGRA image in RGB(A) order, in one contiguous copy: OpenCV swaps the
    channels of the depths it converts (8- and 16-bit, float): 2.9 ms for a 1080p screen, where
    numpy's index by channel, and the copy it needed to be contiguous, took 15.7 (4 % of a
    watcher's CPU)."""
    import cv2

    if image.dtype in (np.uint8, np.uint16, np.float32) and image.shape[2] in (3, 4):
        return cv2.cvtColor(
            image, cv2.COLOR_BGR2RGB if image.shape[2] == 3 else cv2.COLOR_BGRA2RGBA
        )
    return image[:, :, [2, 1, 0, 3][: image.shape[2]]]


def _read_heif(path: Path, data: np.ndarray) -> np.ndarray:
    from PIL import Image, ImageOps, UnidentifiedImageError

    if not heif_available():
        raise MediaError(
            path, "a HEIC/HEIF picture needs pillow-heif to be read: pip install 'mnemo[heic]'"
        )
    try:
        with Image.open(io.BytesIO(data.tobytes())) as im:
            return to_rgb8(np.asarray(ImageOps.exif_transpose(im).convert("RGB")))
    except (OSError, UnidentifiedImageError, ValueError, SyntaxError) as e:
        raise MediaError(path, f"not a readable HEIC/HEIF picture ({e})") from e


def limit_size(frame: np.ndarray, max_side: int) -> tuple[np.ndarray, float]:
    """Downscale so the longer side is at most ``max_side``; returns the frame and the scale used."""
    import cv2

    h, w = frame.shape[:2]
    scale = min(1.0, max_side / max(h, w))
    if scale >= 1.0:
        return frame, 1.0
    return cv2.resize(
        frame, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA
    ), scale


def _thumbnails(frame: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A 32x32 grey thumbnail (how much of the picture changed) and a grey copy at most
    ``SHARP_SIDE`` px long (where something changed sharply: a typed word)."""
    import cv2

    gray = cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY)
    small = limit_size(gray, SHARP_SIDE)[0]
    return cv2.resize(gray, (32, 32), interpolation=cv2.INTER_AREA).astype(np.float32), small


SHARP_SIDE = 640
SHARP_DIFF = 48  # grey levels: a glyph's edge, not a video codec's noise on a still picture
SHARP_MIN_PX = 40  # at SHARP_SIDE: a short word in a 1280x720 frame changes a few hundred


def _same(
    a: tuple[np.ndarray, np.ndarray],
    b: tuple[np.ndarray, np.ndarray],
    max_mean_diff: float,
    sharp_min_px: int,
) -> bool:
    """Whether two frames' ``_thumbnails`` show the same picture: the 32x32 thumbnails differ by at
    most ``max_mean_diff`` grey levels on average and fewer than ``sharp_min_px`` pixels changed sharply."""
    import cv2

    return (
        max_mean_diff > 0
        and float(np.abs(a[0] - b[0]).mean()) <= max_mean_diff
        and a[1].shape == b[1].shape
        and int(np.count_nonzero(cv2.absdiff(a[1], b[1]) > SHARP_DIFF)) < sharp_min_px
    )


def distinct_frames(
    frames: list[np.ndarray], max_mean_diff: float = 3.0, sharp_min_px: int = SHARP_MIN_PX
) -> list[int]:
    """Indices of frames to keep: a frame is skipped when its 32x32 grayscale thumbnail differs
    from the last kept one by at most ``max_mean_diff`` grey levels on average (a static shot or a
    screen that did not change), unless at least ``sharp_min_px`` pixels of it changed sharply
    (a word typed on a still screen moves the average by a fraction of a level: that frame was
    skipped, and the word never read). 0 keeps every frame."""
    kept: list[int] = []
    last = None
    for i, frame in enumerate(frames):
        thumbs = _thumbnails(frame)
        if last is None or not _same(thumbs, last, max_mean_diff, sharp_min_px):
            kept.append(i)
            last = thumbs
    return kept


def returning_views(
    frames: list[np.ndarray], max_mean_diff: float = 3.0, sharp_min_px: int = SHARP_MIN_PX
) -> dict[int, int]:
    """For each frame that shows again a picture an earlier one showed (by ``distinct_frames``'
    measure), the index of the first that showed it: a call that cuts back and forth between the
    speakers, a window switched to and back. A frame's analysis (faces, text) then holds for its
    return. Meant for the distinct frames of one clip (a few to a few dozen); 0 finds none."""
    if max_mean_diff <= 0:
        return {}
    thumbs = [_thumbnails(f) for f in frames]
    first: list[int] = []  # frames that showed a picture first
    out: dict[int, int] = {}
    for i, t in enumerate(thumbs):
        earlier = next((j for j in first if _same(t, thumbs[j], max_mean_diff, sharp_min_px)), None)
        if earlier is None:
            first.append(i)
        else:
            out[i] = earlier
    return out
