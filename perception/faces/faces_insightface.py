"""Faces with insightface's ``buffalo_l`` pack (SCRFD detector, ArcFace embedding, 512-d).

Used when the pack is on disk: ``<root>/models/buffalo_l/*.onnx`` with ``root`` from config
(default ``~/.insightface``). Nothing is downloaded: a missing pack is an error naming the folder.
The ``insightface`` package (no torch; it brings scikit-image) comes with the extra
mnemo[insightface].
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from perception.weights import require


class InsightFaceFaces:
    dim = 512

    def __init__(
        self,
        root: str = "~/.insightface",
        pack: str = "buffalo_l",
        device: str = "auto",
        det_size: int = 640,
        min_face_px: int = 40,
        min_score: float = 0.5,
    ) -> None:
        require(
            ("insightface",),
            "insightface",
            '[perception] faces_backend = "insightface"',
            'or set faces_backend = "dlib"',
        )
        self.root = Path(root).expanduser()
        self.pack = pack
        self.device = device
        self.det_size = det_size
        self.min_face_px = min_face_px
        self.min_score = min_score
        self._app: Any = None  # insightface's FaceAnalysis (no type hints), built on first use

    @property
    def pack_dir(self) -> Path:
        return self.root / "models" / self.pack

    def _providers(self) -> list[str]:
        import onnxruntime

        available = onnxruntime.get_available_providers()
        if self.device in ("auto", "cuda") and "CUDAExecutionProvider" in available:
            return ["CUDAExecutionProvider", "CPUExecutionProvider"]
        if self.device == "cuda":
            raise RuntimeError(
                "[perception] device is 'cuda' but onnxruntime has no CUDA provider; "
                "install onnxruntime-gpu or set device = 'cpu'"
            )
        return ["CPUExecutionProvider"]

    def _load(self):
        if self._app is None:
            if not any(self.pack_dir.glob("*.onnx")):
                raise FileNotFoundError(
                    f"insightface pack {self.pack!r} not found: no .onnx files in {self.pack_dir}. "
                    f"Unpack {self.pack}.zip there, set [perception] insightface_root, "
                    "or use [perception] faces_backend = 'dlib'"
                )
            from insightface.app import FaceAnalysis

            providers = self._providers()
            self._app = FaceAnalysis(
                name=self.pack,
                root=str(self.root),
                providers=providers,
                allowed_modules=["detection", "recognition"],
            )
            ctx = 0 if providers[0] == "CUDAExecutionProvider" else -1
            self._app.prepare(ctx_id=ctx, det_size=(self.det_size, self.det_size))
        return self._app

    def analyze(
        self, frame_rgb: np.ndarray
    ) -> list[tuple[tuple[int, int, int, int], float, np.ndarray]]:
        app = self._load()
        bgr = np.ascontiguousarray(frame_rgb[:, :, ::-1])
        faces = []
        for f in app.get(bgr):
            x1, y1, x2, y2 = (int(round(v)) for v in f.bbox)
            w, h = x2 - x1, y2 - y1
            if min(w, h) < self.min_face_px or f.det_score < self.min_score:
                continue
            emb = np.asarray(f.normed_embedding, dtype=np.float32)
            faces.append(((x1, y1, w, h), float(f.det_score), emb))
        return faces
