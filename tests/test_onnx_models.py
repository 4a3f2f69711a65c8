"""The speaker and image models in ONNX Runtime: torch's outputs on real media, exported once, and
an ingest process that never loads torch."""

import json
import os

import cv2
import numpy as np
import pytest
import soundfile as sf

from conftest import run_python
from perception import onnx_models
from perception.speech.speaker_resemblyzer import ResemblyzerSpeaker, mel_frames, window_starts
from perception.vision.image_efficientnet import EfficientNetLite0Images

pytestmark = pytest.mark.slow


def test_the_spectrogram_is_librosas(sample_wav):
    import librosa

    audio, sr = sf.read(sample_wav, dtype="float32")
    for x in (audio, audio[:12345], np.zeros(400, np.float32)):
        want = librosa.feature.melspectrogram(y=x, sr=sr, n_fft=400, hop_length=160, n_mels=40).T
        got = mel_frames(x)
        assert got.shape == want.shape and got.dtype == np.float32
        assert np.abs(got - want).max() <= 1e-5 * max(1.0, float(np.abs(want).max()))


def test_windows_cover_the_audio_as_resemblyzer_cuts_them():
    assert window_starts(16000 * 30, 4.0) == list(range(0, 2851, 25))  # a 1.6 s window every 0.25 s
    assert window_starts(8000, 4.0) == [0]  # shorter than a window: one, padded
    assert window_starts(16000 * 2, 1.3)[-1] == 77  # the last one kept: it covers 3/4 of a window
    with pytest.raises(ValueError, match="windows a second"):
        window_starts(16000, 1000.0)


def test_voice_embeddings_in_onnx_are_torchs(sample_wav):
    audio, sr = sf.read(sample_wav, dtype="float32")
    onnx, torch = (
        ResemblyzerSpeaker(device="cpu"),
        ResemblyzerSpeaker(device="cpu", runtime="torch"),
    )
    (e1, c1), (e2, c2) = onnx.embed_windows(audio, sr), torch.embed_windows(audio, sr)
    assert (onnx.runtime, torch.runtime) == ("onnx", "torch")  # the CPU: ONNX Runtime by default
    assert e1.shape == (115, 256) and e1.dtype == np.float32
    assert np.abs(e1 - e2).max() < 1e-4 and np.array_equal(c1, c2)
    assert np.allclose(np.linalg.norm(e1, axis=1), 1.0, atol=1e-5)


def test_image_tags_and_features_in_onnx_are_torchs(opencv_dir):
    frames = [
        cv2.cvtColor(cv2.imread(str(p)), cv2.COLOR_BGR2RGB)
        for p in sorted(opencv_dir.glob("*.png"))
    ]
    capture = cv2.VideoCapture(str(opencv_dir / "Megamind.avi"))
    for _ in range(3):
        ok, frame = capture.read()
        assert ok
        frames.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
        for _ in range(60):
            capture.read()
    onnx, torch = (
        EfficientNetLite0Images(device="cpu"),
        EfficientNetLite0Images(device="cpu", runtime="torch"),
    )
    got, want = onnx.analyze(frames), torch.analyze(frames)
    assert (onnx.runtime, torch.runtime) == ("onnx", "torch")
    # the same tags; their probabilities are rounded to 4 places, so two runtimes a hair apart may
    # round a last digit apart
    assert [[n for n, _ in tags] for tags, _ in got] == [[n for n, _ in tags] for tags, _ in want]
    assert any(tags for tags, _ in got)
    for (tags, _), (ref, _) in zip(got, want):
        assert all(abs(p - q) <= 2e-4 for (_, p), (_, q) in zip(tags, ref)), (tags, ref)
    assert max(float(np.abs(a - b).max()) for (_, a), (_, b) in zip(got, want)) < 1e-4


def test_the_runtime_setting_is_checked():
    with pytest.raises(ValueError, match="choose one of auto, torch, onnx"):
        ResemblyzerSpeaker(runtime="tensorrt").embed_windows(np.zeros(16000, np.float32), 16000)
    with pytest.raises(ValueError, match="runs on the CPU"):
        onnx_models.use_onnx("onnx", "cuda", "[perception] model_runtime")


def refuse(path: str) -> None:  # a build that refuses the weights, after writing part of a graph
    open(path, "wb").write(b"half a graph")
    raise RuntimeError('the graph\'s vectors moved by 1.0e+00 when fused; set it to "torch"')


def test_a_refused_build_says_why_and_leaves_nothing(tmp_path, monkeypatch, sample_wav):
    monkeypatch.setenv("MNEMO_CACHE", str(tmp_path))
    with pytest.raises(
        RuntimeError,
        match="building refused.s ONNX graph failed: .*moved by 1.0e\\+00 when fused; set it to",
    ):
        onnx_models.cached_export("refused", sample_wav, refuse, version="test")
    assert not list((tmp_path / "models" / "onnx" / "refused").iterdir())


def test_a_graph_is_built_once_and_again_for_other_weights(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMO_CACHE", str(tmp_path))
    audio = np.random.default_rng(0).normal(0, 0.1, 16000 * 3).astype(np.float32)
    ResemblyzerSpeaker(device="cpu").embed_windows(audio, 16000)
    graph = tmp_path / "models" / "onnx" / "resemblyzer" / "model.onnx"
    first = graph.stat().st_mtime_ns
    ResemblyzerSpeaker(device="cpu").embed_windows(audio, 16000)
    assert graph.stat().st_mtime_ns == first  # read from the cache
    (graph.parent / "source").write_text("0-0")  # other weights than the cached graph's
    ResemblyzerSpeaker(device="cpu").embed_windows(audio, 16000)
    assert graph.stat().st_mtime_ns != first and not list(graph.parent.glob(".build-*"))


INGEST_WITHOUT_TORCH = """
import json, sys, traceback
first_import = {}
class Watch:  # the stack that first imports each watched module (not a mere find_spec), to say who did
    def find_spec(self, name, path=None, target=None):
        stack = traceback.format_stack()
        if name in ("torch", "transformers", "librosa", "numba", "resemblyzer") and name not in first_import \
                and any("_find_and_load" in frame for frame in stack[-4:]):
            first_import[name] = "".join(f for f in stack[:-1] if "<frozen" not in f)[-3000:]
        return None
sys.meta_path.insert(0, Watch())
from pathlib import Path
from graph.store import Store
from mnemo.config import load_config
from mnemo.wiring import build_perceivers, faces_backend_name, match_policies, text_embedder
from pipeline.ingest import ingest
cfg = load_config()
report = ingest([sys.argv[1]], Store(Path(sys.argv[2]), text_embedder(cfg.graph)), build_perceivers(cfg.perception),
                match_policies(cfg.memorize, faces_backend_name(cfg.perception)), cfg.perception.clip_s)
print(json.dumps({"clips": report.clips_new, "torch": "torch" in sys.modules,
                  "loaded": sorted(m for m in ("transformers", "librosa", "numba", "resemblyzer") if m in sys.modules),
                  "by": first_import}))
"""


@pytest.mark.parametrize("bf16", ["0", "1"], ids=["avx2-path", "bf16-path"])
def test_an_ingest_on_the_cpu_never_loads_torch(demo_recording, tmp_path, bf16):
    """torch is about 500 MB of resident memory: with every default model on the CPU, an ingest of
    the demo recording leaves it out, except for mpnet's text vectors in bfloat16 where the CPU has
    it (which need torch and sentence-transformers, and so transformers). Both kinds of CPU are run
    on any machine (MNEMO_CPU_BF16; the bfloat16 one is emulated, slowly, where the CPU lacks it)."""
    env = dict(os.environ, MNEMO_CPU_BF16=bf16)
    done = run_python(
        INGEST_WITHOUT_TORCH, str(demo_recording), str(tmp_path / "store"), cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["clips"] >= 1
    allowed = {"transformers"} if bf16 == "1" else set()  # sentence-transformers' own
    unexpected = sorted(set(result["loaded"]) - allowed)
    assert unexpected == [], "\n".join(
        f"{m} imported by:\n{result['by'].get(m)}" for m in unexpected
    )
    assert result["torch"] is (bf16 == "1"), result["by"].get(
        "torch"
    )  # bfloat16 vectors are computed in torch
