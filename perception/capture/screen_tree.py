"""What the accessibility tree says of a monitor's windows, for the sidecar of a frame the capture
loop keeps (``screen_text``): the top ``TREE_WINDOWS`` windows not excluded are read
(``perception/capture/atspi.py``), a window whose pixels did not change since its last read gives
what it gave then, and the lines, the boxes the tree speaks for and those OCR still reads are put
in the frame's pixels."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from perception.capture.atspi import AccessibilityReader, WindowText
from perception.capture.windows import Rect, WindowInfo

TREE_WINDOWS = 4  # the top windows of a monitor whose accessibility tree a kept frame reads
# a window whose pixels changed by no more than this (mean grey level in any 8 px block) since its
# tree was last read shows the same text: what was read is used again, not asked for
TREE_SAME_DIFF = 2.0


@dataclass(frozen=True, eq=False)
class MonitorView:
    """What a tick of the capture loop sees of one monitor, for ``ScreenText``: its rectangle, the
    window with focus on it (None: none), the windows (bottom first), those excluded, and the
    frame's grey pixels."""

    monitor: Rect
    focused: WindowInfo | None
    windows: list[WindowInfo]
    excluded: set[int]
    gray: np.ndarray


class ScreenText:
    """The capture loop's reads of the tree, with what they cost."""

    def __init__(self, tree: AccessibilityReader) -> None:
        self.tree = tree
        # window id -> (title, rect, its pixels at 1/8 scale, what its tree said then)
        self._trees: dict[int, tuple[str, Rect, np.ndarray, WindowText]] = {}
        self.frames = 0  # kept frames with screen text from the tree
        self.seconds = 0.0  # spent reading trees (waiting on applications included)
        self.cpu_s = 0.0  # of this process's CPU
        # monitor -> windows whose application did not answer when a frame of it was kept: their
        # text is OCR's in that frame, and the tree is asked again at the next ticks (``retry``)
        self._missed: dict[Rect, set[int]] = {}
        self.recovered = 0  # frames kept again because a window missed was then read

    def retry(self, view: MonitorView) -> dict | None:
        """On a tick that keeps nothing: when a window of the monitor was missed in the last kept
        frame (its application busy), its tree is asked again; the screen text, with that window's
        now, when it answered (the frame is then kept: a page shown once, while its browser was
        busy, is not left to OCR), else None."""
        missed = self._missed.get(view.monitor)
        if not missed:
            return None
        text = self.of_monitor(view)
        if missed - self._missed.get(view.monitor, set()):
            self.recovered += 1
            return text
        return None

    def of_monitor(self, view: MonitorView) -> dict | None:
        """What the accessibility tree says of the monitor's windows (the top ``TREE_WINDOWS``
        not excluded), in the frame's pixels: ``lines`` ([text, role, x0, y0, x1, y1, window]; a
        line under a window above it is not shown, so not kept), ``paint`` ([x0, y0, x1, y1, 1 the
        tree speaks for it / 0 OCR reads it], bottom window first) and ``windows``. None when no
        window's tree is rich enough: OCR reads the frame."""
        t0, c0 = time.perf_counter(), time.thread_time()
        monitor = view.monitor
        on = [w for w in view.windows if w.rect is not None and w.rect.intersects(monitor)]
        read: dict[int, WindowText] = {}
        missed: set[int] = set()
        for w in [w for w in reversed(on) if w.wid not in view.excluded][:TREE_WINDOWS]:
            got = self._window_text(view, w)
            if got is not None and got.rich:
                read[w.wid] = got
            elif got is None and self.tree.failed:
                missed.add(w.wid)
        self._missed[monitor] = missed
        for wid in set(self._trees) - {w.wid for w in view.windows}:
            del self._trees[wid]  # closed
        self.seconds += time.perf_counter() - t0
        self.cpu_s += time.thread_time() - c0
        if not read:
            return None

        def rel(b: tuple[int, int, int, int]) -> list[int]:
            r = monitor
            return [
                min(max(b[0] - r.x, 0), r.width),
                min(max(b[1] - r.y, 0), r.height),
                min(max(b[2] - r.x, 0), r.width),
                min(max(b[3] - r.y, 0), r.height),
            ]

        lines: list[list] = []
        paint: list[list[int]] = []
        about: list[dict] = []
        for i, w in enumerate(on):
            assert w.rect is not None
            box = (w.rect.x, w.rect.y, w.rect.x + w.rect.width, w.rect.y + w.rect.height)
            t = read.get(w.wid)
            if t is None:
                paint.append([*rel(box), 0])
                continue
            paint.append([*rel(box), 1])
            paint += [[*rel(p), 0] for p in t.pictures]
            above = [a.rect for a in on[i + 1 :] if a.rect is not None]
            k = len(about)
            about.append(
                {
                    "app": t.app,
                    "title": w.title,
                    "url": t.url,
                    "nodes": t.nodes,
                    "complete": t.complete,
                    "ms": round(t.seconds * 1000, 1),
                }
            )
            for ln in t.lines:
                cx, cy = (ln.box[0] + ln.box[2]) // 2, (ln.box[1] + ln.box[3]) // 2
                if monitor.contains(cx, cy) and not any(a.contains(cx, cy) for a in above):
                    lines.append([ln.text, ln.role, *rel(ln.box), k])
        self.frames += 1
        return {"source": "atspi", "lines": lines, "paint": paint, "windows": about}

    def _window_text(self, view: MonitorView, w: WindowInfo) -> WindowText | None:
        """``w``'s text from its tree, or as read before when its pixels on the monitor are the same
        (``TREE_SAME_DIFF``): a window under the one typed in is not asked again each frame."""
        import cv2

        assert w.rect is not None
        r, monitor, gray = w.rect, view.monitor, view.gray
        x0, y0 = max(r.x - monitor.x, 0), max(r.y - monitor.y, 0)
        x1 = min(r.x + r.width - monitor.x, gray.shape[1])
        y1 = min(r.y + r.height - monitor.y, gray.shape[0])
        small = None
        if x1 - x0 >= 8 and y1 - y0 >= 8:
            crop = gray[y0:y1, x0:x1]
            small = cv2.resize(
                crop, ((x1 - x0) // 8, (y1 - y0) // 8), interpolation=cv2.INTER_AREA
            ).astype(np.int16)
        was = self._trees.get(w.wid)
        if (
            was is not None
            and small is not None
            and was[:2] == (w.title, r)
            and was[2].shape == small.shape
            and int(np.abs(was[2] - small).max()) <= TREE_SAME_DIFF
        ):
            return was[3]
        got = self.tree.window_text(
            w, focused=view.focused is not None and w.wid == view.focused.wid
        )
        if got is not None and got.complete and small is not None:
            self._trees[w.wid] = (w.title, r, small, got)
        else:
            self._trees.pop(w.wid, None)
        return got
