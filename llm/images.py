"""Images for vision-language models: JPEG bytes, data URLs, and Qwen-VL sizing."""

from __future__ import annotations

import base64
import math

import numpy as np


def jpeg_bytes(rgb: np.ndarray, max_side: int = 0, quality: int = 85) -> bytes:
    """RGB uint8 as JPEG, downscaled first so the longer side is at most ``max_side`` (0: as is)."""
    import cv2

    h, w = rgb.shape[:2]
    if max_side and max(h, w) > max_side:
        scale = max_side / max(h, w)
        rgb = cv2.resize(
            rgb, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA
        )
    ok, buf = cv2.imencode(
        ".jpg", np.ascontiguousarray(rgb[:, :, ::-1]), [cv2.IMWRITE_JPEG_QUALITY, quality]
    )
    if not ok:
        raise ValueError(f"could not encode an image of shape {rgb.shape} as JPEG")
    return buf.tobytes()


def decode_jpeg(data: bytes) -> np.ndarray:
    import cv2

    bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if bgr is None:
        raise ValueError("not a decodable JPEG")
    return bgr[:, :, ::-1].copy()


def jpeg_data_url(data: bytes) -> str:
    return "data:image/jpeg;base64," + base64.b64encode(data).decode("ascii")


def image_data_url(rgb: np.ndarray, quality: int = 85) -> str:
    """An RGB uint8 image as a ``data:image/jpeg;base64,…`` URL (how OpenAI-compatible servers
    take inline images)."""
    return jpeg_data_url(jpeg_bytes(rgb, quality=quality))


QWEN_FACTOR = 28  # qwen_vl_utils: patches of 14 pixels, merged 2 by 2
QWEN_MIN_PIXELS = 4 * QWEN_FACTOR**2
QWEN_MAX_RATIO = 200


def qwen_size(
    height: int,
    width: int,
    max_pixels: int,
    factor: int = QWEN_FACTOR,
    min_pixels: int = QWEN_MIN_PIXELS,
) -> tuple[int, int]:
    """The (height, width) Qwen-VL takes an image at: both sides on the ``factor`` grid, the pixels
    between ``min_pixels`` and ``max_pixels``, the aspect kept as closely as the grid allows
    (``qwen_vl_utils.smart_resize``, which imports torch; ``tests/test_llm.py`` checks this port
    against it)."""
    if max(height, width) / min(height, width) > QWEN_MAX_RATIO:
        raise ValueError(
            f"an image {width}x{height} is too elongated for Qwen-VL (at most {QWEN_MAX_RATIO}:1)"
        )
    h = max(factor, round(height / factor) * factor)
    w = max(factor, round(width / factor) * factor)
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h, w = (
            math.floor(height / beta / factor) * factor,
            math.floor(width / beta / factor) * factor,
        )
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h, w = math.ceil(height * beta / factor) * factor, math.ceil(width * beta / factor) * factor
    return h, w


def qwen_prepare(rgb: np.ndarray, max_pixels: int = 448 * 448) -> np.ndarray:
    """Resize the way Qwen-VL expects (``qwen_vl_utils.fetch_image``: sides on its patch grid,
    pixel budget bounded, aspect kept, Pillow's default resampling)."""
    from PIL import Image

    height, width = rgb.shape[:2]
    h, w = qwen_size(height, width, max_pixels)
    return np.asarray(Image.fromarray(rgb).convert("RGB").resize((w, h)))
