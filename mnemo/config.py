"""One typed config tree, read from ``mnemo.toml`` and ``MNEMO_…`` environment variables.

Environment variables use ``__`` between levels: ``MNEMO_PERCEPTION__FRAME_FPS=0.5``. Sources, the
first that sets a value winning: the environment, the file named by ``MNEMO_CONFIG``, the user's own
``$XDG_CONFIG_HOME/mnemo/mnemo.toml`` (``~/.config/mnemo/mnemo.toml``), and (when ``MNEMO_CONFIG`` is
not set) ``./mnemo.toml`` in the current folder. That last one may come with a downloaded folder, so
it may only make mnemo stricter: ``PROJECT_RULES`` says, for every setting, what it may do (free,
trusted only, may only add, may only lower, may only raise, may only be one value). A stricter value
from it wins over every other source (a 7-day retention under your 30, a redaction kind added to
yours); a looser one (``redact = []``, an LLM endpoint, captions by an LLM, another store, no
encryption, no cap) is ignored with a warning saying where to put it. Run from the user's config
folder, ``./mnemo.toml`` is the user's own file and holds as it is. Each part receives only its section.
"""

from __future__ import annotations

import copy
import logging
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from perception.capture.config import CaptureConfig


class PerceptionConfig(BaseModel):
    """``[perception]``: how recordings are cut into clips and what is read from them."""

    clip_s: float = Field(
        30.0,
        gt=0,
        description=(
            "Length of the clips a recording is cut into, in seconds; each clip is perceived and memorized as one "
            "unit. Shorter clips give more, finer memories."
        ),
    )
    frame_fps: float = Field(
        1.0,
        gt=0,
        le=30,
        description=(
            "Video frames sampled per second for faces, tags, screen text and captions. Lower it to ingest faster, "
            "raise it to catch brief glimpses."
        ),
    )
    duplicate_max_diff: float = Field(
        3.0,
        ge=0,
        description=(
            "Mean grey-level change (0-255) under which a frame repeats an earlier frame of its clip: it takes that "
            "frame's faces, tags and text instead of being read again. 0 reads every frame."
        ),
    )
    device: str = Field(
        "auto",
        description=(
            'Where the models run: "auto" (a GPU when torch sees one, else the CPU), "cpu", "cuda", "cuda:1", ... '
            "A GPU needs the extra mnemo[torch]."
        ),
    )
    threads: int = Field(
        0,
        ge=0,
        description=(
            "CPU threads per model library (torch, CTranslate2, ONNX Runtime). 0: the CPUs this process may use; "
            "a Ray worker gets its share of the CPUs."
        ),
    )
    model_runtime: Literal["auto", "torch", "onnx"] = Field(
        "auto",
        description=(
            'How the speaker and image models run: "auto" runs them on the CPU in ONNX Runtime (their graphs built '
            'from the weight files, without torch); "torch" (or a GPU device) needs the extra mnemo[torch].'
        ),
    )
    asr_model: str = Field(
        "tiny.en",
        description=(
            'The speech-to-text model: packaged "tiny.en" (English) or "base" (multilingual), or another '
            "faster-whisper model name or local model folder. Larger models transcribe better, slower."
        ),
    )
    asr_compute_type: str = Field(
        "auto",
        description=(
            '"auto": float16 on a GPU, float32 on the CPU; or any CTranslate2 compute type (e.g. int8, faster and '
            "a little less exact)."
        ),
    )
    asr_beam_size: int = Field(
        5,
        ge=1,
        le=10,
        description=(
            "Beams the speech decoder keeps: fewer is cheaper and, below 3, transcribes worse."
        ),
    )
    asr_hotwords: bool = Field(
        False,
        description=(
            "Tell the first speech pass the names mnemo expects (names you gave, [people] contacts, names already "
            "established, first names on screen that day) as hotwords; a reading that is mostly those names is "
            "decoded again without them. Off: on LoCoMo spoken it raised the WER and named no one more rightly "
            "(docs/benchmarks.md). The spellings you and your contacts give apply either way."
        ),
    )
    asr_second_model: str = Field(
        "",
        description=(
            "A second speech pass, off by default: it decodes again, with a wider beam and the names mnemo expects "
            "as hotwords, where a name may be spoken, a word was heard with doubt or a sentence repeats itself: "
            '"tiny.en", "base" (packaged Whisper base), another faster-whisper model or folder; "" for one pass. '
            "Measured: the pyannote call's WER 0.1235 to 0.0988, but on LoCoMo spoken it heard 93% of the audio "
            "again and named more people wrongly (docs/benchmarks.md)."
        ),
    )
    asr_second_beam_size: int = Field(
        8,
        ge=1,
        le=16,
        description="Beams the second speech pass keeps (it hears little audio, so it can afford more).",
    )
    asr_second_min_probability: float = Field(
        0.5,
        ge=0,
        le=1,
        description=(
            "A first-pass word heard with a probability under this sends its sentence to the second pass; "
            "0: only names do."
        ),
    )
    speaker_backend: Literal["resemblyzer"] = Field(
        "resemblyzer", description=("The voice model that tells speakers apart.")
    )
    diarize_max_distance: float = Field(
        0.25,
        gt=0,
        lt=2,
        description=(
            "Cosine distance under which a clip's voice windows are clustered as one speaker. Lower splits voices "
            "more readily, higher merges alike voices."
        ),
    )
    diarize_min_speaker_s: float = Field(
        2.5,
        ge=0,
        description=(
            "Seconds of speech a speaker needs in a clip; speakers with less are folded into the nearest one."
        ),
    )
    faces_backend: Literal["auto", "dlib", "insightface"] = Field(
        "auto",
        description=(
            'The face detector and embedder: "auto" takes insightface when its model pack is on disk and its '
            "package (mnemo[insightface]) is installed, dlib otherwise."
        ),
    )
    insightface_root: str = Field(
        "~/.insightface",
        description=("Folder holding insightface's model packs (in its models/ folder)."),
    )
    insightface_pack: str = Field(
        "buffalo_l",
        description=("The insightface model pack: a folder under insightface_root/models."),
    )
    face_min_px: int = Field(
        40,
        ge=8,
        description=(
            "Smallest face used, in pixels (the shorter side of its box); smaller ones are ignored."
        ),
    )
    face_min_sharpness: float = Field(
        20.0,
        ge=0,
        description=(
            "Sharpness a face needs to be used: the Laplacian variance of its 128x128 crop. Raise it to drop "
            "blurred faces."
        ),
    )
    face_cluster_distance_dlib: float = Field(
        0.08,
        gt=0,
        lt=2,
        description=(
            "Average cosine distance under which faces of one clip are grouped as one person (dlib)."
        ),
    )
    face_cluster_distance_insightface: float = Field(
        0.55,
        gt=0,
        lt=2,
        description=(
            "Average cosine distance under which faces of one clip are grouped as one person (insightface)."
        ),
    )
    image_backend: Literal["efficientnet-lite0", "open-clip", "none"] = Field(
        "efficientnet-lite0",
        description=(
            'The image tagger: "efficientnet-lite0" (small, no torch needed), "open-clip" (needs open_clip and '
            'torch), or "none".'
        ),
    )
    open_clip_model: str = Field(
        "ViT-B-32", description=('The open_clip architecture, with image_backend "open-clip".')
    )
    open_clip_checkpoint: str = Field(
        "",
        description=(
            'With image_backend "open-clip": a local .pt/.safetensors file or an open_clip pretrained tag.'
        ),
    )
    ocr_backend: Literal["rapidocr", "none"] = Field(
        "rapidocr", description=('The on-screen text reader; "none" reads no text from frames.')
    )
    ocr_min_text_fraction: float = Field(
        0.01,
        ge=0,
        le=1,
        description=(
            "Read the text of frames at least this covered (0-1) by detected text; 0 reads every frame."
        ),
    )
    ocr_every_s: float = Field(
        5.0,
        ge=0,
        description=(
            "Look for on-screen text in video at most once per this many seconds (screenshots: every frame)."
        ),
    )
    ocr_word_gaps: bool = Field(
        True,
        description=(
            "Place spaces in screen text where the line's pixels have blank columns (perception/ocr/words.py); "
            "false keeps the recogniser's own spaces."
        ),
    )
    ocr_detect_min_side: int = Field(
        0,
        ge=0,
        description=(
            "0: detect text on the frame at its own size; N: first upscale its short side to N pixels (RapidOCR's "
            "default, 736)."
        ),
    )
    ocr_detect_max_side: int = Field(
        4096,
        ge=640,
        description=(
            "A frame with a longer side, in pixels, is scaled down to it to detect text (its lines are still read at "
            "full size). 4096 takes a 4K screen as it is; RapidOCR's own 2000 is cheaper and misses small text."
        ),
    )
    caption_backend: Literal["none", "vlm"] = Field(
        "none",
        description=(
            '"vlm": the [llm] endpoint captions the frames (they are sent to it); "none": no captions.'
        ),
    )


class MemorizeConfig(BaseModel):
    """``[memorize]``: how faces and voices become people, and what is kept out of memories."""

    face_threshold_dlib: float = Field(
        0.92,
        description=(
            "Cosine similarity a face needs to a known person's samples to be that person, else a new person "
            "(dlib; memorize/identity.py). Higher splits look-alikes, lower merges more."
        ),
    )
    face_threshold_insightface: float = Field(
        0.45,
        description=(
            "Cosine similarity a face needs to a known person's samples to be that person, else a new person "
            "(insightface)."
        ),
    )
    voice_threshold: float = Field(
        0.84,
        description=(
            "Cosine similarity a clip's speaker needs to a known voice's profile (the mean of everything heard of "
            "it) to be that voice, else a new one."
        ),
    )
    voice_same_similarity: float = Field(
        0.86,
        description=(
            "A clip's speaker whose own voice is taken by another speaker of the clip joins it when this alike and "
            "0.1 closer to it than to any other voice (one voice split in two by clustering)."
        ),
    )
    voice_merge_similarity: float = Field(
        0.93,
        description=(
            "Two voices whose profiles are this alike are one person: merged, with the similarity as evidence."
        ),
    )
    min_voice_s: float = Field(
        2.5,
        description=(
            "Seconds of speech a clip's speaker needs to found a new voice (a person); shorter ones are mostly the "
            "windows where two voices meet."
        ),
    )
    max_samples: int = Field(
        8,
        ge=1,
        description=(
            "Face or voice samples kept per person to match against (the most diverse ones)."
        ),
    )
    redact: list[str] = Field(
        ["secrets", "cards", "ibans", "passwords"],
        description=(
            "Kinds of text kept out of memory (memorize/redact.py): secrets, cards, ibans, passwords, emails, "
            "phones."
        ),
    )
    phone_region: str = Field(
        "US",
        description=(
            'With "phones" redacted: the region (e.g. US, DE) as whose numbers phone numbers without a +country '
            "prefix are read."
        ),
    )
    writer: Literal["offline", "llm"] = Field(
        "offline",
        description=(
            '"offline": memories are written here; "llm": the [llm] endpoint writes them too (transcripts and '
            "screen text are sent to it)."
        ),
    )


class LLMConfig(BaseModel):
    """``[llm]``: an OpenAI-compatible chat endpoint (vLLM, Ollama, llama.cpp server, OpenAI, …). The API
    key is read from the environment variable named by ``api_key_env``, never from a file."""

    base_url: str = Field(
        "", description=("The endpoint, e.g. http://localhost:8000/v1; empty: no LLM endpoint.")
    )
    model: str = Field("", description="The model name sent to the endpoint.")
    api_key_env: str = Field(
        "OPENAI_API_KEY",
        description=("The environment variable holding the API key (never read from a file)."),
    )
    allow_plain_http_key: bool = Field(
        False,
        description=(
            "The key goes only to https or loopback endpoints; true also sends it over plain http elsewhere."
        ),
    )
    log_prompts: bool = Field(
        False,
        description=("With -v, log prompts and replies (they hold transcripts and screen text)."),
    )
    timeout_s: float = Field(
        60.0, gt=0, description="Seconds to wait for one reply before trying again."
    )
    max_retries: int = Field(2, ge=0, description="Tries after a failed or timed-out request.")
    max_wait_s: float = Field(
        60.0,
        gt=0,
        description=(
            "The longest wait between tries, in seconds, a server's Retry-After included."
        ),
    )
    vision: bool = Field(
        True,
        description=(
            "The model takes images; false (a text-only model): the LLM writer sends text only."
        ),
    )
    judge_model: str = Field(
        "",
        description=(
            "`mnemo bench --judge`: the judge model on this endpoint; empty: `model` (the LoCoMo paper's judge: "
            "gpt-4o-2024-11-20)."
        ),
    )


class GraphConfig(BaseModel):
    """``[graph]``: the store of memories, its text embedder, and how long it keeps things."""

    store: str = Field(
        "./mnemo-data",
        description=(
            "The store folder: clips, memories, people and their indexes. `--store` overrides it."
        ),
    )
    text_embedder: Literal["mpnet", "minilm", "hash"] = Field(
        "mpnet",
        description=(
            '"mpnet": all-mpnet-base-v2 (768-d); "minilm": all-MiniLM-L6-v2 (384-d, faster, finds less); "hash": '
            "word overlap only, no model (tests). A store keeps the embedder it was built with."
        ),
    )
    text_device: str = Field(
        "auto",
        description=(
            'Where the text embedder runs: "auto" (a GPU when torch sees one), "cpu", "cuda:1", ...'
        ),
    )
    text_dtype: Literal["auto", "bfloat16", "float16", "float32"] | None = Field(
        None,
        description=(
            "The embedder weights' dtype; unset: the backend's own (mpnet \"auto\": bfloat16 where the CPU or GPU "
            "computes in it natively and torch is installed, else float32; minilm float32). Vectors are float32 "
            'either way. bfloat16, float16, a GPU and text_runtime "torch" need the extra mnemo[torch].'
        ),
    )
    text_runtime: Literal["auto", "torch", "onnx"] = Field(
        "auto",
        description=(
            '"auto": ONNX Runtime for float32 on the CPU (the same vectors, faster), torch otherwise; "torch" or '
            '"onnx" to choose.'
        ),
    )
    retention_days: float = Field(
        0.0,
        ge=0,
        description=(
            "Forget clips (memories, media and all) older than this many days; 0 keeps everything. Applied by "
            "`mnemo capture --ingest` after each ingest and by `mnemo forget --apply-retention`."
        ),
    )
    max_store_gb: float = Field(
        0.0,
        ge=0,
        description=(
            "The store's size on disk at most, in GB: the oldest clips are forgotten until it fits. 0: no cap."
        ),
    )


class PeopleConfig(BaseModel):
    """``[people]``: who "I" is, and the names to expect."""

    me: str = Field(
        "",
        description=(
            'Who you are when not marked with `mnemo people me ID` (which wins): an id (voice_3) or a name. "I", '
            '"me" and "my" in a question mean this person; empty: nobody until you mark yourself.'
        ),
    )
    contacts: str = Field(
        "",
        description=(
            "A contact list: a vCard file (.vcf) or a text file of one name a line. Its names are told to the "
            'speech recogniser, spelled as written there ("Jon" over "John"); they name nobody without '
            "being heard. Empty: none."
        ),
    )


class ControlConfig(BaseModel):
    """``[control]``: how questions are answered."""

    agent: Literal["offline", "llm", "local"] = Field(
        "offline",
        description=(
            '"offline": the planner answers here; "llm": the [Search]/[Answer] loop on the [llm] endpoint '
            '(questions and memories are sent to it); "local": answers reasoned by reason_model on '
            "this machine (as `mnemo ask --reason`; a configured [llm] endpoint is used instead)."
        ),
    )
    reason_model: Literal["qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-0.5b-instruct"] = Field(
        "qwen2.5-coder-1.5b-instruct",
        description=(
            'The packaged model that reasons (`--reason`, agent "local", `mnemo llm serve`): the '
            "1.5B (1.1 GB, about 10 s a question on 2 cores) or the 0.5B (0.5 GB, faster, weaker)."
        ),
    )
    reason_idle_s: float = Field(
        600.0,
        gt=0,
        description=(
            "The reasoning model served here (no [llm] endpoint, no `mnemo llm serve` running) is "
            "started by the first question and stopped after this many seconds without one, so "
            "`mnemo serve` and `mnemo mcp` hold its memory only while questions come."
        ),
    )
    top_k: int = Field(
        10, ge=1, description=("Memories ranked by the planner per search (and shown to the LLM).")
    )
    max_rounds: int = Field(
        5,
        ge=1,
        description=("LLM loop: search rounds before the answer is forced (in the last round)."),
    )
    planner_rounds: int = Field(
        2, ge=1, description="Offline planner: expand and re-rank rounds at most."
    )
    expand: int = Field(
        8,
        ge=0,
        description=(
            "Offline planner: the best memories whose neighbours each round reads; 0 reads none."
        ),
    )


class MnemoConfig(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="MNEMO_", env_nested_delimiter="__", extra="forbid"
    )

    perception: PerceptionConfig = PerceptionConfig()
    memorize: MemorizeConfig = MemorizeConfig()
    graph: GraphConfig = GraphConfig()
    llm: LLMConfig = LLMConfig()
    control: ControlConfig = ControlConfig()
    capture: CaptureConfig = CaptureConfig()
    people: PeopleConfig = PeopleConfig()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        named = os.environ.get(
            "MNEMO_CONFIG"
        )  # a file the user names comes first and stands for ./mnemo.toml
        user = TomlConfigSettingsSource(settings_cls, toml_file=user_config_file())
        if named:
            return (
                init_settings,
                env_settings,
                TomlConfigSettingsSource(settings_cls, toml_file=Path(named)),
                user,
            )
        project = _ProjectToml(settings_cls, trusted=(init_settings, env_settings, user))
        return _Stricter(settings_cls, project), init_settings, env_settings, user, project


log = logging.getLogger(__name__)

_KEEP = object()  # a rule's answer: the trusted value stays


@dataclass(frozen=True)
class Rule:
    """What ``./mnemo.toml`` may do with one setting. ``stricter(trusted, project)`` returns the value
    to use (``_KEEP``: the trusted one stays) and whether the file asked for something looser."""

    name: str
    stricter: Callable[[Any, Any], tuple[Any, bool]]


def _no_cap_last(v: float) -> float:
    return v if v > 0 else math.inf  # 0 means "no cap" here: the loosest value, not the strictest


FREE = Rule("free", lambda t, p: (p, False))
TRUSTED = Rule("trusted only", lambda t, p: (_KEEP, p != t))
ADD = Rule(
    "may only add", lambda t, p: (t + [v for v in p if v not in t], any(v not in p for v in t))
)
LOWER = Rule("may only lower", lambda t, p: (p, False) if p <= t else (_KEEP, True))
LOWER_CAP = Rule(
    "may only lower, and not to 0 (no cap)",
    lambda t, p: (p, False) if _no_cap_last(p) <= _no_cap_last(t) else (_KEEP, True),
)
RAISE = Rule("may only raise", lambda t, p: (p, False) if p >= t else (_KEEP, True))


def only(allowed: Any) -> Rule:
    shown = (
        str(allowed).lower() if isinstance(allowed, bool) else repr(allowed)
    )  # as TOML writes it
    return Rule(
        f"may only be {shown}", lambda t, p: (p, False) if p == allowed else (_KEEP, p != t)
    )


# What a folder's ./mnemo.toml may do with each setting (section.key). Not free: whatever sends data
# somewhere, loosens privacy (redaction, exclusions, encryption, capturing more), raises budgets or
# retention, or changes where mnemo writes or deletes files. tests/test_config.py fails on a setting
# that is missing here; one missing at run time is trusted only.
PROJECT_RULES: dict[str, Rule] = {
    **{
        f"perception.{k}": FREE
        for k in (
            "clip_s",
            "frame_fps",
            "duplicate_max_diff",
            "device",
            "threads",
            "model_runtime",
            "asr_model",
            "asr_compute_type",
            "asr_beam_size",
            "asr_hotwords",
            "asr_second_model",
            "asr_second_beam_size",
            "asr_second_min_probability",
            "speaker_backend",
            "diarize_max_distance",
            "diarize_min_speaker_s",
            "faces_backend",
            "insightface_root",
            "insightface_pack",
            "face_min_px",
            "face_min_sharpness",
            "face_cluster_distance_dlib",
            "face_cluster_distance_insightface",
            "image_backend",
            "open_clip_model",
            "open_clip_checkpoint",
            "ocr_backend",
            "ocr_min_text_fraction",
            "ocr_every_s",
            "ocr_word_gaps",
            "ocr_detect_min_side",
            "ocr_detect_max_side",
        )
    },
    "perception.caption_backend": only("none"),  # "vlm" sends every frame to the [llm] endpoint
    **{
        f"memorize.{k}": FREE
        for k in (
            "face_threshold_dlib",
            "face_threshold_insightface",
            "voice_threshold",
            "voice_same_similarity",
            "voice_merge_similarity",
            "min_voice_s",
            "max_samples",
        )
    },
    "memorize.redact": ADD,
    "memorize.phone_region": TRUSTED,  # another region's numbers would go unredacted
    "memorize.writer": only("offline"),  # "llm" sends transcripts and screen text to the endpoint
    "llm.base_url": TRUSTED,
    "llm.api_key_env": TRUSTED,  # where prompts and the key go, which secret is sent
    "llm.allow_plain_http_key": only(False),
    "llm.log_prompts": only(False),  # prompts hold transcripts and screen text
    "llm.vision": only(False),  # true sends images, not only text
    **{
        f"llm.{k}": FREE for k in ("model", "timeout_s", "max_retries", "max_wait_s", "judge_model")
    },
    "graph.store": TRUSTED,  # where memories are written, and forgotten ones deleted
    **{f"graph.{k}": FREE for k in ("text_embedder", "text_device", "text_dtype", "text_runtime")},
    "graph.retention_days": LOWER_CAP,
    "graph.max_store_gb": LOWER_CAP,
    "control.agent": only("offline"),  # "llm" sends questions and memories to the endpoint
    **{
        f"control.{k}": FREE
        for k in (
            "top_k",
            "max_rounds",
            "planner_rounds",
            "expand",
            "reason_model",
            "reason_idle_s",
        )
    },
    "capture.out": TRUSTED,  # where screenshots are written, and old ones deleted
    "people.me": TRUSTED,
    # a folder's file must not make the recogniser expect its names (hotwords are written as heard)
    "people.contacts": TRUSTED,  # whose memories "I" finds: another folder's file must not make you someone else
    # capturing more often, or more of what changes, keeps more of the screen
    "capture.interval_s": RAISE,
    "capture.idle_interval_s": RAISE,
    "capture.idle_after_s": LOWER,
    "capture.min_changed_fraction": RAISE,
    "capture.input_settle_s": LOWER,
    **{
        f"capture.{k}": FREE
        for k in (
            "heartbeat_s",
            "tile_px",
            "jpeg_quality",
            "ingest_poll_s",
            "ingest_release_s",
            "pause_grab_s",
            # the tree gives the text of what frames show anyway (never a password field, never
            # an excluded window): on, exact words cheaply; off, OCR reads the same
            "read_tree",
        )
    },
    "capture.exclude_classes": ADD,
    "capture.exclude_titles": ADD,
    "capture.builtin_exclusions": only(True),
    "capture.budget_mb": LOWER_CAP,
    "capture.max_age_days": LOWER_CAP,
    "capture.min_free_mb": RAISE,
    "capture.encrypt": only(True),
    "capture.audio": only(False),  # a folder may keep the microphone off, never switch it on
    "capture.audio_min_speech_s": RAISE,  # stores less sound
    "capture.keep_audio": LOWER,  # 0 (only until ingested) is the strictest
    "capture.key_file": TRUSTED,  # which key encrypts the screenshots
}


def user_config_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "mnemo" / "mnemo.toml"


def _merge(low: dict[str, Any], high: dict[str, Any]) -> dict[str, Any]:
    out = dict(low)
    for key, value in high.items():
        value = value.model_dump() if isinstance(value, BaseModel) else value
        out[key] = (
            _merge(out[key], value)
            if isinstance(value, dict) and isinstance(out.get(key), dict)
            else value
        )
    return out


class _ProjectToml(TomlConfigSettingsSource):
    """``./mnemo.toml`` under the ``PROJECT_RULES``: its free settings at the lowest priority; what it
    may only tighten is compared with the trusted sources' value, and a stricter one is given by
    ``_Stricter`` above them all; a looser one is ignored, with a warning naming it."""

    def __init__(
        self, settings_cls: type[BaseSettings], trusted: tuple[PydanticBaseSettingsSource, ...]
    ) -> None:
        super().__init__(settings_cls, toml_file=Path("mnemo.toml"))
        self.trusted_sources = trusted
        self._split: tuple[dict[str, Any], dict[str, Any]] | None = None

    def __call__(self) -> dict[str, Any]:
        return self.split()[0]

    def split(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """(settings used as the file says, stricter values that win over every other source)"""
        if self._split is None:
            data = copy.deepcopy(super().__call__())
            if not data or Path("mnemo.toml").resolve() == user_config_file().resolve():
                self._split = (data, {})  # none, or the user's own config (run from its folder)
            else:
                self._split = self._apply_rules(data)
        return self._split

    def _apply_rules(self, data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        trusted: dict[str, Any] = {}
        for source in reversed(self.trusted_sources):
            trusted = _merge(trusted, source())
        free: dict[str, Any] = {}
        strict: dict[str, Any] = {}
        for section, part in data.items():
            field = self.settings_cls.model_fields.get(section)
            model = field.annotation if field else None
            if not (
                isinstance(part, dict) and isinstance(model, type) and issubclass(model, BaseModel)
            ):
                free[section] = part  # not a section: validation names it
                continue
            try:
                current = model.model_validate(trusted.get(section, {}))
            except ValidationError:
                continue  # the trusted sources are wrong: loading says so; nothing here loosens them
            for key, raw in part.items():
                rule = PROJECT_RULES.get(f"{section}.{key}", TRUSTED)
                if rule is FREE or key not in model.model_fields:
                    free.setdefault(section, {})[key] = raw  # an unknown key: validation decides
                    continue
                was = getattr(current, key)
                if rule is TRUSTED:
                    value, looser = _KEEP, True  # not even read: it may be anything
                else:
                    try:
                        value, looser = rule.stricter(
                            was,
                            getattr(model.model_validate({**current.model_dump(), key: raw}), key),
                        )
                    except ValidationError:
                        free.setdefault(section, {})[key] = (
                            raw  # invalid: an error unless trusted sources set it
                        )
                        continue
                if value is not _KEEP and value != was:
                    strict.setdefault(section, {})[key] = value
                if looser and raw != was:
                    log.warning(
                        "%s [%s] %s = %r in %s: a folder's mnemo.toml may only make mnemo stricter "
                        "(this setting: %s), so %r holds; to loosen it, set it in your own %s, the file "
                        "MNEMO_CONFIG names, or MNEMO_%s__%s",
                        "ignored" if value is _KEEP else "applied only in part",
                        section,
                        key,
                        raw,
                        Path("mnemo.toml").resolve(),
                        rule.name,
                        was if value is _KEEP else value,
                        user_config_file(),
                        section.upper(),
                        key.upper(),
                    )
        # a section the trusted sources gave as a model instance would be replaced, not merged, by a dict
        return free, {
            section: _merge(trusted.get(section, {}), part) for section, part in strict.items()
        }


class _Stricter(PydanticBaseSettingsSource):
    """The values ``./mnemo.toml`` tightened: above every other source, as they are at least as strict."""

    def __init__(self, settings_cls: type[BaseSettings], project: _ProjectToml) -> None:
        super().__init__(settings_cls)
        self.project = project

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        return self.project.split()[1]


def load_config(**overrides) -> MnemoConfig:
    path = os.environ.get("MNEMO_CONFIG")
    if path and not Path(path).is_file():
        raise FileNotFoundError(f"MNEMO_CONFIG points to {path}, which does not exist")
    return MnemoConfig(**overrides)
