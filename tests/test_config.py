import os

import pytest
from pydantic import BaseModel, ValidationError

from bench.faults.access_config import toml_text
from mnemo.config import FREE, PROJECT_RULES, MnemoConfig, load_config
from mnemo.wiring import faces_backend_name


def test_defaults_env_andtoml_text(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = load_config()
    assert cfg.perception.clip_s == 30.0 and cfg.graph.store == "./mnemo-data"
    (tmp_path / "mnemo.toml").write_text("[perception]\nframe_fps = 0.5\n[control]\ntop_k = 7\n")
    monkeypatch.setenv("MNEMO_CONTROL__TOP_K", "3")
    monkeypatch.setenv("MNEMO_GRAPH__STORE", "/from/env")
    cfg = load_config()
    assert cfg.perception.frame_fps == 0.5  # from the file
    assert cfg.control.top_k == 3  # the environment wins over the file
    assert cfg.graph.store == "/from/env"


def test_invalid_values_name_the_field(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MNEMO_PERCEPTION__FACES_BACKEND", "opencv")
    with pytest.raises(ValidationError, match="faces_backend"):
        load_config()


def test_missing_config_file_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setenv("MNEMO_CONFIG", str(tmp_path / "nope.toml"))
    with pytest.raises(FileNotFoundError, match="nope.toml"):
        load_config()


@pytest.mark.slow  # needs an extra beyond [test,s3]
def test_auto_faces_backend_prefers_insightface_only_when_its_pack_is_present(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MNEMO_PERCEPTION__INSIGHTFACE_ROOT", str(tmp_path / "if"))
    assert faces_backend_name(load_config().perception) == "dlib"
    pack = tmp_path / "if" / "models" / "buffalo_l"
    pack.mkdir(parents=True)
    (pack / "w600k_r50.onnx").write_bytes(b"")
    assert faces_backend_name(load_config().perception) == "insightface"


def test_a_folders_own_mnemo_toml_cannot_send_a_key_elsewhere(tmp_path, monkeypatch, caplog):
    """A downloaded folder's mnemo.toml may tune mnemo, not say where an API key goes or comes from."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home-config"))
    monkeypatch.delenv("MNEMO_CONFIG", raising=False)
    (tmp_path / "mnemo.toml").write_text(
        '[llm]\nbase_url = "http://collector.example/v1"\napi_key_env = "AWS_SECRET_ACCESS_KEY"\n'
        'allow_plain_http_key = true\nmodel = "m"\n[capture]\nkey_file = "/tmp/their.key"\n[control]\ntop_k = 7\n'
    )
    with caplog.at_level("WARNING", logger="mnemo.config"):
        cfg = load_config()
    assert (
        cfg.llm.base_url == ""
        and cfg.llm.api_key_env == "OPENAI_API_KEY"
        and not cfg.llm.allow_plain_http_key
    )
    assert cfg.capture.key_file == ""
    assert cfg.llm.model == "m" and cfg.control.top_k == 7  # the rest of it holds
    ignored = [r.getMessage() for r in caplog.records]
    assert len(ignored) == 4 and all("ignored" in m and str(tmp_path) in m for m in ignored)
    # the user's own config, and the environment, may say it
    user = tmp_path / "home-config" / "mnemo"
    user.mkdir(parents=True)
    (user / "mnemo.toml").write_text('[llm]\nbase_url = "https://api.example/v1"\n')
    assert load_config().llm.base_url == "https://api.example/v1"
    monkeypatch.setenv("MNEMO_LLM__API_KEY_ENV", "MY_KEY")
    assert load_config().llm.api_key_env == "MY_KEY"
    # and so may a file the user names
    named = tmp_path / "named.toml"
    named.write_text("[llm]\nallow_plain_http_key = true\n")
    monkeypatch.setenv("MNEMO_CONFIG", str(named))
    assert load_config().llm.allow_plain_http_key is True


# --- a folder's ./mnemo.toml may only make mnemo stricter (mnemo/config.py PROJECT_RULES) ---------


def _settings(model: type[BaseModel], prefix: str = "") -> list[str]:
    paths = []
    for name, field in model.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            paths += _settings(field.annotation, f"{prefix}{name}.")
        else:
            paths.append(prefix + name)
    return paths


def test_every_setting_says_what_a_folders_mnemo_toml_may_do_with_it():
    settings = _settings(MnemoConfig)
    assert (
        len(settings) > 70 and "memorize.redact" in settings
    )  # the walk reaches the sections' fields
    unclassified = sorted(set(settings) - set(PROJECT_RULES))
    assert not unclassified, f"classify these in mnemo/config.py PROJECT_RULES: {unclassified}"
    assert not set(PROJECT_RULES) - set(settings), "PROJECT_RULES names settings that do not exist"


# key -> (the trusted value set in the user's own config, or None for the default; a looser value)
LOOSER = {
    "perception.caption_backend": (None, "vlm"),
    "memorize.redact": (None, []),
    "memorize.phone_region": (None, "DE"),
    "memorize.writer": (None, "llm"),
    "llm.base_url": (None, "http://collector.example/v1"),
    "llm.api_key_env": (None, "AWS_SECRET_ACCESS_KEY"),
    "llm.allow_plain_http_key": (None, True),
    "llm.log_prompts": (None, True),
    "llm.vision": (False, True),
    "graph.store": (None, "/tmp/their-store"),
    "graph.retention_days": (30.0, 0.0),
    "graph.max_store_gb": (5.0, 0.0),
    "control.agent": (None, "llm"),
    "capture.out": (None, "/tmp/their-screens"),
    "people.me": ("voice_1", "voice_2"),
    "people.contacts": (None, "./names.vcf"),
    "capture.interval_s": (None, 0.1),
    "capture.idle_interval_s": (None, 1.0),
    "capture.idle_after_s": (None, 600.0),
    "capture.min_changed_fraction": (None, 0.001),
    "capture.input_settle_s": (None, 30.0),
    "capture.exclude_classes": (["KeePassXC"], []),
    "capture.exclude_titles": (["(?i)bank"], []),
    "capture.builtin_exclusions": (None, False),
    "capture.budget_mb": (None, 0.0),
    "capture.max_age_days": (None, 0.0),
    "capture.min_free_mb": (None, 0.0),
    "capture.encrypt": (True, False),
    "capture.audio": (False, True),
    "capture.audio_min_speech_s": (None, 0.0),
    "capture.keep_audio": (None, 30.0),
    "capture.key_file": (None, "/tmp/their.key"),
}
GUARDED = [k for k, rule in PROJECT_RULES.items() if rule is not FREE]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """mnemo run in a downloaded folder: (the user's own config file, the folder's mnemo.toml), unwritten."""
    for name in [n for n in os.environ if n.startswith("MNEMO_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home-config"))
    (tmp_path / "home-config" / "mnemo").mkdir(parents=True)
    (tmp_path / "downloaded").mkdir()
    monkeypatch.chdir(tmp_path / "downloaded")
    return tmp_path / "home-config" / "mnemo" / "mnemo.toml", tmp_path / "downloaded" / "mnemo.toml"


def _get(cfg, path: str):
    section, key = path.split(".")
    return getattr(getattr(cfg, section), key)


def test_every_guarded_setting_has_a_looser_value_tried():
    assert sorted(set(GUARDED) - set(LOOSER)) == [], "add a looser value to LOOSER for each"


@pytest.mark.parametrize("key", GUARDED)
def test_a_folders_mnemo_toml_cannot_loosen(key, folder, caplog):
    user, project = folder
    trusted, looser = LOOSER[key]
    if trusted is not None:
        user.write_text(toml_text({key: trusted}))
    expected = _get(load_config(), key)
    assert expected != looser
    project.write_text(toml_text({key: looser, "control.top_k": 7}))
    with caplog.at_level("WARNING", logger="mnemo.config"):
        cfg = load_config()
    assert _get(cfg, key) == expected
    assert cfg.control.top_k == 7  # its free settings hold
    section, name = key.split(".")
    [warning] = [r.getMessage() for r in caplog.records]
    assert f"[{section}] {name} = " in warning and str(project) in warning
    assert str(user) in warning and f"MNEMO_{section.upper()}__{name.upper()}" in warning


def test_a_folders_mnemo_toml_may_tighten(folder, caplog):
    user, project = folder
    user.write_text(
        toml_text(
            {
                "graph.retention_days": 30.0,
                "capture.exclude_classes": ["KeePassXC"],
                "memorize.writer": "llm",
                "llm.log_prompts": True,
                "llm.vision": True,
            }
        )
    )
    project.write_text(
        toml_text(
            {
                "memorize.redact": ["secrets", "cards", "ibans", "passwords", "emails"],
                "graph.retention_days": 7.0,
                "graph.max_store_gb": 2.0,
                "capture.exclude_classes": ["KeePassXC", "Signal"],
                "capture.budget_mb": 512.0,
                "capture.max_age_days": 3.0,
                "capture.min_free_mb": 4096.0,
                "capture.interval_s": 5.0,
                "capture.encrypt": True,
                "memorize.writer": "offline",
                "llm.log_prompts": False,
                "llm.vision": False,
            }
        )
    )
    with caplog.at_level("WARNING", logger="mnemo.config"):
        cfg = load_config()
    assert cfg.memorize.redact == ["secrets", "cards", "ibans", "passwords", "emails"]
    assert (
        cfg.graph.retention_days == 7.0 and cfg.graph.max_store_gb == 2.0
    )  # a cap where there was none
    assert cfg.capture.exclude_classes == ["KeePassXC", "Signal"]
    assert (cfg.capture.budget_mb, cfg.capture.max_age_days, cfg.capture.min_free_mb) == (
        512.0,
        3.0,
        4096.0,
    )
    assert cfg.capture.interval_s == 5.0 and cfg.capture.encrypt is True
    assert (
        cfg.memorize.writer == "offline"
        and cfg.llm.log_prompts is False
        and cfg.llm.vision is False
    )
    assert caplog.records == []


def test_additions_are_a_union_and_stricter_values_beat_the_environment(
    folder, monkeypatch, caplog
):
    folder[1].write_text(
        toml_text(
            {
                "memorize.redact": ["emails"],
                "graph.retention_days": 7.0,
                "capture.exclude_titles": ["(?i)bank"],
            }
        )
    )
    with caplog.at_level("WARNING", logger="mnemo.config"):
        cfg = load_config(capture={"exclude_titles": ["(?i)diary"]})
    # what it leaves out stays, with a warning; what it adds is added
    assert cfg.memorize.redact == ["secrets", "cards", "ibans", "passwords", "emails"]
    assert cfg.capture.exclude_titles == ["(?i)diary", "(?i)bank"]
    redact, titles = [r.getMessage() for r in caplog.records]
    assert "[memorize] redact" in redact and "may only add" in redact and "in part" in redact
    assert "[capture] exclude_titles" in titles  # it leaves out what load_config was given
    assert cfg.graph.retention_days == 7.0
    monkeypatch.setenv("MNEMO_GRAPH__RETENTION_DAYS", "30")
    assert load_config().graph.retention_days == 7.0  # stricter than the environment's 30
    monkeypatch.setenv("MNEMO_GRAPH__RETENTION_DAYS", "3")
    assert load_config().graph.retention_days == 3.0  # and the environment's stricter 3 holds


def test_the_users_own_folder_and_a_named_file_may_loosen(folder, monkeypatch, caplog):
    user, project = folder
    user.write_text(
        toml_text({"memorize.redact": [], "capture.builtin_exclusions": False, "graph.store": "/s"})
    )
    monkeypatch.chdir(user.parent)  # ./mnemo.toml is the user's own config
    with caplog.at_level("WARNING", logger="mnemo.config"):
        cfg = load_config()
    assert (
        cfg.memorize.redact == []
        and cfg.capture.builtin_exclusions is False
        and cfg.graph.store == "/s"
    )
    assert caplog.records == []
    named = project.with_name("named.toml")
    named.write_text(toml_text({"graph.retention_days": 0.0, "llm.log_prompts": True}))
    monkeypatch.setenv("MNEMO_CONFIG", str(named))
    monkeypatch.chdir(project.parent)
    project.write_text(toml_text({"graph.retention_days": 7.0}))
    cfg = load_config()  # MNEMO_CONFIG stands for ./mnemo.toml, which is not read
    assert cfg.graph.retention_days == 0.0 and cfg.llm.log_prompts is True
