"""Model backends by name: each family (``speech/``, ``faces/``, ``vision/``, ``ocr/``) holds its
protocol (``base.py``) and its backends (``<role>_<impl>.py``); this table names them for the
config. Backends are imported only when built, so importing this module loads no model."""

from __future__ import annotations

import importlib
from typing import Any

REGISTRY: dict[str, dict[str, str]] = {
    "asr": {"faster-whisper": "perception.speech.asr_faster_whisper:FasterWhisperASR"},
    "speaker": {"resemblyzer": "perception.speech.speaker_resemblyzer:ResemblyzerSpeaker"},
    "faces": {
        "dlib": "perception.faces.faces_dlib:DlibFaces",
        "insightface": "perception.faces.faces_insightface:InsightFaceFaces",
    },
    "image": {
        "efficientnet-lite0": "perception.vision.image_efficientnet:EfficientNetLite0Images",
        "open-clip": "perception.vision.image_openclip:OpenClipImages",
    },
    "ocr": {"rapidocr": "perception.ocr.ocr_rapidocr:RapidOCRReader"},
    "caption": {"vlm": "perception.vision.caption_vlm:VLMCaptioner"},
}


def build_from(registry: dict[str, dict[str, str]], family: str, name: str, **kwargs: Any) -> Any:
    """Build backend ``name`` of ``family`` from ``registry``; the error lists the valid names."""
    try:
        target = registry[family][name]
    except KeyError:
        valid = ", ".join(sorted(registry.get(family, {}))) or "none"
        raise ValueError(f"unknown {family} backend {name!r}; choose one of: {valid}") from None
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)(**kwargs)


def build(family: str, name: str, **kwargs: Any) -> Any:
    """Build perception backend ``name`` of model ``family`` (``asr``, ``speaker``, ``faces``,
    ``image``, ``ocr``, ``caption``)."""
    return build_from(REGISTRY, family, name, **kwargs)
