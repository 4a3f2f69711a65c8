import pytest
from pydantic import ValidationError

from mnemo.config import load_config
from mnemo.wiring import faces_backend_name


def test_defaults_env_and_toml(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = load_config()
    assert cfg.perception.clip_s == 30.0 and cfg.graph.store == "./mnemo-data"
    (tmp_path / "mnemo.toml").write_text('[perception]\nframe_fps = 0.5\n[graph]\nstore = "/data/m"\n')
    monkeypatch.setenv("MNEMO_GRAPH__STORE", "/from/env")
    cfg = load_config()
    assert cfg.perception.frame_fps == 0.5  # from the file
    assert cfg.graph.store == "/from/env"  # the environment wins over the file


def test_invalid_values_name_the_field(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MNEMO_PERCEPTION__FACES_BACKEND", "opencv")
    with pytest.raises(ValidationError, match="faces_backend"):
        load_config()


def test_missing_config_file_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setenv("MNEMO_CONFIG", str(tmp_path / "nope.toml"))
    with pytest.raises(FileNotFoundError, match="nope.toml"):
        load_config()


def test_auto_faces_backend_prefers_insightface_only_when_its_pack_is_present(tmp_path, monkeypatch):
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
        'allow_plain_http_key = true\nmodel = "m"\n[capture]\nkey_file = "/tmp/their.key"\n[control]\ntop_k = 7\n')
    with caplog.at_level("WARNING", logger="mnemo.config"):
        cfg = load_config()
    assert cfg.llm.base_url == "" and cfg.llm.api_key_env == "OPENAI_API_KEY" and not cfg.llm.allow_plain_http_key
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
    named.write_text('[llm]\nallow_plain_http_key = true\n')
    monkeypatch.setenv("MNEMO_CONFIG", str(named))
    assert load_config().llm.allow_plain_http_key is True
