"""The speaker and image graphs built without torch: weights read by a restricted unpickler, graphs
written with onnx.helper, held to the torch networks on real speech and real images, and a build
and run that never imports torch."""

import json
import os
import pickle
import sys
import zipfile

import cv2
import numpy as np
import pytest
import soundfile as sf

from conftest import run_python
from perception.onnx_models import cpu_session
from perception.speech import speaker_resemblyzer as speaker
from perception.speech.ge2e_graph import build_encoder
from perception.torch_weights import UnsafeWeightsError, read_torch_file, state_dict
from perception.vision import image_efficientnet as images
from perception.vision.efficientnet_graph import build_network

pytestmark = pytest.mark.slow


def _rgb(path) -> np.ndarray:
    bgr = cv2.imread(str(path))
    assert bgr is not None, path
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def test_the_packaged_state_dicts_read_without_torch_are_torchs():
    import torch

    for path, key in ((speaker._weights(), "model_state"), (images._weights(), None)):
        want = torch.load(path, map_location="cpu", weights_only=True)
        want = want[key] if key else want
        got = state_dict(path, key)
        assert list(got) == list(want)
        for name, tensor in want.items():
            assert got[name].dtype == tensor.numpy().dtype and np.array_equal(
                got[name], tensor.numpy()
            ), name


@pytest.mark.parametrize("zipped", [True, False], ids=["zip", "legacy"])
def test_both_torch_save_formats_with_views_and_dtypes(tmp_path, zipped):
    import torch

    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    saved = {
        "whole": base,
        "row": base[2],
        "column": base[:, 3],
        "transposed": base.t(),
        "scalar": torch.tensor(7),
        "half": torch.linspace(-1, 1, 5, dtype=torch.float16),
        "mask": torch.tensor([True, False]),
        "steps": torch.tensor([1, 2**40], dtype=torch.int64),
        "nested": [{"bias": base[1, 1:4]}],
        "count": 3,
    }
    path = tmp_path / "weights.pt"
    torch.save(saved, path, _use_new_zipfile_serialization=zipped)
    assert zipfile.is_zipfile(path) is zipped
    got = read_torch_file(path)
    for key in ("whole", "row", "column", "transposed", "scalar", "half", "mask", "steps"):
        assert got[key].dtype == saved[key].numpy().dtype and np.array_equal(
            got[key], saved[key].numpy()
        ), key
    assert np.array_equal(got["nested"][0]["bias"], [7.0, 8.0, 9.0]) and got["count"] == 3


class RunsACommand:
    def __init__(self, marker) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_a_weight_file_naming_another_global_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "ran"
    payload = pickle.dumps({"weight": RunsACommand(marker)}, protocol=2)
    legacy = tmp_path / "legacy.pt"
    with legacy.open("wb") as f:
        for part in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}):
            pickle.dump(part, f, protocol=2)
        f.write(payload)
    zipped = tmp_path / "zipped.pt"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("zipped/data.pkl", payload)
    for path in (legacy, zipped):
        with pytest.raises(
            UnsafeWeightsError, match=f"{path}: refused to read it, it names [a-z]+\\.system"
        ):
            read_torch_file(path)
    assert not marker.exists()
    pickle.loads(payload)  # what plain unpickling would have done
    assert marker.exists()


def test_a_file_that_is_not_a_state_dict_says_so(tmp_path):
    cut = tmp_path / "cut.pt"
    cut.write_bytes(speaker._weights().read_bytes()[:100_000])
    with pytest.raises(ValueError, match=f"{cut}: not a state dict torch.save wrote, or cut short"):
        read_torch_file(cut)
    with pytest.raises(ValueError, match="no 'model_state' in it, so not the checkpoint expected"):
        build_encoder(str(images._weights()), str(tmp_path / "ge2e.onnx"))
    import torch

    lacking = torch.load(images._weights(), weights_only=True)
    del lacking["_blocks.3._bn1.running_var"]
    torch.save(lacking, tmp_path / "lacking.pth")
    with pytest.raises(
        ValueError, match="not EfficientNet-Lite0's weights, _blocks.3._bn1.running_var is missing"
    ):
        build_network(str(tmp_path / "lacking.pth"), str(tmp_path / "efficientnet.onnx"))
    with pytest.raises(
        ValueError, match="pretrained.pt: not a state dict of tensors \\(it holds step, model_state"
    ):
        build_network(str(speaker._weights()), str(tmp_path / "efficientnet.onnx"))


def real_mel_windows(sample_wav) -> np.ndarray:
    audio, rate = sf.read(sample_wav, dtype="float32")
    assert rate == speaker.SAMPLE_RATE
    mel = speaker.mel_frames(audio)
    return np.stack(
        [
            mel[s : s + speaker.WINDOW_FRAMES]
            for s in speaker.window_starts(audio.size, 4.0)
            if s + speaker.WINDOW_FRAMES <= len(mel)
        ]
    )


def test_the_ge2e_graph_is_the_torch_encoder_on_real_speech(tmp_path, sample_wav):
    import torch

    mels = real_mel_windows(sample_wav)
    build_encoder(str(speaker._weights()), str(tmp_path / "ge2e.onnx"))
    got = cpu_session(tmp_path / "ge2e.onnx").run(None, {"mels": mels})[0]
    encoder = speaker._resemblyzer().VoiceEncoder(
        device="cpu", verbose=False, weights_fpath=speaker._weights()
    )
    with torch.inference_mode():
        want = encoder.eval()(torch.from_numpy(mels)).numpy()
    assert got.shape == want.shape == (len(mels), 256)
    worst = float(np.abs(got - want).max())
    print(f"GE2E graph vs torch on {len(mels)} windows of sample.wav: max |difference| {worst:.2e}")
    assert worst < speaker.CHECK_TOLERANCE


def test_the_efficientnet_graph_is_the_torch_network_on_real_images(tmp_path, opencv_dir):
    import torch

    from bench.fixtures import group_photo

    frames = [
        _rgb(group_photo()),
        _rgb(opencv_dir / "qtgui.png"),
        _rgb(opencv_dir / "eclipse_cdt_cfg7.png"),
    ]
    capture = cv2.VideoCapture(str(opencv_dir / "Megamind.avi"))
    ok, frame = capture.read()
    assert ok
    frames.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
    x = images.normalised(frames)
    build_network(str(images._weights()), str(tmp_path / "efficientnet.onnx"))
    got = cpu_session(tmp_path / "efficientnet.onnx").run(None, {"images": x})
    with torch.inference_mode():
        want = [t.numpy() for t in images._network("cpu")(torch.from_numpy(x))]
    assert [g.shape for g in got] == [w.shape for w in want] == [(4, 1280), (4, 1000)]
    worst = max(float(np.abs(g - w).max()) for g, w in zip(got, want))
    print(f"EfficientNet-Lite0 graph vs torch on 4 real images: max |difference| {worst:.2e}")
    assert worst < images.CHECK_TOLERANCE
    assert np.array_equal(got[1].argmax(1), want[1].argmax(1))


BUILD_AND_RUN = """
import json, sys
import cv2, numpy as np, soundfile as sf
from perception.speech.speaker_resemblyzer import ResemblyzerSpeaker
from perception.vision.image_efficientnet import EfficientNetLite0Images
audio, rate = sf.read(sys.argv[1], dtype="float32")
voices, _ = ResemblyzerSpeaker(device="cpu").embed_windows(audio, rate)
tags = EfficientNetLite0Images(device="cpu").analyze([cv2.cvtColor(cv2.imread(sys.argv[2]), cv2.COLOR_BGR2RGB)])
print(json.dumps({"torch": "torch" in sys.modules, "voices": list(voices.shape), "tags": tags[0][0]}))
"""


def test_building_and_running_both_graphs_imports_no_torch(tmp_path, sample_wav, opencv_dir):
    """In a fresh cache, so both graphs are built (in cached_export's child process, which inherits
    the guard): a ``torch`` first on the path that records who imported it and refuses."""
    guard = tmp_path / "guard" / "torch"
    guard.mkdir(parents=True)
    attempts = tmp_path / "torch-imports"
    (guard / "__init__.py").write_text(
        "import traceback\n"
        f"open({str(attempts)!r}, 'a').write(''.join(traceback.format_stack()) + '\\n')\n"
        "raise ImportError('torch was imported')\n"
    )
    env = dict(
        os.environ,
        MNEMO_CACHE=str(tmp_path / "cache"),
        PYTHONPATH=os.pathsep.join([str(guard.parent), *(p for p in sys.path if p)]),
    )
    done = run_python(
        BUILD_AND_RUN, str(sample_wav), str(opencv_dir / "qtgui.png"), cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert not attempts.exists(), attempts.read_text()[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["torch"] is False and result["voices"][1] == 256 and result["tags"]
    built = {p.parent.name for p in (tmp_path / "cache" / "models" / "onnx").glob("*/model.onnx")}
    assert built == {"resemblyzer", "efficientnet-lite0"}
