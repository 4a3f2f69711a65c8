"""The OCR engine (``rapidocr`` on ONNX Runtime) is built from the model files mnemo names and checks
by SHA-256, never from a download, and orders its boxes as RapidOCR 1.x did."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import skimage

from perception.model_files import for_package
from perception.ocr.graph import fused_graph
from perception.ocr.ocr_rapidocr import MODELS, PROBES, RapidOCRReader, _reading_order
from perception.weights import PACKAGED_SHA256, packaged_file


@pytest.mark.slow
def test_the_engine_runs_the_checked_model_files_and_downloads_nothing(monkeypatch):
    from rapidocr.utils.download_file import DownloadFile

    def refuse(cls, url, logger):
        raise AssertionError(f"RapidOCR tried to download {url}")

    monkeypatch.setattr(DownloadFile, "_make_http_request", classmethod(refuse))
    engine = RapidOCRReader(threads=1)._load()
    sessions = {"Det": engine.text_det, "Cls": engine.text_cls, "Rec": engine.text_rec}
    for section, (package, rel) in MODELS.items():
        fetched = for_package(package)
        assert (package, rel) in PACKAGED_SHA256 or (fetched and fetched.file(rel)), (
            package,
            rel,
        )  # a pinned hash
        # the checked file, or the graph rewritten from it (perception/ocr/graph.py), whose cache
        # key is that file's size and time
        source = packaged_file(package, rel)
        model = Path(sessions[section].session.session._model_path)
        if model != source:
            stat = source.stat()
            assert model == fused_graph(section.lower(), source, PROBES[section]), section
            key = (model.parent / "source").read_text()
            assert key.startswith(f"{stat.st_size}-{stat.st_mtime_ns} "), section
    # the recogniser's character list is the one in its own file (none fetched), with CTC's blank
    assert len(engine.text_rec.postprocess_op.character) > 6000
    page = np.repeat(skimage.data.page()[:, :, None], 3, axis=2)
    text = " ".join(ln.text for ln in RapidOCRReader(threads=1).read(page))
    assert "Region-based segmentation" in text


def test_boxes_are_ordered_top_down_then_left_to_right_within_10_px():
    def box(x, y):
        return [[x, y], [x + 40, y], [x + 40, y + 12], [x, y + 12]]

    # three boxes 8 px apart in height, each left of the one above: RapidOCR 3 takes them as one
    # line (C, B, A); RapidOCR 1.x, which the readings were measured with, swaps neighbours only
    boxes = np.array([box(100, 0), box(50, 8), box(0, 16), box(300, 40), box(10, 41)], np.float32)
    order = [int(b[0][0]) for b in _reading_order(boxes)]
    assert order == [50, 100, 0, 10, 300]
