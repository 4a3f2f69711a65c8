"""One protocol per model family, and the registry that builds a backend from a config name.

Backends live in ``<role>_<impl>.py`` modules and are imported only when built, so importing this
module loads no model.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol, runtime_checkable

import numpy as np

from perception.records import SpeechTurn, TextLine


@runtime_checkable
class SpeechRecognizer(Protocol):
    def transcribe(self, audio: np.ndarray, sample_rate: int) -> tuple[list[SpeechTurn], str]:
        """Speech segments (offsets within ``audio``, with word timing) and the language."""


@runtime_checkable
class SpeakerEmbedder(Protocol):
    dim: int
    min_duration_s: float

    def embed(self, audio: np.ndarray, sample_rate: int) -> np.ndarray:
        """One L2-normalised voice embedding for a stretch of speech."""

    def embed_windows(self, audio: np.ndarray, sample_rate: int, rate_hz: float = 4.0
                      ) -> tuple[np.ndarray, np.ndarray]:
        """L2-normalised embeddings of short sliding windows, and the window centres in seconds."""


@runtime_checkable
class FaceAnalyzer(Protocol):
    dim: int

    def analyze(self, frame_rgb: np.ndarray) -> list[tuple[tuple[int, int, int, int], float, np.ndarray]]:
        """Faces in an RGB frame: (x, y, w, h) box, detector score, L2-normalised embedding."""


@runtime_checkable
class ImageAnalyzer(Protocol):
    name: str
    dim: int

    def analyze(self, frames: list[np.ndarray], top_k: int = 5
                ) -> list[tuple[tuple[tuple[str, float], ...], np.ndarray]]:
        """Per RGB frame: object/scene tags (label, probability; best first) and an L2-normalised
        image embedding."""


@runtime_checkable
class TextReader(Protocol):
    name: str

    def text_fraction(self, frame_rgb: np.ndarray) -> float:
        """Fraction of the frame covered by text (a cheap detection pass)."""

    def read(self, frame_rgb: np.ndarray) -> list[TextLine]:
        """Lines of on-screen text in reading order, with boxes and confidence."""


@runtime_checkable
class Captioner(Protocol):
    name: str

    def caption(self, frames: list[np.ndarray], times_s: list[float], transcript: str = "") -> str:
        """A short description of what happens in these frames of one clip."""


@runtime_checkable
class TextEmbedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """(n, dim) float32 L2-normalised embeddings."""


REGISTRY: dict[str, dict[str, str]] = {
    "asr": {"faster-whisper": "perception.asr_faster_whisper:FasterWhisperASR"},
    "speaker": {"resemblyzer": "perception.speaker_resemblyzer:ResemblyzerSpeaker"},
    "faces": {
        "dlib": "perception.faces_dlib:DlibFaces",
        "insightface": "perception.faces_insightface:InsightFaceFaces",
    },
    "image": {
        "efficientnet-lite0": "perception.image_efficientnet:EfficientNetLite0Images",
        "open-clip": "perception.image_openclip:OpenClipImages",
    },
    "ocr": {"rapidocr": "perception.ocr_rapidocr:RapidOCRReader"},
    "caption": {"vlm": "perception.caption_vlm:VLMCaptioner"},
    "text": {
        "minilm": "perception.text_minilm:MiniLMText",
        "mpnet": "perception.text_mpnet:MPNetText",
        "hash": "perception.text_hash:HashText",
    },
}


def torch_device(device: str) -> str:
    """``"auto"`` as ``"cuda"`` when torch sees a GPU, else ``"cpu"``; any other value as given."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def build(family: str, name: str, **kwargs: Any) -> Any:
    """Build backend ``name`` of model ``family``; the error lists the valid names."""
    try:
        target = REGISTRY[family][name]
    except KeyError:
        valid = ", ".join(sorted(REGISTRY.get(family, {}))) or "none"
        raise ValueError(
            f"unknown {family} backend {name!r}; choose one of: {valid}"
        ) from None
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)(**kwargs)
