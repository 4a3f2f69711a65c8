"""Faces with dlib: HOG detector, 5-point alignment, 128-d ResNet embedding.

Weights come from ``face-recognition-models`` (checked by SHA-256). The 68-point landmark model in
that package is not used: its licence is non-commercial.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perception.weights import packaged_file


class DlibFaces:
    dim = 128

    def __init__(
        self,
        upsample: int = 1,
        min_face_px: int = 40,
        min_score: float = 0.3,
        jitter: int = 0,
        detect_max_side: int = 640,
    ) -> None:
        self.upsample = upsample
        # the HOG detector runs on the frame scaled to this long side (its cost grows with the
        # pixels); landmarks and embeddings use the full
        # frame. With upsample 1 the smallest face found is 40 px at this size (60 px on a 960 px frame)
        self.detect_max_side = detect_max_side
        self.min_face_px = min_face_px
        self.min_score = min_score
        self.jitter = jitter
        # dlib's detector, built on first use; its shape predictor and face encoder (no type
        # hints), built when a first face is found (most screenshots hold none)
        self._detector: Any = None
        self._encoders: tuple[Any, Any] | None = None

    def smallest_face_px(self, shape: tuple[int, ...]) -> int:
        """A side, in a frame of ``shape``, that every face the detector finds is at least: half
        its 80-pixel window on the frame scaled to ``detect_max_side``, halved by each upsampling
        (the boxes it gives are smaller than the window: 109 px on a 1080p screen, whose window is
        120 px)."""
        scale = min(1.0, self.detect_max_side / max(shape[:2])) if self.detect_max_side else 1.0
        return int(80 / 2**self.upsample / scale / 2)

    def _detect(self):
        if self._detector is None:
            import dlib

            self._detector = dlib.get_frontal_face_detector()
        return self._detector

    def _encode(self) -> tuple[Any, Any]:
        if self._encoders is None:
            import dlib

            shape = packaged_file(
                "face_recognition_models", "models/shape_predictor_5_face_landmarks.dat"
            )
            rec = packaged_file(
                "face_recognition_models", "models/dlib_face_recognition_resnet_model_v1.dat"
            )
            self._encoders = (
                dlib.shape_predictor(str(shape)),
                dlib.face_recognition_model_v1(str(rec)),
            )
        return self._encoders

    def analyze(
        self, frame_rgb: np.ndarray
    ) -> list[tuple[tuple[int, int, int, int], float, np.ndarray]]:
        detector = self._detect()
        import dlib

        frame = np.ascontiguousarray(frame_rgb)
        scale = (
            min(1.0, self.detect_max_side / max(frame.shape[:2])) if self.detect_max_side else 1.0
        )
        if scale < 1.0:
            import cv2

            small = cv2.resize(
                frame,
                (round(frame.shape[1] * scale), round(frame.shape[0] * scale)),
                interpolation=cv2.INTER_AREA,
            )
            rects, scores, _ = detector.run(small, self.upsample, 0.0)
            rects = [
                dlib.rectangle(
                    round(r.left() / scale),
                    round(r.top() / scale),
                    round(r.right() / scale),
                    round(r.bottom() / scale),
                )
                for r in rects
            ]
        else:
            rects, scores, _ = detector.run(frame, self.upsample, 0.0)
        faces = []
        for rect, score in zip(rects, scores):
            w, h = rect.width(), rect.height()
            if min(w, h) < self.min_face_px or score < self.min_score:
                continue
            shape_predictor, recognizer = self._encode()
            shape = shape_predictor(frame, rect)
            emb = np.asarray(
                recognizer.compute_face_descriptor(frame, shape, self.jitter), dtype=np.float32
            )
            faces.append(
                ((rect.left(), rect.top(), w, h), float(score), emb / (np.linalg.norm(emb) + 1e-9))
            )
        return faces
