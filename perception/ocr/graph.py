"""The OCR's ONNX graphs with two exact rewrites that ONNX Runtime does not make itself.

PaddleOCR's PP-LCNetV3 backbone (the PP-OCRv4 detector and recogniser) exports each activation as
elementwise nodes over the whole feature map, which on the CPU cost about as much as the
convolutions between them:

- a "learnable affine block" after a convolution, ``conv(x) * s + b`` with scalars ``s`` and
  ``b``: folded into the convolution's weights and bias (``fold_conv_affine``);
- hard-swish as ``x * clip(x + 3, 0, 6) / 6``, four passes over the map: written as
  ``x * HardSigmoid(x)`` with ONNX's own HardSigmoid (alpha 1/6, beta 1/2), two (``hard_swish``).

Both are the same function, up to float rounding. A rewritten graph is checked against the packaged
one on a probe input before it is kept (``build_fused``), cached beside mnemo's other built graphs
(``onnx_models.cached_export``) and rebuilt when the packaged file or ``GRAPH_VERSION`` changes;
where a rewrite or its check fails, the packaged graph is read instead (``fused_graph``).
Measured in ``docs/benchmarks.md`` (figures behind the code).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

GRAPH_VERSION = "ocr-fused-1"
# the most a rewritten graph's output may differ from the packaged graph's on the probe input,
# relative to the output's own largest magnitude (float rounding moves it by about 1e-6)
FUSE_TOLERANCE = 1e-4


def fused_graph(name: str, source: Path, probe_shape: tuple[int, ...]) -> Path:
    """The graph at ``source`` rewritten (built once, then cached), or ``source`` itself where the
    rewrite fails or its outputs differ from the packaged graph's on a ``probe_shape`` input."""
    from perception.onnx_models import cached_export

    try:
        return cached_export(
            f"ocr-{name}",
            source,
            build_fused,
            str(source),
            ",".join(map(str, probe_shape)),
            version=GRAPH_VERSION,
        )
    except (RuntimeError, OSError) as e:
        log.warning("%s; the OCR runs %s's packaged graph", e, name)
        return source


def build_fused(source: str, probe: str, path: str) -> None:
    """Write ``source``'s graph with both rewrites to ``path``; raise a RuntimeError when they find
    nothing to rewrite, move the output on a ``probe`` input ("1,3,48,320") by more than
    ``FUSE_TOLERANCE``, or fail (a graph ONNX or ONNX Runtime cannot read)."""
    try:
        _build(source, probe, path)
    except (RuntimeError, OSError):
        raise
    except Exception as e:  # ONNX Runtime's own errors are not RuntimeErrors
        raise RuntimeError(f"rewriting {Path(source).name} failed: {e}") from e


def _build(source: str, probe: str, path: str) -> None:
    import onnx

    model = onnx.load(source)
    folded, swishes = fold_conv_affine(model.graph), hard_swish(model.graph)
    if not folded and not swishes:
        raise RuntimeError(f"{Path(source).name} has no chains to rewrite")
    prune(model.graph)
    onnx.save(model, path)
    x = np.random.default_rng(0).uniform(-1, 1, tuple(int(n) for n in probe.split(",")))
    want, got = (_first_output(p, x.astype(np.float32)) for p in (source, path))
    scale = max(1.0, float(np.abs(want).max()))
    worst = float(np.abs(got - want).max()) / scale
    if got.shape != want.shape or worst > FUSE_TOLERANCE:
        raise RuntimeError(
            f"the rewritten {Path(source).name} differs from the packaged graph by {worst:.2e} "
            f"(more than {FUSE_TOLERANCE:g})"
        )
    log.info(
        "%s: %d affine blocks folded, %d hard-swishes written as HardSigmoid (differs by %.1e)",
        Path(source).name,
        folded,
        swishes,
        worst,
    )


def _first_output(path: str, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3  # its notes on the graph's unused constants
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def _constant(graph, name: str) -> np.ndarray | None:
    """The value of ``name`` where an initializer or a Constant node gives it, else None."""
    from onnx import numpy_helper

    for t in graph.initializer:
        if t.name == name:
            return numpy_helper.to_array(t)
    for n in graph.node:
        if n.op_type == "Constant" and n.output[0] == name:
            value = [a for a in n.attribute if a.name == "value"]
            return numpy_helper.to_array(value[0].t) if value else None
    return None


def _scalar(graph, name: str) -> float | None:
    value = _constant(graph, name)
    return None if value is None or value.size != 1 else float(value.reshape(-1)[0])


def _wiring(graph) -> tuple[dict, dict]:
    """Output name -> the node that writes it; input name -> the nodes that read it."""
    made = {o: n for n in graph.node for o in n.output}
    read: dict[str, list] = defaultdict(list)
    for n in graph.node:
        for i in n.input:
            read[i].append(n)
    return made, read


def _other(node, name: str) -> str:
    """The input of a two-input ``node`` that is not ``name``."""
    return node.input[1] if node.input[0] == name else node.input[0]


def fold_conv_affine(graph) -> int:
    """``Conv -> Mul(scalar s) -> Add(scalar b)``, each read only by the next: the Conv with weights
    ``W * s`` and bias ``B * s + b``. The number folded."""
    from onnx import numpy_helper

    made, read = _wiring(graph)
    gone: set[int] = set()
    count = 0
    for mul in graph.node:
        if mul.op_type != "Mul" or len(mul.input) != 2:
            continue
        conv = next((made[i] for i in mul.input if i in made and made[i].op_type == "Conv"), None)
        if conv is None or len(read[conv.output[0]]) != 1 or len(read[mul.output[0]]) != 1:
            continue
        add = read[mul.output[0]][0]
        s = _scalar(graph, _other(mul, conv.output[0]))
        b = _scalar(graph, _other(add, mul.output[0])) if add.op_type == "Add" else None
        weights = _constant(graph, conv.input[1])
        if s is None or b is None or weights is None:
            continue
        bias = _constant(graph, conv.input[2]) if len(conv.input) > 2 and conv.input[2] else None
        if len(conv.input) > 2 and conv.input[2] and bias is None:
            continue
        bias = np.zeros(weights.shape[0], np.float32) if bias is None else bias
        tag = f"{conv.name or conv.output[0]}/affine"
        graph.initializer.extend(
            [
                numpy_helper.from_array((weights * np.float32(s)).astype(np.float32), f"{tag}/W"),
                numpy_helper.from_array(
                    (bias * np.float32(s) + np.float32(b)).astype(np.float32), f"{tag}/B"
                ),
            ]
        )
        del conv.input[1:]
        conv.input.extend([f"{tag}/W", f"{tag}/B"])
        conv.output[0] = add.output[0]
        gone |= {id(mul), id(add)}
        count += 1
    _keep_nodes(graph, [n for n in graph.node if id(n) not in gone])
    return count


def hard_swish(graph) -> int:
    """``x * clip(x + 3, 0, 6) / 6`` (the division before or after the product), each step read only
    by the next: ``x * HardSigmoid(x)``. The number rewritten."""
    from onnx import helper

    made, read = _wiring(graph)
    gone: set[int] = set()
    replace: dict[int, list] = {}
    for clip in graph.node:
        if clip.op_type != "Clip" or not _clips_to(graph, clip, 0.0, 6.0):
            continue
        add = made.get(clip.input[0])
        if add is None or add.op_type != "Add" or len(read[add.output[0]]) != 1:
            continue
        x = next((i for i in add.input if _scalar(graph, _other(add, i)) == 3.0), None)
        if x is None or len(read[clip.output[0]]) != 1:
            continue
        first = read[clip.output[0]][0]
        if len(read[first.output[0]]) != 1:
            continue
        last = read[first.output[0]][0]
        if first.op_type == "Mul" and last.op_type == "Div":  # (x * clip) / 6
            ok = (
                _other(first, clip.output[0]) == x
                and last.input[0] == first.output[0]
                and _scalar(graph, last.input[1]) == 6.0
            )
        elif first.op_type == "Div" and last.op_type == "Mul":  # x * (clip / 6)
            ok = (
                first.input[0] == clip.output[0]
                and _scalar(graph, first.input[1]) == 6.0
                and _other(last, first.output[0]) == x
            )
        else:
            ok = False
        if not ok:
            continue
        sigmoid = f"{last.output[0]}/hard_sigmoid"
        replace[id(last)] = [
            helper.make_node(
                "HardSigmoid", [x], [sigmoid], name=sigmoid, alpha=1.0 / 6.0, beta=0.5
            ),
            helper.make_node("Mul", [x, sigmoid], [last.output[0]], name=f"{sigmoid}/times_x"),
        ]
        gone |= {id(add), id(clip), id(first)}
    nodes = [m for n in graph.node if id(n) not in gone for m in replace.get(id(n), [n])]
    _keep_nodes(graph, nodes)
    return len(replace)


def _clips_to(graph, clip, low: float, high: float) -> bool:
    """Whether ``clip`` bounds to [low, high], by its inputs (opset 11 on) or attributes."""
    if len(clip.input) >= 3:
        return _scalar(graph, clip.input[1]) == low and _scalar(graph, clip.input[2]) == high
    bounds = {a.name: a.f for a in clip.attribute}
    return bounds.get("min") == low and bounds.get("max") == high


def prune(graph) -> None:
    """Constant nodes and initializers that nothing reads any more (ONNX Runtime warns of each)."""
    _, read = _wiring(graph)
    outputs = {o.name for o in graph.output}
    _keep_nodes(
        graph,
        [
            n
            for n in graph.node
            if n.op_type != "Constant" or any(o in read or o in outputs for o in n.output)
        ],
    )
    kept = [t for t in graph.initializer if t.name in read or t.name in outputs]
    del graph.initializer[:]
    graph.initializer.extend(kept)


def _keep_nodes(graph, nodes: list) -> None:
    kept = list(nodes)  # copies of the protos: the graph's own list is cleared next
    copies = [type(n)() for n in kept]
    for copy, n in zip(copies, kept):
        copy.CopyFrom(n)
    del graph.node[:]
    graph.node.extend(copies)
