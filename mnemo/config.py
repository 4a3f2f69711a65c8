"""One typed config tree, read from ``mnemo.toml`` and ``MNEMO_…`` environment variables.

Environment variables use ``__`` between levels: ``MNEMO_PERCEPTION__FRAME_FPS=0.5``. Sources, the
first that sets a value winning: the environment, the file named by ``MNEMO_CONFIG``, the user's own
``$XDG_CONFIG_HOME/mnemo/mnemo.toml`` (``~/.config/mnemo/mnemo.toml``), and (when ``MNEMO_CONFIG`` is
not set) ``./mnemo.toml`` in the current folder. That last one may come with a downloaded folder, so it is not trusted with where
secrets come from or go (``TRUSTED_ONLY``: the LLM endpoint, its key's variable, plain-HTTP keys,
the capture key file): such a setting there is ignored, with a warning saying where to put it.
Each part receives only its section.
"""

from __future__ import annotations

import os
import logging
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, TomlConfigSettingsSource

from perception.capture.config import CaptureConfig


class PerceptionConfig(BaseModel):
    clip_s: float = Field(30.0, gt=0, description="clip length in seconds")
    frame_fps: float = Field(1.0, gt=0, le=30, description="frames sampled per second")
    duplicate_max_diff: float = Field(3.0, ge=0, description="mean grey-level change under which a frame "
                                      "repeats the previous one: its faces are the previous one's and it is skipped "
                                      "for tags/OCR/captions; a frame this close to an earlier one of its clip "
                                      "gets that one's faces, tags and text; 0 keeps all")
    device: str = "auto"
    threads: int = Field(0, ge=0, description="CPU threads per model library (torch, CTranslate2, ONNX Runtime); "
                         "0: the CPUs this process may use. A Ray worker gets its share of CPUs")
    # the speaker and image models: "auto" runs them on the CPU in ONNX Runtime (exported from torch
    # once, checked against it), which leaves torch (about 500 MB) out of the process; "torch" to choose
    model_runtime: Literal["auto", "torch", "onnx"] = "auto"
    asr_model: str = "tiny.en"  # packaged: "tiny.en" (English), "base" (multilingual); or a name / local dir
    asr_compute_type: str = "auto"  # float16 on GPU, float32 on CPU; or any CTranslate2 type
    asr_beam_size: int = Field(5, ge=1, le=10)  # beams the decoder keeps: fewer is cheaper and, below 3, worse
    speaker_backend: Literal["resemblyzer"] = "resemblyzer"
    diarize_max_distance: float = Field(0.25, gt=0, lt=2, description="cosine distance to cluster voice windows")
    diarize_min_speaker_s: float = Field(2.5, ge=0, description="speakers with less speech in a clip are "
                                         "folded into the nearest one")
    faces_backend: Literal["auto", "dlib", "insightface"] = "auto"
    insightface_root: str = "~/.insightface"
    insightface_pack: str = "buffalo_l"
    face_min_px: int = Field(40, ge=8, description="smallest usable face (shorter box side, pixels)")
    face_min_sharpness: float = Field(20.0, ge=0, description="Laplacian variance of the 128x128 face crop")
    face_cluster_distance_dlib: float = Field(0.08, gt=0, lt=2, description="average cosine distance "
                                              "to group faces of one clip (dlib)")
    face_cluster_distance_insightface: float = Field(0.55, gt=0, lt=2)
    image_backend: Literal["efficientnet-lite0", "open-clip", "none"] = "efficientnet-lite0"
    open_clip_model: str = "ViT-B-32"
    open_clip_checkpoint: str = ""  # a local .pt/.safetensors file or an open_clip pretrained tag
    ocr_backend: Literal["rapidocr", "none"] = "rapidocr"
    ocr_min_text_fraction: float = Field(0.01, ge=0, le=1, description="run OCR recognition on frames "
                                         "at least this covered by detected text; 0 reads every frame")
    ocr_every_s: float = Field(5.0, ge=0, description="look for on-screen text in video at most this often")
    ocr_word_gaps: bool = Field(True, description="place spaces in screen text where the line's pixels have "
                                "blank columns (perception/ocr/words.py); false: the recogniser's own spaces")
    ocr_detect_min_side: int = Field(0, ge=0, description="0: detect text on the frame at its own size; N: "
                                     "upscale the short side to N px first (RapidOCR's default, 736)")
    ocr_detect_max_side: int = Field(4096, ge=640, description="a frame with a longer side is scaled down to "
                                     "it to detect text (its lines are read at full size); 4096 detects a 4K screen "
                                     "as it is, 2000 (RapidOCR's own cap) is 4-7x cheaper there and misses small text")
    caption_backend: Literal["none", "vlm"] = "none"  # "vlm" uses the [llm] endpoint


class MemorizeConfig(BaseModel):
    # cosine similarity to join an entity, per backend; see memorize/identity.py and the issue notes
    face_threshold_dlib: float = 0.92
    face_threshold_insightface: float = 0.45
    # a voice this alike to a known one's profile (the mean of everything heard of it) is that
    # voice, else a new one. Measured with Resemblyzer on LoCoMo spoken aloud (bench locomo
    # --spoken, 3 sessions of the 6 dev conversations, 282 clip-local speakers): a speaker's clip
    # centroid is 0.918 (5th percentile) to 0.983 (median) like its own voice's mean, and at most
    # 0.895 (95th percentile 0.844) like any other voice's. Matching the best single sample
    # instead kept only outliers and split each voice into 2 entities on average
    voice_threshold: float = 0.84
    # a clip-local speaker whose own voice entity is taken by another speaker of the clip joins it
    # when this alike and 0.1 closer to it than to any other (one voice split in two by clustering)
    voice_same_similarity: float = 0.86
    # two voice entities whose profiles are this alike are one person (merged, with the similarity
    # as evidence); measured: one espeak voice's clip centroids 0.95-0.975 alike, two espeak
    # voices' at most 0.77, pyannote's two real callers 0.89-0.91
    voice_merge_similarity: float = 0.93
    # speech a clip-local speaker needs to found a new voice (a person): shorter ones are mostly
    # the windows where two voices meet; at 1.0 s they founded 6 extra people in the bench above
    min_voice_s: float = 2.5
    max_samples: int = Field(8, ge=1)
    # kept out of memory (memorize/redact.py): secrets, cards, ibans, passwords, emails, phones
    redact: list[str] = ["secrets", "cards", "ibans", "passwords"]
    phone_region: str = "US"  # phones: numbers without a +country prefix are read as this region's
    writer: Literal["offline", "llm"] = "offline"  # "llm": the [llm] endpoint writes memories too


class LLMConfig(BaseModel):
    """An OpenAI-compatible chat endpoint (vLLM, Ollama, llama.cpp server, OpenAI, …). The API key
    is read from the environment variable named by ``api_key_env``, never from a file."""

    base_url: str = ""  # e.g. http://localhost:8000/v1; empty: no LLM
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    # the key goes only to https or loopback endpoints; true also sends it over plain http elsewhere
    allow_plain_http_key: bool = False
    log_prompts: bool = False  # with -v, log prompts and replies (they hold transcripts and screen text)
    timeout_s: float = Field(60.0, gt=0)
    max_retries: int = Field(2, ge=0)
    max_wait_s: float = Field(60.0, gt=0)  # the longest wait between tries, a server's Retry-After included
    vision: bool = True  # the model takes images; false (a text-only model): the LLM writer sends text only
    judge_model: str = ""  # bench --judge: the judge model on this endpoint; empty: `model` (the paper: gpt-4o-2024-11-20)


class GraphConfig(BaseModel):
    store: str = "./mnemo-data"
    # "mpnet": all-mpnet-base-v2 (768-d); "minilm": all-MiniLM-L6-v2 (384-d, faster, finds less);
    # a store keeps the embedder it was built with
    text_embedder: Literal["mpnet", "minilm", "hash"] = "mpnet"
    text_device: str = "auto"  # where it runs: "auto" (a GPU when torch sees one), "cpu", "cuda:1", ...
    # weights' dtype; None: the backend's own (mpnet "auto": bfloat16 where the CPU or GPU computes in it
    # natively, else float32; minilm float32). Vectors in float32 either way
    text_dtype: Literal["auto", "bfloat16", "float16", "float32"] | None = None
    # "auto": ONNX Runtime for float32 on the CPU (the same vectors, 33 against 81 ms a query on a
    # 2-core AVX2 EPYC), torch otherwise; "torch" or "onnx" to choose
    text_runtime: Literal["auto", "torch", "onnx"] = "auto"
    # forget clips (memories, media and all) older than this many days (0: keep everything); applied
    # by `mnemo capture --ingest` after each ingest and by `mnemo forget --apply-retention`
    retention_days: float = Field(0.0, ge=0)
    # the store's size on disk at most (0: no cap): the oldest clips are forgotten until it fits
    max_store_gb: float = Field(0.0, ge=0)


class ControlConfig(BaseModel):
    agent: Literal["offline", "llm"] = "offline"  # "llm": the [Search]/[Answer] loop on the [llm] endpoint
    top_k: int = Field(10, ge=1)  # memories ranked by the planner, shown per search to the LLM
    max_rounds: int = Field(5, ge=1)  # LLM loop: rounds before the answer is forced (the last round)
    planner_rounds: int = Field(2, ge=1)  # offline planner: expand/re-rank rounds at most
    expand: int = Field(8, ge=0)  # offline planner: best memories whose neighbours each round reads


class MnemoConfig(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MNEMO_", env_nested_delimiter="__", extra="forbid")

    perception: PerceptionConfig = PerceptionConfig()
    memorize: MemorizeConfig = MemorizeConfig()
    graph: GraphConfig = GraphConfig()
    llm: LLMConfig = LLMConfig()
    control: ControlConfig = ControlConfig()
    capture: CaptureConfig = CaptureConfig()

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource) -> tuple[PydanticBaseSettingsSource, ...]:
        named = os.environ.get("MNEMO_CONFIG")  # a file the user names comes first and stands for ./mnemo.toml
        user = TomlConfigSettingsSource(settings_cls, toml_file=user_config_file())
        if named:
            return init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=Path(named)), user
        return init_settings, env_settings, user, _ProjectToml(settings_cls, toml_file=Path("mnemo.toml"))


log = logging.getLogger(__name__)

# settings that say where secrets come from or where they may be sent: never from ./mnemo.toml
TRUSTED_ONLY = (("llm", "base_url"), ("llm", "api_key_env"), ("llm", "allow_plain_http_key"), ("capture", "key_file"))


def user_config_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "mnemo" / "mnemo.toml"


class _ProjectToml(TomlConfigSettingsSource):
    """``./mnemo.toml``, without the ``TRUSTED_ONLY`` settings (each ignored one is named)."""

    def __call__(self) -> dict[str, Any]:
        data = super().__call__()
        if Path("mnemo.toml").resolve() == user_config_file().resolve():  # run from the config folder
            return data
        for section, key in TRUSTED_ONLY:
            part = data.get(section)
            if isinstance(part, dict) and key in part:
                del part[key]
                log.warning("ignored [%s] %s in %s: where secrets come from or go is taken only from your own "
                            "%s, the file MNEMO_CONFIG names, or MNEMO_%s__%s", section, key,
                            Path("mnemo.toml").resolve(), user_config_file(), section.upper(), key.upper())
        return data


def load_config(**overrides) -> MnemoConfig:
    path = os.environ.get("MNEMO_CONFIG")
    if path and not Path(path).is_file():
        raise FileNotFoundError(f"MNEMO_CONFIG points to {path}, which does not exist")
    return MnemoConfig(**overrides)
