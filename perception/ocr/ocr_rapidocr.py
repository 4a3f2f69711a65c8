"""On-screen text with RapidOCR (PP-OCRv4 detection + recognition, ONNX Runtime).

The ONNX files ship inside ``rapidocr-onnxruntime``; each is checked by SHA-256 before the engine
is built. Lines come back in reading order (top to bottom, then left to right) with their boxes and
recognition confidence, and Latin lines get their word spacing restored (``spacing.py``).

Detection runs on the frame at its own size by default (``detect_min_side = 0``; a frame whose long
side is over 2000 px is scaled down). RapidOCR's own default upscales the short side to 736 px first,
which on a 960x540 video frame is 1.9 times the pixels: measured at 1 thread on the two opencv-doc
screens of ``mnemo bench perception``, detection took 0.24-0.27 s a frame instead of 0.52, and the
character error rates were 0.010 instead of 0.024 (``ocr_cer``) and 0.019 instead of 0.048
(``ocr_cer_video``). Recognition crops come from the frame either way.
"""

from __future__ import annotations

import logging

import numpy as np

from perception.ocr.base import TextBoxes
from perception.records import TextLine
from perception.ocr.spacing import restore_spacing
from perception.weights import packaged_file

_MODELS = ("models/ch_PP-OCRv4_det_infer.onnx", "models/ch_PP-OCRv4_rec_infer.onnx",
           "models/ch_ppocr_mobile_v2.0_cls_infer.onnx")


class RapidOCRReader:
    name = "rapidocr"

    def __init__(self, min_confidence: float = 0.5, threads: int = 0, restore_spaces: bool = True,
                 use_cls: bool = True, detect_min_side: int = 0) -> None:
        if detect_min_side < 0:
            raise ValueError(f"detect_min_side must be 0 (the frame's own size) or a side in pixels, "
                             f"not {detect_min_side}")
        self.min_confidence = min_confidence
        self.detect_min_side = detect_min_side  # >0: upscale the short side to this before detecting
        self.use_cls = use_cls  # the text-direction classifier (turns upside-down lines); measured ~3% of OCR time
        self.threads = threads  # 0: let ONNX Runtime decide
        self.restore_spaces = restore_spaces
        self._engine = None

    def _load(self):
        if self._engine is None:
            from rapidocr_onnxruntime import RapidOCR

            for rel in _MODELS:
                packaged_file("rapidocr_onnxruntime", rel)
            n = self.threads or -1
            # "max" never upscales; it scales a frame down only when its long side is over 2000 px
            size = ({"det_limit_type": "min", "det_limit_side_len": self.detect_min_side} if self.detect_min_side
                    else {"det_limit_type": "max", "det_limit_side_len": 2000})
            self._engine = RapidOCR(intra_op_num_threads=n, inter_op_num_threads=n, **size)
            # RapidOCR attaches its own stream handler; our CLI owns logging
            logging.getLogger("RapidOCR").handlers.clear()
            logging.getLogger("RapidOCR").propagate = True
        return self._engine

    def detect(self, frame_rgb: np.ndarray) -> TextBoxes:
        """RapidOCR's detection steps (resize, letterbox, DBNet, box order), kept for ``read``."""
        engine = self._load()
        image = np.ascontiguousarray(frame_rgb[:, :, ::-1])  # RapidOCR takes BGR
        raw_h, raw_w = image.shape[:2]
        resized, ratio_h, ratio_w = engine.preprocess(image)
        resized, record = engine.maybe_add_letterbox(resized, {"preprocess": {"ratio_h": ratio_h, "ratio_w": ratio_w}})
        found, _ = engine.auto_text_det(resized)
        if found is None:
            return TextBoxes(0.0)
        quads = engine._get_origin_points(found, record, raw_h, raw_w)  # in the frame's pixels
        area = sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in map(_bounds, quads))
        return TextBoxes(float(min(1.0, area / float(raw_h * raw_w))), (resized, found, quads))

    def read(self, frame_rgb: np.ndarray, boxes: TextBoxes | None = None) -> list[TextLine]:
        boxes = boxes if boxes is not None else self.detect(frame_rgb)
        if boxes.detection is None:
            return []
        engine = self._load()
        resized, found, quads = boxes.detection
        crops = engine.get_crop_img_list(resized, found)
        if self.use_cls:
            crops, _, _ = engine.text_cls(crops)
        recognized, _ = engine.text_rec(crops, False)
        lines = []
        for quad, (text, conf, *_rest) in zip(quads, recognized):
            conf = float(conf)
            text = text.strip()
            if not text or conf < self.min_confidence:
                continue
            if self.restore_spaces:
                text = restore_spacing(text)
            lines.append(TextLine(text, _bounds(quad), round(conf, 4)))
        lines.sort(key=lambda ln: (ln.box_xyxy[1] // 10, ln.box_xyxy[0]))
        return lines


def _bounds(quad) -> tuple[int, int, int, int]:
    pts = np.asarray(quad, dtype=np.float32).reshape(-1, 2)
    x0, y0 = pts.min(axis=0)
    x1, y1 = pts.max(axis=0)
    return int(x0), int(y0), int(round(x1)), int(round(y1))
