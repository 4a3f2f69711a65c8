"""One typed config tree, read from ``mnemo.toml`` and ``MNEMO_…`` environment variables.

Environment variables use ``__`` between levels: ``MNEMO_PERCEPTION__FRAME_FPS=0.5``. The TOML
file is ``./mnemo.toml`` or the path in ``MNEMO_CONFIG``. Each part receives only its section.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, TomlConfigSettingsSource


class PerceptionConfig(BaseModel):
    clip_s: float = Field(30.0, gt=0, description="clip length in seconds")
    frame_fps: float = Field(1.0, gt=0, le=30, description="frames sampled per second for faces")
    device: str = "auto"
    asr_model: str = "tiny.en"  # packaged default; or a faster-whisper model name / local dir
    asr_compute_type: str = "auto"  # float16 on GPU, float32 on CPU; or any CTranslate2 type
    speaker_backend: Literal["resemblyzer"] = "resemblyzer"
    diarize_max_distance: float = Field(0.3, gt=0, lt=2, description="cosine distance to cluster voice windows")
    faces_backend: Literal["auto", "dlib", "insightface"] = "auto"
    insightface_root: str = "~/.insightface"
    insightface_pack: str = "buffalo_l"


class MemorizeConfig(BaseModel):
    # cosine similarity to join an entity, per backend; see memorize/identity.py and the issue notes
    face_threshold_dlib: float = 0.92
    face_threshold_insightface: float = 0.45
    voice_threshold: float = 0.75
    max_samples: int = Field(8, ge=1)


class GraphConfig(BaseModel):
    store: str = "./mnemo-data"
    text_embedder: Literal["minilm", "hash"] = "minilm"


class ControlConfig(BaseModel):
    top_k: int = Field(10, ge=1)


class MnemoConfig(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MNEMO_", env_nested_delimiter="__", extra="forbid")

    perception: PerceptionConfig = PerceptionConfig()
    memorize: MemorizeConfig = MemorizeConfig()
    graph: GraphConfig = GraphConfig()
    control: ControlConfig = ControlConfig()

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = Path(os.environ.get("MNEMO_CONFIG", "mnemo.toml"))
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=toml))


def load_config(**overrides) -> MnemoConfig:
    path = os.environ.get("MNEMO_CONFIG")
    if path and not Path(path).is_file():
        raise FileNotFoundError(f"MNEMO_CONFIG points to {path}, which does not exist")
    return MnemoConfig(**overrides)
