"""Images for vision-language models: JPEG bytes, data URLs, and Qwen-VL sizing."""

from __future__ import annotations

import base64

import numpy as np


def jpeg_bytes(rgb: np.ndarray, max_side: int = 0, quality: int = 85) -> bytes:
    """RGB uint8 as JPEG, downscaled first so the longer side is at most ``max_side`` (0: as is)."""
    import cv2

    h, w = rgb.shape[:2]
    if max_side and max(h, w) > max_side:
        scale = max_side / max(h, w)
        rgb = cv2.resize(rgb, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA)
    ok, buf = cv2.imencode(".jpg", np.ascontiguousarray(rgb[:, :, ::-1]), [cv2.IMWRITE_JPEG_QUALITY, quality])
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


def qwen_prepare(rgb: np.ndarray, max_pixels: int = 448 * 448) -> np.ndarray:
    """Resize the way Qwen-VL expects (``qwen_vl_utils.fetch_image``: sides on its patch grid,
    pixel budget bounded, aspect kept)."""
    from PIL import Image
    from qwen_vl_utils import fetch_image

    return np.asarray(fetch_image({"image": Image.fromarray(rgb), "max_pixels": max_pixels}).convert("RGB"))
