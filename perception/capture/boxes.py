"""Boxes on screen, ``(x0, y0, x1, y1)`` in pixels: their area, whether one lies in, overlaps or
centres in another, one clipped to another, a window's rectangle as a box, and the box of one line
of a node's text."""

from __future__ import annotations

from perception.capture.windows import Rect


def rect_box(r: Rect | None) -> tuple[int, int, int, int] | None:
    return None if r is None else (r.x, r.y, r.x + r.width, r.y + r.height)


def area(b: tuple[int, int, int, int]) -> int:
    return max(0, b[2] - b[0]) * max(0, b[3] - b[1])


def inside(b: tuple[int, int, int, int], w: tuple[int, int, int, int]) -> bool:
    return b[0] >= w[0] and b[1] >= w[1] and b[2] <= w[2] and b[3] <= w[3]


def overlap(b: tuple[int, int, int, int], w: tuple[int, int, int, int]) -> bool:
    return b[0] < w[2] and w[0] < b[2] and b[1] < w[3] and w[1] < b[3]


def clip(b: tuple[int, int, int, int], w: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    return (max(b[0], w[0]), max(b[1], w[1]), min(b[2], w[2]), min(b[3], w[3]))


def center_in(b: tuple[int, int, int, int], w: tuple[int, int, int, int]) -> bool:
    cx, cy = (b[0] + b[2]) // 2, (b[1] + b[3]) // 2
    return w[0] <= cx < w[2] and w[1] <= cy < w[3]


def line_box(box: tuple[int, int, int, int], k: int, text: str) -> tuple[int, int, int, int]:
    """Line ``k`` of a node's text: its share of the node's height (the lines of a text view are
    of one height; the box is where the line is, for the mask OCR reads around)."""
    n = text.count("\n") + 1
    h = (box[3] - box[1]) / n
    return (box[0], int(box[1] + k * h), box[2], int(box[1] + (k + 1) * h))
