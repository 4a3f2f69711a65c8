"""Builds the model backends and the store from the config tree (the only place that does)."""

from __future__ import annotations

import logging
from pathlib import Path

from graph.store import Store
from memorize.identity import MatchPolicy
from mnemo.config import GraphConfig, MemorizeConfig, PerceptionConfig
from perception.base import build
from perception.observe import Perceivers

log = logging.getLogger(__name__)


def faces_backend_name(cfg: PerceptionConfig) -> str:
    """``auto`` picks insightface when its pack is on disk, dlib otherwise."""
    if cfg.faces_backend != "auto":
        return cfg.faces_backend
    pack = Path(cfg.insightface_root).expanduser() / "models" / cfg.insightface_pack
    return "insightface" if any(pack.glob("*.onnx")) else "dlib"


def build_perceivers(cfg: PerceptionConfig) -> Perceivers:
    faces = faces_backend_name(cfg)
    log.info("perception: asr=faster-whisper(%s) speaker=%s faces=%s", cfg.asr_model, cfg.speaker_backend, faces)
    face_kwargs = ({"root": cfg.insightface_root, "pack": cfg.insightface_pack, "device": cfg.device}
                   if faces == "insightface" else {})
    return Perceivers(
        asr=build("asr", "faster-whisper", model=cfg.asr_model, device=cfg.device, compute_type=cfg.asr_compute_type),
        speaker=build("speaker", cfg.speaker_backend, device=cfg.device),
        faces=build("faces", faces, **face_kwargs),
        frame_fps=cfg.frame_fps,
        diarize_max_distance=cfg.diarize_max_distance,
    )


def match_policies(cfg: MemorizeConfig, faces_backend: str) -> tuple[MatchPolicy, MatchPolicy]:
    face_threshold = cfg.face_threshold_insightface if faces_backend == "insightface" else cfg.face_threshold_dlib
    return (MatchPolicy(face_threshold, cfg.max_samples), MatchPolicy(cfg.voice_threshold, cfg.max_samples))


def open_store(cfg: GraphConfig, store: str | None = None) -> Store:
    return Store(store or cfg.store, build("text", cfg.text_embedder))
