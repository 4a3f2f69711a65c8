"""``mnemo bench perception``: the issue's accuracy targets on real media, asserted."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.accuracy]


@pytest.fixture(scope="session")
def report(perceivers, policies, pyannote_dir, opencv_dir):
    from bench.perception import run

    return run(perceivers, policies[0].threshold)


def test_speaker_faces_and_ocr_meet_their_targets(report):
    f = report.figures
    assert f["speaker_attribution"] >= 0.85  # measured 0.914
    assert f["face_identities"] == 2
    assert f["face_purity"] >= 0.90  # measured 1.0
    # measured 0.0086 (0.024 with RapidOCR's upscaled detection, 0.0104 before the reader placed spaces)
    assert f["ocr_cer"] <= 0.011
    # the screens in 960x540 video frames: measured 0.0207 (0.019 before the reader placed spaces, 0.036
    # with each soft line read alone instead of in RapidOCR's batches, 0.048 upscaled)
    assert f["ocr_cer_video"] <= 0.022
    # DER counts what attribution misses and speech found where there is none: measured 0.191
    assert 1.0 - f["speaker_attribution"] - 0.02 <= f["speaker_der"] <= 0.25


def test_asr_word_error_rate_does_not_regress(report):
    # tiny.en measured 0.123 on sample.wav (10 of 81 words); see the next test for the 0.10 target
    assert report.figures["asr_wer"] <= 0.13


@pytest.mark.xfail(
    strict=True,
    reason="issue 3 targets WER <= 0.10; the packaged tiny.en measures 0.123 on "
    "sample.wav and the packaged base model 0.21 (see the issue 3 note)",
)
def test_asr_word_error_rate_meets_the_issue_target(report):
    assert report.figures["asr_wer"] <= 0.10


def test_frames_are_sampled_at_their_true_times(opencv_dir):
    """Each sampled frame carries its own timestamp, the one nearest the sample time (ffmpeg's fps
    filter handed out frames half a period late here, so a face at "4 s" was Bernard's, cut in at 4.129 s)."""
    from perception.sources.media import decode_frames, plan_clips, probe

    (clip,) = plan_clips(probe(opencv_dir / "Megamind.avi"), 30.0)
    frames, times = decode_frames(clip, 1.0)
    assert len(times) == 12 and all(abs(t - round(t)) < 0.05 for t in times)
    # a Ray worker decodes with its share of the CPUs: the same frames at the same times
    one_thread, times_1 = decode_frames(clip, 1.0, threads=1)
    assert times_1 == times and all(np.array_equal(a, b) for a, b in zip(one_thread, frames))


def test_cli_prints_the_json_contract(capsys, opencv_dir, pyannote_dir):
    from conftest import run_cli

    code, out, _ = run_cli(capsys, "bench", "perception", "--json")
    assert code == 0
    figures = json.loads(out.strip().splitlines()[-1])
    assert set(figures) == {
        "asr_wer",
        "speaker_attribution",
        "speaker_der",
        "face_identities",
        "face_purity",
        "ocr_cer",
        "ocr_cer_video",
    }
    assert "per 30 s of media" in out
