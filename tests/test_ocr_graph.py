"""The OCR's rewritten graphs (``perception/ocr/graph.py``): the same function as the packaged ones,
checked before they are kept, and the packaged graph read where a rewrite is wrong or finds nothing."""

from __future__ import annotations

import logging

import cv2
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from perception.ocr import graph
from perception.ocr.graph import build_fused, fold_conv_affine, fused_graph, hard_swish


def _scalar(name: str, value: float):
    return numpy_helper.from_array(np.array([value], np.float32), name)


def _model(nodes, initializers) -> onnx.ModelProto:
    g = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializers,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 12)])


def _lcnet_block(divide_first: bool) -> onnx.ModelProto:
    """Conv, its affine block (* 1.7 + 0.3) and hard-swish, as PaddleOCR's exporter writes them."""
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.normal(size=(3, 2, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.normal(size=3).astype(np.float32), "b")
    tail = (
        [
            helper.make_node("Div", ["c", "six"], ["d"]),
            helper.make_node("Mul", ["a", "d"], ["y"]),
        ]
        if divide_first
        else [
            helper.make_node("Mul", ["a", "c"], ["m"]),
            helper.make_node("Div", ["m", "six"], ["y"]),
        ]
    )
    return _model(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["conv"], pads=[1, 1, 1, 1]),
            helper.make_node("Mul", ["s", "conv"], ["scaled"]),
            helper.make_node("Add", ["scaled", "shift"], ["a"]),
            helper.make_node("Add", ["a", "three"], ["p"]),
            helper.make_node("Clip", ["p", "zero", "six"], ["c"]),
            *tail,
        ],
        [w, b, _scalar("s", 1.7), _scalar("shift", 0.3)]
        + [_scalar("three", 3.0), _scalar("zero", 0.0), _scalar("six", 6.0)],
    )


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


@pytest.mark.parametrize("divide_first", [False, True])
def test_an_affine_block_and_a_hard_swish_are_rewritten_to_the_same_function(divide_first):
    model = _lcnet_block(divide_first)
    x = np.random.default_rng(2).uniform(-3, 3, (1, 2, 5, 5)).astype(np.float32)
    want = _run(model, x)
    assert fold_conv_affine(model.graph) == 1 and hard_swish(model.graph) == 1
    graph.prune(model.graph)
    ops = [n.op_type for n in model.graph.node]
    assert ops == ["Conv", "HardSigmoid", "Mul"]
    assert {t.name for t in model.graph.initializer} == {"conv/affine/W", "conv/affine/B"}
    np.testing.assert_allclose(_run(model, x), want, atol=1e-5)


def test_a_chain_read_elsewhere_is_left_as_it_is():
    """A Conv output that a second node also reads cannot take the affine block into its weights."""
    model = _lcnet_block(False)
    model.graph.node.append(helper.make_node("Identity", ["conv"], ["also"]))
    model.graph.output.append(helper.make_tensor_value_info("also", TensorProto.FLOAT, None))
    assert fold_conv_affine(model.graph) == 0


@pytest.mark.parametrize("section", ["Det", "Rec", "Cls"])
def test_the_packaged_graphs_are_rewritten_and_read_a_line_the_same(section, tmp_path):
    from perception.ocr.ocr_rapidocr import MODELS, PROBES
    from perception.weights import packaged_file

    source = packaged_file(*MODELS[section])
    out = tmp_path / "fused.onnx"
    build_fused(str(source), ",".join(map(str, PROBES[section])), str(out))
    before = [n.op_type for n in onnx.load(str(source)).graph.node]
    after = [n.op_type for n in onnx.load(str(out)).graph.node]
    assert "Clip" in before and "Clip" not in after and len(after) < len(before)
    # a line of dark text on a light background, normalised as RapidOCR feeds its models
    line = np.full((48, 320, 3), 235, np.uint8)
    cv2.putText(line, "parking level 3", (6, 34), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (20, 20, 20), 2)
    x = ((line.astype(np.float32) / 255 - 0.5) / 0.5).transpose(2, 0, 1)[None]
    if section == "Det":
        x = np.ascontiguousarray(x[:, :, :, :320])[:, :, :32, :]
    want, got = (graph._first_output(str(p), np.ascontiguousarray(x)) for p in (source, out))
    np.testing.assert_allclose(got, want, atol=1e-4 * max(1.0, float(np.abs(want).max())))
    if section == "Rec":  # the same characters at each step
        assert (got.argmax(axis=-1) == want.argmax(axis=-1)).all()


def test_a_rewrite_that_changes_the_output_is_refused_and_the_packaged_graph_read(
    monkeypatch, tmp_path, caplog
):
    from perception.ocr.ocr_rapidocr import MODELS, PROBES
    from perception.weights import packaged_file

    monkeypatch.setenv("MNEMO_CACHE", str(tmp_path))
    real = graph.hard_swish

    def wrong(g) -> int:  # a hard-swish whose slope is off by a tenth
        n = real(g)
        for node in g.node:
            if node.op_type == "HardSigmoid":
                node.attribute[0].f *= 1.1 if node.attribute[0].name == "alpha" else 1.0
        return n

    monkeypatch.setattr(graph, "hard_swish", wrong)
    source = packaged_file(*MODELS["Rec"])
    with caplog.at_level(logging.WARNING, logger="perception.ocr.graph"):
        assert fused_graph("rec", source, PROBES["Rec"]) == source
    assert "differs from the packaged graph" in caplog.text
    assert not list(tmp_path.rglob("*.onnx*")), "a refused graph was left in the cache"


def test_a_graph_with_nothing_to_rewrite_is_read_as_packaged(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("MNEMO_CACHE", str(tmp_path / "cache"))
    plain = tmp_path / "relu.onnx"
    onnx.save(_model([helper.make_node("Relu", ["x"], ["y"])], []), str(plain))
    with caplog.at_level(logging.WARNING, logger="perception.ocr.graph"):
        assert fused_graph("relu", plain, (1, 2, 5, 5)) == plain
    assert "no chains to rewrite" in caplog.text


def test_the_rewritten_graphs_are_built_once_and_kept(tmp_path, monkeypatch):
    from perception.ocr.ocr_rapidocr import MODELS, PROBES
    from perception.weights import packaged_file

    monkeypatch.setenv("MNEMO_CACHE", str(tmp_path))
    source = packaged_file(*MODELS["Cls"])
    first = fused_graph("cls", source, PROBES["Cls"])
    assert first != source and first.is_file()
    monkeypatch.setattr(graph, "build_fused", lambda *a: pytest.fail("built again"))
    assert fused_graph("cls", source, PROBES["Cls"]) == first


def test_where_the_cache_cannot_be_written_the_packaged_graph_is_read(tmp_path, monkeypatch):
    """A full disk or a cache path that is not a folder: the OCR still reads, from the packaged file."""
    from perception.ocr.ocr_rapidocr import MODELS, PROBES
    from perception.weights import packaged_file

    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    monkeypatch.setenv("MNEMO_CACHE", str(blocked))
    source = packaged_file(*MODELS["Cls"])
    assert fused_graph("cls", source, PROBES["Cls"]) == source


def test_a_graph_onnx_runtime_cannot_read_is_refused(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("MNEMO_CACHE", str(tmp_path / "cache"))
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a graph")
    with caplog.at_level(logging.WARNING, logger="perception.ocr.graph"):
        assert fused_graph("bad", bad, (1, 2, 5, 5)) == bad
    assert "bad.onnx" in caplog.text
