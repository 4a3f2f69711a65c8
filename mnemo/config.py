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

This module puts the tree together and loads it; the sections' models are in
``mnemo.config_perception`` and ``mnemo.config_sections`` (``[capture]``: ``perception.capture.config``),
the rules for a folder's file and the sources that apply them in ``mnemo.config_rules``.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from mnemo.config_perception import PerceptionConfig
from mnemo.config_rules import (
    ADD,
    FREE,
    LOWER,
    LOWER_CAP,
    PROJECT_RULES,
    RAISE,
    TRUSTED,
    ProjectToml,
    Rule,
    Stricter,
    only,
    user_config_file,
)
from mnemo.config_sections import (
    ControlConfig,
    GraphConfig,
    LLMConfig,
    MemorizeConfig,
    PeopleConfig,
)
from perception.capture.config import CaptureConfig

# the tree, its sections and the project rules: what callers import from here
__all__ = [
    "ADD",
    "FREE",
    "LOWER",
    "LOWER_CAP",
    "PROJECT_RULES",
    "RAISE",
    "TRUSTED",
    "CaptureConfig",
    "ControlConfig",
    "GraphConfig",
    "LLMConfig",
    "MemorizeConfig",
    "MnemoConfig",
    "PeopleConfig",
    "PerceptionConfig",
    "Rule",
    "load_config",
    "only",
    "user_config_file",
]


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
        project = ProjectToml(settings_cls, trusted=(init_settings, env_settings, user))
        return Stricter(settings_cls, project), init_settings, env_settings, user, project


def load_config(**overrides) -> MnemoConfig:
    path = os.environ.get("MNEMO_CONFIG")
    if path and not Path(path).is_file():
        raise FileNotFoundError(f"MNEMO_CONFIG points to {path}, which does not exist")
    return MnemoConfig(**overrides)
