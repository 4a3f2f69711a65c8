"""``mnemo bench ocr`` on screens rendered by xterm, Chromium and xmessage under Xvfb: the reader keeps
words whole, and without the pixels' spacing it does not."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bench.metrics import meets
from bench.ocr import TARGETS
from bench.ocr_screens import missing_tools
from conftest import unavailable


@pytest.fixture(scope="module")
def figures():
    if why := missing_tools():
        unavailable(why)
    out = subprocess.run(
        [sys.executable, "-m", "mnemo", "bench", "ocr", "--json"],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout, json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_screen_text_keeps_its_words_whole(figures):
    text, f = figures
    for key in (
        "lines",
        "word_accuracy_terminal",
        "word_accuracy_ui",
        "merged_split_rate",
        "ocr_cer",
        "ms_per_frame",
        "search_found",
        "search_found_plain",
    ):
        assert key in f, key
    assert f["search_found"] >= f["search_found_plain"] and f["search_queries"] >= 2000
    assert f["lines"] >= 100 and f["words"] >= 1000
    for name, (op, bound) in TARGETS.items():
        assert meets(f[name], op, bound), (name, f[name], text)
    assert "word_accuracy_terminal_12_16" in text and "lines not read word for word" in text


@pytest.mark.slow
def test_without_the_pixels_spacing_words_are_merged(figures):
    """The same screens read with the recogniser's own spaces: the check above can fail."""
    from bench import ocr
    from perception.ocr.ocr_rapidocr import RapidOCRReader

    _, spaced = figures
    plain = ocr.run(RapidOCRReader(threads=1, word_gaps=False)).figures
    assert plain["merged_split_rate"] > 3 * spaced["merged_split_rate"]
    assert plain["word_accuracy_terminal_12_16"] < TARGETS["word_accuracy_terminal_12_16"][1]
    # where reading gets the spaces wrong, the forgiving index finds what the plain text does not
    assert plain["search_found"] > plain["search_found_plain"] + 0.005


@pytest.mark.slow
def test_screen_text_is_read_the_same_on_another_cpu():
    """The reader on this CPU and on an emulated Sandy Bridge (AVX without AVX2 or FMA: ONNX
    Runtime's AVX kernels instead of its FMA3/AVX-512 ones; a CPU without AVX no longer imports
    NumPy 2.4) gives the same lines, word for word. One screen band of
    nine lines (a title, a menu bar and prose): under emulation each line costs about 15 s on an
    AVX2 machine, and a second screen made this the suite's slowest test (295 s)."""
    from bench.ocr_cpus import EmulatorMissing, compare, emulator
    from bench.ocr_screens import screen_folder
    from perception.ocr.ocr_rapidocr import RapidOCRReader

    why = missing_tools()
    try:
        emulator()
    except EmulatorMissing as e:
        why = why or str(e)
    if why:
        unavailable(why)
    result = compare(
        RapidOCRReader(threads=1),
        screen_folder(),
        cpus=("SandyBridge",),
        names=("page-dejavu-13",),
        rows=100,
    )
    native, sandy = result.native, result.others[0]
    # the two took different kernel paths
    assert "AVX2" in native.features and sandy.features == ["AVX"]
    assert sum(map(len, native.lines.values())) >= 8
    assert result.identical, result.report()


def test_a_reading_that_differs_between_cpus_is_reported():
    from bench.ocr_cpus import CpuComparison, CpuReading

    native = CpuReading("native", ["AVX2"], {"s": ["echo the parking spot is level 3 bay 42"]}, 1.0)
    other = CpuReading(
        "SandyBridge", ["AVX"], {"s": ["echo the parking spot is level3bay 42"]}, 90.0
    )
    result = CpuComparison(native, [other])
    assert not result.identical and result.figures()["same_text_across_cpus"] is False
    assert "level3bay" in result.report()
    assert CpuComparison(
        native, [CpuReading("Haswell", ["AVX2"], dict(native.lines), 80.0)]
    ).identical
