"""Models run by ONNX Runtime on the CPU, without torch.

Importing torch costs a process hundreds of MB of resident memory (PyPI's x86_64 torch carries its
CUDA libraries), more than all of the perception models on the CPU together, and a CPU install
need not have it. So a model that runs in float32 on the CPU (the speaker embedder, the image
tagger, the text embedder) has its ONNX graph built once per machine from the packaged weight files
alone (``ge2e_graph``, ``efficientnet_graph``, ``embeddings.text_graph``; the tests hold each to the
model in torch) and cached under ``$MNEMO_CACHE/models/onnx/<name>/``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perception.weights import cache_root, require, usable_cpus

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

OPSET = 17
STALE_BUILD_S = 6 * 3600.0  # a build folder this old was left by a killed build
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


def load_torch(what: str = "a model in torch"):
    """torch, loaded with this process's threads (for a model that runs in torch); ``MissingExtra``
    saying what needs it (``what``) and how to install it when torch is not installed."""
    require(("torch",), "torch", what)
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
        raise ValueError(
            f'{setting} "onnx" runs on the CPU, not on {device}; set it to "torch" or "auto"'
        )
    return runtime == "onnx" or (runtime == "auto" and device == "cpu")


def require_torch_runtime(
    runtime: str, device: str, modules: tuple[str, ...], setting: str
) -> None:
    """When the settings as given (``device`` unresolved: "auto" becomes the CPU without torch) put a
    model in torch, raise ``MissingExtra`` unless torch and the model's ``modules`` are installed:
    at build, before an ingest starts, rather than in its first clip."""
    check_runtime(runtime, setting)
    if runtime == "torch":
        require(("torch", *modules), "torch", f'{setting} = "torch"', f'or set {setting} = "auto"')
    elif device not in ("auto", "cpu"):
        require(
            ("torch", *modules),
            "torch",
            f'[perception] device = "{device}"',
            'or set device = "cpu" or "auto" (the CPU, in ONNX Runtime)',
        )


def forward_pass(
    runtime: str,
    device: str,
    setting: str,
    graph: Callable[[], Path],
    network: Callable[[str], Any],
    needs: tuple[str, ...],
    what: str,
) -> tuple[Callable[[np.ndarray], list[np.ndarray]], str]:
    """A network's forward pass (a numpy batch in, its numpy outputs out) on ``device`` (resolved),
    and the runtime it runs in: ONNX Runtime on the CPU where ``use_onnx`` says so (``graph()``: the
    model's ONNX file, ``cached_export``'s), else torch (``network(device)``: the module, called in
    inference mode; ``needs``: the packages it takes besides torch; ``what``: what it is, for the
    error that says to install them)."""
    if use_onnx(runtime, device, setting):
        session = cpu_session(graph())
        name = session.get_inputs()[0].name
        return (lambda x: session.run(None, {name: x})), "onnx"
    require(needs, "torch", f"{what} on {device}")
    torch = load_torch(f"{what} on {device}")
    module = network(device)

    def run(x: np.ndarray) -> list[np.ndarray]:
        with torch.inference_mode():
            out = module(torch.from_numpy(x).to(device))
            return [t.cpu().numpy() for t in (out if isinstance(out, tuple) else (out,))]

    return run, "torch"


def onnx_model(graph, producer: str):
    """``graph`` as a checked model of opset ``OPSET``, at the oldest IR version that opset allows
    (onnx's newest is more than older ONNX Runtimes read)."""
    import onnx
    from onnx import helper

    opsets = [helper.make_opsetid("", OPSET)]
    model = helper.make_model(
        graph,
        opset_imports=opsets,
        producer_name=producer,
        ir_version=helper.find_min_ir_version_for(opsets),
    )
    onnx.checker.check_model(model)
    return model


def cached_export(
    name: str,
    source: Path,
    build: Callable[..., None],
    *args: str,
    version: str,
    beside: tuple[str, ...] = (),
) -> Path:
    """The ONNX graph of model ``name``, built once from the weights at ``source``.

    ``build(*args, path)`` writes the graph to ``path`` from the weight files alone (no torch) and
    raises a RuntimeError when it refuses one. The cache is keyed by the weights' size and time and
    by the builder's ``version`` (a graph an older builder, or torch's exporter, wrote is built
    again); the graph is written in a temporary folder of the build's own and moved into place, so a
    killed build leaves nothing that looks complete, and two processes building it at once do not
    write into each other's files. ``beside``: files the build writes beside the graph (its
    weights); their sizes are in the key, so one deleted or cut short is built again rather than
    failing to load; a build that leaves one out fails.
    """
    stat = source.stat()
    key = f"{stat.st_size}-{stat.st_mtime_ns} {version}"
    out_dir = cache_root() / "models" / "onnx" / name
    out, marker = out_dir / "model.onnx", out_dir / "source"

    def sizes() -> str:
        return "".join(
            f" {f}={(out_dir / f).stat().st_size if (out_dir / f).is_file() else 'none'}"
            for f in beside
        )

    if out.is_file() and marker.is_file() and marker.read_text().strip() == key + sizes():
        return out
    log.info("building %s's ONNX graph for the CPU (once): %s", name, out)
    out_dir.mkdir(parents=True, exist_ok=True)
    # what a killed build left (a build takes minutes, not hours); "model.PID.onnx.part": an older
    # mnemo's
    for left in [*out_dir.glob(".build-*"), *out_dir.glob("model.*.onnx.part")]:
        with contextlib.suppress(OSError):
            if time.time() - left.stat().st_mtime > STALE_BUILD_S:
                shutil.rmtree(left) if left.is_dir() else left.unlink()
    # a folder of this build's own: two processes (a watcher and an ingest started together) that
    # build one graph at once would otherwise write one weights file beside it, tensor by tensor
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=out_dir))
    try:
        tmp = work / out.name
        build(*args, str(tmp))
        for f in beside:  # the weights first: a graph in place never names weights not yet there
            if not (work / f).is_file():
                raise RuntimeError(f"the build wrote no {f} beside the graph")
            os.replace(work / f, out_dir / f)
        os.replace(tmp, out)
    except RuntimeError as e:  # a failed or refused build leaves nothing behind
        raise RuntimeError(f"building {name}'s ONNX graph failed: {e}") from e
    finally:
        shutil.rmtree(work, ignore_errors=True)
    marker.write_text(key + sizes())
    return out


def cpu_session(
    path: Path, prepack: bool = True, intra_threads: int = 0, cast_weights: bool = False
):
    """An ONNX Runtime session on the CPU with this process's threads. No busy-waiting between calls
    (the models share their cores with the other stages and the writer), and no memory arena: the
    arena keeps the largest activations a model ever saw, and grows by powers of two. Without
    ``prepack`` the weights are not copied into the matrix kernels' layout: less memory (a
    second copy of each weight matrix), at a cost that hangs on the model. ``intra_threads``: a
    model's own thread count instead of the process's (0). ``cast_weights``: the graph stores
    weights in a smaller type and casts them where they are read (``embeddings.onnx_text.
    half_matrices``); the session keeps it so: constant folding off (it would cast every weight
    once, at load, and keep the copies) and nodes in priority order (in the default order the casts
    ran ahead of their readers, and more of their copies were held at once)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = intra_threads or threads()
    options.inter_op_num_threads = 1
    options.enable_cpu_mem_arena = False
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if not prepack:
        options.add_session_config_entry("session.disable_prepacking", "1")
    disabled = []
    if cast_weights:
        # the extended optimizers cast the weights at load even with constant folding off
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.execution_order = ort.ExecutionOrder.PRIORITY_BASED
        disabled = ["ConstantFolding"]
    return ort.InferenceSession(
        str(path), options, providers=["CPUExecutionProvider"], disabled_optimizers=disabled
    )
