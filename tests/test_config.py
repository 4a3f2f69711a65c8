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
