"""On-screen text with RapidOCR (PP-OCRv4 detection + recognition, ONNX Runtime).

The engine is the ``rapidocr`` package (wheels for Python 3.8 to 3.13) on its ONNX Runtime engine.
It is given the model files by path, each checked by SHA-256 before the engine is built, so it
never looks for or downloads one: the PP-OCRv4 detector and recogniser ship in
``rapidocr-onnxruntime``'s wheel (``rapidocr``'s own wheel carries other models), the text-direction
classifier in ``rapidocr``'s (the same file as ``rapidocr-onnxruntime``'s). Lines come back in
reading order (top to bottom, then left to right) with their boxes and recognition confidence. Each
line of sharp screen text is recognised on its own (a frame of mostly soft text, a screen in a
video, in RapidOCR's batches), and its spaces are placed from its pixels where it is clean screen
text (``words.py``), else restored by a word model (``spacing.py``).

Detection runs on the frame at its own size by default (``detect_min_side = 0``; a frame whose long
side is over ``DETECT_MAX_SIDE`` px is scaled down for detection, and its lines are still read from
its own pixels). RapidOCR's own default upscales the short side to 736 px first, which makes
detection slower and, on screens, less accurate (``mnemo bench perception`` measures both).
Recognition crops come from the frame either way.
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from typing import TYPE_CHECKING, cast

import numpy as np

from perception.malloc import blocks_mapped
from perception.ocr.base import SMALL_REGION_PX, TextBoxes
from perception.ocr.spacing import restore_spacing
from perception.ocr.words import blank_runs, ctc_chars, fix_confusions, soft_text, spaced
from perception.records import TextLine
from perception.weights import packaged_file, usable_cpus

if TYPE_CHECKING:
    from rapidocr import RapidOCR

# with the pixels' spacing, wordninja still splits letter runs this long (small proportional text
# whose letter and word gaps are alike: "Atrackbarcreatedwitha"); shorter ones are kept, since a
# split of a short unknown word is as likely wrong ("BLUEHERON" -> "BLUE HER ON")
LONG_RUN = 10
# a frame with a longer side is scaled down to it for detection: a 4K screen (3840 px) is detected
# at its own size, since at RapidOCR's cap of 2000 px its small terminal text loses most of its words
DETECT_MAX_SIDE = 4096
# RapidOCR's section -> (package carrying the file, its path there); the PP-OCRv4 recogniser carries
# its character list in its metadata, so RapidOCR fetches no dictionary for it either
MODELS = {
    "Det": ("rapidocr_onnxruntime", "models/ch_PP-OCRv4_det_infer.onnx"),
    "Rec": ("rapidocr_onnxruntime", "models/ch_PP-OCRv4_rec_infer.onnx"),
    "Cls": ("rapidocr", "models/ch_ppocr_mobile_v2.0_cls_mobile.onnx"),
}
# an input of each model's shape, on which its fused graph is checked against the packaged one
PROBES = {"Det": (1, 3, 64, 64), "Rec": (1, 3, 48, 320), "Cls": (1, 3, 48, 192)}
# detection runs on horizontal bands of at most this many pixels (rows times width; rows a multiple
# of 32, at least BAND_MIN_ROWS) that overlap by at least BAND_OVERLAP_PX. DBNet's activations grow
# with the area it sees: detecting a 1080p screen whole peaked 470 MB over the loaded models, a band
# of 544 rows 262 MB (docs/benchmarks.md). Its boxes also move by a pixel with the extent it sees,
# and narrower bands read worse: a frame up to this size (1280x800, 1140x680) is detected whole, a
# 1080p screen in two bands. Of a line seen in two bands, the box furthest from a band's cut is
# kept: whole where the line is no taller than the overlap
BAND_PIXELS = 1920 * 608
BAND_MIN_ROWS = 256
BAND_OVERLAP_PX = 96
# boxes that share more than this part of the smaller one's area show one line (seen in two bands)
SAME_BOX_SHARE = 0.5
# boxes whose top-left corners are closer in height than this are on one line (RapidOCR 1.x's order)
_SAME_LINE_PX = 10
# line crops whose reading is kept, by their pixels: a screen read again after a window switch, a
# typed word or a scroll shows mostly lines already read
LINE_MEMORY = 4096


class RapidOCRReader:
    name = "rapidocr"

    def __init__(
        self,
        min_confidence: float = 0.5,
        threads: int = 0,
        restore_spaces: bool = True,
        use_cls: bool = True,
        detect_min_side: int = 0,
        word_gaps: bool = True,
        detect_max_side: int = DETECT_MAX_SIDE,
        line_memory: int = LINE_MEMORY,
    ) -> None:
        if detect_min_side < 0:
            raise ValueError(
                f"detect_min_side must be 0 (the frame's own size) or a side in pixels, "
                f"not {detect_min_side}"
            )
        self.detect_max_side = (
            detect_max_side  # a longer frame is scaled down to this to detect text
        )
        self.min_confidence = min_confidence
        self.detect_min_side = (
            detect_min_side  # >0: upscale the short side to this before detecting
        )
        # a strip is detected at its own size, so part of a screen costs less than the whole
        self.reads_parts = detect_min_side == 0
        self.use_cls = use_cls  # the text-direction classifier (turns upside-down lines)
        self.threads = threads  # 0: let ONNX Runtime decide
        self.restore_spaces = restore_spaces  # wordninja, where the pixels cannot place the spaces
        self.word_gaps = word_gaps  # spaces from the crop's blank columns (words.py)
        self._engine: RapidOCR | None = None  # built on first use
        # a line crop's pixels (digest) -> its reading, the newest last; at most line_memory of them
        self.line_memory = line_memory
        self._lines: OrderedDict[bytes, tuple[str, float]] = OrderedDict()
        self.lines_recalled = 0  # readings taken from _lines instead of the recogniser

    def _load(self):
        if self._engine is None:
            try:
                from rapidocr import RapidOCR
            except ImportError as e:
                raise ImportError(
                    "the OCR engine is the `rapidocr` package: run `pip install -e .` in the "
                    'repository (or `make install`), or set [perception] ocr_backend = "none"'
                ) from e

            n = self.threads or -1
            # "max" never upscales; it scales a frame down only when its long side is over detect_max_side
            limit = (
                ("min", self.detect_min_side)
                if self.detect_min_side
                else ("max", self.detect_max_side)
            )
            params: dict[str, object] = {
                f"{section}.model_path": str(packaged_file(package, rel))
                for section, (package, rel) in MODELS.items()
            }
            params |= {
                "Global.max_side_len": self.detect_max_side,
                "Det.limit_type": limit[0],
                "Det.limit_side_len": limit[1],
                "EngineConfig.onnxruntime.intra_op_num_threads": n,
                "EngineConfig.onnxruntime.inter_op_num_threads": n,
            }
            # RapidOCR attaches its own stream handler when imported; our CLI owns logging. Its
            # info lines (which engine, which file) are left out, as RapidOCR 1.x did
            logging.getLogger("RapidOCR").handlers.clear()
            logging.getLogger("RapidOCR").propagate = True
            params["Global.log_level"] = "warning"
            engine = RapidOCR(params=params)
            # RapidOCR builds its sessions on first use; here, so that a bad file fails at load
            engine._load_det_model(), engine._load_cls_model(), engine._load_rec_model()
            self._quiet_sessions(engine)
            self._engine = engine
        return self._engine

    def _quiet_sessions(self, engine) -> None:
        """RapidOCR's ONNX Runtime sessions rebuilt as mnemo's other models' are
        (``onnx_models.cpu_session``): its own spin their threads between runs, which on a screen's
        many short line readings costs CPU for nothing (about a tenth of the OCR's, measured on
        1080p screens with two threads). Each reads its graph with PP-LCNet's elementwise chains
        fused (``graph.fused_graph``): the same function, in less CPU."""
        from perception.ocr.graph import fused_graph
        from perception.onnx_models import cpu_session

        n = self.threads or usable_cpus()
        for part, section in (
            (engine.text_det, "Det"),
            (engine.text_cls, "Cls"),
            (engine.text_rec, "Rec"),
        ):
            graph = fused_graph(section.lower(), packaged_file(*MODELS[section]), PROBES[section])
            part.session.session = cpu_session(graph, intra_threads=n)

    def detect(self, frame_rgb: np.ndarray) -> TextBoxes:
        """RapidOCR's detection steps (resize, letterbox, DBNet, box order), kept for ``read``."""
        from rapidocr.utils.process_img import apply_vertical_padding, map_boxes_to_original

        engine = self._load()
        image = np.ascontiguousarray(frame_rgb[:, :, ::-1])  # RapidOCR takes BGR
        raw_h, raw_w = image.shape[:2]
        resized, record = engine.preprocess_img(image)
        resized, record = apply_vertical_padding(
            resized, record, engine.width_height_ratio, engine.min_height
        )
        with blocks_mapped():  # DBNet's activations: few, large, and fragmenting the heap
            found = _banded_boxes(engine.text_det, resized)
        if len(found) == 0:
            return TextBoxes(0.0)
        found = _reading_order(found)
        # in the frame's pixels (RapidOCR maps the array it is given in place)
        quads = map_boxes_to_original(found.astype(np.float32), record, raw_h, raw_w)
        area = sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in map(_bounds, quads))
        small = sum(
            1 for _, y0, _, y1 in map(_bounds, found) if y1 - y0 < SMALL_REGION_PX
        )  # as DBNet saw them
        return TextBoxes(
            float(min(1.0, area / float(raw_h * raw_w))),
            (resized, found, quads),
            len(quads),
            small,
            raw_w / resized.shape[1],  # the vertical padding adds rows only
        )

    def read(self, frame_rgb: np.ndarray, boxes: TextBoxes | None = None) -> list[TextLine]:
        boxes = boxes if boxes is not None else self.detect(frame_rgb)
        if boxes.detection is None:
            return []
        engine = self._load()
        # what this backend's detect() keeps: the detector's input, its boxes, and them on the frame
        resized, found, quads = cast("tuple[np.ndarray, np.ndarray, np.ndarray]", boxes.detection)
        if resized.shape[:2] == frame_rgb.shape[:2]:
            crops = engine.crop_text_regions(resized, found)
        else:  # detected on a scaled copy (an 8K screen): each line is read from the frame's own pixels
            crops = engine.crop_text_regions(np.ascontiguousarray(frame_rgb[:, :, ::-1]), quads)
        if self.use_cls:
            classified = engine.text_cls(crops)
            turned, verdicts = classified.img_list, classified.cls_res
        else:
            turned, verdicts = crops, [("0", 0.0)] * len(crops)
        # a frame of mostly soft text (a screen in a video) is read in RapidOCR's batches, which read
        # it better; sharp screen text reads as well or better line by line (bench ocr)
        batched = (
            _batched_probs(engine, crops) if 2 * sum(map(soft_text, crops)) > len(crops) else {}
        )
        lines = []
        for k, (quad, crop, turn, (label, score)) in enumerate(zip(quads, crops, turned, verdicts)):
            text, conf = self._recognize(engine, crop, batched.get(k))
            if "180" in label and score > engine.text_cls.cls_thresh:
                # the classifier says upside down (on screen text it is often wrong): keep the surer reading
                text, conf = max((text, conf), self._recognize(engine, turn), key=lambda tc: tc[1])
            if not text or conf < self.min_confidence:
                continue
            lines.append(TextLine(text, _bounds(quad), round(conf, 4)))
        lines.sort(key=lambda ln: (ln.box_xyxy[1] // 10, ln.box_xyxy[0]))
        return lines

    def _recognize(
        self, engine, crop: np.ndarray, batched: tuple[np.ndarray, int] | None = None
    ) -> tuple[str, float]:
        """One line crop read on its own (so its reading never depends on the crops around it) or
        taken from a batch (``batched``: its character probabilities and the padded input width),
        its spaces placed from its pixels where they are clean (``words.py``). A crop read on its own
        whose very pixels were read before (the same line of a screen read again) is not read a
        second time: the recogniser gives the same pixels the same reading."""
        key = b""
        if batched is None and self.line_memory:
            key = _digest(crop)
            if key in self._lines:
                self._lines.move_to_end(key)
                self.lines_recalled += 1
                return self._lines[key]
        reading = self._read_line(engine, crop, batched)
        if key:
            self._lines[key] = reading
            if len(self._lines) > self.line_memory:
                self._lines.popitem(last=False)
        return reading

    def _read_line(
        self, engine, crop: np.ndarray, batched: tuple[np.ndarray, int] | None
    ) -> tuple[str, float]:
        rec = engine.text_rec
        _, height, width = rec.rec_image_shape
        ratio = crop.shape[1] / float(crop.shape[0])
        if batched is None:
            image = rec.resize_norm_img(
                crop, max(ratio, width / height)
            )  # padded to 320 px at least, as RapidOCR does
            batched = rec.session(image[None])[0], image.shape[2]
        probs, padded = batched
        charset = rec.postprocess_op.character
        input_width = min(padded, int(np.ceil(height * ratio)))
        chars = ctc_chars(probs, charset, crop.shape[1], input_width, padded)
        if not chars:
            return "", 0.0
        conf = float(np.mean([c.confidence for c in chars]))
        pixels = blank_runs(crop) if self.word_gaps else None
        text = fix_confusions(_ascii_forms(spaced(chars, pixels)).strip())
        if (
            self.restore_spaces
        ):  # long unknown letter runs; with pixels to go by, only very long ones
            text = restore_spacing(text) if pixels is None else restore_spacing(text, LONG_RUN)
        return text, conf


def _digest(crop: np.ndarray) -> bytes:
    """A line crop's identity: its shape and a hash of its pixels."""
    h = hashlib.blake2b(np.ascontiguousarray(crop).tobytes(), digest_size=16)
    h.update(repr(crop.shape).encode())
    return h.digest()


def _batched_probs(engine, crops: list[np.ndarray]) -> dict[int, tuple[np.ndarray, int]]:
    """Crop index -> (character probabilities, padded input width), recognised as RapidOCR does:
    sorted by shape, in batches padded to the widest of each."""
    rec = engine.text_rec
    _, height, width = rec.rec_image_shape
    ratios = [c.shape[1] / float(c.shape[0]) for c in crops]
    order = [int(k) for k in np.argsort(np.array(ratios))]
    out = {}
    for start in range(0, len(order), rec.rec_batch_num):
        batch = order[start : start + rec.rec_batch_num]
        widest = max([width / height] + [ratios[k] for k in batch])
        images = np.stack([rec.resize_norm_img(crops[k], widest) for k in batch]).astype(np.float32)
        for k, probs in zip(batch, rec.session(images)):
            out[k] = (probs, images.shape[3])
    return out


_FULLWIDTH = {
    c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)
}  # the recogniser's "，" and "：" are "," and ":"


def bands(rows: int, width: int) -> list[tuple[int, int]]:
    """The horizontal bands ``(top, bottom)`` an image of ``rows`` by ``width`` is detected in: of
    even height (a multiple of 32 where the image allows, as DBNet's input is), the first at the
    top, the last at the bottom, each overlapping the next by at least ``BAND_OVERLAP_PX``."""
    most = max(BAND_MIN_ROWS, BAND_PIXELS // max(1, width) // 32 * 32)
    if rows <= most:
        return [(0, rows)]
    n = _up(rows - BAND_OVERLAP_PX, most - BAND_OVERLAP_PX)
    height = min(rows, _up(_up(rows + (n - 1) * BAND_OVERLAP_PX, n), 32) * 32)
    tops = [round(i * (rows - height) / (n - 1)) for i in range(n)]
    return [(top, top + height) for top in tops]


def _up(a: int, b: int) -> int:
    return -(-a // b)  # a / b rounded up


def _banded_boxes(detect, image: np.ndarray) -> np.ndarray:
    """``detect`` (RapidOCR's DBNet step) run on each of the image's ``bands``: its boxes (n, 4, 2)
    in the image's pixels. A line seen in more than one band (boxes of two bands sharing more than
    ``SAME_BOX_SHARE`` of the smaller's area) keeps the box with the most room between it and its
    band's cuts (the image's own edges are no cut): a box at a cut may hold part of its line."""
    rows = image.shape[0]
    found, room, band = [], [], []
    for b, (top, bottom) in enumerate(bands(*image.shape[:2])):
        boxes = detect(image[top:bottom]).boxes
        if boxes is None or len(boxes) == 0:
            continue
        boxes = np.array(boxes, dtype=np.float32)
        boxes[:, :, 1] += top
        above = boxes[:, :, 1].min(axis=1) - top if top > 0 else np.full(len(boxes), np.inf)
        below = (
            bottom - boxes[:, :, 1].max(axis=1) if bottom < rows else np.full(len(boxes), np.inf)
        )
        found.append(boxes)
        room.append(np.minimum(above, below))
        band.append(np.full(len(boxes), b))
    if not found:
        return np.zeros((0, 4, 2), np.float32)
    boxes, margin, of = np.concatenate(found), np.concatenate(room), np.concatenate(band)
    lo, hi = boxes.min(axis=1), boxes.max(axis=1)  # (n, 2): x, y
    area = np.prod(np.maximum(hi - lo, 1e-3), axis=1)
    kept: list[int] = []
    for k in np.argsort(-margin, kind="stable"):
        other = [j for j in kept if of[j] != of[k]]  # one band's own boxes all stay
        if other:
            inside = np.maximum(
                np.minimum(hi[other], hi[k]) - np.maximum(lo[other], lo[k]), 0.0
            ).prod(axis=1)
            if (inside > SAME_BOX_SHARE * np.minimum(area[other], area[k])).any():
                continue
        kept.append(int(k))
    return boxes[sorted(kept)]


def _reading_order(boxes: np.ndarray) -> np.ndarray:
    """Boxes by their top-left corner, top to bottom, and left to right where two corners are less
    than ``_SAME_LINE_PX`` apart in height: RapidOCR 1.x's order. RapidOCR 3's groups boxes into
    lines by chains of such steps, which orders some frames differently; the crops recognised in
    one batch (soft text) follow this order's ties, and so can their readings."""
    order = sorted(range(len(boxes)), key=lambda k: (boxes[k][0][1], boxes[k][0][0]))
    for i in range(len(order) - 1):
        for j in range(i, -1, -1):
            a, b = boxes[order[j]][0], boxes[order[j + 1]][0]
            if abs(b[1] - a[1]) < _SAME_LINE_PX and b[0] < a[0]:
                order[j], order[j + 1] = order[j + 1], order[j]
            else:
                break
    return boxes[order]


def _ascii_forms(text: str) -> str:
    return text.translate(_FULLWIDTH)


def _bounds(quad) -> tuple[int, int, int, int]:
    pts = np.asarray(quad, dtype=np.float32).reshape(-1, 2)
    x0, y0 = pts.min(axis=0)
    x1, y1 = pts.max(axis=0)
    return int(x0), int(y0), int(round(x1)), int(round(y1))
