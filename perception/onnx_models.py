"""Models exported once from torch to ONNX and run by ONNX Runtime on the CPU, without torch.

Importing torch costs a process about 500 MB of resident memory (PyPI's x86_64 torch carries its
CUDA libraries), more than all of the perception models on the CPU together. So a model that runs
in float32 on the CPU (the speaker embedder, the image tagger, the text embedder) is exported once
per machine, in a child process so that the process asking never imports torch, checked there
against torch, and cached under ``$MNEMO_CACHE/models/onnx/<name>/``. Later processes run the
cached graph in ONNX Runtime alone.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from perception.weights import cache_root, usable_cpus

log = logging.getLogger(__name__)

OPSET = 17
RUNTIMES = ("auto", "torch", "onnx")
_threads: int | None = None


def set_threads(threads: int) -> None:
    """The intra-op threads of every model in this process: ONNX Runtime sessions made from now on,
    and torch's where torch is already loaded (a model that loads torch later sets it then)."""
    global _threads
    _threads = threads
    if "torch" in sys.modules:
        set_torch_threads(threads)


def threads() -> int:
    """The threads ``set_threads`` chose; else every CPU this process may use."""
    return _threads or usable_cpus()


def set_torch_threads(n: int) -> None:
    import torch

    if torch.get_num_threads() != n:
        torch.set_num_threads(n)


def load_torch():
    """torch, loaded with this process's threads (for a model that runs in torch)."""
    import torch

    set_torch_threads(threads())
    return torch


def check_runtime(runtime: str, setting: str) -> None:
    if runtime not in RUNTIMES:
        raise ValueError(f"{setting} {runtime!r}: choose one of {', '.join(RUNTIMES)}")


def use_onnx(runtime: str, device: str, setting: str) -> bool:
    """Whether a float32 model on ``device`` (resolved: "cpu", "cuda", ...) runs in ONNX Runtime."""
    check_runtime(runtime, setting)
    if runtime == "onnx" and device != "cpu":
        raise ValueError(f"{setting} \"onnx\" runs on the CPU, not on {device}; set it to \"torch\" or \"auto\"")
    return runtime == "onnx" or (runtime == "auto" and device == "cpu")


def cached_export(name: str, source: Path, export: Callable[..., None], *args: str,
                  in_process: bool = False, version: str = "") -> Path:
    """The ONNX graph of model ``name``, exported once from the weights at ``source``.

    ``export(*args, path)`` (a module-level function taking strings) writes the graph to ``path`` and
    raises a RuntimeError when it is refused (it differs from its reference). It runs in a child
    process, so that torch is loaded there only, unless ``in_process`` (a builder that loads no
    torch). The cache is keyed by the weights' size and time and by ``version`` (the builder's: a
    graph written by another builder, or an older one, is built again), so re-unpacked weights are
    exported again; the graph is written under a temporary name and renamed, so a killed export
    leaves nothing that looks complete.
    """
    stat = source.stat()
    key = f"{stat.st_size}-{stat.st_mtime_ns}" + (f" {version}" if version else "")
    out_dir = cache_root() / "models" / "onnx" / name
    out, marker = out_dir / "model.onnx", out_dir / "source"
    if out.is_file() and marker.is_file() and marker.read_text().strip() == key:
        return out
    log.info("exporting %s to ONNX for the CPU (once%s): %s", name, "" if in_process else ", in a child process", out)
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"model.{os.getpid()}.onnx.part")
    try:
        if in_process:
            export(*args, str(tmp))
        else:
            in_child(export, *args, tmp)
        os.replace(tmp, out)
    except RuntimeError as e:
        tmp.unlink(missing_ok=True)  # a failed or refused export leaves nothing behind
        raise RuntimeError(f"exporting {name} to ONNX failed: {e}") from e
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    marker.write_text(key)
    return out


def check_export(path: Path, inputs: dict, want: list, tolerance: float, fallback: str) -> None:
    """Raise unless the graph at ``path`` gives ``want`` (torch's outputs) for ``inputs`` within
    ``tolerance``; ``fallback`` tells the user how to run the model in torch instead."""
    import numpy as np

    got = cpu_session(path).run(None, inputs)
    worst = max(float(np.abs(g - w).max()) for g, w in zip(got, want, strict=True))
    if worst > tolerance:
        raise RuntimeError(f"the ONNX export {path.parent.name} differs from torch by {worst:.2e} (more than "
                           f"{tolerance}); {fallback}")


def in_child(fn: Callable, *args) -> None:
    """``fn(*args)`` (a module-level function taking strings) in a fresh Python process that imports
    what this one does; its error is raised here as a RuntimeError with the child's last line."""
    code = f"import sys; from {fn.__module__} import {fn.__qualname__} as f; f(*sys.argv[1:])"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=env, capture_output=True, text=True)
    if done.returncode:
        lines = done.stderr.strip().splitlines()
        raise RuntimeError(lines[-1].removeprefix("RuntimeError: ") if lines else
                           f"{fn.__module__}.{fn.__qualname__} exited with {done.returncode}")


def cpu_session(path: Path):
    """An ONNX Runtime session on the CPU with this process's threads. No busy-waiting between calls
    (the models share their cores with the other stages and the writer), and no memory arena: the
    arena keeps the largest activations a model ever saw, and grows by powers of two."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads()
    options.inter_op_num_threads = 1
    options.enable_cpu_mem_arena = False
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
