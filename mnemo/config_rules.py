"""What a folder's ``./mnemo.toml`` may do with each setting, and the settings sources that hold it
to that: ``PROJECT_RULES`` names a rule (free, trusted only, may only add, lower, raise, or be one
value) per setting; ``ProjectToml`` reads the file and applies them, and ``Stricter`` gives what it
tightened priority over every other source (``mnemo.config.MnemoConfig`` puts them in order).
"""

from __future__ import annotations

import copy
import logging
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, TomlConfigSettingsSource

# the warnings keep the name of the module they were written in (a user or test filters on it)
log = logging.getLogger("mnemo.config")

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


class ProjectToml(TomlConfigSettingsSource):
    """``./mnemo.toml`` under the ``PROJECT_RULES``: its free settings at the lowest priority; what it
    may only tighten is compared with the trusted sources' value, and a stricter one is given by
    ``Stricter`` above them all; a looser one is ignored, with a warning naming it."""

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


class Stricter(PydanticBaseSettingsSource):
    """The values ``./mnemo.toml`` tightened: above every other source, as they are at least as strict."""

    def __init__(self, settings_cls: type[BaseSettings], project: ProjectToml) -> None:
        super().__init__(settings_cls)
        self.project = project

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        return self.project.split()[1]
